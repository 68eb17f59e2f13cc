/* check_spool.c - the spool's record format on real files: append, commit, read back, reopen,
 * CRC mismatches and torn tails skipped and counted, segments rolled over and removed; and
 * batches through the record payload and back; and a disk that fails writes and fdatasyncs
 * (spool_faults.h): nothing is visible or durable past the last good fdatasync, and the
 * records appended again after a failure are read once. */
#include "config.h"

#include <check.h>
#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "logferry/batch.h"
#include "logferry/event.h"
#include "logferry/spool.h"
#include "spool_faults.h"

static char root[64];
static char dir[128];
static struct lf_buf payload;

static void setup(void)
{
    strcpy(root, "/tmp/check_spool.XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(root));
    snprintf(dir, sizeof(dir), "%s/spool", root);
    lf_buf_init(&payload, LF_SPOOL_MAX_RECORD);
}

static void teardown(void)
{
    lf_buf_release(&payload);
    char cmd[160];
    snprintf(cmd, sizeof(cmd), "rm -rf %s", root);
    ck_assert_int_eq(system(cmd), 0);
}

static struct lf_spool *open_spool(uint64_t max_bytes, uint64_t segment_bytes)
{
    struct lf_spool *s = NULL;
    struct lf_errbuf eb = { "" };
    ck_assert_msg(lf_spool_open(dir, max_bytes, segment_bytes, &s, &eb) == LF_OK, "%s", eb.msg);
    return s;
}

/* Appends "record <i>" padded to len bytes. */
static void append(struct lf_spool *s, int i, size_t len)
{
    char buf[4096];
    ck_assert_uint_le(len, sizeof(buf));
    memset(buf, 'a' + i % 26, len);
    int n = snprintf(buf, sizeof(buf), "record %d", i);
    buf[n] = ' ';
    struct lf_errbuf eb = { "" };
    ck_assert_msg(lf_spool_append(s, buf, len, &eb) == LF_OK, "%s", eb.msg);
}

static void commit(struct lf_spool *s)
{
    struct lf_errbuf eb = { "" };
    ck_assert_msg(lf_spool_commit(s, &eb) == LF_OK, "%s", eb.msg);
}

/* Reads the next record and checks it is record i; returns its end. */
static struct lf_spool_pos expect(struct lf_spool *s, int i)
{
    struct lf_spool_pos end;
    ck_assert_int_eq(lf_spool_next(s, &payload, &end), LF_OK);
    char want[32];
    int n = snprintf(want, sizeof(want), "record %d ", i);
    ck_assert_uint_ge(payload.len, (size_t)n);
    ck_assert_msg(memcmp(payload.ptr, want, (size_t)n) == 0, "want %s, got %.*s", want, n,
                  payload.ptr);
    return end;
}

static void expect_none(struct lf_spool *s)
{
    struct lf_spool_pos end;
    ck_assert_int_eq(lf_spool_next(s, &payload, &end), LF_EAGAIN);
}

/* The names of the segment files in dir, counted. */
static int count_segments(void)
{
    DIR *d = opendir(dir);
    ck_assert_ptr_nonnull(d);
    int n = 0;
    struct dirent *de;
    while ((de = readdir(d)) != NULL)
        n += strstr(de->d_name, ".spool") != NULL;
    closedir(d);
    return n;
}

static void first_segment(char *path, size_t cap)
{
    DIR *d = opendir(dir);
    ck_assert_ptr_nonnull(d);
    struct dirent *de;
    char best[NAME_MAX + 1] = "";
    while ((de = readdir(d)) != NULL) {
        if (strstr(de->d_name, ".spool") != NULL &&
            (best[0] == '\0' || strcmp(de->d_name, best) < 0))
            snprintf(best, sizeof(best), "%s", de->d_name);
    }
    closedir(d);
    ck_assert(best[0] != '\0');
    snprintf(path, cap, "%s/%s", dir, best);
}

START_TEST(records_are_read_back_in_order_once_committed)
{
    struct lf_spool *s = open_spool(1 << 20, 0);
    append(s, 1, 100);
    append(s, 2, 200);
    expect_none(s); /* not committed: not visible */
    commit(s);
    expect(s, 1);
    struct lf_spool_pos end = expect(s, 2);
    ck_assert_uint_eq(end.off, 2 * LF_SPOOL_HEADER_BYTES + 300);
    expect_none(s);
    struct lf_spool_stats st;
    lf_spool_stats(s, &st);
    ck_assert_uint_eq(st.records, 2);
    ck_assert_uint_eq(st.commits, 1);
    ck_assert_uint_eq(st.bytes, 2 * LF_SPOOL_HEADER_BYTES + 300);
    ck_assert_uint_eq(st.undelivered, st.bytes);
    ck_assert_uint_eq(st.corrupt, 0);
    lf_spool_close(s);

    /* Permissions: the directory 0700, the segment 0600. */
    struct stat sb;
    ck_assert_int_eq(stat(dir, &sb), 0);
    ck_assert_uint_eq(sb.st_mode & 0777, 0700);
    char path[512];
    first_segment(path, sizeof(path));
    ck_assert_int_eq(stat(path, &sb), 0);
    ck_assert_uint_eq(sb.st_mode & 0777, 0600);
}
END_TEST

START_TEST(a_reopened_spool_resumes_after_what_was_released)
{
    struct lf_spool *s = open_spool(1 << 20, 0);
    for (int i = 1; i <= 3; i++)
        append(s, i, 64);
    commit(s);
    expect(s, 1);
    struct lf_spool_pos end = expect(s, 2);
    lf_spool_release(s, &end); /* 1 and 2 delivered; 3 read, not delivered */
    lf_spool_close(s);

    s = open_spool(1 << 20, 0);
    expect(s, 3);
    expect_none(s);
    append(s, 4, 64); /* a new segment: the old one is never appended to */
    commit(s);
    expect(s, 4);
    ck_assert_int_eq(count_segments(), 2);
    lf_spool_close(s);

    s = open_spool(1 << 20, 0); /* nothing released since: 3 and 4 again */
    expect(s, 3);
    end = expect(s, 4);
    lf_spool_release(s, &end);
    ck_assert(lf_spool_empty(s));
    lf_spool_close(s);
    ck_assert_int_eq(count_segments(), 0);
}
END_TEST

/* Each output's own position survives a close: an output ahead of the delivered position
 * resumes where it was, one behind it (or never set) at the delivered position, and a name
 * the cursor file cannot hold (a newline) too. */
START_TEST(each_output_keeps_its_own_position_across_a_reopen)
{
    struct lf_spool *s = open_spool(1 << 20, 0);
    for (int i = 1; i <= 4; i++)
        append(s, i, 64);
    commit(s);
    struct lf_spool_pos e1 = expect(s, 1);
    expect(s, 2);
    struct lf_spool_pos e3 = expect(s, 3);
    lf_spool_release(s, &e1); /* the slow output has 1 only */
    lf_spool_set_output_pos(s, "fast", e3);
    lf_spool_set_output_pos(s, "odd\nname", e3);
    lf_spool_set_output_pos(s, "behind", (struct lf_spool_pos){ e1.seg, 0 });
    struct lf_spool_pos p = lf_spool_output_pos(s, "fast");
    ck_assert_uint_eq(p.off, e3.off);
    p = lf_spool_output_pos(s, "slow");
    ck_assert_uint_eq(p.off, e1.off);
    lf_spool_close(s);

    s = open_spool(1 << 20, 0);
    p = lf_spool_output_pos(s, "fast");
    ck_assert_uint_eq(p.seg, e3.seg);
    ck_assert_uint_eq(p.off, e3.off);
    p = lf_spool_output_pos(s, "slow"); /* never set: the delivered position */
    ck_assert_uint_eq(p.off, e1.off);
    p = lf_spool_output_pos(s, "behind");
    ck_assert_uint_eq(p.off, e1.off);
    p = lf_spool_output_pos(s, "odd\nname");
    ck_assert_uint_eq(p.off, e1.off);
    expect(s, 2); /* the reader starts at the delivered position */
    lf_spool_close(s);
}
END_TEST

/* Offset of record k (0-based) in a segment of records of len payload bytes each. */
static off_t record_at(int k, size_t len)
{
    return (off_t)((size_t)k * (LF_SPOOL_HEADER_BYTES + len));
}

static void poke(const char *path, off_t at, char c)
{
    int fd = open(path, O_WRONLY);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(pwrite(fd, &c, 1, at), 1);
    close(fd);
}

START_TEST(a_crc_mismatch_is_skipped_and_counted)
{
    struct lf_spool *s = open_spool(1 << 20, 0);
    for (int i = 1; i <= 5; i++)
        append(s, i, 300);
    commit(s);
    lf_spool_close(s);
    char path[512];
    first_segment(path, sizeof(path));
    poke(path, record_at(1, 300) + LF_SPOOL_HEADER_BYTES + 150, 'Z'); /* record 2's payload */
    poke(path, record_at(3, 300) + 5, 0x7f); /* record 4's length: its header CRC fails */

    s = open_spool(1 << 20, 0);
    expect(s, 1);
    expect(s, 3);
    struct lf_spool_pos end = expect(s, 5);
    expect_none(s);
    struct lf_spool_stats st;
    lf_spool_stats(s, &st);
    ck_assert_uint_eq(st.corrupt, 2);
    lf_spool_release(s, &end);
    lf_spool_close(s);
}
END_TEST

START_TEST(a_torn_tail_is_skipped_and_later_records_still_read)
{
    struct lf_spool *s = open_spool(1 << 20, 0);
    for (int i = 1; i <= 3; i++)
        append(s, i, 500);
    commit(s);
    lf_spool_close(s);
    char path[512];
    first_segment(path, sizeof(path));
    /* A kill in the middle of the third record's write. */
    ck_assert_int_eq(truncate(path, record_at(2, 500) + LF_SPOOL_HEADER_BYTES + 123), 0);

    s = open_spool(1 << 20, 0);
    append(s, 4, 500);
    commit(s);
    expect(s, 1);
    expect(s, 2);
    expect(s, 4); /* the torn 3 is skipped, the next segment read */
    expect_none(s);
    struct lf_spool_stats st;
    lf_spool_stats(s, &st);
    ck_assert_uint_eq(st.corrupt, 1);
    lf_spool_close(s);

    /* A torn header (fewer than 16 bytes) too. */
    first_segment(path, sizeof(path));
    ck_assert_int_eq(truncate(path, record_at(1, 500) + 7), 0);
    s = open_spool(1 << 20, 0);
    expect(s, 1);
    expect(s, 4);
    lf_spool_stats(s, &st);
    ck_assert_uint_eq(st.corrupt, 1);
    lf_spool_close(s);
}
END_TEST

START_TEST(segments_roll_over_and_go_once_delivered)
{
    /* 5 records of 216 bytes pass 1000: a segment holds 5. */
    struct lf_spool *s = open_spool(1 << 20, 1000);
    for (int i = 0; i < 20; i++)
        append(s, i, 200);
    commit(s);
    ck_assert_int_eq(count_segments(), 4);
    struct lf_spool_stats st;
    lf_spool_stats(s, &st);
    ck_assert_uint_eq(st.segments, 4);
    ck_assert_uint_eq(st.bytes, 20 * (LF_SPOOL_HEADER_BYTES + 200));
    struct lf_spool_pos end = { 0, 0 };
    for (int i = 0; i < 12; i++)
        end = expect(s, i);
    lf_spool_release(s, &end); /* two whole segments and two records of the third */
    ck_assert_int_eq(count_segments(), 2);
    lf_spool_stats(s, &st);
    ck_assert_uint_eq(st.segments_removed, 2);
    ck_assert_uint_eq(st.bytes, 10 * (LF_SPOOL_HEADER_BYTES + 200));
    ck_assert_uint_eq(st.undelivered, 8 * (LF_SPOOL_HEADER_BYTES + 200));
    for (int i = 12; i < 20; i++)
        end = expect(s, i);
    lf_spool_release(s, &end);
    ck_assert_int_eq(count_segments(), 0);
    lf_spool_stats(s, &st);
    ck_assert_uint_eq(st.bytes, 0);
    ck_assert(lf_spool_empty(s));
    append(s, 20, 200); /* the writer starts afresh */
    commit(s);
    expect(s, 20);
    lf_spool_close(s);
}
END_TEST

START_TEST(a_full_spool_refuses_after_an_interrupt)
{
    struct lf_spool *s = open_spool(2000, 500);
    for (int i = 0; i < 5; i++)
        append(s, i, 400);
    commit(s);
    lf_spool_interrupt(s); /* otherwise the next append would wait for a release */
    struct lf_errbuf eb = { "" };
    ck_assert_int_eq(lf_spool_append(s, "x", 1, &eb), LF_EAGAIN);
    struct lf_spool_stats st;
    lf_spool_stats(s, &st);
    ck_assert_uint_eq(st.records, 5);
    ck_assert_uint_le(st.bytes, 2000 + LF_SPOOL_HEADER_BYTES + 400);
    lf_spool_close(s);
}
END_TEST

/* ---- batches as payloads ---- */

static struct lf_source *sources[2];

static void setup_batch(void)
{
    setup();
    ck_assert_int_eq(
        lf_source_new("/var/log/a.log", "app", "node-1", "{\"env\":\"prod\"}", false, &sources[0]),
        LF_OK);
    ck_assert_int_eq(lf_source_new(NULL, "stdin", NULL, NULL, false, &sources[1]), LF_OK);
    sources[0]->stream_id = UINT64_C(0x8877665544332211);
    sources[1]->stream_id = UINT64_MAX - 1;
}

static void teardown_batch(void)
{
    lf_source_free(sources[0]);
    lf_source_free(sources[1]);
    teardown();
}

static void fill(struct lf_batch *b)
{
    static const char *msgs[] = { "first line", "second \"quoted\" line", "", "caf\xc3\xa9 4" };
    for (size_t i = 0; i < 4; i++) {
        struct lf_event ev = { lf_str_make(msgs[i], strlen(msgs[i])),
                               INT64_C(1796000523456000000) + (int64_t)i,
                               i * 100,
                               i * 100 + 50,
                               i == 2 ? LF_EVENT_DROPPED : 0,
                               sources[i % 2],
                               i == 3 ? lf_str_make("\"stream\":\"stdout\"", 17)
                                      : lf_str_make("", 0),
                               0 };
        ck_assert_int_eq(lf_batch_add(b, &ev), LF_OK);
    }
}

static void roundtrip(enum lf_batch_mode mode)
{
    struct lf_batch *b = lf_batch_new(100, 1 << 20);
    struct lf_batch *back = lf_batch_new(2, 16); /* smaller limits than the batch: still fits */
    ck_assert_int_eq(lf_batch_set_mode(b, mode), LF_OK);
    fill(b);
    struct lf_spool_codec c = { 0 };
    const char *routes[] = { "collector", "archive" };
    ck_assert_int_eq(lf_spool_encode(&c, b, "app", routes, 2, 1), LF_OK);
    struct lf_spool_meta m = { 0 };
    struct lf_str p = lf_buf_str(&c.out);
    ck_assert_int_eq(lf_spool_decode(&c, p, back, &m), LF_OK);
    ck_assert_uint_eq(m.input_id.len, 3);
    ck_assert(memcmp(m.input_id.ptr, "app", 3) == 0);
    ck_assert_uint_eq(m.n_routes, 2);
    ck_assert(memcmp(m.routes[1].ptr, "archive", 7) == 0);
    ck_assert_uint_eq(m.n_sources, 2);
    ck_assert_uint_eq(lf_batch_count(back), 4);
    ck_assert_uint_eq(lf_batch_dropped(back), 1);
    ck_assert_int_eq(lf_batch_get_mode(back), mode);
    for (size_t i = 0; i < 4; i++) {
        const struct lf_event *x = lf_batch_event(b, i), *y = lf_batch_event(back, i);
        ck_assert_int_eq(x->timestamp_ns, y->timestamp_ns);
        ck_assert_uint_eq(x->offset, y->offset);
        ck_assert_uint_eq(x->end_offset, y->end_offset);
        ck_assert_uint_eq(x->flags, y->flags);
        ck_assert_str_eq(x->source->input_id, y->source->input_id);
        ck_assert_uint_eq(x->source->stream_id, y->source->stream_id); /* the same _ids */
        ck_assert_uint_eq(x->message.len, y->message.len);
        ck_assert(x->message.len == 0 ||
                  memcmp(x->message.ptr, y->message.ptr, x->message.len) == 0);
    }
    ck_assert_str_eq(lf_batch_event(back, 0)->source->path, "/var/log/a.log");
    ck_assert_ptr_null(lf_batch_event(back, 1)->source->path);
    struct lf_str n1, n2;
    ck_assert_int_eq(lf_batch_ndjson(b, &n1), LF_OK);
    ck_assert_int_eq(lf_batch_ndjson(back, &n2), LF_OK);
    ck_assert_uint_eq(n1.len, n2.len); /* the same bytes go out */
    ck_assert(memcmp(n1.ptr, n2.ptr, n1.len) == 0);

    /* A payload cut short, or of another version, is refused, never read past its end. */
    lf_batch_reset(back);
    ck_assert_int_eq(lf_spool_decode(&c, lf_str_make(p.ptr, p.len - 3), back, &m), LF_EINVAL);
    lf_batch_reset(back);
    char *copy = malloc(p.len);
    memcpy(copy, p.ptr, p.len);
    copy[0] = 9;
    ck_assert_int_eq(lf_spool_decode(&c, lf_str_make(copy, p.len), back, &m), LF_EINVAL);
    free(copy);
    ck_assert_uint_eq(m.n_sources, 0);
    lf_spool_meta_release(&m);
    lf_spool_codec_release(&c);
    lf_batch_free(back);
    lf_batch_free(b);
}

/* A record written before sources had stream ids (format version 1: no u64 after each
 * source's tail_at) still decodes, its sources with stream id 0. Made here from a version 2
 * payload by taking those eight bytes out. */
START_TEST(a_version_1_record_still_decodes)
{
    struct lf_batch *b = lf_batch_new(100, 1 << 20);
    struct lf_batch *back = lf_batch_new(100, 1 << 20);
    fill(b);
    struct lf_spool_codec c = { 0 };
    const char *routes[] = { "collector" };
    ck_assert_int_eq(lf_spool_encode(&c, b, "app", routes, 1, 1), LF_OK);
    struct lf_str p = lf_buf_str(&c.out);
    ck_assert_uint_eq((unsigned char)p.ptr[0], 2);
    char *v1 = malloc(p.len);
    size_t at = 16 + 4 + 3 + 4 + 9; /* header, input id, one route */
    size_t n = 0;
    memcpy(v1, p.ptr, at);
    n = at;
    for (size_t i = 0; i < 2; i++) {
        const struct lf_source *s = sources[i];
        size_t len = 1 + 4 + (s->path != NULL ? strlen(s->path) : 0) + 4 + strlen(s->input_id) + 4 +
                     s->log_head.len + 4 + s->tail.len + 16;
        memcpy(v1 + n, p.ptr + at, len);
        n += len;
        at += len + 8; /* the stream id left out */
    }
    memcpy(v1 + n, p.ptr + at, p.len - at);
    n += p.len - at;
    v1[0] = 1;
    struct lf_spool_meta m = { 0 };
    ck_assert_int_eq(lf_spool_decode(&c, lf_str_make(v1, n), back, &m), LF_OK);
    ck_assert_uint_eq(m.n_sources, 2);
    ck_assert_uint_eq(lf_batch_count(back), 4);
    ck_assert_uint_eq(lf_batch_event(back, 0)->source->stream_id, 0);
    ck_assert_str_eq(lf_batch_event(back, 0)->source->path, "/var/log/a.log");
    ck_assert_uint_eq(lf_batch_event(back, 3)->offset, 300);
    free(v1);
    lf_spool_meta_release(&m);
    lf_spool_codec_release(&c);
    lf_batch_free(back);
    lf_batch_free(b);
}
END_TEST

START_TEST(a_batch_that_keeps_its_events_comes_back_byte_identical)
{
    roundtrip(LF_BATCH_KEEP_EVENTS);
}
END_TEST

START_TEST(an_encoded_batch_comes_back_byte_identical)
{
    roundtrip(LF_BATCH_ENCODE_ON_ADD);
}
END_TEST

static enum lf_err try_append(struct lf_spool *s, int i, size_t len)
{
    char buf[4096];
    memset(buf, 'a' + i % 26, len);
    int n = snprintf(buf, sizeof(buf), "record %d", i);
    buf[n] = ' ';
    struct lf_errbuf eb = { "" };
    return lf_spool_append(s, buf, len, &eb);
}

/* Records first..last, read once each in order, then nothing; returns the last's end. */
static struct lf_spool_pos expect_run(struct lf_spool *s, int first, int last)
{
    struct lf_spool_pos end = { 0, 0 };
    for (int i = first; i <= last; i++)
        end = expect(s, i);
    expect_none(s);
    return end;
}

/* Closes s, opens the spool again and expects records first..last in it, once each. */
static void reopen_and_expect(struct lf_spool *s, uint64_t segment_bytes, int first, int last)
{
    lf_spool_close(s);
    s = open_spool(1 << 20, segment_bytes);
    expect_run(s, first, last);
    lf_spool_close(s);
}

static off_t segment_size(void)
{
    char path[512];
    first_segment(path, sizeof(path));
    struct stat st;
    ck_assert_int_eq(stat(path, &st), 0);
    return st.st_size;
}

/* A failed fdatasync leaves what it covered neither visible nor in the file: the writer
 * appends those records again, and each is read once (not twice, as when the first copies
 * stayed behind and a later fdatasync made them visible). */
START_TEST(a_failed_commit_cuts_back_and_what_is_appended_again_is_read_once)
{
    struct lf_spool *s = open_spool(1 << 20, 0);
    append(s, 1, 100);
    commit(s);
    append(s, 2, 100);
    append(s, 3, 100);
    fault_set(&fail_syncs, 1);
    struct lf_errbuf eb = { "" };
    ck_assert_int_eq(lf_spool_commit(s, &eb), LF_EIO);
    ck_assert_msg(strstr(eb.msg, "fdatasync") != NULL, "message: %s", eb.msg);
    ck_assert_int_eq(segment_size(), record_at(1, 100)); /* cut back to record 1 */
    ck_assert_uint_eq(lf_spool_appended(s), 1);
    ck_assert_uint_eq(lf_spool_durable(s), 1);
    expect_run(s, 1, 1);
    append(s, 2, 100);
    append(s, 3, 100);
    ck_assert_uint_eq(lf_spool_durable(s), 1);
    commit(s);
    ck_assert_uint_eq(lf_spool_durable(s), 3);
    expect_run(s, 2, 3);
    reopen_and_expect(s, 0, 1, 3);
}
END_TEST

/* A write that fails after an fdatasync that failed too: the record appended before it was
 * never durable, so no reader sees it (nor may a later commit pass it for durable) until
 * it is appended again and synced. */
START_TEST(a_failed_write_leaves_nothing_unsynced_behind)
{
    struct lf_spool *s = open_spool(1 << 20, 0);
    append(s, 1, 100);
    fault_set(&fail_writes, 1);
    fault_set(&fail_syncs, 1);
    ck_assert_int_eq(try_append(s, 2, 100), LF_EIO);
    fault_set(&fail_syncs, 0); /* had the failed write called for one: it did not count */
    ck_assert_int_eq(segment_size(), 0);
    ck_assert_uint_eq(lf_spool_appended(s), 0);
    ck_assert_uint_eq(lf_spool_durable(s), 0);
    expect_none(s);
    commit(s); /* nothing in the spool to make durable */
    expect_none(s);
    append(s, 1, 100);
    append(s, 2, 100);
    commit(s);
    expect_run(s, 1, 2);
    reopen_and_expect(s, 0, 1, 2);
}
END_TEST

/* The fdatasync that closes a full segment fails: the segment is not sealed (a sealed
 * segment is read to its end), and its records appended again are read once. */
START_TEST(a_failed_sync_at_a_segment_roll_seals_nothing)
{
    struct lf_spool *s = open_spool(1 << 20, 1000); /* 5 records of 216 bytes pass 1000 */
    for (int i = 0; i < 4; i++)
        append(s, i, 200);
    fault_set(&fail_syncs, 1);
    ck_assert_int_eq(try_append(s, 4, 200), LF_EIO);
    ck_assert_uint_eq(lf_spool_durable(s), 0);
    ck_assert_int_eq(segment_size(), 0);
    expect_none(s);
    for (int i = 0; i < 6; i++)
        append(s, i, 200);
    commit(s);
    expect_run(s, 0, 5);
    ck_assert_int_eq(count_segments(), 2);
    reopen_and_expect(s, 1000, 0, 5);
}
END_TEST

/* A new segment's name is durable only once its directory is synced: until then its records
 * are not committed. */
START_TEST(a_failed_directory_sync_fails_the_commit)
{
    struct lf_spool *s = open_spool(1 << 20, 0);
    append(s, 1, 100);
    fault_set(&fail_dir_syncs, 1);
    struct lf_errbuf eb = { "" };
    ck_assert_int_eq(lf_spool_commit(s, &eb), LF_EIO);
    ck_assert_msg(strstr(eb.msg, "fsync of directory") != NULL, "message: %s", eb.msg);
    ck_assert_uint_eq(lf_spool_durable(s), 0);
    expect_none(s);
    append(s, 1, 100);
    commit(s);
    expect_run(s, 1, 1);
    reopen_and_expect(s, 0, 1, 1);
}
END_TEST

static Suite *spool_suite(void)
{
    Suite *s = suite_create("spool");
    TCase *tc = tcase_create("records");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, records_are_read_back_in_order_once_committed);
    tcase_add_test(tc, a_reopened_spool_resumes_after_what_was_released);
    tcase_add_test(tc, each_output_keeps_its_own_position_across_a_reopen);
    tcase_add_test(tc, a_crc_mismatch_is_skipped_and_counted);
    tcase_add_test(tc, a_torn_tail_is_skipped_and_later_records_still_read);
    tcase_add_test(tc, segments_roll_over_and_go_once_delivered);
    tcase_add_test(tc, a_full_spool_refuses_after_an_interrupt);
    suite_add_tcase(s, tc);
    tc = tcase_create("faults");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, a_failed_commit_cuts_back_and_what_is_appended_again_is_read_once);
    tcase_add_test(tc, a_failed_write_leaves_nothing_unsynced_behind);
    tcase_add_test(tc, a_failed_sync_at_a_segment_roll_seals_nothing);
    tcase_add_test(tc, a_failed_directory_sync_fails_the_commit);
    suite_add_tcase(s, tc);
    tc = tcase_create("payloads");
    tcase_add_checked_fixture(tc, setup_batch, teardown_batch);
    tcase_add_test(tc, a_batch_that_keeps_its_events_comes_back_byte_identical);
    tcase_add_test(tc, a_version_1_record_still_decodes);
    tcase_add_test(tc, an_encoded_batch_comes_back_byte_identical);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(spool_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
