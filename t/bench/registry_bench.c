/* registry_bench.c - registry flush and load time and file size for 1k, 10k and 100k
 * entries, printed as a table.
 *
 * Entries look like a busy host's: paths of about 40 bytes, two input ids, 64-bit offsets
 * and millisecond timestamps. A flush is timed after changing one entry (so it writes; the
 * cost is the whole file plus fsync, rename and the directory fsync), a load is a full
 * lf_registry_open(). Median of 5 runs each, in a temporary directory under $TMPDIR (or
 * /tmp): the fsync share depends on that file system. Also shown: lf_registry_set() on an
 * existing entry and lf_registry_find(), in ns per call.
 *
 * The stall columns are what the tail thread would see: 10 rounds, 100 ms apart (a
 * registry flush_interval), each changing 100 entries' offsets and flushing; the figure is
 * the longest round (sets + flush), without and with the writer thread
 * (lf_registry_start_writer()), which writes in the background while the next round
 * runs. No pass/fail. */
#include "config.h"

#include "logferry/registry.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define RUNS 5

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a;
    double y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v)
{
    qsort(v, RUNS, sizeof(*v), cmp_double);
    return v[RUNS / 2];
}

static void die(const char *what, enum lf_err err, const struct lf_errbuf *eb)
{
    fprintf(stderr, "registry_bench: %s: %s: %s\n", what, lf_err_str(err), eb->msg);
    exit(1);
}

static void fill(struct lf_registry *r, size_t n)
{
    char path[96];
    for (size_t i = 0; i < n; i++) {
        snprintf(path, sizeof(path), "/var/log/containers/service-%06zu.log", i);
        struct lf_file_id id = { 2049, 5000000 + i, 1024, 0x9e3779b97f4a7c15ull * (i + 1) };
        enum lf_err err = lf_registry_set(r, i % 4 ? "app" : "nginx", &id, 0, (uint64_t)i * 65537,
                                          path, 1700000000000 + (int64_t)i);
        if (err) {
            struct lf_errbuf eb = { "set" };
            die("set", err, &eb);
        }
    }
}

#define STALL_ROUNDS 10

/* The longest of STALL_ROUNDS rounds of 100 sets and a flush on r (which has n entries). */
static double longest_round_s(struct lf_registry *r, size_t n)
{
    struct lf_errbuf eb = { "" };
    double longest = 0;
    for (int k = 0; k < STALL_ROUNDS; k++) {
        double t0 = now_s();
        for (size_t j = 0; j < 100; j++) {
            size_t i = (j * 997 + (size_t)k) % n;
            char path[96];
            snprintf(path, sizeof(path), "/var/log/containers/service-%06zu.log", i);
            struct lf_file_id id = { 2049, 5000000 + i, 1024, 0x9e3779b97f4a7c15ull * (i + 1) };
            enum lf_err err = lf_registry_set(r, i % 4 ? "app" : "nginx", &id, 0,
                                              (uint64_t)(k + 1) << 32 | j, path, 1800000000000 + k);
            if (err)
                die("set", err, &eb);
        }
        enum lf_err err = lf_registry_flush(r, &eb);
        if (err)
            die("flush", err, &eb);
        double d = now_s() - t0;
        if (d > longest)
            longest = d;
        struct timespec pause = { 0, 100 * 1000 * 1000 };
        nanosleep(&pause, NULL);
    }
    enum lf_err err = lf_registry_sync(r, &eb);
    if (err)
        die("sync", err, &eb);
    return longest;
}

static void run(const char *dir, size_t n)
{
    struct lf_errbuf eb = { "" };
    struct lf_registry *r = NULL;
    enum lf_err err = lf_registry_open(dir, &r, &eb);
    if (err)
        die("open", err, &eb);
    fill(r, n);
    double flush_s[RUNS];
    double load_s[RUNS];
    struct lf_file_id id = { 2049, 5000001, 1024, 0x9e3779b97f4a7c15ull * 2 };
    for (int k = 0; k < RUNS; k++) {
        err = lf_registry_set(r, "app", &id, 0, 1000 + (uint64_t)k, "/var/log/x.log", k);
        if (err)
            die("set", err, &eb);
        double t0 = now_s();
        err = lf_registry_flush(r, &eb);
        flush_s[k] = now_s() - t0;
        if (err)
            die("flush", err, &eb);
    }
    double t0 = now_s();
    size_t calls = n * 10;
    for (size_t i = 0; i < calls; i++) {
        id.ino = 5000000 + i % n;
        if (lf_registry_find(r, i % 4 ? "app" : "nginx", id.dev, id.ino) == NULL)
            die("find", LF_EINVAL, &eb);
    }
    double find_ns = (now_s() - t0) / (double)calls * 1e9;
    t0 = now_s();
    for (size_t i = 0; i < calls; i++) {
        id.ino = 5000000 + i % n;
        id.fp_hash = 0x9e3779b97f4a7c15ull * (i % n + 1);
        char path[96];
        snprintf(path, sizeof(path), "/var/log/containers/service-%06zu.log", i % n);
        err = lf_registry_set(r, i % n % 4 ? "app" : "nginx", &id, 0, (uint64_t)i, path, 5);
        if (err)
            die("set", err, &eb);
    }
    double set_ns = (now_s() - t0) / (double)calls * 1e9;
    double stall_sync = longest_round_s(r, n);
    err = lf_registry_start_writer(r, &eb);
    if (err)
        die("start_writer", err, &eb);
    double stall_writer = longest_round_s(r, n);
    /* With the writer, a flush after one change appends one journal record: its time to
     * disk (the writer's append and fdatasync, waited for) and its bytes. */
    char journal[512];
    snprintf(journal, sizeof(journal), "%s/registry.log", dir);
    struct stat jst;
    off_t j0 = stat(journal, &jst) == 0 ? jst.st_size : 0;
    double append_s[RUNS];
    for (int k = 0; k < RUNS; k++) {
        err = lf_registry_set(r, "app", &id, 0, 7000 + (uint64_t)k, "/var/log/x.log", k);
        if (err)
            die("set", err, &eb);
        t0 = now_s();
        err = lf_registry_sync(r, &eb);
        append_s[k] = now_s() - t0;
        if (err)
            die("sync", err, &eb);
    }
    off_t j1 = stat(journal, &jst) == 0 ? jst.st_size : 0;
    lf_registry_free(r);
    for (int k = 0; k < RUNS; k++) {
        t0 = now_s();
        err = lf_registry_open(dir, &r, &eb);
        load_s[k] = now_s() - t0;
        if (err)
            die("load", err, &eb);
        lf_registry_free(r);
    }
    char file[512];
    snprintf(file, sizeof(file), "%s/registry", dir);
    struct stat st;
    if (stat(file, &st) != 0)
        die("stat", LF_EIO, &eb);
    printf("| %8zu | %10.2f | %10.2f | %11jd | %9.1f | %8.1f | %8.1f | %10.2f | %10.3f | %9.2f "
           "| %9.1f |\n",
           n, median(flush_s) * 1e3, median(load_s) * 1e3, (intmax_t)st.st_size,
           (double)st.st_size / (double)n, set_ns, find_ns, stall_sync * 1e3, stall_writer * 1e3,
           median(append_s) * 1e3, (double)(j1 - j0) / RUNS);
    unlink(file);
}

int main(void)
{
    const char *tmp = getenv("TMPDIR");
    char dir[256];
    snprintf(dir, sizeof(dir), "%s/registry_bench.XXXXXX", tmp != NULL ? tmp : "/tmp");
    if (mkdtemp(dir) == NULL) {
        perror("registry_bench: mkdtemp");
        return 1;
    }
    printf("registry: flush after one change and full load, median of %d runs, in %s\n\n", RUNS,
           dir);
    printf("| %8s | %10s | %10s | %11s | %9s | %8s | %8s | %10s | %10s | %9s | %9s |\n",
           "entries", "flush ms", "load ms", "file bytes", "bytes/ent", "set ns", "find ns",
           "stall ms", "w stall ms", "append ms", "append B");
    printf("|---------:|-----------:|-----------:|------------:|----------:|---------:|---------:"
           "|-----------:|-----------:|----------:|----------:|\n");
    static const size_t sizes[] = { 1000, 10000, 100000 };
    for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++)
        run(dir, sizes[i]);
    rmdir(dir);
    return 0;
}
