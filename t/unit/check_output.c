/* check_output.c - the output table, the console output, the file output and the syslog
 * output.
 *
 * The console writes to fd 1; these tests point fd 1 at a pipe with dup2(2) (Check runs
 * each test in its own process, so nothing leaks between tests). File tests use a fresh
 * mkdtemp(3) directory and assert the exact bytes on disk. Syslog tests listen on
 * 127.0.0.1 themselves: the kernel completes the handshake and acknowledges bytes before
 * the test accepts, so one thread can send, flush and then read exactly what arrived (the
 * real receiver, rsyslogd, is in t/integration/syslog_*.py). */
#include "config.h"

#include <arpa/inet.h>
#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/vfs.h>
#include <time.h>
#include <unistd.h>
#include <zstd.h>

#define LF_NETLIB_NO_REDIRECT 1 /* the tests below read the tables by name */
#include "../../src/output/netlib_int.h"
#include "logferry/deadletter.h"
#include "logferry/output.h"

static char tmpdir[64];
static char outdir[128];
static struct lf_source *src;
static struct lf_output_conf conf;
static struct lf_errbuf eb;
static size_t n_done;
static enum lf_err last_res;
static struct lf_buf expect; /* NDJSON of every batch acknowledged so far */

static struct lf_batch *done_order[8]; /* the first batches answered, in order */
static enum lf_err done_res[8];        /* and how */

/* fdatasync as the library sees it (a definition here wins over libc's when the static
 * library is linked in): fails with EIO while fail_syncs > 0. */
static int fail_syncs;
int fdatasync(int fd)
{
    if (__atomic_load_n(&fail_syncs, __ATOMIC_SEQ_CST) > 0) {
        __atomic_fetch_sub(&fail_syncs, 1, __ATOMIC_SEQ_CST);
        errno = EIO;
        return -1;
    }
    return (int)syscall(SYS_fdatasync, fd);
}

static void
on_done(void *arg, struct lf_output *out, struct lf_batch *b, enum lf_err res, size_t n_dead)
{
    (void)arg;
    (void)n_dead;
    (void)out;
    if (n_done < 8) {
        done_order[n_done] = b;
        done_res[n_done] = res;
    }
    n_done++;
    last_res = res;
    if (res == LF_OK) {
        struct lf_str nd;
        ck_assert_int_eq(lf_batch_ndjson(b, &nd), LF_OK);
        ck_assert_int_eq(lf_buf_append_str(&expect, nd), LF_OK);
    }
}

static void setup(void)
{
    strcpy(tmpdir, "/tmp/check_output.XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(tmpdir));
    snprintf(outdir, sizeof(outdir), "%s/out", tmpdir);
    ck_assert_int_eq(lf_source_new("/var/log/a.log", "app", "node-1", NULL, false, &src), LF_OK);
    memset(&conf, 0, sizeof(conf));
    conf.name = "local";
    conf.type = LF_OUTPUT_FILE;
    conf.path = outdir;
    conf.compression = LF_COMPRESS_NONE;
    conf.compression_level = 1;
    conf.rotate_bytes = 64 << 20;
    memset(&eb, 0, sizeof(eb));
    n_done = 0;
    last_res = LF_EINVAL;
    lf_buf_init(&expect, 1 << 26);
}

static void teardown(void)
{
    char cmd[128];
    snprintf(cmd, sizeof(cmd), "rm -rf %s", tmpdir);
    ck_assert_int_eq(system(cmd), 0);
    lf_source_free(src);
    lf_buf_release(&expect);
}

/* A batch of n events "<tag> event <i>". */
static struct lf_batch *make_batch(const char *tag, size_t n)
{
    struct lf_batch *b = lf_batch_new(n, 1 << 20);
    for (size_t i = 0; i < n; i++) {
        char msg[64];
        int len = snprintf(msg, sizeof(msg), "%s event %zu", tag, i);
        struct lf_event ev = { lf_str_make(msg, (size_t)len),
                               INT64_C(1796000523456000000),
                               i * 10,
                               i * 10 + 10,
                               0,
                               src,
                               { NULL, 0 },
                               0 };
        ck_assert_int_eq(lf_batch_add(b, &ev), LF_OK);
    }
    return b;
}

static struct lf_output *open_output(void)
{
    struct lf_output *out = NULL;
    ck_assert_int_eq(lf_output_new(&conf, on_done, NULL, &out, &eb), LF_OK);
    ck_assert_int_eq(lf_output_open(out, &eb), LF_OK);
    return out;
}

static void send_ok(struct lf_output *out, struct lf_batch *b)
{
    size_t before = n_done;
    ck_assert_int_eq(lf_output_send(out, b), LF_OK);
    if (conf.type == LF_OUTPUT_FILE) {
        /* The file output holds a batch until a sync covers it; flush asks for that. */
        ck_assert_uint_eq(n_done, before);
        ck_assert_int_eq(lf_output_flush(out, &eb), LF_OK);
    }
    ck_assert_uint_eq(n_done, before + 1);
    ck_assert_int_eq(last_res, LF_OK);
}

static int cmp_names(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The output directory's file names, sorted; returns how many (at most max). */
static size_t list_files(char **names, size_t max)
{
    DIR *d = opendir(outdir);
    ck_assert_ptr_nonnull(d);
    size_t n = 0;
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        if (de->d_name[0] == '.')
            continue;
        ck_assert_uint_lt(n, max);
        names[n++] = strdup(de->d_name);
    }
    closedir(d);
    qsort(names, n, sizeof(names[0]), cmp_names);
    return n;
}

/* Appends the contents of outdir/name to buf. */
static void read_file(const char *name, struct lf_buf *buf)
{
    char path[256];
    snprintf(path, sizeof(path), "%s/%s", outdir, name);
    FILE *fp = fopen(path, "rb");
    ck_assert_ptr_nonnull(fp);
    char chunk[4096];
    size_t n;
    while ((n = fread(chunk, 1, sizeof(chunk), fp)) > 0)
        ck_assert_int_eq(lf_buf_append(buf, chunk, n), LF_OK);
    fclose(fp);
}

/* outdir/name must hold exactly the NDJSON of every batch acknowledged so far (expect). */
static void assert_holds_expect(const char *name)
{
    struct lf_buf got;
    lf_buf_init(&got, 1 << 26);
    read_file(name, &got);
    ck_assert_uint_eq(got.len, expect.len);
    ck_assert_mem_eq(got.ptr, expect.ptr, got.len);
    lf_buf_release(&got);
}

static void free_names(char **names, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(names[i]);
}

/* Checks the file name shape: logferry-yyyymmddTHHMMSS-nnnnnn<ext>. */
static void assert_name_shape(const char *name, const char *ext)
{
    ck_assert_uint_eq(strlen(name), strlen("logferry-20261130T010203-000000") + strlen(ext));
    ck_assert_mem_eq(name, "logferry-", 9);
    ck_assert_int_eq(name[17], 'T');
    ck_assert_int_eq(name[24], '-');
    ck_assert_str_eq(name + 31, ext);
    for (int i = 9; i < 31; i++) {
        if (i != 17 && i != 24)
            ck_assert_msg(name[i] >= '0' && name[i] <= '9', "digit expected in %s", name);
    }
}

START_TEST(unsupported_type_is_a_config_error_naming_it)
{
    struct lf_output *out = NULL;
    conf.name = "collector";
    conf.type = (enum lf_output_type)99; /* every type the config knows is built */
    ck_assert_int_eq(lf_output_new(&conf, on_done, NULL, &out, &eb), LF_ECONFIG);
    ck_assert_str_eq(eb.msg, "output collector: type unknown is not yet supported");
    ck_assert_ptr_null(out);
}
END_TEST

/* Runs one console batch with fd 1 on a pipe; returns what came out of the pipe. */
static size_t console_roundtrip(enum lf_console_format format, char *got, size_t cap)
{
    int p[2];
    ck_assert_int_eq(pipe(p), 0);
    ck_assert_int_ne(dup2(p[1], STDOUT_FILENO), -1);
    close(p[1]);
    conf.type = LF_OUTPUT_CONSOLE;
    conf.format = format;
    struct lf_output *out = open_output();
    struct lf_batch *b = make_batch("con", 3);
    send_ok(out, b);
    ck_assert_uint_eq(lf_output_stats(out)->batches_acked, 1);
    ck_assert_uint_eq(lf_output_stats(out)->events_acked, 3);
    lf_output_free(out);
    lf_batch_free(b);
    close(STDOUT_FILENO); /* the pipe's last writer: read() sees EOF */
    size_t n = 0;
    ssize_t r;
    while ((r = read(p[0], got + n, cap - n)) > 0)
        n += (size_t)r;
    close(p[0]);
    return n;
}

START_TEST(console_json_writes_the_batch_ndjson)
{
    char got[4096];
    size_t n = console_roundtrip(LF_CONSOLE_JSON, got, sizeof(got));
    ck_assert_uint_eq(n, expect.len);
    ck_assert_mem_eq(got, expect.ptr, n);
    ck_assert_mem_eq(
        got, "{\"@timestamp\":\"2026-11-30T01:02:03.456Z\",\"message\":\"con event 0\"", 63);
}
END_TEST

START_TEST(console_text_writes_bare_messages)
{
    char got[4096];
    size_t n = console_roundtrip(LF_CONSOLE_TEXT, got, sizeof(got));
    const char *want = "con event 0\ncon event 1\ncon event 2\n";
    ck_assert_uint_eq(n, strlen(want));
    ck_assert_mem_eq(got, want, n);
}
END_TEST

START_TEST(console_reports_eio_when_the_reader_is_gone)
{
    int p[2];
    ck_assert_int_eq(pipe(p), 0);
    ck_assert_int_ne(dup2(p[1], STDOUT_FILENO), -1);
    close(p[1]);
    close(p[0]);
    signal(SIGPIPE, SIG_IGN);
    conf.type = LF_OUTPUT_CONSOLE;
    struct lf_output *out = open_output();
    struct lf_batch *b = make_batch("con", 2);
    ck_assert_int_eq(lf_output_send(out, b), LF_EIO);
    ck_assert_uint_eq(n_done, 0);
    ck_assert_uint_eq(lf_output_stats(out)->errors, 1);
    lf_output_free(out);
    lf_batch_free(b);
}
END_TEST

START_TEST(file_without_compression_holds_the_exact_ndjson)
{
    struct lf_output *out = open_output();
    struct lf_batch *b1 = make_batch("one", 3);
    struct lf_batch *b2 = make_batch("two", 2);
    send_ok(out, b1);
    send_ok(out, b2);
    ck_assert_int_eq(lf_output_flush(out, &eb), LF_OK);
    ck_assert_uint_eq(lf_output_stats(out)->events_acked, 5);
    ck_assert_uint_eq(lf_output_stats(out)->bytes_written, expect.len);
    char *names[8];
    size_t n = list_files(names, 8);
    ck_assert_uint_eq(n, 1);
    assert_name_shape(names[0], ".ndjson");
    ck_assert_mem_eq(names[0] + 25, "000000", 6);
    assert_holds_expect(names[0]);
    free_names(names, n);
    lf_output_free(out);
    lf_batch_free(b1);
    lf_batch_free(b2);
}
END_TEST

/* Pages of name that are in the page cache. */
static size_t cached_pages(const char *name, size_t len)
{
    char path[256];
    snprintf(path, sizeof(path), "%s/%s", outdir, name);
    int fd = open(path, O_RDONLY);
    ck_assert_int_ge(fd, 0);
    void *map = mmap(NULL, len, PROT_READ, MAP_SHARED, fd, 0);
    ck_assert_ptr_ne(map, MAP_FAILED);
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    size_t n = (len + page - 1) / page;
    unsigned char *vec = malloc(n);
    ck_assert_ptr_nonnull(vec);
    ck_assert_int_eq(mincore(map, len, vec), 0);
    size_t cached = 0;
    for (size_t i = 0; i < n; i++)
        cached += vec[i] & 1;
    free(vec);
    munmap(map, len);
    close(fd);
    return cached;
}

START_TEST(file_drops_what_a_sync_made_durable_from_the_page_cache)
{
    /* A tmpfs file's pages are the file and are never dropped: where /tmp is one, the
     * output goes under the working directory (the build tree), which must be on a disk. */
    char disk[64] = "";
    struct statfs sf;
    ck_assert_int_eq(statfs(tmpdir, &sf), 0);
    if (sf.f_type == 0x01021994) { /* TMPFS_MAGIC */
        strcpy(disk, "check_output-cache.XXXXXX");
        ck_assert_ptr_nonnull(mkdtemp(disk));
        ck_assert_int_eq(statfs(disk, &sf), 0);
        ck_assert_msg(sf.f_type != 0x01021994, "this case needs a disk file system: /tmp and "
                                               "the working directory are both tmpfs");
        snprintf(outdir, sizeof(outdir), "%s/out", disk);
    }
    struct lf_output *out = open_output();
    struct lf_batch *b = make_batch("cache", 4000); /* about 700 KB of NDJSON */
    send_ok(out, b);
    ck_assert_int_eq(lf_output_flush(out, &eb), LF_OK);
    char *names[8];
    size_t n = list_files(names, 8);
    ck_assert_uint_eq(n, 1);
    ck_assert_uint_eq(cached_pages(names[0], expect.len), 0);
    assert_holds_expect(names[0]); /* and it still reads back whole, from the disk */
    free_names(names, n);
    lf_output_free(out);
    lf_batch_free(b);
    if (disk[0] != '\0') {
        char cmd[128];
        snprintf(cmd, sizeof(cmd), "rm -rf %s", disk);
        ck_assert_int_eq(system(cmd), 0);
    }
}
END_TEST

/* Decompresses a stream of concatenated zstd frames into out. */
static void unzstd(struct lf_str in, struct lf_buf *out)
{
    ZSTD_DCtx *d = ZSTD_createDCtx();
    ZSTD_inBuffer ib = { in.ptr, in.len, 0 };
    char chunk[4096];
    size_t r = 0;
    while (ib.pos < ib.size) {
        ZSTD_outBuffer ob = { chunk, sizeof(chunk), 0 };
        r = ZSTD_decompressStream(d, &ob, &ib);
        ck_assert_msg(!ZSTD_isError(r), "zstd: %s", ZSTD_getErrorName(r));
        ck_assert_int_eq(lf_buf_append(out, chunk, ob.pos), LF_OK);
    }
    ck_assert_uint_eq(r, 0); /* ended on a frame boundary */
    ZSTD_freeDCtx(d);
}

START_TEST(file_rotates_zstd_files_that_decompress_to_every_event_in_order)
{
    conf.compression = LF_COMPRESS_ZSTD;
    struct lf_batch *b = make_batch("probe", 40);
    struct lf_str z;
    ck_assert_int_eq(lf_batch_zstd(b, 1, &z), LF_OK);
    conf.rotate_bytes = z.len * 2 + z.len / 2; /* two batches per file */
    lf_batch_free(b);
    struct lf_output *out = open_output();
    for (int i = 0; i < 5; i++) {
        char tag[16];
        snprintf(tag, sizeof(tag), "batch%d", i);
        b = make_batch(tag, 40);
        send_ok(out, b);
        lf_batch_free(b);
    }
    ck_assert_uint_eq(n_done, 5);
    char *names[8];
    size_t n = list_files(names, 8);
    ck_assert_uint_eq(n, 3);
    struct lf_buf all;
    struct lf_buf plain;
    lf_buf_init(&all, 1 << 26);
    lf_buf_init(&plain, 1 << 26);
    for (size_t i = 0; i < n; i++) {
        assert_name_shape(names[i], ".ndjson.zst");
        size_t before = all.len;
        read_file(names[i], &all);
        ck_assert_uint_le(all.len - before, conf.rotate_bytes);
        if (i > 0 && memcmp(names[i], names[i - 1], 24) == 0)
            ck_assert_int_eq(atoi(names[i] + 25), atoi(names[i - 1] + 25) + 1);
    }
    unzstd(lf_buf_str(&all), &plain);
    ck_assert_uint_eq(plain.len, expect.len);
    ck_assert_mem_eq(plain.ptr, expect.ptr, plain.len);
    lf_buf_release(&all);
    lf_buf_release(&plain);
    free_names(names, n);
    lf_output_free(out);
}
END_TEST

START_TEST(file_sequence_continues_after_files_already_there)
{
    ck_assert_int_eq(mkdir(outdir, 0750), 0);
    /* Plant seq 41 for this second and the next two, so a tick during the test is fine. */
    time_t now = time(NULL);
    for (int k = 0; k < 3; k++) {
        time_t t = now + k;
        struct tm tm;
        char sec[16];
        char path[256];
        gmtime_r(&t, &tm);
        strftime(sec, sizeof(sec), "%Y%m%dT%H%M%S", &tm);
        snprintf(path, sizeof(path), "%s/logferry-%s-000041.ndjson", outdir, sec);
        FILE *fp = fopen(path, "w");
        ck_assert_ptr_nonnull(fp);
        fputs("old\n", fp);
        fclose(fp);
    }
    struct lf_output *out = open_output();
    struct lf_batch *b = make_batch("new", 1);
    send_ok(out, b);
    char *names[8];
    size_t n = list_files(names, 8);
    ck_assert_uint_eq(n, 4);
    size_t found = 0;
    for (size_t i = 0; i < n; i++) {
        struct lf_buf got;
        lf_buf_init(&got, 1 << 20);
        read_file(names[i], &got);
        if (strcmp(names[i] + 24, "-000042.ndjson") == 0) {
            found++;
            ck_assert_uint_eq(got.len, expect.len);
            ck_assert_mem_eq(got.ptr, expect.ptr, got.len);
        } else {
            ck_assert_str_eq(names[i] + 24, "-000041.ndjson");
            ck_assert_uint_eq(got.len, 4);
            ck_assert_mem_eq(got.ptr, "old\n", 4);
        }
        lf_buf_release(&got);
    }
    ck_assert_uint_eq(found, 1);
    free_names(names, n);
    lf_output_free(out);
    lf_batch_free(b);
}
END_TEST

/* Plants outdir/name holding "old\n", last modified age_s seconds ago. */
static void plant(const char *name, time_t age_s)
{
    char path[256];
    snprintf(path, sizeof(path), "%s/%s", outdir, name);
    FILE *fp = fopen(path, "w");
    ck_assert_ptr_nonnull(fp);
    fputs("old\n", fp);
    fclose(fp);
    struct timespec ts[2] = { { time(NULL) - age_s, 0 }, { time(NULL) - age_s, 0 } };
    ck_assert_int_eq(utimensat(AT_FDCWD, path, ts, 0), 0);
}

START_TEST(file_keeps_only_the_newest_rotate_keep_rotated_files)
{
    ck_assert_int_eq(mkdir(outdir, 0750), 0);
    plant("notes.txt", 0);                    /* not the output's: never touched */
    plant("logferry-kept-by-hand.ndjson", 0); /* nor this */
    struct lf_batch *b = make_batch("probe", 20);
    struct lf_str nd;
    ck_assert_int_eq(lf_batch_ndjson(b, &nd), LF_OK);
    conf.rotate_bytes = nd.len; /* one batch per file */
    conf.rotate_keep = 2;
    lf_batch_free(b);
    struct lf_output *out = open_output();
    struct lf_buf last3;
    lf_buf_init(&last3, 1 << 26);
    for (int i = 0; i < 7; i++) {
        char tag[16];
        snprintf(tag, sizeof(tag), "batch%d", i);
        b = make_batch(tag, 20);
        send_ok(out, b);
        if (i >= 4) {
            ck_assert_int_eq(lf_batch_ndjson(b, &nd), LF_OK);
            ck_assert_int_eq(lf_buf_append_str(&last3, nd), LF_OK);
        }
        lf_batch_free(b);
    }
    char *names[16];
    size_t n = list_files(names, 16);
    /* Two rotated files and the current one, the newest batches; the others untouched. */
    ck_assert_uint_eq(n, 5);
    ck_assert_str_eq(names[3], "logferry-kept-by-hand.ndjson");
    ck_assert_str_eq(names[4], "notes.txt");
    struct lf_buf got;
    lf_buf_init(&got, 1 << 26);
    for (size_t i = 0; i < 3; i++) {
        assert_name_shape(names[i], ".ndjson");
        read_file(names[i], &got);
    }
    ck_assert_uint_eq(got.len, last3.len);
    ck_assert_mem_eq(got.ptr, last3.ptr, got.len);
    lf_buf_release(&got);
    lf_buf_release(&last3);
    free_names(names, n);
    lf_output_free(out);
}
END_TEST

START_TEST(file_removes_rotated_files_older_than_max_age)
{
    ck_assert_int_eq(mkdir(outdir, 0750), 0);
    plant("logferry-20200101T000000-000000.ndjson.zst", 3 * 3600); /* 3 h old: removed */
    plant("logferry-20200101T000001-000000.txt", 2 * 3600);        /* 2 h old: removed */
    plant("logferry-20200101T000002-000000.ndjson", 600);          /* 10 min old: kept */
    plant("other-20200101T000000-000000.ndjson", 3 * 3600);        /* not the output's */
    conf.max_age_ms = 3600 * 1000;
    struct lf_output *out = open_output();
    struct lf_batch *b = make_batch("new", 3);
    send_ok(out, b);
    lf_batch_free(b);
    char *names[8];
    size_t n = list_files(names, 8);
    ck_assert_uint_eq(n, 3);
    ck_assert_str_eq(names[0], "logferry-20200101T000002-000000.ndjson");
    assert_name_shape(names[1], ".ndjson");
    assert_holds_expect(names[1]);
    ck_assert_str_eq(names[2], "other-20200101T000000-000000.ndjson");
    free_names(names, n);
    lf_output_free(out);
}
END_TEST

START_TEST(file_creates_missing_parent_directories)
{
    snprintf(outdir, sizeof(outdir), "%s/a/b/c", tmpdir);
    mode_t mask = umask(022);
    umask(mask);
    struct lf_output *out = open_output();
    struct stat st;
    ck_assert_int_eq(stat(outdir, &st), 0);
    ck_assert_int_eq(S_ISDIR(st.st_mode), 1);
    ck_assert_uint_eq(st.st_mode & 0777, 0750 & ~(unsigned)mask);
    lf_output_free(out);
}
END_TEST

START_TEST(file_refuses_a_read_only_directory_with_a_clear_error)
{
    ck_assert_int_eq(chmod(tmpdir, 0755), 0);
    ck_assert_int_eq(mkdir(outdir, 0555), 0);
    bool dropped = geteuid() == 0; /* root ignores mode bits: become nobody for the test */
    if (dropped)
        ck_assert_int_eq(setresuid(65534, 65534, 0), 0);
    struct lf_output *out = NULL;
    ck_assert_int_eq(lf_output_new(&conf, on_done, NULL, &out, &eb), LF_OK);
    ck_assert_int_eq(lf_output_open(out, &eb), LF_ECONFIG);
    char want[256];
    snprintf(want, sizeof(want),
             "output local: path: cannot make or write files in %s: Permission denied", outdir);
    ck_assert_str_eq(eb.msg, want);
    lf_output_free(out);
    if (dropped)
        ck_assert_int_eq(setresuid(0, 0, 0), 0); /* back, so teardown can remove the dir */
}
END_TEST

START_TEST(failed_write_is_cut_back_and_reported_for_retry)
{
    conf.compression = LF_COMPRESS_ZSTD;
    struct lf_output *out = open_output();
    struct lf_batch *b1 = make_batch("first", 20);
    struct lf_batch *b2 = make_batch("second", 200);
    send_ok(out, b1);
    uint64_t good = lf_output_stats(out)->bytes_written;
    signal(SIGXFSZ, SIG_IGN);
    struct rlimit saved;
    ck_assert_int_eq(getrlimit(RLIMIT_FSIZE, &saved), 0);
    struct rlimit small = { good + 10, saved.rlim_max };
    ck_assert_int_eq(setrlimit(RLIMIT_FSIZE, &small), 0);
    ck_assert_int_eq(lf_output_send(out, b2), LF_OK);
    ck_assert_uint_eq(n_done, 2);
    ck_assert_int_eq(last_res, LF_EAGAIN);
    ck_assert_uint_eq(lf_output_stats(out)->errors, 1);
    ck_assert_uint_eq(lf_output_stats(out)->batches_acked, 1);
    char *names[4];
    size_t n = list_files(names, 4);
    ck_assert_uint_eq(n, 1);
    struct lf_buf got;
    lf_buf_init(&got, 1 << 26);
    read_file(names[0], &got);
    ck_assert_uint_eq(got.len, good); /* the torn frame is gone */
    ck_assert_int_eq(setrlimit(RLIMIT_FSIZE, &saved), 0);
    send_ok(out, b2);
    lf_buf_reset(&got);
    read_file(names[0], &got);
    struct lf_buf plain;
    lf_buf_init(&plain, 1 << 26);
    unzstd(lf_buf_str(&got), &plain);
    ck_assert_uint_eq(plain.len, expect.len);
    ck_assert_mem_eq(plain.ptr, expect.ptr, plain.len);
    lf_buf_release(&plain);
    lf_buf_release(&got);
    free_names(names, n);
    lf_output_free(out);
    lf_batch_free(b1);
    lf_batch_free(b2);
}
END_TEST

START_TEST(file_holds_batches_until_one_sync_acknowledges_them_in_order)
{
    conf.compression = LF_COMPRESS_NONE;
    struct lf_output *out = open_output();
    struct lf_batch *b[3] = { make_batch("a", 3), make_batch("b", 3), make_batch("c", 3) };
    for (size_t i = 0; i < 3; i++)
        ck_assert_int_eq(lf_output_send(out, b[i]), LF_OK);
    ck_assert_uint_eq(n_done, 0); /* written, not yet durable: not acknowledged */
    ck_assert_uint_eq(lf_output_stats(out)->batches_acked, 0);
    ck_assert_int_eq(lf_output_flush(out, &eb), LF_OK);
    ck_assert_uint_eq(n_done, 3);
    ck_assert_int_eq(last_res, LF_OK);
    for (size_t i = 0; i < 3; i++)
        ck_assert_ptr_eq(done_order[i], b[i]);
    ck_assert_int_eq(lf_output_flush(out, &eb), LF_OK);
    ck_assert_uint_eq(n_done, 3); /* nothing held, nothing answered twice */
    lf_output_free(out);
    for (size_t i = 0; i < 3; i++)
        lf_batch_free(b[i]);
}
END_TEST

START_TEST(file_cuts_back_and_retries_what_a_failed_sync_held)
{
    struct lf_output *out = open_output();
    struct lf_batch *b[4] = { make_batch("a", 3), make_batch("b", 3), make_batch("c", 3),
                              make_batch("d", 3) };
    send_ok(out, b[0]); /* durable: stays */
    ck_assert_int_eq(lf_output_send(out, b[1]), LF_OK);
    __atomic_store_n(&fail_syncs, 1, __ATOMIC_SEQ_CST);
    ck_assert_int_eq(lf_output_flush(out, &eb), LF_OK); /* the sync fails: b back */
    ck_assert_uint_eq(n_done, 2);
    ck_assert_ptr_eq(done_order[1], b[1]);
    ck_assert_int_eq(done_res[1], LF_EAGAIN);
    ck_assert_uint_eq(lf_output_stats(out)->errors, 1);
    char *names[8];
    size_t n = list_files(names, 8);
    ck_assert_uint_eq(n, 1);
    assert_holds_expect(names[0]); /* cut back to what the last good sync covered */

    send_ok(out, b[1]); /* the retry, then the next ones, now that syncs work again */
    send_ok(out, b[2]);
    send_ok(out, b[3]);
    assert_holds_expect(names[0]); /* a, b, c, d once each: nothing torn or twice */
    free_names(names, n);
    lf_output_free(out);
    for (size_t i = 0; i < 4; i++)
        lf_batch_free(b[i]);
}
END_TEST

static char address[32];
static int listener = -1;

/* Listens on 127.0.0.1 at a free port (closed again unless listen is true). */
static void open_listener(bool listen_too)
{
    listener = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    ck_assert_int_ge(listener, 0);
    struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    ck_assert_int_eq(bind(listener, (struct sockaddr *)&sa, sizeof(sa)), 0);
    socklen_t len = sizeof(sa);
    ck_assert_int_eq(getsockname(listener, (struct sockaddr *)&sa, &len), 0);
    snprintf(address, sizeof(address), "127.0.0.1:%u", (unsigned)ntohs(sa.sin_port));
    if (listen_too) {
        ck_assert_int_eq(listen(listener, 4), 0);
    } else {
        close(listener);
        listener = -1;
    }
}

/* The file fixture, plus a listener and a syslog output's conf aimed at it. */
static void syslog_setup(void)
{
    setup();
    open_listener(true);
    conf.name = "relay";
    conf.type = LF_OUTPUT_SYSLOG;
    conf.address = address;
    conf.protocol = LF_SYSLOG_TCP;
    conf.syslog_facility = 1;
    conf.syslog_severity = 6;
    conf.syslog_app_name = "logferry";
    conf.syslog_hostname = "node-1";
    conf.syslog_max_message_bytes = 2048;
    conf.syslog_settle_ms = 0;
    conf.timeout_ms = 2000;
    conf.tls_verify = true;
}

static void syslog_teardown(void)
{
    if (listener >= 0)
        close(listener);
    listener = -1;
    teardown();
}

/* Reads what the accepted connection fd has, until nothing comes for 200 ms. */
static size_t read_all(int fd, char *buf, size_t cap)
{
    size_t n = 0;
    struct pollfd pfd = { .fd = fd, .events = POLLIN };
    while (n < cap && poll(&pfd, 1, 200) > 0) {
        ssize_t r = read(fd, buf + n, cap - n);
        if (r <= 0)
            break;
        n += (size_t)r;
    }
    return n;
}

START_TEST(syslog_tcp_frames_each_event_with_its_octet_count)
{
    struct lf_output *out = open_output();
    struct lf_batch *b = make_batch("tcp", 3);
    ck_assert_int_eq(lf_output_send(out, b), LF_OK);
    ck_assert_uint_eq(n_done, 0); /* held until a flush settles it */
    ck_assert_int_eq(lf_output_flush(out, &eb), LF_OK);
    ck_assert_uint_eq(n_done, 1);
    ck_assert_int_eq(last_res, LF_OK);
    int fd = accept(listener, NULL, NULL);
    ck_assert_int_ge(fd, 0);
    char got[1024];
    size_t n = read_all(fd, got, sizeof(got));
    const char *want = "64 <14>1 2026-11-30T01:02:03.456Z node-1 logferry - - - tcp event 0"
                       "64 <14>1 2026-11-30T01:02:03.456Z node-1 logferry - - - tcp event 1"
                       "64 <14>1 2026-11-30T01:02:03.456Z node-1 logferry - - - tcp event 2";
    ck_assert_uint_eq(n, strlen(want));
    ck_assert_mem_eq(got, want, n);
    ck_assert_uint_eq(lf_output_stats(out)->bytes_written, n);
    close(fd);
    lf_output_free(out);
    lf_batch_free(b);
}
END_TEST

START_TEST(syslog_json_format_sends_the_event_json_as_msg)
{
    conf.syslog_format = LF_SYSLOG_JSON;
    conf.syslog_facility = 23;
    conf.syslog_severity = 3;
    struct lf_output *out = open_output();
    struct lf_batch *b = make_batch("js", 1);
    ck_assert_int_eq(lf_output_send(out, b), LF_OK);
    ck_assert_int_eq(lf_output_flush(out, &eb), LF_OK);
    int fd = accept(listener, NULL, NULL);
    char got[1024];
    size_t n = read_all(fd, got, sizeof(got));
    const char *msg = "<187>1 2026-11-30T01:02:03.456Z node-1 logferry - - - "
                      "{\"@timestamp\":\"2026-11-30T01:02:03.456Z\",\"message\":\"js event 0\","
                      "\"log\":{\"file\":{\"path\":\"/var/log/a.log\"},\"offset\":0},"
                      "\"input\":{\"id\":\"app\"},\"host\":{\"name\":\"node-1\"}}";
    char want[1024];
    int len = snprintf(want, sizeof(want), "%zu %s", strlen(msg), msg);
    ck_assert_uint_eq(n, (size_t)len);
    ck_assert_mem_eq(got, want, n);
    close(fd);
    lf_output_free(out);
    lf_batch_free(b);
}
END_TEST

START_TEST(syslog_refused_connection_is_answered_eagain_then_retried_on_a_new_one)
{
    close(listener);
    open_listener(false); /* nobody listens on address */
    struct lf_output *out = open_output();
    struct lf_batch *b = make_batch("re", 2);
    ck_assert_int_eq(lf_output_send(out, b), LF_OK);
    ck_assert_uint_eq(n_done, 1);
    ck_assert_int_eq(last_res, LF_EAGAIN);
    ck_assert_uint_eq(lf_output_stats(out)->errors, 1);
    /* The receiver comes up on the same port: the retry connects and is acknowledged. */
    listener = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in sa = { .sin_family = AF_INET,
                              .sin_addr.s_addr = htonl(INADDR_LOOPBACK),
                              .sin_port = htons((uint16_t)atoi(strchr(address, ':') + 1)) };
    ck_assert_int_eq(bind(listener, (struct sockaddr *)&sa, sizeof(sa)), 0);
    ck_assert_int_eq(listen(listener, 4), 0);
    ck_assert_int_eq(lf_output_send(out, b), LF_OK);
    ck_assert_int_eq(lf_output_flush(out, &eb), LF_OK);
    ck_assert_uint_eq(n_done, 2);
    ck_assert_int_eq(last_res, LF_OK);
    lf_output_free(out);
    lf_batch_free(b);
}
END_TEST

/* Accepts one connection, waits, and closes it without reading: with bytes unread, the
 * kernel resets the connection. */
static void *reset_later(void *arg)
{
    (void)arg;
    int fd = accept(listener, NULL, NULL);
    usleep(300 * 1000);
    close(fd);
    return NULL;
}

/* The peer's TCP acknowledged the bytes, then the receiver went away without reading
 * them: with a settle time the batch is handed back for a retry; without, it would count
 * as delivered and be lost. */
static void run_reset_after_drain(uint64_t settle_ms, enum lf_err want)
{
    conf.syslog_settle_ms = settle_ms;
    struct lf_output *out = open_output();
    struct lf_batch *b = make_batch("rst", 4);
    ck_assert_int_eq(lf_output_send(out, b), LF_OK);
    pthread_t t;
    ck_assert_int_eq(pthread_create(&t, NULL, reset_later, NULL), 0);
    ck_assert_int_eq(lf_output_flush(out, &eb), LF_OK);
    ck_assert_uint_eq(n_done, 1);
    ck_assert_int_eq(last_res, want);
    ck_assert_int_eq(pthread_join(t, NULL), 0);
    lf_output_free(out);
    lf_batch_free(b);
}

START_TEST(syslog_reset_within_settle_hands_the_batch_back_for_a_retry)
{
    run_reset_after_drain(2000, LF_EAGAIN);
}
END_TEST

START_TEST(syslog_without_settle_a_drained_batch_counts_at_once)
{
    run_reset_after_drain(0, LF_OK);
}
END_TEST

START_TEST(syslog_missing_ca_file_fails_open_naming_it)
{
    conf.protocol = LF_SYSLOG_TLS;
    conf.tls_ca_file = "/nonexistent/ca.pem";
    struct lf_output *out = NULL;
    ck_assert_int_eq(lf_output_new(&conf, on_done, NULL, &out, &eb), LF_OK);
    ck_assert_int_eq(lf_output_open(out, &eb), LF_ECONFIG);
    ck_assert_str_eq(eb.msg, "output relay: tls.ca_file: cannot read /nonexistent/ca.pem: "
                             "No such file or directory");
    lf_output_free(out);
}
END_TEST

/* Reads the whole dead-letter file and decompresses its frames into *plain (malloc'd). */
static size_t read_dead_letters(const char *path, char **plain)
{
    FILE *f = fopen(path, "rb");
    ck_assert_ptr_nonnull(f);
    static char z[1 << 16];
    size_t zn = fread(z, 1, sizeof(z), f);
    fclose(f);
    size_t cap = 1 << 20;
    *plain = malloc(cap);
    ZSTD_DCtx *d = ZSTD_createDCtx();
    ZSTD_inBuffer in = { z, zn, 0 };
    ZSTD_outBuffer out = { *plain, cap, 0 };
    size_t r = 1;
    while (in.pos < in.size) {
        r = ZSTD_decompressStream(d, &out, &in);
        ck_assert(!ZSTD_isError(r));
    }
    ck_assert_uint_eq(r, 0); /* ends on a whole frame */
    ZSTD_freeDCtx(d);
    return out.pos;
}

START_TEST(dead_letters_hold_one_record_per_event_across_writes)
{
    struct lf_deadletter *dl = NULL;
    ck_assert_int_eq(lf_deadletter_new(tmpdir, "collector", &dl, &eb), LF_OK);
    char path[256];
    snprintf(path, sizeof(path), "%s/dead_letters/collector.ndjson.zst", tmpdir);
    ck_assert_str_eq(lf_deadletter_path(dl), path);
    ck_assert_int_ne(access(path, F_OK), 0); /* nothing refused yet: no file */

    const char nd1[] = "{\"message\":\"a\"}\n{\"message\":\"b\"}\n";
    const char nd2[] = "{\"message\":\"c\"}\n";
    size_t n = 0;
    ck_assert_int_eq(lf_deadletter_write(dl, lf_str_make(nd1, sizeof(nd1) - 1), 400,
                                         "HTTP 400: bad \"field\"", &n, &eb),
                     LF_OK);
    ck_assert_uint_eq(n, 2);
    ck_assert_int_eq(
        lf_deadletter_write(dl, lf_str_make(nd2, sizeof(nd2) - 1), 413, "HTTP 413", &n, &eb),
        LF_OK);
    ck_assert_uint_eq(n, 1);
    lf_deadletter_free(dl);

    struct stat st;
    ck_assert_int_eq(stat(path, &st), 0);
    ck_assert_uint_eq(st.st_mode & 0777, 0600);
    char *plain;
    size_t len = read_dead_letters(path, &plain);
    const char want[] =
        "{\"output\":\"collector\",\"status\":400,\"reason\":\"HTTP 400: bad \\\"field\\\"\","
        "\"event\":{\"message\":\"a\"}}\n"
        "{\"output\":\"collector\",\"status\":400,\"reason\":\"HTTP 400: bad \\\"field\\\"\","
        "\"event\":{\"message\":\"b\"}}\n"
        "{\"output\":\"collector\",\"status\":413,\"reason\":\"HTTP 413\","
        "\"event\":{\"message\":\"c\"}}\n";
    ck_assert_uint_eq(len, sizeof(want) - 1);
    ck_assert_mem_eq(plain, want, len);
    free(plain);
}
END_TEST

START_TEST(dead_letters_report_an_unwritable_directory)
{
    char file[128]; /* data_dir is a regular file: no directory can be made under it */
    snprintf(file, sizeof(file), "%s/notadir", tmpdir);
    FILE *f = fopen(file, "w");
    ck_assert_ptr_nonnull(f);
    fclose(f);
    struct lf_deadletter *dl = NULL;
    ck_assert_int_eq(lf_deadletter_new(file, "collector", &dl, &eb), LF_OK);
    size_t n = 7;
    const char nd[] = "{}\n";
    ck_assert_int_eq(lf_deadletter_write(dl, lf_str_make(nd, 3), 400, "x", &n, &eb), LF_EIO);
    ck_assert_uint_eq(n, 7); /* untouched: nothing may be acknowledged */
    ck_assert_ptr_nonnull(strstr(eb.msg, "notadir/dead_letters"));
    lf_deadletter_free(dl);
}
END_TEST

/* Each test runs in a process of its own (check's fork mode), so nothing is loaded yet. */
START_TEST(netlib_names_the_library_it_cannot_load_and_tries_again)
{
    struct lf_errbuf why = { "" };
    ck_assert_ptr_null(lf_netlib_kafka.rd_kafka_new);
    ck_assert_int_eq(lf_netlib__load_file(LF_NETLIB_KAFKA, "libnosuch-lf.so.9", "output bus", &why),
                     LF_EIO);
    ck_assert_msg(strstr(why.msg, "output bus: cannot load libnosuch-lf.so.9, needed by the "
                                  "kafka output: ") == why.msg &&
                      strstr(why.msg, "cannot open shared object file") != NULL,
                  "%s", why.msg);
    ck_assert_ptr_null(lf_netlib_kafka.rd_kafka_new);
    ck_assert_int_eq(lf_netlib_load(LF_NETLIB_KAFKA, "output bus", &why), LF_OK);
    ck_assert_ptr_nonnull(lf_netlib_kafka.rd_kafka_new);
    ck_assert_ptr_nonnull(lf_netlib_kafka.rd_kafka_topic_new);
    /* Loaded: a second call (another output) returns at once, even with another file. */
    ck_assert_int_eq(lf_netlib__load_file(LF_NETLIB_KAFKA, "libnosuch-lf.so.9", "output bus", &why),
                     LF_OK);
}
END_TEST

START_TEST(netlib_refuses_a_library_that_lacks_a_function_and_fills_nothing)
{
    struct lf_errbuf why = { "" };
    /* zlib is there, but it is not libcurl. */
    ck_assert_int_eq(lf_netlib__load_file(LF_NETLIB_CURL, "libz.so.1", "output es", &why), LF_EIO);
    ck_assert_msg(strstr(why.msg, "output es: libz.so.1 has no curl_easy_cleanup, needed by the "
                                  "http, elasticsearch, loki, splunk_hec, otlp and s3 outputs and "
                                  "kubernetes metadata: ") == why.msg,
                  "%s", why.msg);
    ck_assert_ptr_null(lf_netlib_curl.curl_easy_cleanup);
    ck_assert_ptr_null(lf_netlib_curl.curl_url_set);
    ck_assert_str_eq(lf_netlib_soname(LF_NETLIB_CURL), LF_SONAME_CURL);
    ck_assert_int_eq(lf_netlib_load(LF_NETLIB_CURL, "output es", &why), LF_OK);
    ck_assert_ptr_nonnull(lf_netlib_curl.curl_easy_cleanup);
    ck_assert_ptr_nonnull(lf_netlib_curl.curl_url_set);
    /* The pointers are the library's: a call through one works. */
    char *esc = lf_netlib_curl.curl_easy_escape(NULL, "a b", 0);
    ck_assert_str_eq(esc, "a%20b");
    lf_netlib_curl.curl_free(esc);
}
END_TEST

static Suite *output_suite(void)
{
    Suite *s = suite_create("output");
    TCase *tc = tcase_create("table");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, unsupported_type_is_a_config_error_naming_it);
    suite_add_tcase(s, tc);

    tc = tcase_create("netlib");
    tcase_add_test(tc, netlib_names_the_library_it_cannot_load_and_tries_again);
    tcase_add_test(tc, netlib_refuses_a_library_that_lacks_a_function_and_fills_nothing);
    suite_add_tcase(s, tc);

    tc = tcase_create("console");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, console_json_writes_the_batch_ndjson);
    tcase_add_test(tc, console_text_writes_bare_messages);
    tcase_add_test(tc, console_reports_eio_when_the_reader_is_gone);
    suite_add_tcase(s, tc);

    tc = tcase_create("file");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, file_without_compression_holds_the_exact_ndjson);
    tcase_add_test(tc, file_rotates_zstd_files_that_decompress_to_every_event_in_order);
    tcase_add_test(tc, file_sequence_continues_after_files_already_there);
    tcase_add_test(tc, file_keeps_only_the_newest_rotate_keep_rotated_files);
    tcase_add_test(tc, file_removes_rotated_files_older_than_max_age);
    tcase_add_test(tc, file_creates_missing_parent_directories);
    tcase_add_test(tc, file_refuses_a_read_only_directory_with_a_clear_error);
    tcase_add_test(tc, failed_write_is_cut_back_and_reported_for_retry);
    tcase_add_test(tc, file_holds_batches_until_one_sync_acknowledges_them_in_order);
    tcase_add_test(tc, file_cuts_back_and_retries_what_a_failed_sync_held);
    tcase_add_test(tc, file_drops_what_a_sync_made_durable_from_the_page_cache);
    suite_add_tcase(s, tc);

    tc = tcase_create("syslog");
    tcase_add_checked_fixture(tc, syslog_setup, syslog_teardown);
    tcase_add_test(tc, syslog_tcp_frames_each_event_with_its_octet_count);
    tcase_add_test(tc, syslog_json_format_sends_the_event_json_as_msg);
    tcase_add_test(tc, syslog_refused_connection_is_answered_eagain_then_retried_on_a_new_one);
    tcase_add_test(tc, syslog_reset_within_settle_hands_the_batch_back_for_a_retry);
    tcase_add_test(tc, syslog_without_settle_a_drained_batch_counts_at_once);
    tcase_add_test(tc, syslog_missing_ca_file_fails_open_naming_it);
    suite_add_tcase(s, tc);

    tc = tcase_create("deadletter");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, dead_letters_hold_one_record_per_event_across_writes);
    tcase_add_test(tc, dead_letters_report_an_unwritable_directory);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(output_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
