/* reader_bench.c - line reader throughput and allocations, printed as a table.
 *
 * The first four cases mirror Filebeat's EncoderReader benchmark (1 KiB buffer, 100 lines
 * of random hex per op); then 100-byte log lines with a 64 KiB buffer, UTF-16LE input, and
 * one case read through lf_reader_read_fd() from a file. Each returned line is copied once
 * into an lf_arena (reset per op), as the pipeline does. Figures are for the steady state:
 * one warm-up op, then as many ops as fit in about 0.3 s. No pass/fail. */
#include "config.h"

#include "logferry/arena.h"
#include "logferry/reader.h"

#include <fcntl.h>
#include <iconv.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "alloc_count.h"

struct bench_case {
    const char *name;
    const char *encoding;
    size_t line_chars;  /* characters per line, newline excluded */
    size_t lines;       /* lines per op */
    size_t buffer_size; /* reader buffer */
    size_t max_line;    /* max_line_bytes */
    enum lf_line_overflow overflow;
    int from_file; /* read with lf_reader_read_fd() from a temp file */
};

static const struct bench_case cases[] = {
    { "hex 10, buf 1 KiB", "utf-8", 10, 100, 1024, 1 << 20, LF_OVERFLOW_TRUNCATE, 0 },
    { "hex 1020, buf 1 KiB", "utf-8", 1020, 100, 1024, 1 << 20, LF_OVERFLOW_TRUNCATE, 0 },
    { "hex 10000, buf 1 KiB", "utf-8", 10000, 100, 1024, 1 << 20, LF_OVERFLOW_TRUNCATE, 0 },
    { "hex 10000, max 1024 skip", "utf-8", 10000, 100, 1024, 1024, LF_OVERFLOW_SKIP, 0 },
    { "log 100, buf 64 KiB", "utf-8", 100, 10000, 65536, 1 << 20, LF_OVERFLOW_TRUNCATE, 0 },
    { "utf-16le 100, buf 64 KiB", "UTF-16LE", 100, 10000, 65536, 1 << 20, LF_OVERFLOW_TRUNCATE, 0 },
    { "log 100, read_fd 64 KiB", "utf-8", 100, 10000, 65536, 1 << 20, LF_OVERFLOW_TRUNCATE, 1 },
};

static double now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

/* Builds one op's input: `lines` lines of random hex (or log-like text), in the encoding. */
static char *make_input(const struct bench_case *c, size_t *out_len)
{
    size_t n = (c->line_chars + 1) * c->lines;
    char *text = malloc(n);
    if (text == NULL)
        abort();
    unsigned seed = 12345;
    size_t at = 0;
    for (size_t l = 0; l < c->lines; l++) {
        for (size_t i = 0; i < c->line_chars; i++) {
            seed = seed * 1103515245u + 12345u;
            text[at++] = "0123456789abcdef"[(seed >> 16) & 15];
        }
        text[at++] = '\n';
    }
    if (strcmp(c->encoding, "utf-8") == 0) {
        *out_len = n;
        return text;
    }
    iconv_t cd = iconv_open(c->encoding, "UTF-8");
    if (cd == (iconv_t)-1)
        abort();
    char *enc = malloc(n * 4);
    if (enc == NULL)
        abort();
    char *in = text;
    size_t in_left = n;
    char *out = enc;
    size_t out_left = n * 4;
    if (iconv(cd, &in, &in_left, &out, &out_left) == (size_t)-1)
        abort();
    iconv_close(cd);
    free(text);
    *out_len = n * 4 - out_left;
    return enc;
}

static size_t drain(struct lf_reader *r, struct lf_arena *arena)
{
    struct lf_line line;
    size_t lines = 0;
    while (lf_reader_next(r, &line) == LF_OK) {
        if (lf_arena_dup(arena, line.text.ptr, line.text.len) == NULL && line.text.len > 0)
            abort();
        lines++;
    }
    return lines;
}

/* One op: a fresh stream (offsets from 0) through a reader kept across ops. */
static size_t run_op(struct lf_reader *r, struct lf_arena *arena, const char *src, size_t n, int fd)
{
    size_t lines = 0;
    lf_arena_reset(arena);
    if (fd >= 0) {
        struct lf_errbuf eb;
        if (lseek(fd, 0, SEEK_SET) != 0)
            abort();
        while (lf_reader_read_fd(r, fd, &eb) == LF_OK)
            lines += drain(r, arena);
        return lines;
    }
    size_t at = 0;
    while (at < n) {
        at += lf_reader_feed(r, src + at, n - at);
        lines += drain(r, arena);
    }
    return lines;
}

static int temp_file(const char *src, size_t n)
{
    char path[] = "/tmp/reader_bench_XXXXXX";
    int fd = mkstemp(path);
    if (fd < 0)
        abort();
    unlink(path);
    if (write(fd, src, n) != (ssize_t)n)
        abort();
    return fd;
}

static void run_case(const struct bench_case *c)
{
    size_t n;
    char *src = make_input(c, &n);
    int fd = c->from_file ? temp_file(src, n) : -1;
    struct lf_reader_opts o = {
        .encoding = c->encoding,
        .buffer_size = c->buffer_size,
        .max_line_bytes = c->max_line,
        .overflow = c->overflow,
        .start_offset = 0,
    };
    struct lf_reader *r = NULL;
    struct lf_errbuf eb;
    if (lf_reader_new(&o, &r, &eb) != LF_OK) {
        fprintf(stderr, "reader_bench: %s\n", eb.msg);
        exit(1);
    }
    struct lf_arena *arena = lf_arena_new(4 << 20) /* one op fits: reset keeps it */;
    if (arena == NULL)
        abort();
    run_op(r, arena, src, n, fd); /* warm-up: buffers reach their steady size */
    struct lf_alloc_count before = lf_alloc_count_now();
    double t0 = now_ns();
    double t1 = t0;
    size_t ops = 0;
    while (t1 - t0 < 3e8 || ops < 3) {
        run_op(r, arena, src, n, fd);
        ops++;
        t1 = now_ns();
    }
    struct lf_alloc_count after = lf_alloc_count_now();
    size_t total_lines = ops * c->lines; /* skipped lines count as processed */
    double ns_line = (t1 - t0) / (double)total_lines;
    double mb_s = (double)n * (double)ops / ((t1 - t0) / 1e9) / 1e6;
    printf("| %-26s | %9.1f | %9.0f | %8.1f |", c->name, ns_line, mb_s,
           (t1 - t0) / (double)ops / 1e3);
    if (lf_alloc_count_enabled())
        printf(" %11.3f | %11.1f |\n", (double)(after.calls - before.calls) / (double)total_lines,
               (double)(after.bytes - before.bytes) / (double)total_lines);
    else
        printf(" %11s | %11s |\n", "n/a", "n/a");
    lf_arena_free(arena);
    lf_reader_free(r);
    if (fd >= 0)
        close(fd);
    free(src);
}

int main(void)
{
    printf("| case                       |   ns/line |      MB/s |    us/op | allocs/line "
           "| bytes/line  |\n");
    printf("|----------------------------|----------:|----------:|---------:|------------:"
           "|------------:|\n");
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
        run_case(&cases[i]);
    if (lf_alloc_count_enabled())
        printf("\n(allocations counted in this process, set-up included: %llu)\n",
               (unsigned long long)lf_alloc_count_now().calls);
    else
        printf("\n(allocation counts n/a: built with AddressSanitizer, which owns malloc)\n");
    return 0;
}
