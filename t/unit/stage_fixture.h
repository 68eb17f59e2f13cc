/* stage_fixture.h - what the suites of the member-adding stages share: a fixture holding
 * one stage's spec and state, a sink keeping a copy of the last event (and its encoding
 * when it has a source), and a main() built twice (see stage_fixture_main()).
 * Include it once, from the suite's .c file. */
#ifndef LF_STAGE_FIXTURE_H
#define LF_STAGE_FIXTURE_H

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../src/stage/stage_int.h"
#include "../bench/alloc_count.h"
#include "logferry/event.h"

static struct {
    const struct lf_stage_ops *ops; /* the stage under test */
    void *spec;
    void *state;
    char *msg;          /* the last event's message, NUL-terminated */
    char *extra;        /* its extra, NUL-terminated */
    size_t n;           /* events emitted */
    struct lf_buf json; /* the last event encoded, when it had a source */
} fx;

static enum lf_err collect(void *arg, const struct lf_event *ev)
{
    (void)arg;
    free(fx.msg);
    free(fx.extra);
    fx.msg = strndup(ev->message.ptr != NULL ? ev->message.ptr : "", ev->message.len);
    fx.extra = strndup(ev->extra.ptr != NULL ? ev->extra.ptr : "", ev->extra.len);
    fx.n++;
    lf_buf_reset(&fx.json);
    if (ev->source != NULL)
        ck_assert_int_eq(lf_event_encode(&fx.json, ev), LF_OK);
    return LF_OK;
}

static const struct lf_stage_out sink = { collect, NULL };

/* A sink for measured loops, where collect's copies would count as allocations. */
static enum lf_err discard(void *arg, const struct lf_event *ev)
{
    (void)arg;
    (void)ev;
    return LF_OK;
}

/* Compiles pc with ops into the fixture and opens a state; returns compile's result. */
static enum lf_err
fx_start(const struct lf_stage_ops *ops, const struct lf_parser_conf *pc, struct lf_errbuf *eb)
{
    fx.ops = ops;
    lf_buf_init(&fx.json, SIZE_MAX);
    enum lf_err err = ops->compile(pc, &fx.spec, eb);
    if (!err)
        ck_assert_int_eq(ops->open(fx.spec, &fx.state), LF_OK);
    return err;
}

static void teardown(void)
{
    if (fx.state != NULL)
        fx.ops->close(fx.state);
    if (fx.spec != NULL)
        fx.ops->free_spec(fx.spec);
    free(fx.msg);
    free(fx.extra);
    lf_buf_release(&fx.json);
    memset(&fx, 0, sizeof(fx));
}

/* Runs one line (len bytes) with the prior extra through the stage: one event must come
 * out. src may be NULL (then nothing is encoded). */
static void feed(const char *msg, size_t len, const char *extra, struct lf_source *src)
{
    struct lf_event ev = {
        lf_str_make(msg, len), 42, 0, len + 1, 0, src, lf_str_make(extra, strlen(extra)), 0
    };
    size_t before = fx.n;
    ck_assert_int_eq(fx.ops->process(fx.spec, fx.state, &ev, 0, &sink), LF_OK);
    ck_assert_uint_eq(fx.n, before + 1);
}

/* Runs the n events through the fixture's stage, rounds times over, into a discarding
 * sink, and returns the allocations made after the first round (which grows the stage's
 * buffers). *err gets the first failure. No ck_assert inside: Check's assertions allocate. */
static inline uint64_t
fx_steady_allocs(const struct lf_event *evs, size_t n, size_t rounds, enum lf_err *err)
{
    struct lf_stage_out quiet = { discard, NULL };
    struct lf_alloc_count a0 = { 0, 0 };
    *err = LF_OK;
    for (size_t r = 0; r < rounds * n && !*err; r++) {
        if (r == n)
            a0 = lf_alloc_count_now();
        *err = fx.ops->process(fx.spec, fx.state, &evs[r % n], 0, &quiet);
    }
    return lf_alloc_count_now().calls - a0.calls;
}

/* Asserts that the events (message lines[i], extra extras[i], for i < n <= 16) run
 * through the stage about 1000 times without error and allocate nothing after the first
 * pass. */
static inline void
fx_assert_no_allocs(const char *const *lines, const char *const *extras, size_t n)
{
    struct lf_event evs[16];
    ck_assert_uint_le(n, 16);
    for (size_t i = 0; i < n; i++)
        evs[i] = (struct lf_event){ lf_str_make(lines[i], strlen(lines[i])),   42, 0, 1, 0, NULL,
                                    lf_str_make(extras[i], strlen(extras[i])), 0 };
    enum lf_err err;
    uint64_t calls = fx_steady_allocs(evs, n, 1000 / n, &err);
    ck_assert_int_eq(err, LF_OK);
    ck_assert_uint_eq(calls, 0);
}

/* Asserts the last event's extra and message, naming table case i. */
static inline void fx_assert_event(int i, const char *extra, const char *msg)
{
    ck_assert_msg(strcmp(fx.extra, extra) == 0, "case %d: extra\n  got  %s\n  want %s", i, fx.extra,
                  extra);
    ck_assert_msg(strcmp(fx.msg, msg) == 0, "case %d: message\n  got  %s\n  want %s", i, fx.msg,
                  msg);
}

/* Adds a test case with the fixture's teardown to s; alloc tags it "alloc". */
static inline TCase *fx_tcase(Suite *s, const char *name, bool alloc)
{
    TCase *tc = tcase_create(name);
    if (alloc)
        tcase_set_tags(tc, "alloc");
    tcase_add_checked_fixture(tc, NULL, teardown);
    suite_add_tcase(s, tc);
    return tc;
}

/* The suite's main, built twice. Without LF_CHECK_ALLOC it runs every case but those
 * tagged "alloc"; with it, only those, and exits 77 (skipped, not passed) where
 * allocations cannot be counted (under ASan). */
static int stage_fixture_main(Suite *s)
{
#ifdef LF_CHECK_ALLOC
    if (!lf_alloc_count_enabled()) {
        printf("SKIP: allocation counting unavailable (sanitizer build): "
               "the alloc cases not run\n");
        return 77;
    }
    const char *include = "alloc", *exclude = NULL;
#else
    const char *include = NULL, *exclude = "alloc";
#endif
    SRunner *sr = srunner_create(s);
    srunner_run_tagged(sr, NULL, NULL, include, exclude, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}

#endif
