/* check_batch.c - batch limits, NDJSON, zstd frames, memory reuse. */
#include "config.h"

#include <check.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#define ZSTD_STATIC_LINKING_ONLY /* ZSTD_getFrameHeader() */
#include <zlib.h>
#include <zstd.h>

#include "logferry/batch.h"

static struct lf_source *src;

static void setup(void)
{
    ck_assert_int_eq(
        lf_source_new("/var/log/a.log", "app", "node-1", "{\"env\":\"prod\"}", false, &src), LF_OK);
}

static void teardown(void)
{
    lf_source_free(src);
}

static struct lf_event event(const char *msg, size_t len, uint64_t off)
{
    struct lf_event ev = { lf_str_make(msg, len),
                           INT64_C(1796000523456000000) + (int64_t)off,
                           off,
                           off + len + 1,
                           0,
                           src,
                           { NULL, 0 },
                           0 };
    return ev;
}

static enum lf_err add(struct lf_batch *b, const char *msg, uint64_t off)
{
    struct lf_event ev = event(msg, strlen(msg), off);
    return lf_batch_add(b, &ev);
}

/* Fills b with n events "line <i> ..." of growing length. */
static void fill(struct lf_batch *b, size_t n)
{
    char msg[128];
    for (size_t i = 0; i < n; i++) {
        int len = snprintf(msg, sizeof(msg), "line %zu %.*s", i, (int)(i % 64),
                           "abcdefghijklmnopqrstuvwxyzabcdefghijklmnopqrstuvwxyzabcdefghijklmn");
        struct lf_event ev = event(msg, (size_t)len, i * 100);
        ck_assert_int_eq(lf_batch_add(b, &ev), LF_OK);
    }
}

static size_t count_newlines(struct lf_str s)
{
    size_t n = 0;
    for (size_t i = 0; i < s.len; i++)
        n += s.ptr[i] == '\n';
    return n;
}

START_TEST(batch_refuses_the_event_past_max_events)
{
    struct lf_batch *b = lf_batch_new(3, 1000);
    ck_assert_int_eq(add(b, "a", 0), LF_OK);
    ck_assert_int_eq(add(b, "b", 2), LF_OK);
    ck_assert_int_eq(add(b, "c", 4), LF_OK);
    ck_assert_int_eq(add(b, "d", 6), LF_ETOOBIG);
    ck_assert_uint_eq(lf_batch_count(b), 3);
    ck_assert_uint_eq(lf_batch_bytes(b), 3);
    lf_batch_free(b);
}
END_TEST

START_TEST(batch_refuses_the_event_past_max_bytes)
{
    struct lf_batch *b = lf_batch_new(100, 10);
    ck_assert_int_eq(add(b, "123456", 0), LF_OK);
    ck_assert_int_eq(add(b, "12345", 7), LF_ETOOBIG);
    ck_assert_int_eq(add(b, "1234", 7), LF_OK);
    ck_assert_int_eq(add(b, "", 12), LF_OK);
    ck_assert_int_eq(add(b, "1", 13), LF_ETOOBIG);
    ck_assert_uint_eq(lf_batch_count(b), 3);
    ck_assert_uint_eq(lf_batch_bytes(b), 10);
    lf_batch_free(b);
}
END_TEST

START_TEST(empty_batch_accepts_one_oversize_event)
{
    struct lf_batch *b = lf_batch_new(10, 4);
    char big[100];
    memset(big, 'x', sizeof(big));
    struct lf_event ev = event(big, sizeof(big), 0);
    ck_assert_int_eq(lf_batch_add(b, &ev), LF_OK);
    ck_assert_int_eq(add(b, "y", 101), LF_ETOOBIG);
    ck_assert_uint_eq(lf_batch_count(b), 1);
    ck_assert_uint_eq(lf_batch_bytes(b), 100);
    ck_assert_mem_eq(lf_batch_event(b, 0)->message.ptr, big, 100);
    lf_batch_free(b);
}
END_TEST

START_TEST(batch_copies_message_bytes_and_metadata)
{
    struct lf_batch *b = lf_batch_new(10, 100);
    char msg[] = "hello";
    struct lf_event ev = event(msg, 5, 77);
    ev.flags = LF_EVENT_TRUNCATED;
    ck_assert_int_eq(lf_batch_add(b, &ev), LF_OK);
    msg[0] = 'J';
    const struct lf_event *got = lf_batch_event(b, 0);
    ck_assert_ptr_ne(got->message.ptr, msg);
    ck_assert_mem_eq(got->message.ptr, "hello", 5);
    ck_assert_uint_eq(got->offset, 77);
    ck_assert_uint_eq(got->end_offset, 83);
    ck_assert_uint_eq(got->flags, LF_EVENT_TRUNCATED);
    ck_assert_ptr_eq(got->source, src);
    lf_batch_free(b);
}
END_TEST

START_TEST(ndjson_is_the_concatenation_of_encoded_events)
{
    struct lf_batch *b = lf_batch_new(500, 1 << 20);
    fill(b, 300);
    struct lf_buf want;
    lf_buf_init(&want, 1 << 24);
    for (size_t i = 0; i < lf_batch_count(b); i++)
        ck_assert_int_eq(lf_event_encode(&want, lf_batch_event(b, i)), LF_OK);
    struct lf_str nd;
    ck_assert_int_eq(lf_batch_ndjson(b, &nd), LF_OK);
    ck_assert_uint_eq(nd.len, want.len);
    ck_assert_mem_eq(nd.ptr, want.ptr, want.len);
    struct lf_str again;
    ck_assert_int_eq(lf_batch_ndjson(b, &again), LF_OK);
    ck_assert_ptr_eq(again.ptr, nd.ptr);
    ck_assert_uint_eq(again.len, nd.len);
    lf_buf_release(&want);
    lf_batch_free(b);
}
END_TEST

START_TEST(encode_on_add_gives_the_same_ndjson_and_keeps_metadata_only)
{
    struct lf_batch *kept = lf_batch_new(500, 1 << 20);
    struct lf_batch *eager = lf_batch_new(500, 1 << 20);
    ck_assert_int_eq(lf_batch_set_mode(eager, LF_BATCH_ENCODE_ON_ADD), LF_OK);
    fill(kept, 300);
    fill(eager, 300);
    ck_assert_int_eq(lf_batch_set_mode(eager, LF_BATCH_KEEP_EVENTS), LF_EINVAL); /* not empty */
    ck_assert_uint_eq(lf_batch_count(eager), 300);
    ck_assert_uint_eq(lf_batch_bytes(eager), lf_batch_bytes(kept));
    struct lf_str a;
    struct lf_str b;
    ck_assert_int_eq(lf_batch_ndjson(kept, &a), LF_OK);
    ck_assert_int_eq(lf_batch_ndjson(eager, &b), LF_OK);
    ck_assert_uint_eq(b.len, a.len);
    ck_assert_mem_eq(b.ptr, a.ptr, a.len);
    const struct lf_event *ev = lf_batch_event(eager, 299);
    ck_assert_uint_eq(ev->message.len, 0);
    ck_assert_uint_eq(ev->offset, 29900);
    ck_assert_uint_eq(ev->end_offset, lf_batch_event(kept, 299)->end_offset);
    lf_batch_reset(eager); /* keeps its mode */
    fill(eager, 2);
    ck_assert_int_eq(lf_batch_ndjson(eager, &b), LF_OK);
    ck_assert_uint_eq(count_newlines(b), 2);
    lf_batch_free(kept);
    lf_batch_free(eager);
}
END_TEST

START_TEST(adding_after_ndjson_drops_the_cached_encoding)
{
    struct lf_batch *b = lf_batch_new(10, 100);
    ck_assert_int_eq(add(b, "one", 0), LF_OK);
    struct lf_str nd;
    ck_assert_int_eq(lf_batch_ndjson(b, &nd), LF_OK);
    size_t first = nd.len;
    ck_assert_int_eq(add(b, "two", 4), LF_OK);
    ck_assert_int_eq(lf_batch_ndjson(b, &nd), LF_OK);
    ck_assert_uint_gt(nd.len, first);
    ck_assert_ptr_nonnull(memmem(nd.ptr, nd.len, "\"message\":\"two\"", 15));
    lf_batch_free(b);
}
END_TEST

START_TEST(zstd_is_one_checksummed_frame_of_the_ndjson)
{
    struct lf_batch *b = lf_batch_new(500, 1 << 20);
    fill(b, 400);
    struct lf_str nd;
    struct lf_str z;
    ck_assert_int_eq(lf_batch_ndjson(b, &nd), LF_OK);
    ck_assert_int_eq(lf_batch_zstd(b, 3, &z), LF_OK);
    ck_assert_uint_lt(z.len, nd.len);
    ck_assert_uint_eq(ZSTD_findFrameCompressedSize(z.ptr, z.len), z.len);
    ck_assert_uint_eq(ZSTD_getFrameContentSize(z.ptr, z.len), nd.len);
    ZSTD_frameHeader fh;
    ck_assert_uint_eq(ZSTD_getFrameHeader(&fh, z.ptr, z.len), 0);
    ck_assert_uint_eq(fh.checksumFlag, 1);
    char *plain = malloc(nd.len);
    ck_assert_uint_eq(ZSTD_decompress(plain, nd.len, z.ptr, z.len), nd.len);
    ck_assert_mem_eq(plain, nd.ptr, nd.len);
    struct lf_str again;
    ck_assert_int_eq(lf_batch_zstd(b, 3, &again), LF_OK);
    ck_assert_ptr_eq(again.ptr, z.ptr);
    ck_assert_uint_eq(again.len, z.len);
    free(plain);
    lf_batch_free(b);
}
END_TEST

/* Inflates a gzip member into out (cap bytes); returns the bytes or -1. */
static long gunzip(const char *p, size_t n, char *out, size_t cap)
{
    z_stream zs = { 0 };
    if (inflateInit2(&zs, 15 + 16) != Z_OK)
        return -1;
    zs.next_in = (Bytef *)(uintptr_t)p;
    zs.avail_in = (uInt)n;
    zs.next_out = (Bytef *)out;
    zs.avail_out = (uInt)cap;
    int r = inflate(&zs, Z_FINISH);
    long got = r == Z_STREAM_END && zs.avail_in == 0 ? (long)(cap - zs.avail_out) : -1;
    inflateEnd(&zs);
    return got;
}

START_TEST(gzip_is_one_member_of_the_ndjson_cached_until_reset)
{
    struct lf_batch *b = lf_batch_new(500, 1 << 20);
    fill(b, 400);
    struct lf_str nd;
    struct lf_str gz;
    ck_assert_int_eq(lf_batch_ndjson(b, &nd), LF_OK);
    ck_assert_int_eq(lf_batch_gzip(b, 1, &gz), LF_OK);
    ck_assert_uint_lt(gz.len, nd.len);
    ck_assert_uint_eq((unsigned char)gz.ptr[0], 0x1f); /* the gzip magic */
    ck_assert_uint_eq((unsigned char)gz.ptr[1], 0x8b);
    char *plain = malloc(nd.len + 1);
    ck_assert_int_eq(gunzip(gz.ptr, gz.len, plain, nd.len + 1), (long)nd.len);
    ck_assert_mem_eq(plain, nd.ptr, nd.len);
    struct lf_str again;
    ck_assert_int_eq(lf_batch_gzip(b, 1, &again), LF_OK);
    ck_assert_ptr_eq(again.ptr, gz.ptr);
    ck_assert_uint_eq(again.len, gz.len);

    /* Reused after a reset with different events: the new bytes, not the old ones. */
    lf_batch_reset(b);
    fill(b, 3);
    ck_assert_int_eq(lf_batch_ndjson(b, &nd), LF_OK);
    ck_assert_int_eq(lf_batch_gzip(b, 1, &gz), LF_OK);
    ck_assert_int_eq(gunzip(gz.ptr, gz.len, plain, nd.len + 1), (long)nd.len);
    ck_assert_mem_eq(plain, nd.ptr, nd.len);
    free(plain);
    lf_batch_free(b);
}
END_TEST

START_TEST(zstd_of_an_empty_batch_is_a_valid_empty_frame)
{
    struct lf_batch *b = lf_batch_new(10, 100);
    struct lf_str nd;
    struct lf_str z;
    ck_assert_int_eq(lf_batch_ndjson(b, &nd), LF_OK);
    ck_assert_uint_eq(nd.len, 0);
    ck_assert_int_eq(lf_batch_zstd(b, 1, &z), LF_OK);
    char plain[1];
    ck_assert_uint_eq(ZSTD_decompress(plain, sizeof(plain), z.ptr, z.len), 0);
    lf_batch_free(b);
}
END_TEST

START_TEST(reset_empties_the_batch_and_keeps_its_memory)
{
    struct lf_batch *b = lf_batch_new(100, 4096);
    fill(b, 50);
    struct lf_str nd1;
    struct lf_str z1;
    ck_assert_int_eq(lf_batch_zstd(b, 1, &z1), LF_OK);
    ck_assert_int_eq(lf_batch_ndjson(b, &nd1), LF_OK);
    const struct lf_event *ev1 = lf_batch_event(b, 0);
    const char *msg1 = ev1->message.ptr;

    lf_batch_reset(b);
    ck_assert_uint_eq(lf_batch_count(b), 0);
    ck_assert_uint_eq(lf_batch_bytes(b), 0);

    fill(b, 50);
    struct lf_str nd2;
    struct lf_str z2;
    ck_assert_int_eq(lf_batch_zstd(b, 1, &z2), LF_OK);
    ck_assert_int_eq(lf_batch_ndjson(b, &nd2), LF_OK);
    ck_assert_ptr_eq(lf_batch_event(b, 0), ev1);
    ck_assert_ptr_eq(lf_batch_event(b, 0)->message.ptr, msg1);
    ck_assert_ptr_eq(nd2.ptr, nd1.ptr);
    ck_assert_uint_eq(nd2.len, nd1.len);
    ck_assert_ptr_eq(z2.ptr, z1.ptr);
    ck_assert_uint_eq(z2.len, z1.len);
    lf_batch_free(b);
}
END_TEST

/* Answers come from the runs: one per stretch of one source's events, in add order, with the
 * lowest start and highest end offset and the count (a dropped event counts: it is answered
 * for its offsets); in both modes, after a reset and after a restore. */
START_TEST(runs_follow_each_source_in_add_order)
{
    struct lf_source *other;
    ck_assert_int_eq(lf_source_new("/var/log/b.log", "app", "node-1", NULL, false, &other), LF_OK);
    for (int mode = 0; mode < 2; mode++) {
        struct lf_batch *b = lf_batch_new(16, 4096);
        ck_assert_ptr_nonnull(b);
        ck_assert_int_eq(lf_batch_set_mode(b, mode ? LF_BATCH_ENCODE_ON_ADD : LF_BATCH_KEEP_EVENTS),
                         LF_OK);
        struct lf_event evs[5] = { event("a0", 2, 100), event("a1", 2, 103), event("b0", 2, 7),
                                   event("b1", 2, 10), event("a2", 2, 106) };
        evs[1].flags = LF_EVENT_DROPPED;
        evs[2].source = other;
        evs[3].source = other;
        for (int round = 0; round < 2; round++) {
            for (size_t i = 0; i < 5; i++)
                ck_assert_int_eq(lf_batch_add(b, &evs[i]), LF_OK);
            size_t n;
            const struct lf_batch_run *r = lf_batch_runs(b, &n);
            ck_assert_uint_eq(n, 3);
            ck_assert_ptr_eq(r[0].source, src);
            ck_assert_uint_eq(r[0].events, 2);
            ck_assert_uint_eq(r[0].first, 100);
            ck_assert_uint_eq(r[0].end, 106);
            ck_assert_ptr_eq(r[1].source, other);
            ck_assert_uint_eq(r[1].events, 2);
            ck_assert_uint_eq(r[1].first, 7);
            ck_assert_uint_eq(r[1].end, 13);
            ck_assert_ptr_eq(r[2].source, src);
            ck_assert_uint_eq(r[2].events, 1);
            ck_assert_uint_eq(r[2].first, 106);
            ck_assert_uint_eq(r[2].end, 109);
            lf_batch_reset(b);
            (void)lf_batch_runs(b, &n);
            ck_assert_uint_eq(n, 0);
        }
        ck_assert_int_eq(lf_batch_restore(b, mode ? LF_BATCH_ENCODE_ON_ADD : LF_BATCH_KEEP_EVENTS,
                                          evs, 5, lf_str_make("", 0)),
                         LF_OK);
        size_t n;
        const struct lf_batch_run *r = lf_batch_runs(b, &n);
        ck_assert_uint_eq(n, 3);
        ck_assert_uint_eq(r[1].events, 2);
        ck_assert_uint_eq(r[2].end, 109);
        lf_batch_free(b);
    }
    lf_source_free(other);
}
END_TEST

/* The text form is each message not dropped and a '\n', in add order; the kept events'
 * messages are those bytes; an oversize first event is taken, and the next batch is back to
 * the normal size; a restore gives the same text; an encode-on-add batch has none. */
START_TEST(text_is_the_messages_not_dropped_each_with_a_newline)
{
    struct lf_batch *b = lf_batch_new(8, 64);
    ck_assert_ptr_nonnull(b);
    struct lf_str t;
    ck_assert_int_eq(lf_batch_text(b, &t), LF_OK);
    ck_assert_uint_eq(t.len, 0);
    struct lf_event evs[4] = { event("one", 3, 0), event("gone", 4, 4), event("", 0, 9),
                               event("three", 5, 10) };
    evs[1].flags = LF_EVENT_DROPPED;
    evs[3].extra = lf_str_make("\"k\":1", 5);
    for (size_t i = 0; i < 4; i++)
        ck_assert_int_eq(lf_batch_add(b, &evs[i]), LF_OK);
    ck_assert_int_eq(lf_batch_text(b, &t), LF_OK);
    ck_assert_uint_eq(t.len, 11);
    ck_assert_int_eq(memcmp(t.ptr, "one\n\nthree\n", 11), 0);
    ck_assert_ptr_eq(lf_batch_event(b, 0)->message.ptr, t.ptr);
    ck_assert_ptr_eq(lf_batch_event(b, 3)->message.ptr, t.ptr + 5);
    ck_assert_uint_eq(lf_batch_event(b, 1)->message.len, 4);
    ck_assert_int_eq(memcmp(lf_batch_event(b, 1)->message.ptr, "gone", 4), 0);
    ck_assert_int_eq(memcmp(lf_batch_event(b, 3)->extra.ptr, "\"k\":1", 5), 0);

    /* Full of max_bytes: the text never moves while events point into it. */
    lf_batch_reset(b);
    char big[200];
    memset(big, 'x', sizeof(big));
    struct lf_event ev = event(big, 40, 0);
    ck_assert_int_eq(lf_batch_add(b, &ev), LF_OK);
    const char *at = lf_batch_event(b, 0)->message.ptr;
    ev = event(big, 24, 41);
    ck_assert_int_eq(lf_batch_add(b, &ev), LF_OK);
    ck_assert_int_eq(lf_batch_add(b, &ev), LF_ETOOBIG);
    ck_assert_ptr_eq(lf_batch_event(b, 0)->message.ptr, at);
    ck_assert_int_eq(lf_batch_text(b, &t), LF_OK);
    ck_assert_uint_eq(t.len, 66);

    /* Oversize, alone in an empty batch. */
    lf_batch_reset(b);
    ev = event(big, 200, 0);
    ck_assert_int_eq(lf_batch_add(b, &ev), LF_OK);
    ck_assert_int_eq(lf_batch_text(b, &t), LF_OK);
    ck_assert_uint_eq(t.len, 201);
    ck_assert_int_eq(memcmp(t.ptr, big, 200), 0);
    ck_assert_int_eq(t.ptr[200], '\n');
    lf_batch_reset(b);
    ev = event(big, 3, 0);
    ck_assert_int_eq(lf_batch_add(b, &ev), LF_OK);
    ck_assert_int_eq(lf_batch_text(b, &t), LF_OK);
    ck_assert_uint_eq(t.len, 4);

    lf_batch_reset(b);
    ck_assert_int_eq(lf_batch_restore(b, LF_BATCH_KEEP_EVENTS, evs, 4, lf_str_make("", 0)), LF_OK);
    ck_assert_int_eq(lf_batch_text(b, &t), LF_OK);
    ck_assert_uint_eq(t.len, 11);
    ck_assert_int_eq(memcmp(t.ptr, "one\n\nthree\n", 11), 0);
    ck_assert_int_eq(memcmp(lf_batch_event(b, 3)->extra.ptr, "\"k\":1", 5), 0);

    lf_batch_reset(b);
    ck_assert_int_eq(lf_batch_set_mode(b, LF_BATCH_ENCODE_ON_ADD), LF_OK);
    ck_assert_int_eq(lf_batch_add(b, &evs[0]), LF_OK);
    ck_assert_int_eq(lf_batch_text(b, &t), LF_EINVAL);
    lf_batch_free(b);
}
END_TEST

static Suite *batch_suite(void)
{
    Suite *s = suite_create("batch");
    TCase *tc = tcase_create("limits");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, batch_refuses_the_event_past_max_events);
    tcase_add_test(tc, batch_refuses_the_event_past_max_bytes);
    tcase_add_test(tc, empty_batch_accepts_one_oversize_event);
    tcase_add_test(tc, batch_copies_message_bytes_and_metadata);
    tcase_add_test(tc, runs_follow_each_source_in_add_order);
    tcase_add_test(tc, text_is_the_messages_not_dropped_each_with_a_newline);
    suite_add_tcase(s, tc);

    tc = tcase_create("encodings");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, ndjson_is_the_concatenation_of_encoded_events);
    tcase_add_test(tc, adding_after_ndjson_drops_the_cached_encoding);
    tcase_add_test(tc, encode_on_add_gives_the_same_ndjson_and_keeps_metadata_only);
    tcase_add_test(tc, zstd_is_one_checksummed_frame_of_the_ndjson);
    tcase_add_test(tc, zstd_of_an_empty_batch_is_a_valid_empty_frame);
    tcase_add_test(tc, gzip_is_one_member_of_the_ndjson_cached_until_reset);
    tcase_add_test(tc, reset_empties_the_batch_and_keeps_its_memory);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(batch_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
