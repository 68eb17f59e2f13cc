/* check_registry.c - the offset registry: round trips, updates, durability, corruption. */
#include "config.h"

#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "logferry/registry.h"

static char dir[256];
static char reg_path[400];
static struct lf_errbuf eb;

static void setup(void)
{
    const char *tmp = getenv("TMPDIR");
    snprintf(dir, sizeof(dir), "%s/check_registry.XXXXXX", tmp != NULL ? tmp : "/tmp");
    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(reg_path, sizeof(reg_path), "%s/registry", dir);
    eb.msg[0] = '\0';
}

static void teardown(void)
{
    char cmd[300];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    ck_assert_int_eq(system(cmd), 0);
}

/* Reads a whole file into a new buffer (free it); *len is its size. */
static char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    ck_assert_ptr_nonnull(f);
    ck_assert_int_eq(fseek(f, 0, SEEK_END), 0);
    long n = ftell(f);
    ck_assert_int_ge(n, 0);
    rewind(f);
    char *p = malloc((size_t)n + 1);
    ck_assert_ptr_nonnull(p);
    ck_assert_uint_eq(fread(p, 1, (size_t)n, f), (size_t)n);
    fclose(f);
    *len = (size_t)n;
    return p;
}

static void spit(const char *path, const void *p, size_t n)
{
    FILE *f = fopen(path, "wb");
    ck_assert_ptr_nonnull(f);
    ck_assert_uint_eq(fwrite(p, 1, n, f), n);
    ck_assert_int_eq(fclose(f), 0);
}

/* Bitwise CRC-32 (IEEE), written independently of the registry's table version. */
static uint32_t crc32_bitwise(const void *p, size_t n)
{
    const unsigned char *b = p;
    uint32_t c = 0xFFFFFFFFu;
    for (size_t i = 0; i < n; i++) {
        c ^= b[i];
        for (int k = 0; k < 8; k++)
            c = (c >> 1) ^ (0xEDB88320u & (0u - (c & 1)));
    }
    return ~c;
}

/* Writes body plus a correct end line as the registry file. */
static void write_framed(const char *body)
{
    size_t n = strlen(body);
    char *p = malloc(n + 16);
    ck_assert_ptr_nonnull(p);
    memcpy(p, body, n);
    int tl = snprintf(p + n, 16, "end %08" PRIx32 "\n", crc32_bitwise(body, n));
    spit(reg_path, p, n + (size_t)tl);
    free(p);
}

static struct lf_file_id fid(uint64_t dev, uint64_t ino)
{
    struct lf_file_id id = { dev, ino, 1024, 0x0123456789abcdefull ^ ino };
    return id;
}

static struct lf_registry *open_ok(void)
{
    struct lf_registry *r = NULL;
    ck_assert_int_eq(lf_registry_open(dir, &r, &eb), LF_OK);
    ck_assert_ptr_nonnull(r);
    return r;
}

static void assert_refused(const char *what)
{
    struct lf_registry *r = (struct lf_registry *)&eb; /* must be overwritten with NULL */
    ck_assert_int_eq(lf_registry_open(dir, &r, &eb), LF_EIO);
    ck_assert_ptr_null(r);
    char prefix[450];
    snprintf(prefix, sizeof(prefix), "registry %s: ", reg_path);
    ck_assert_int_eq(strncmp(eb.msg, prefix, strlen(prefix)), 0);
    ck_assert_ptr_nonnull(strstr(eb.msg, "file left as is"));
    if (what != NULL)
        ck_assert_msg(strstr(eb.msg, what) != NULL, "\"%s\" not in: %s", what, eb.msg);
}

START_TEST(missing_file_is_an_empty_registry_and_creates_nothing)
{
    struct lf_registry *r = open_ok();
    ck_assert_uint_eq(lf_registry_count(r), 0);
    ck_assert_ptr_null(lf_registry_find(r, "app", 1, 2));
    ck_assert_int_eq(lf_registry_flush(r, &eb), LF_OK);
    ck_assert_uint_eq(lf_registry_flushes(r), 0);
    ck_assert_int_eq(access(reg_path, F_OK), -1);
    lf_registry_free(r);
    lf_registry_free(NULL);
}
END_TEST

START_TEST(empty_registry_file_has_the_documented_bytes)
{
    struct lf_registry *r = open_ok();
    struct lf_file_id id = fid(1, 2);
    ck_assert_int_eq(lf_registry_set(r, "app", &id, 0, 5, "/x", 1000), LF_OK);
    lf_registry_remove(r, "app", 1, 2);
    ck_assert_int_eq(lf_registry_flush(r, &eb), LF_OK);
    lf_registry_free(r);
    size_t n = 0;
    char *got = slurp(reg_path, &n);
    const char *head = "logferry-registry 2 0\n";
    char want[64];
    snprintf(want, sizeof(want), "%send %08" PRIx32 "\n", head, crc32_bitwise(head, strlen(head)));
    ck_assert_uint_eq(n, strlen(want));
    ck_assert_mem_eq(got, want, n);
    ck_assert_uint_eq(crc32_bitwise("123456789", 9), 0xCBF43926u); /* the helper is CRC-32 */
    free(got);
}
END_TEST

/* A version 1 file (t/data/registry/v1-two-entries, written by the earlier checksum code
 * and before stream ids) still loads, its entries with stream id 0 ("none": the next run
 * gives the file a new one); writing it again gives a version 2 file with the same records
 * and an empty stream id field, which loads the same. */
START_TEST(a_version_1_registry_file_loads_and_rewrites_as_version_2)
{
    const char *data = getenv("LF_TEST_DATA");
    ck_assert_ptr_nonnull(data);
    char fixture[512];
    snprintf(fixture, sizeof(fixture), "%s/registry/v1-two-entries", data);
    size_t n = 0;
    char *old = slurp(fixture, &n);
    ck_assert_uint_eq(crc32_bitwise(old, n - 13), 0xe08d2e24u); /* the fixture's end line */
    spit(reg_path, old, n);

    struct lf_registry *r = open_ok();
    ck_assert_uint_eq(lf_registry_count(r), 2);
    const struct lf_registry_entry *e = lf_registry_find(r, "app", 2049, 131075);
    ck_assert_ptr_nonnull(e);
    ck_assert_uint_eq(e->offset, 123456);
    ck_assert_uint_eq(e->stream_id, 0);
    ck_assert_str_eq(e->path, "/var/log/app.log");
    ck_assert_int_eq(e->updated_ms, INT64_C(1796000523456));
    e = lf_registry_find(r, "k8s", 64768, 42);
    ck_assert_ptr_nonnull(e);
    ck_assert_uint_eq(e->offset, UINT64_C(1) << 40);
    ck_assert_str_eq(e->path, "/var/log/pods/a b\tc\\d.log");
    ck_assert_int_eq(e->updated_ms, -5);

    /* Change one entry and change it back: dirty, so the flush writes the same contents. */
    struct lf_file_id id = e->id;
    ck_assert_int_eq(lf_registry_set(r, "k8s", &id, 0, 1, "/var/log/pods/a b\tc\\d.log", -5),
                     LF_OK);
    ck_assert_int_eq(
        lf_registry_set(r, "k8s", &id, 0, UINT64_C(1) << 40, "/var/log/pods/a b\tc\\d.log", -5),
        LF_OK);
    ck_assert_int_eq(lf_registry_flush(r, &eb), LF_OK);
    ck_assert_uint_eq(lf_registry_flushes(r), 1);
    lf_registry_free(r);
    size_t n2 = 0;
    char *again = slurp(reg_path, &n2);
    ck_assert_uint_eq(n2, n + 2 * 17); /* each record gains its stream id and a tab */
    ck_assert_mem_eq(again, "logferry-registry 2 2\n", 22);
    ck_assert_ptr_nonnull(strstr(again, "\t123456\t1796000523456\t0000000000000000\t"
                                        "/var/log/app.log\n"));
    free(again);
    free(old);
    r = open_ok();
    e = lf_registry_find(r, "k8s", 64768, 42);
    ck_assert_ptr_nonnull(e);
    ck_assert_uint_eq(e->offset, UINT64_C(1) << 40);
    ck_assert_uint_eq(e->stream_id, 0);
    ck_assert_str_eq(e->path, "/var/log/pods/a b\tc\\d.log");
    lf_registry_free(r);
}
END_TEST

static void crash_copy(const char *src, const char *dst);
static off_t size_of(const char *path);

/* The stream id of an entry is stored, survives a write and a load (file and journal),
 * and changing it alone is a change. */
START_TEST(stream_ids_round_trip_through_the_file_and_the_journal)
{
    struct lf_registry *r = open_ok();
    struct lf_file_id id = fid(5, 6);
    ck_assert_int_eq(lf_registry_set(r, "app", &id, UINT64_C(0xfedcba9876543210), 7, "/a", 1),
                     LF_OK);
    ck_assert_int_eq(lf_registry_flush(r, &eb), LF_OK);
    ck_assert(!lf_registry_dirty(r));
    ck_assert_int_eq(lf_registry_set(r, "app", &id, UINT64_C(0xfedcba9876543210), 7, "/a", 1),
                     LF_OK);
    ck_assert(!lf_registry_dirty(r));
    ck_assert_int_eq(lf_registry_set(r, "app", &id, 1, 7, "/a", 1), LF_OK);
    ck_assert(lf_registry_dirty(r)); /* a new content generation at the same offset */
    ck_assert_int_eq(lf_registry_flush(r, &eb), LF_OK);
    lf_registry_free(r);
    size_t n = 0;
    char *text = slurp(reg_path, &n);
    ck_assert_ptr_nonnull(strstr(text, "\t7\t1\t0000000000000001\t/a\n"));
    free(text);

    r = open_ok();
    ck_assert_uint_eq(lf_registry_find(r, "app", 5, 6)->stream_id, 1);
    ck_assert_int_eq(lf_registry_start_writer(r, &eb), LF_OK);
    ck_assert_int_eq(lf_registry_set(r, "app", &id, 1, 8, "/a", 2), LF_OK);
    ck_assert_int_eq(lf_registry_sync(r, &eb), LF_OK); /* the writer's first: a whole file */
    ck_assert_int_eq(lf_registry_set(r, "app", &id, UINT64_MAX, 9, "/a", 2), LF_OK);
    ck_assert_int_eq(lf_registry_sync(r, &eb), LF_OK); /* appended to the journal */
    char lpath[400];
    snprintf(lpath, sizeof(lpath), "%s/registry.log", dir);
    ck_assert_int_ge(size_of(lpath), 1);
    char cdir[400];
    snprintf(cdir, sizeof(cdir), "%s/crashed", dir);
    crash_copy(dir, cdir); /* as a crash would leave them: the file and its journal */
    lf_registry_free(r);
    struct lf_registry *c = NULL;
    ck_assert_int_eq(lf_registry_open(cdir, &c, &eb), LF_OK);
    const struct lf_registry_entry *e = lf_registry_find(c, "app", 5, 6);
    ck_assert_ptr_nonnull(e);
    ck_assert_uint_eq(e->stream_id, UINT64_MAX);
    ck_assert_uint_eq(e->offset, 9);
    lf_registry_free(c);
}
END_TEST

/* A journal a version 1 agent left beside its file (records of 8 fields) is applied. */
START_TEST(a_version_1_journal_is_applied)
{
    const char *body = "logferry-registry 1 1\napp\t1\t2\t0\t0000000000000000\t10\t0\t/a\n";
    write_framed(body);
    size_t n = 0;
    char *file = slurp(reg_path, &n);
    char jpath[400];
    snprintf(jpath, sizeof(jpath), "%s/registry.log", dir);
    char j[256];
    int hl = snprintf(j, sizeof(j), "logferry-registry-log 1 %08" PRIx32 "\n",
                      crc32_bitwise(file, n - 13));
    const char *rec = "s\tapp\t1\t2\t0\t0000000000000000\t55\t1\t/a";
    int rl = snprintf(j + hl, sizeof(j) - (size_t)hl, "%s\t%08" PRIx32 "\n", rec,
                      crc32_bitwise(rec, strlen(rec)));
    spit(jpath, j, (size_t)(hl + rl));
    struct lf_registry *r = open_ok();
    const struct lf_registry_entry *e = lf_registry_find(r, "app", 1, 2);
    ck_assert_ptr_nonnull(e);
    ck_assert_uint_eq(e->offset, 55);
    ck_assert_uint_eq(e->stream_id, 0);
    lf_registry_free(r);
    free(file);
}
END_TEST

static const char *odd_paths[] = {
    "/var/log/with space/app.log", "/var/log/new\nline\tand tab.log", "/var/log/журнал/日志.log",
    "/back\\slash\\x41 and \\\\",  "\x01\x1f\x7f\xff\xfe raw bytes",  "",
};

START_TEST(entries_round_trip_with_odd_paths_and_ids)
{
    char long_path[4097];
    memset(long_path, 'p', sizeof(long_path) - 1);
    long_path[0] = '/';
    long_path[sizeof(long_path) - 1] = '\0';
    struct lf_registry *r = open_ok();
    size_t n_odd = sizeof(odd_paths) / sizeof(odd_paths[0]);
    for (size_t i = 0; i < n_odd; i++) {
        struct lf_file_id id = fid(7, 100 + i);
        ck_assert_int_eq(lf_registry_set(r, "app", &id, 0, 1000 * i, odd_paths[i], -5 + (int)i),
                         LF_OK);
    }
    struct lf_file_id big = { UINT64_MAX, UINT64_MAX - 1, 0, 0 };
    ck_assert_int_eq(
        lf_registry_set(r, "in\tput \\ id\n", &big, 0, UINT64_MAX, long_path, INT64_MIN), LF_OK);
    ck_assert_int_eq(lf_registry_flush(r, &eb), LF_OK);
    ck_assert_uint_eq(lf_registry_flushes(r), 1);
    lf_registry_free(r);

    r = open_ok();
    ck_assert_uint_eq(lf_registry_count(r), n_odd + 1);
    for (size_t i = 0; i < n_odd; i++) {
        struct lf_registry_entry *e = lf_registry_find(r, "app", 7, 100 + i);
        ck_assert_ptr_nonnull(e);
        ck_assert_str_eq(e->path, odd_paths[i]);
        ck_assert_str_eq(e->input_id, "app");
        ck_assert_uint_eq(e->offset, 1000 * i);
        ck_assert_int_eq(e->updated_ms, -5 + (int)i);
        ck_assert_uint_eq(e->id.fp_len, 1024);
        ck_assert_uint_eq(e->id.fp_hash, 0x0123456789abcdefull ^ (100 + i));
    }
    struct lf_registry_entry *e =
        lf_registry_find(r, "in\tput \\ id\n", UINT64_MAX, UINT64_MAX - 1);
    ck_assert_ptr_nonnull(e);
    ck_assert_str_eq(e->path, long_path);
    ck_assert_uint_eq(e->offset, UINT64_MAX);
    ck_assert_int_eq(e->updated_ms, INT64_MIN);
    ck_assert_uint_eq(e->id.fp_len, 0);
    ck_assert_ptr_null(lf_registry_find(r, "other", 7, 100)); /* input id is part of the key */
    ck_assert_int_eq(lf_registry_dirty(r), 0);
    lf_registry_free(r);
}
END_TEST

START_TEST(update_replaces_offset_path_and_fingerprint_and_remove_forgets)
{
    struct lf_registry *r = open_ok();
    struct lf_file_id id = fid(1, 10);
    ck_assert_int_eq(lf_registry_set(r, "app", &id, 0, 100, "/log/a", 1), LF_OK);
    struct lf_file_id other = fid(1, 11);
    ck_assert_int_eq(lf_registry_set(r, "app", &other, 0, 5, "/log/b", 1), LF_OK);
    id.fp_hash = 42;
    ck_assert_int_eq(lf_registry_set(r, "app", &id, 0, 250, "/log/a.1", 2), LF_OK);
    ck_assert_uint_eq(lf_registry_count(r), 2);
    struct lf_registry_entry *e = lf_registry_find(r, "app", 1, 10);
    ck_assert_uint_eq(e->offset, 250);
    ck_assert_str_eq(e->path, "/log/a.1");
    ck_assert_uint_eq(e->id.fp_hash, 42);
    ck_assert_int_eq(e->updated_ms, 2);
    lf_registry_remove(r, "app", 1, 11);
    lf_registry_remove(r, "app", 1, 99); /* absent: no-op */
    ck_assert_uint_eq(lf_registry_count(r), 1);
    ck_assert_int_eq(lf_registry_flush(r, &eb), LF_OK);
    lf_registry_free(r);

    r = open_ok();
    ck_assert_uint_eq(lf_registry_count(r), 1);
    ck_assert_ptr_null(lf_registry_find(r, "app", 1, 11));
    e = lf_registry_find(r, "app", 1, 10);
    ck_assert_ptr_nonnull(e);
    ck_assert_uint_eq(e->offset, 250);
    ck_assert_str_eq(e->path, "/log/a.1");
    lf_registry_free(r);
}
END_TEST

START_TEST(flush_writes_only_when_something_changed)
{
    struct lf_registry *r = open_ok();
    struct lf_file_id id = fid(3, 30);
    ck_assert_int_eq(lf_registry_set(r, "app", &id, 0, 10, "/log/a", 1), LF_OK);
    ck_assert_int_eq(lf_registry_dirty(r), 1);
    ck_assert_int_eq(lf_registry_flush(r, &eb), LF_OK);
    struct stat st1;
    ck_assert_int_eq(stat(reg_path, &st1), 0);
    ck_assert_int_eq(lf_registry_flush(r, &eb), LF_OK);
    /* The same values again change nothing, not even the timestamp. */
    ck_assert_int_eq(lf_registry_set(r, "app", &id, 0, 10, "/log/a", 99), LF_OK);
    ck_assert_int_eq(lf_registry_find(r, "app", 3, 30)->updated_ms, 1);
    ck_assert_int_eq(lf_registry_dirty(r), 0);
    ck_assert_int_eq(lf_registry_flush(r, &eb), LF_OK);
    ck_assert_uint_eq(lf_registry_flushes(r), 1);
    struct stat st2;
    ck_assert_int_eq(stat(reg_path, &st2), 0);
    ck_assert_uint_eq(st2.st_ino, st1.st_ino); /* every write renames a new inode in */
    ck_assert_int_eq(lf_registry_set(r, "app", &id, 0, 11, "/log/a", 100), LF_OK);
    ck_assert_int_eq(lf_registry_flush(r, &eb), LF_OK);
    ck_assert_uint_eq(lf_registry_flushes(r), 2);
    ck_assert_int_eq(stat(reg_path, &st2), 0);
    ck_assert_uint_ne(st2.st_ino, st1.st_ino);
    lf_registry_free(r);
}
END_TEST

static bool drop_odd_inodes(void *arg, const struct lf_registry_entry *e)
{
    (*(int *)arg)++;
    return e->id.ino % 2 == 1;
}

START_TEST(sweep_removes_the_entries_the_callback_picks)
{
    struct lf_registry *r = open_ok();
    for (uint64_t i = 0; i < 1000; i++) {
        struct lf_file_id id = fid(1, i);
        ck_assert_int_eq(lf_registry_set(r, "app", &id, 0, i, "/log/x", 1), LF_OK);
    }
    ck_assert_int_eq(lf_registry_flush(r, &eb), LF_OK);
    int calls = 0;
    lf_registry_sweep(r, drop_odd_inodes, &calls);
    ck_assert_int_eq(calls, 1000);
    ck_assert_uint_eq(lf_registry_count(r), 500);
    ck_assert_int_eq(lf_registry_dirty(r), 1);
    ck_assert_ptr_null(lf_registry_find(r, "app", 1, 7));
    ck_assert_uint_eq(lf_registry_find(r, "app", 1, 8)->offset, 8);
    ck_assert_int_eq(lf_registry_flush(r, &eb), LF_OK);
    lf_registry_free(r);
    r = open_ok();
    ck_assert_uint_eq(lf_registry_count(r), 500);
    lf_registry_free(r);
}
END_TEST

/* Writes a small registry with a few odd paths and returns its bytes (free them). */
static char *sample_file(size_t *len)
{
    struct lf_registry *r = open_ok();
    size_t n_odd = sizeof(odd_paths) / sizeof(odd_paths[0]);
    for (size_t i = 0; i < n_odd; i++) {
        struct lf_file_id id = fid(2, 50 + i);
        ck_assert_int_eq(lf_registry_set(r, i % 2 ? "app" : "web", &id, 0, 77 * i, odd_paths[i],
                                         1700000000000 + (int64_t)i),
                         LF_OK);
    }
    ck_assert_int_eq(lf_registry_flush(r, &eb), LF_OK);
    lf_registry_free(r);
    return slurp(reg_path, len);
}

static void assert_file_is(const char *want, size_t n)
{
    size_t got_len = 0;
    char *got = slurp(reg_path, &got_len);
    ck_assert_uint_eq(got_len, n);
    if (n > 0)
        ck_assert_mem_eq(got, want, n);
    free(got);
}

START_TEST(registry_truncated_at_every_byte_is_refused_and_left_as_is)
{
    size_t n = 0;
    char *full = sample_file(&n);
    ck_assert_uint_gt(n, 300);
    for (size_t cut = 0; cut < n; cut++) {
        spit(reg_path, full, cut);
        assert_refused(cut == 0 ? "empty file" : "truncated");
        assert_file_is(full, cut);
    }
    spit(reg_path, full, n);
    struct lf_registry *r = open_ok();
    ck_assert_uint_eq(lf_registry_count(r), sizeof(odd_paths) / sizeof(odd_paths[0]));
    lf_registry_free(r);
    free(full);
}
END_TEST

START_TEST(registry_with_any_flipped_byte_is_refused_and_left_as_is)
{
    size_t n = 0;
    char *full = sample_file(&n);
    char *bad = malloc(n);
    ck_assert_ptr_nonnull(bad);
    size_t checksum_msgs = 0;
    for (size_t at = 0; at < n; at++) {
        static const unsigned char flips[] = { 0x01, 0x80, 0xff };
        for (size_t k = 0; k < sizeof(flips); k++) {
            memcpy(bad, full, n);
            bad[at] = (char)(bad[at] ^ flips[k]);
            spit(reg_path, bad, n);
            assert_refused(NULL);
            checksum_msgs += strstr(eb.msg, "checksum mismatch") != NULL;
            assert_file_is(bad, n);
        }
    }
    ck_assert_uint_gt(checksum_msgs, 3 * (n - 20)); /* all but the end line's own bytes */
    free(bad);
    free(full);
}
END_TEST

START_TEST(checksummed_but_malformed_records_name_their_line_and_byte)
{
    static const struct {
        const char *body;
        const char *what;
    } cases[] = {
        { "logferry-registry 1 1\napp\t1\t12x\t0\t0000000000000000\t0\t0\t/a\n",
          "line 2 (byte 22): bad inode \"12x\"" },
        { "logferry-registry 1 1\napp\t1\t2\t0\t0000000000000000\t0\t0\n",
          "line 2 (byte 22): 7 fields, want 8" },
        { "logferry-registry 1 1\napp\t1\t2\t1025\t0000000000000000\t0\t0\t/a\n",
          "bad fingerprint length \"1025\"" },
        { "logferry-registry 1 1\napp\t1\t2\t3\t00000000000000G0\t0\t0\t/a\n",
          "bad fingerprint hash" },
        { "logferry-registry 1 1\napp\t1\t2\t3\t0000000000000000\t18446744073709551616\t0\t/a\n",
          "bad offset" },
        { "logferry-registry 1 1\napp\t1\t2\t3\t0000000000000000\t0\t0\t/a\\q\n",
          "line 2 (byte 22): bad escape in path" },
        { "logferry-registry 1 1\napp\\x00\t1\t2\t3\t0000000000000000\t0\t0\t/a\n",
          "bad escape in input id" },
        { "logferry-registry 1 2\napp\t1\t2\t0\t0000000000000000\t0\t0\t/a\n"
          "app\t1\t2\t0\t0000000000000000\t9\t0\t/b\n",
          "line 3 (byte 56): duplicate entry for device 1 inode 2" },
        { "logferry-registry 1 3\napp\t1\t2\t0\t0000000000000000\t0\t0\t/a\n",
          "header announces 3 entries, the file holds 1" },
        { "logferry-registry 3 0\n", "version 3, this build reads 1 and 2" },
        { "logferry-registry 2 1\napp\t1\t2\t0\t0000000000000000\t0\t0\t/a\n",
          "line 2 (byte 22): 8 fields, want 9" },
        { "logferry-registry 2 1\napp\t1\t2\t0\t0000000000000000\t0\t0\t00000000000000x0\t/a\n",
          "line 2 (byte 22): bad stream id \"00000000000000x0\"" },
        { "logferry-registry 2 1\napp\t1\t2\t0\t0000000000000000\t0\t0x\t0000000000000000\t/a\n",
          "line 2 (byte 22): bad updated_ms \"0x\"" },
        { "some-other-file 1 0\n", "line 1 (byte 0): not a logferry registry" },
        { "", "no header" },
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        write_framed(cases[i].body);
        assert_refused(cases[i].what);
    }
    /* The same framing with a good record loads, so the cases above fail for their reason. */
    write_framed("logferry-registry 1 1\napp\t1\t2\t3\tffffffffffffffff\t4\t-5\t/a\\\\b\\x0a\n");
    struct lf_registry *r = open_ok();
    struct lf_registry_entry *e = lf_registry_find(r, "app", 1, 2);
    ck_assert_ptr_nonnull(e);
    ck_assert_uint_eq(e->id.fp_len, 3);
    ck_assert_uint_eq(e->id.fp_hash, UINT64_MAX);
    ck_assert_uint_eq(e->offset, 4);
    ck_assert_int_eq(e->updated_ms, -5);
    ck_assert_str_eq(e->path, "/a\\b\n");
    lf_registry_free(r);
}
END_TEST

START_TEST(leftover_tmp_from_a_crash_is_ignored_and_overwritten)
{
    char tmp_path[320];
    snprintf(tmp_path, sizeof(tmp_path), "%s/registry.tmp", dir);
    spit(tmp_path, "logferry-registry 1 5\nhalf a rec", 33);
    struct lf_registry *r = open_ok();
    ck_assert_uint_eq(lf_registry_count(r), 0);
    struct lf_file_id id = fid(4, 40);
    ck_assert_int_eq(lf_registry_set(r, "app", &id, 0, 123, "/log/a", 1), LF_OK);
    ck_assert_int_eq(lf_registry_flush(r, &eb), LF_OK);
    lf_registry_free(r);
    ck_assert_int_eq(access(tmp_path, F_OK), -1);
    r = open_ok();
    ck_assert_uint_eq(lf_registry_find(r, "app", 4, 40)->offset, 123);
    lf_registry_free(r);
}
END_TEST

/* issue 7: data_dir may be shared; a link planted at registry.tmp must not be followed. */
START_TEST(symlink_planted_at_the_tmp_name_is_replaced_not_followed)
{
    char tmp_path[320];
    char target[320];
    snprintf(tmp_path, sizeof(tmp_path), "%s/registry.tmp", dir);
    snprintf(target, sizeof(target), "%s/victim", dir);
    spit(target, "precious", 8);
    ck_assert_int_eq(chmod(target, 0644), 0);
    ck_assert_int_eq(symlink(target, tmp_path), 0);
    struct lf_registry *r = open_ok();
    struct lf_file_id id = fid(6, 60);
    ck_assert_int_eq(lf_registry_set(r, "app", &id, 0, 77, "/log/a", 1), LF_OK);
    ck_assert_int_eq(lf_registry_flush(r, &eb), LF_OK);
    lf_registry_free(r);
    size_t len = 0;
    char *victim = slurp(target, &len);
    ck_assert_uint_eq(len, 8);
    ck_assert_mem_eq(victim, "precious", 8);
    free(victim);
    struct stat st;
    ck_assert_int_eq(lstat(tmp_path, &st), -1);
    ck_assert_int_eq(lstat(reg_path, &st), 0);
    ck_assert(S_ISREG(st.st_mode));
    ck_assert_uint_eq(st.st_mode & 0777, 0600);
    r = open_ok();
    ck_assert_uint_eq(lf_registry_find(r, "app", 6, 60)->offset, 77);
    lf_registry_free(r);
}
END_TEST

START_TEST(data_dir_created_by_a_flush_is_private)
{
    char fresh[340];
    snprintf(fresh, sizeof(fresh), "%s/fresh", dir);
    mode_t old = umask(022);
    struct lf_registry *r = NULL;
    ck_assert_int_eq(lf_registry_open(fresh, &r, &eb), LF_OK);
    struct lf_file_id id = fid(7, 70);
    ck_assert_int_eq(lf_registry_set(r, "app", &id, 0, 1, "/log/a", 1), LF_OK);
    ck_assert_int_eq(lf_registry_flush(r, &eb), LF_OK);
    lf_registry_free(r);
    umask(old);
    struct stat st;
    ck_assert_int_eq(stat(fresh, &st), 0);
    ck_assert_uint_eq(st.st_mode & 0777, 0700);
}
END_TEST

START_TEST(failed_open_or_flush_says_which_step_and_flush_stays_dirty)
{
    char plain[320];
    snprintf(plain, sizeof(plain), "%s/plain-file", dir);
    spit(plain, "x", 1);
    char sub[340];
    snprintf(sub, sizeof(sub), "%s/sub", plain);
    struct lf_registry *r = NULL;
    ck_assert_int_eq(lf_registry_open(sub, &r, &eb), LF_EIO);
    ck_assert_ptr_null(r);
    char want[512];
    snprintf(want, sizeof(want), "registry: open %s/registry: Not a directory", sub);
    ck_assert_str_eq(eb.msg, want);

    /* A data_dir missing at open is fine: the first flush creates it. */
    char fresh[340];
    snprintf(fresh, sizeof(fresh), "%s/fresh", dir);
    ck_assert_int_eq(lf_registry_open(fresh, &r, &eb), LF_OK);
    struct lf_file_id id = fid(5, 50);
    ck_assert_int_eq(lf_registry_set(r, "app", &id, 0, 1, "/log/a", 1), LF_OK);
    spit(fresh, "not a dir", 9); /* until something else takes its name */
    ck_assert_int_eq(lf_registry_flush(r, &eb), LF_EIO);
    snprintf(want, sizeof(want), "registry: open %s/registry.tmp: Not a directory", fresh);
    ck_assert_str_eq(eb.msg, want);
    ck_assert_int_eq(lf_registry_dirty(r), 1);
    ck_assert_uint_eq(lf_registry_flushes(r), 0);
    ck_assert_int_eq(unlink(fresh), 0);
    ck_assert_int_eq(lf_registry_flush(r, &eb), LF_OK);
    ck_assert_uint_eq(lf_registry_flushes(r), 1);
    lf_registry_free(r);
    snprintf(reg_path, sizeof(reg_path), "%s/registry", fresh);
    ck_assert_int_eq(access(reg_path, R_OK), 0);
}
END_TEST

/* One step of the change sequence both registries of the writer test go through. */
static void change(struct lf_registry *r, int round)
{
    for (uint64_t i = 0; i < 300; i++) {
        struct lf_file_id id = fid(3, i);
        char path[64];
        snprintf(path, sizeof(path), "/log/%s-%" PRIu64 "-%d", i % 3 ? "a" : "b\tc", i,
                 (int)(i % 5 == 0 ? round : 0));
        ck_assert_int_eq(lf_registry_set(r, i % 2 ? "app" : "web", &id, 0, i * 10 + (uint64_t)round,
                                         path, 1700000000000 + round),
                         LF_OK);
    }
    lf_registry_remove(r, "web", 3, (uint64_t)round * 2);
}

static bool drop_every_seventh(void *arg, const struct lf_registry_entry *e)
{
    (void)arg;
    return e->id.ino % 7 == 3;
}

struct same_arg {
    struct lf_registry *other;
    int checked;
};

static bool same_in_other(void *arg, const struct lf_registry_entry *e)
{
    struct same_arg *a = arg;
    const struct lf_registry_entry *o = lf_registry_find(a->other, e->input_id, e->id.dev,
                                                         e->id.ino);
    ck_assert_ptr_nonnull(o);
    ck_assert_uint_eq(o->offset, e->offset);
    ck_assert_uint_eq(o->id.fp_hash, e->id.fp_hash);
    ck_assert_str_eq(o->path, e->path);
    ck_assert_int_eq(o->updated_ms, e->updated_ms);
    a->checked++;
    return false;
}

START_TEST(a_writer_thread_writes_the_file_a_flush_on_the_caller_would)
{
    char da[320];
    char db[320];
    snprintf(da, sizeof(da), "%s/plain", dir);
    snprintf(db, sizeof(db), "%s/writer", dir);
    struct lf_registry *a = NULL;
    struct lf_registry *b = NULL;
    ck_assert_int_eq(lf_registry_open(da, &a, &eb), LF_OK);
    ck_assert_int_eq(lf_registry_open(db, &b, &eb), LF_OK);
    change(a, 0);
    change(b, 0);
    ck_assert_int_eq(lf_registry_flush(b, &eb), LF_OK); /* before the writer: on this thread */
    ck_assert_uint_eq(lf_registry_flushes(b), 1);
    ck_assert_int_eq(lf_registry_start_writer(b, &eb), LF_OK);
    for (int round = 1; round <= 20; round++) {
        change(a, round);
        change(b, round);
        if (round == 10) {
            lf_registry_sweep(a, drop_every_seventh, NULL);
            lf_registry_sweep(b, drop_every_seventh, NULL);
        }
        ck_assert_int_eq(lf_registry_flush(a, &eb), LF_OK);
        ck_assert_int_eq(lf_registry_flush(b, &eb), LF_OK); /* handed over, not waited for */
    }
    ck_assert_int_eq(lf_registry_sync(b, &eb), LF_OK);
    uint64_t flushes = lf_registry_flushes(b);
    ck_assert_uint_ge(flushes, 2);
    ck_assert_uint_le(flushes, 21);
    ck_assert_int_eq(lf_registry_sync(b, &eb), LF_OK); /* nothing changed: no write */
    ck_assert_uint_eq(lf_registry_flushes(b), flushes);
    size_t n = lf_registry_count(a);
    ck_assert_uint_eq(lf_registry_count(b), n);
    lf_registry_free(a);
    lf_registry_free(b);
    /* What each file holds, loaded again: the same entries, field by field. */
    ck_assert_int_eq(lf_registry_open(da, &a, &eb), LF_OK);
    ck_assert_int_eq(lf_registry_open(db, &b, &eb), LF_OK);
    ck_assert_uint_eq(lf_registry_count(a), n);
    ck_assert_uint_eq(lf_registry_count(b), n);
    struct same_arg arg = { b, 0 };
    lf_registry_sweep(a, same_in_other, &arg);
    ck_assert_int_eq(arg.checked, (int)n);
    lf_registry_free(a);
    lf_registry_free(b);
}
END_TEST

/* Opens <dir>/<name> (its path left in d) and gives it a writer thread. */
static struct lf_registry *open_with_writer(char *d, size_t cap, const char *name)
{
    snprintf(d, cap, "%s/%s", dir, name);
    struct lf_registry *r = NULL;
    ck_assert_int_eq(lf_registry_open(d, &r, &eb), LF_OK);
    ck_assert_int_eq(lf_registry_start_writer(r, &eb), LF_OK);
    return r;
}

START_TEST(a_writer_failure_is_reported_by_the_next_flush_and_retried)
{
    char fresh[340];
    struct lf_registry *r = open_with_writer(fresh, sizeof(fresh), "fresh");
    struct lf_file_id id = fid(5, 50);
    ck_assert_int_eq(lf_registry_set(r, "app", &id, 0, 1, "/log/a", 1), LF_OK);
    spit(fresh, "not a dir", 9); /* until something else takes its name */
    ck_assert_int_eq(lf_registry_sync(r, &eb), LF_EIO);
    char want[512];
    snprintf(want, sizeof(want), "registry: open %s/registry.tmp: Not a directory", fresh);
    ck_assert_str_eq(eb.msg, want);
    ck_assert_uint_eq(lf_registry_flushes(r), 0);
    ck_assert_int_eq(unlink(fresh), 0);
    eb.msg[0] = '\0';
    ck_assert_int_eq(lf_registry_sync(r, &eb), LF_OK); /* nothing new, the write is retried */
    ck_assert_str_eq(eb.msg, "");
    ck_assert_uint_eq(lf_registry_flushes(r), 1);
    lf_registry_free(r);
    ck_assert_int_eq(lf_registry_open(fresh, &r, &eb), LF_OK);
    ck_assert_uint_eq(lf_registry_find(r, "app", 5, 50)->offset, 1);
    lf_registry_free(r);
}
END_TEST

/* Copies data_dir's registry and registry.log (if any) into dst, as a crash would leave
 * them: what the writer wrote, without the fold at its end. */
static void crash_copy(const char *src, const char *dst)
{
    ck_assert_int_eq(mkdir(dst, 0700), 0);
    const char *names[] = { "registry", "registry.log" };
    for (size_t i = 0; i < 2; i++) {
        char a[400];
        char b[400];
        snprintf(a, sizeof(a), "%s/%s", src, names[i]);
        snprintf(b, sizeof(b), "%s/%s", dst, names[i]);
        if (access(a, F_OK) != 0)
            continue;
        size_t n = 0;
        char *p = slurp(a, &n);
        spit(b, p, n);
        free(p);
    }
}

static off_t size_of(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 ? st.st_size : -1;
}

static void set_ok(struct lf_registry *r, const char *input, uint64_t ino, uint64_t offset)
{
    struct lf_file_id id = fid(9, ino);
    char path[64];
    snprintf(path, sizeof(path), "/var/log/app-%" PRIu64 ".log", ino);
    ck_assert_int_eq(lf_registry_set(r, input, &id, 0, offset, path, 1700000000000), LF_OK);
}

static uint64_t offset_in(const char *d, const char *input, uint64_t ino)
{
    struct lf_registry *r = NULL;
    ck_assert_int_eq(lf_registry_open(d, &r, &eb), LF_OK);
    const struct lf_registry_entry *e = lf_registry_find(r, input, 9, ino);
    uint64_t off = e != NULL ? e->offset : UINT64_MAX;
    lf_registry_free(r);
    return off;
}

START_TEST(a_writer_appends_only_what_changed_and_a_load_applies_it)
{
    char live[340];
    char crash[340];
    char lpath[400];
    struct lf_registry *r = open_with_writer(live, sizeof(live), "live");
    snprintf(crash, sizeof(crash), "%s/crash", dir);
    snprintf(lpath, sizeof(lpath), "%s/registry.log", live);
    for (uint64_t i = 0; i < 1000; i++)
        set_ok(r, "app", i, 100);
    ck_assert_int_eq(lf_registry_sync(r, &eb), LF_OK); /* the first write: a whole file */
    char file[400];
    snprintf(file, sizeof(file), "%s/registry", live);
    size_t before_len = 0;
    char *before = slurp(file, &before_len);
    ck_assert_int_eq(size_of(lpath), -1);
    set_ok(r, "app", 7, 777);
    lf_registry_remove(r, "app", 9, 8);
    ck_assert_int_eq(lf_registry_sync(r, &eb), LF_OK);
    ck_assert_uint_eq(lf_registry_flushes(r), 2);
    /* The file is as it was; the journal holds the two changes, a line each. */
    size_t after_len = 0;
    char *after = slurp(file, &after_len);
    ck_assert_uint_eq(after_len, before_len);
    ck_assert_int_eq(memcmp(before, after, before_len), 0);
    size_t jl = 0;
    char *j = slurp(lpath, &jl);
    ck_assert_uint_lt(jl, 200);
    ck_assert_int_eq(memcmp(j, "logferry-registry-log 2 ", 24), 0);
    ck_assert_ptr_nonnull(strstr(j, "\ns\tapp\t9\t7\t1024\t"));
    ck_assert_ptr_nonnull(strstr(j, "\nr\tapp\t9\t8\t"));
    free(j);
    free(before);
    free(after);
    crash_copy(live, crash); /* a crash here: the file and the journal */
    ck_assert_uint_eq(offset_in(crash, "app", 7), 777);
    ck_assert_uint_eq(offset_in(crash, "app", 8), UINT64_MAX);
    ck_assert_uint_eq(offset_in(crash, "app", 9), 100);
    /* A load that applied a journal folds it into the file at its first flush. */
    struct lf_registry *c = NULL;
    ck_assert_int_eq(lf_registry_open(crash, &c, &eb), LF_OK);
    ck_assert(lf_registry_dirty(c));
    ck_assert_uint_eq(lf_registry_count(c), 999);
    ck_assert_int_eq(lf_registry_flush(c, &eb), LF_OK);
    lf_registry_free(c);
    char clog[400];
    snprintf(clog, sizeof(clog), "%s/registry.log", crash);
    ck_assert_int_eq(size_of(clog), -1);
    ck_assert_uint_eq(offset_in(crash, "app", 7), 777);
    /* A writer that ends leaves one whole file. */
    lf_registry_free(r);
    ck_assert_int_eq(size_of(lpath), -1);
    ck_assert_uint_eq(offset_in(live, "app", 7), 777);
    ck_assert_uint_eq(offset_in(live, "app", 8), UINT64_MAX);
}
END_TEST

START_TEST(a_torn_or_damaged_journal_applies_its_whole_records_before_the_damage)
{
    char live[340];
    struct lf_registry *r = open_with_writer(live, sizeof(live), "live");
    set_ok(r, "app", 1, 10);
    set_ok(r, "app", 2, 20);
    ck_assert_int_eq(lf_registry_sync(r, &eb), LF_OK);
    set_ok(r, "app", 1, 11);
    ck_assert_int_eq(lf_registry_sync(r, &eb), LF_OK);
    set_ok(r, "app", 2, 22);
    ck_assert_int_eq(lf_registry_sync(r, &eb), LF_OK);
    char src[340];
    snprintf(src, sizeof(src), "%s/src", dir);
    crash_copy(live, src);
    lf_registry_free(r);
    char lpath[400];
    snprintf(lpath, sizeof(lpath), "%s/registry.log", src);
    size_t jl = 0;
    char *j = slurp(lpath, &jl);
    const char *rec1 = strchr(j, '\n') + 1;
    const char *rec2 = strchr(rec1, '\n') + 1;
    size_t end1 = (size_t)(rec2 - j);
    ck_assert_uint_eq(j[jl - 1], '\n');
    /* Cut at every byte: a record counts only once whole. */
    for (size_t cut = 0; cut <= jl; cut++) {
        char d[400];
        snprintf(d, sizeof(d), "%s/cut%zu", dir, cut);
        crash_copy(src, d);
        char lp[420];
        snprintf(lp, sizeof(lp), "%s/registry.log", d);
        spit(lp, j, cut);
        ck_assert_uint_eq(offset_in(d, "app", 1), cut >= end1 ? 11 : 10);
        ck_assert_uint_eq(offset_in(d, "app", 2), cut >= jl ? 22 : 20);
    }
    /* A flipped byte in the first record: it and everything after it are left out. */
    for (size_t at = (size_t)(rec1 - j); at < end1 - 1; at++) {
        char d[400];
        snprintf(d, sizeof(d), "%s/flip%zu", dir, at);
        crash_copy(src, d);
        char lp[420];
        snprintf(lp, sizeof(lp), "%s/registry.log", d);
        j[at] ^= 0x20;
        spit(lp, j, jl);
        j[at] ^= 0x20;
        ck_assert_uint_eq(offset_in(d, "app", 1), 10);
        ck_assert_uint_eq(offset_in(d, "app", 2), 20);
    }
    free(j);
}
END_TEST

START_TEST(symlink_planted_at_the_journal_name_is_replaced_not_followed)
{
    char live[340];
    char lpath[400];
    char target[400];
    struct lf_registry *r = open_with_writer(live, sizeof(live), "live");
    snprintf(lpath, sizeof(lpath), "%s/registry.log", live);
    snprintf(target, sizeof(target), "%s/victim", dir);
    set_ok(r, "app", 1, 1);
    ck_assert_int_eq(lf_registry_sync(r, &eb), LF_OK); /* the whole file; no journal yet */
    spit(target, "precious", 8);
    ck_assert_int_eq(symlink(target, lpath), 0);
    set_ok(r, "app", 1, 2);
    ck_assert_int_eq(lf_registry_sync(r, &eb), LF_OK); /* the journal's first append */
    size_t len = 0;
    char *victim = slurp(target, &len);
    ck_assert_uint_eq(len, 8);
    ck_assert_mem_eq(victim, "precious", 8);
    free(victim);
    struct stat st;
    ck_assert_int_eq(lstat(lpath, &st), 0);
    ck_assert(S_ISREG(st.st_mode));
    ck_assert_uint_eq(st.st_mode & 0777, 0600);
    char copy[340];
    snprintf(copy, sizeof(copy), "%s/copy", dir);
    crash_copy(live, copy);
    ck_assert_uint_eq(offset_in(copy, "app", 1), 2);
    lf_registry_free(r);
}
END_TEST

START_TEST(a_journal_beside_a_newer_file_is_ignored_and_the_journal_stays_bounded)
{
    char live[340];
    char lpath[400];
    struct lf_registry *r = open_with_writer(live, sizeof(live), "live");
    snprintf(lpath, sizeof(lpath), "%s/registry.log", live);
    set_ok(r, "app", 1, 1);
    set_ok(r, "app", 2, 2);
    ck_assert_int_eq(lf_registry_sync(r, &eb), LF_OK);
    /* Each flush changes one entry: about 80 bytes of journal. 3,000 of them would make
     * 240 KB; the journal is folded into the file whenever it would pass 64 KiB. */
    off_t most = 0;
    for (uint64_t k = 1; k <= 3000; k++) {
        set_ok(r, "app", 1, 1 + k);
        ck_assert_int_eq(lf_registry_sync(r, &eb), LF_OK);
        off_t n = size_of(lpath);
        most = n > most ? n : most;
    }
    ck_assert_int_le(most, 64 * 1024);
    ck_assert_int_gt(most, 32 * 1024);
    char old[340];
    snprintf(old, sizeof(old), "%s/old", dir);
    crash_copy(live, old);
    ck_assert_uint_eq(offset_in(old, "app", 1), 3001);
    /* The registry file rewritten (the fold at the writer's end) while an earlier journal
     * stays beside it, as a crash before its removal would leave it: ignored. */
    char oldlog[400];
    snprintf(oldlog, sizeof(oldlog), "%s/registry.log", old);
    size_t jl = 0;
    char *j = slurp(oldlog, &jl);
    set_ok(r, "app", 1, 5);
    ck_assert_int_eq(lf_registry_sync(r, &eb), LF_OK);
    lf_registry_free(r);
    ck_assert_int_eq(size_of(lpath), -1);
    spit(lpath, j, jl);
    free(j);
    ck_assert_uint_eq(offset_in(live, "app", 1), 5);
    ck_assert_uint_eq(offset_in(live, "app", 2), 2);
}
END_TEST

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static double cpu_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

START_TEST(hundred_thousand_entries_save_and_load_in_under_a_second)
{
    enum {
        N = 100000
    };
    struct lf_registry *r = open_ok();
    char path[128];
    for (uint64_t i = 0; i < N; i++) {
        snprintf(path, sizeof(path), "/var/log/app/service-%06" PRIu64 ".log", i);
        struct lf_file_id id = fid(2049, 1000000 + i);
        ck_assert_int_eq(lf_registry_set(r, i % 3 ? "app" : "nginx", &id, 0, i * 4096, path,
                                         1700000000000 + (int64_t)i),
                         LF_OK);
    }
    double t0 = now_s();
    double c0 = cpu_s();
    ck_assert_int_eq(lf_registry_flush(r, &eb), LF_OK);
    double save_s = now_s() - t0;
    double save_cpu = cpu_s() - c0;
    lf_registry_free(r);
    t0 = now_s();
    c0 = cpu_s();
    r = open_ok();
    double load_s = now_s() - t0;
    double load_cpu = cpu_s() - c0;
    struct stat st;
    ck_assert_int_eq(stat(reg_path, &st), 0);
    printf("registry: %d entries, %jd bytes: save %.3f s (cpu %.3f s), load %.3f s (cpu %.3f s)\n",
           N, (intmax_t)st.st_size, save_s, save_cpu, load_s, load_cpu);
    fflush(stdout); /* shown in the log even when an assertion below fails */
    ck_assert_uint_eq(lf_registry_count(r), N);
    struct lf_registry_entry *e = lf_registry_find(r, "app", 2049, 1000000 + 77777);
    ck_assert_ptr_nonnull(e);
    ck_assert_str_eq(e->path, "/var/log/app/service-077777.log");
    ck_assert_uint_eq(e->offset, 77777ull * 4096);
    /* The promise is under a second of work each. Measured with the sanitizer build on a
     * shared 2-core machine: alone at load 2 to 6, save 0.17-0.36 s and load 0.12-0.24 s of
     * wall time; beside a whole `make -j2 check`, save 0.19-1.30 s and load 0.29-0.66 s, while
     * the CPU time stays at 0.11-0.23 s throughout: what is slow then is the machine, not the
     * code. So the bound of one second holds the CPU time, which only the code moves; the
     * wall time (fsync included) must stay under 5 s, which catches a hang or a sleep. */
    ck_assert_double_lt(save_cpu, 1.0);
    ck_assert_double_lt(load_cpu, 1.0);
    ck_assert_double_lt(save_s, 5.0);
    ck_assert_double_lt(load_s, 5.0);
    lf_registry_free(r);
}
END_TEST

static Suite *registry_suite(void)
{
    Suite *s = suite_create("registry");
    TCase *tc = tcase_create("entries");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, missing_file_is_an_empty_registry_and_creates_nothing);
    tcase_add_test(tc, empty_registry_file_has_the_documented_bytes);
    tcase_add_test(tc, a_version_1_registry_file_loads_and_rewrites_as_version_2);
    tcase_add_test(tc, stream_ids_round_trip_through_the_file_and_the_journal);
    tcase_add_test(tc, a_version_1_journal_is_applied);
    tcase_add_test(tc, entries_round_trip_with_odd_paths_and_ids);
    tcase_add_test(tc, update_replaces_offset_path_and_fingerprint_and_remove_forgets);
    tcase_add_test(tc, flush_writes_only_when_something_changed);
    tcase_add_test(tc, sweep_removes_the_entries_the_callback_picks);
    tcase_add_test(tc, a_writer_thread_writes_the_file_a_flush_on_the_caller_would);
    tcase_add_test(tc, a_writer_failure_is_reported_by_the_next_flush_and_retried);
    tcase_add_test(tc, a_writer_appends_only_what_changed_and_a_load_applies_it);
    tcase_add_test(tc, a_torn_or_damaged_journal_applies_its_whole_records_before_the_damage);
    tcase_add_test(tc, a_journal_beside_a_newer_file_is_ignored_and_the_journal_stays_bounded);
    tcase_add_test(tc, symlink_planted_at_the_journal_name_is_replaced_not_followed);
    suite_add_tcase(s, tc);

    tc = tcase_create("durability");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, registry_truncated_at_every_byte_is_refused_and_left_as_is);
    tcase_add_test(tc, registry_with_any_flipped_byte_is_refused_and_left_as_is);
    tcase_add_test(tc, checksummed_but_malformed_records_name_their_line_and_byte);
    tcase_add_test(tc, leftover_tmp_from_a_crash_is_ignored_and_overwritten);
    tcase_add_test(tc, symlink_planted_at_the_tmp_name_is_replaced_not_followed);
    tcase_add_test(tc, data_dir_created_by_a_flush_is_private);
    tcase_add_test(tc, failed_open_or_flush_says_which_step_and_flush_stays_dirty);
    suite_add_tcase(s, tc);

    tc = tcase_create("scale");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, hundred_thousand_entries_save_and_load_in_under_a_second);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(registry_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
