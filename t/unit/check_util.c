/* check_util.c - buffers, arenas, checked arithmetic, errors, log levels, progress line,
 * usable CPUs. */
#include "config.h"

#include <check.h>
#include <errno.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "logferry/arena.h"
#include "logferry/buf.h"
#include "logferry/err.h"
#include "logferry/fsutil.h"
#include "logferry/log.h"
#include "logferry/progress.h"

START_TEST(buf_grows_by_doubling_and_refuses_past_its_cap)
{
    struct lf_buf b;
    lf_buf_init(&b, 1000);
    ck_assert_int_eq(lf_buf_append(&b, "hello", 5), LF_OK);
    ck_assert_uint_eq(b.len, 5);
    ck_assert_uint_eq(b.cap, 256);
    char big[600];
    memset(big, 'x', sizeof(big));
    ck_assert_int_eq(lf_buf_append(&b, big, sizeof(big)), LF_OK);
    ck_assert_uint_eq(b.cap, 1000); /* 512 would not do; doubling stops at the cap */
    ck_assert_int_eq(lf_buf_append(&b, big, 396), LF_ETOOBIG);
    ck_assert_uint_eq(b.len, 605); /* unchanged by the failed append */
    ck_assert_int_eq(lf_buf_append(&b, big, 395), LF_OK);
    ck_assert_uint_eq(b.len, 1000);
    char *before = b.ptr;
    lf_buf_reset(&b);
    ck_assert_uint_eq(b.len, 0);
    ck_assert_ptr_eq(b.ptr, before);
    ck_assert_mem_eq(before, "hello", 5);
    lf_buf_release(&b);
    ck_assert_ptr_null(b.ptr);
}
END_TEST

START_TEST(array_grow_doubles_from_first_and_keeps_the_items)
{
    int *items = NULL;
    size_t cap = 0;
    size_t len = 0;
    for (int i = 0; i < 100; i++) {
        ck_assert_int_eq(lf_array_grow(&items, &cap, len, sizeof(*items), 8), LF_OK);
        ck_assert_uint_gt(cap, len);
        items[len++] = i;
    }
    ck_assert_uint_eq(cap, 128); /* 8, 16, 32, 64, 128 */
    for (int i = 0; i < 100; i++)
        ck_assert_int_eq(items[i], i);
    int *before = items;
    ck_assert_int_eq(lf_array_grow(&items, &cap, 100, sizeof(*items), 8), LF_OK);
    ck_assert_ptr_eq(items, before); /* room left: nothing changes */
    ck_assert_uint_eq(cap, 128);
    size_t huge = SIZE_MAX / 2 + 1; /* doubling it wraps: refused, nothing changed */
    ck_assert_int_eq(lf_array_grow(&items, &huge, huge, 1, 8), LF_ENOMEM);
    ck_assert_uint_eq(huge, SIZE_MAX / 2 + 1);
    ck_assert_ptr_eq(items, before);
    free(items);
}
END_TEST

START_TEST(size_arithmetic_reports_wraparound)
{
    size_t r = 0;
    ck_assert_int_eq(lf_size_add(SIZE_MAX, 1, &r), LF_ETOOBIG);
    ck_assert_int_eq(lf_size_add(2, 3, &r), LF_OK);
    ck_assert_uint_eq(r, 5);
    ck_assert_int_eq(lf_size_mul(SIZE_MAX / 2 + 1, 2, &r), LF_ETOOBIG);
    ck_assert_int_eq(lf_size_mul(6, 7, &r), LF_OK);
    ck_assert_uint_eq(r, 42);
}
END_TEST

START_TEST(arena_hands_out_aligned_memory_and_reset_keeps_the_first_block)
{
    struct lf_arena *a = lf_arena_new(128);
    ck_assert_ptr_nonnull(a);
    char *p1 = lf_arena_alloc(a, 3);
    char *p2 = lf_arena_alloc(a, 5);
    ck_assert_uint_eq((uintptr_t)p1 % 8, 0);
    ck_assert_uint_eq((uintptr_t)p2 % 8, 0);
    ck_assert_ptr_eq(p2, p1 + 8);
    char *big = lf_arena_dup(a, "0123456789", 10);
    ck_assert_mem_eq(big, "0123456789", 10);
    char *huge = lf_arena_alloc(a, 4096); /* its own block */
    ck_assert_ptr_nonnull(huge);
    memset(huge, 1, 4096);
    ck_assert_uint_eq(lf_arena_used(a), 3 + 5 + 10 + 4096);
    lf_arena_reset(a);
    ck_assert_uint_eq(lf_arena_used(a), 0);
    ck_assert_ptr_eq(lf_arena_alloc(a, 1), p1);
    lf_arena_free(a);
    lf_arena_free(NULL);
}
END_TEST

START_TEST(fail_formats_the_message_and_returns_the_code)
{
    struct lf_errbuf eb = { "" };
    ck_assert_int_eq(lf_fail(&eb, LF_EIO, "open %s: %s", "/x", lf_strerror(ENOENT)), LF_EIO);
    ck_assert_str_eq(eb.msg, "open /x: No such file or directory");
    ck_assert_int_eq(lf_fail(NULL, LF_EINVAL, "ignored"), LF_EINVAL);
    ck_assert_int_eq(lf_err_from_errno(ENOMEM), LF_ENOMEM);
    ck_assert_int_eq(lf_err_from_errno(EACCES), LF_EIO);
    ck_assert_str_eq(lf_err_str(LF_ETOOBIG), "size limit exceeded");
}
END_TEST

START_TEST(log_levels_parse_by_name)
{
    enum lf_log_level l = LF_LOG_INFO;
    ck_assert(lf_log_level_parse("debug", &l));
    ck_assert_int_eq(l, LF_LOG_DEBUG);
    ck_assert(lf_log_level_parse("error", &l));
    ck_assert_int_eq(l, LF_LOG_ERROR);
    ck_assert(!lf_log_level_parse("verbose", &l));
    ck_assert_int_eq(l, LF_LOG_ERROR);
}
END_TEST

/* Runs fn with stderr sent to a file; returns what it wrote (static buffer). */
static const char *capture_stderr(void (*fn)(void))
{
    static char out[16384];
    char path[] = "/tmp/check_util_log.XXXXXX";
    int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    unlink(path);
    int saved = dup(STDERR_FILENO);
    ck_assert_int_ge(dup2(fd, STDERR_FILENO), 0);
    fn();
    ck_assert_int_ge(dup2(saved, STDERR_FILENO), 0);
    close(saved);
    ssize_t n = pread(fd, out, sizeof(out) - 1, 0);
    close(fd);
    ck_assert_int_ge(n, 0);
    out[n] = '\0';
    return out;
}

static void log_a_flood(void)
{
    lf_log_set_repeat_window(300);
    for (int i = 0; i < 1240; i++)
        lf_warn("cannot open %s: %s", "/var/log/x.log", "Permission denied");
    lf_warn("cannot open %s: %s", "/var/log/y.log", "Permission denied");
    for (int i = 0; i < 3; i++)
        lf_info("an info record is never held back");
    struct timespec pause = { 0, 350 * 1000000L };
    nanosleep(&pause, NULL);
    lf_warn("cannot open %s: %s", "/var/log/x.log", "Permission denied");
    lf_warn("cannot open %s: %s", "/var/log/x.log", "Permission denied");
    lf_log_set_repeat_window(LF_LOG_REPEAT_WINDOW_MS);
}

static size_t count_of(const char *hay, const char *needle)
{
    size_t n = 0;
    for (const char *p = strstr(hay, needle); p != NULL; p = strstr(p + 1, needle))
        n++;
    return n;
}

START_TEST(repeated_warnings_are_written_once_then_counted)
{
    const char *out = capture_stderr(log_a_flood);
    ck_assert_uint_eq(count_of(out, "\n"), 6);
    ck_assert_uint_eq(count_of(out, "x.log: Permission denied\n"), 1);
    ck_assert_uint_eq(count_of(out, "y.log: Permission denied\n"), 1);
    ck_assert_uint_eq(count_of(out, "an info record is never held back\n"), 3);
    /* The first copy after the window carries how many were held back; the next one
     * starts a new window and is held back itself. */
    ck_assert_uint_eq(count_of(out, "x.log: Permission denied (repeated 1,239 times in the "
                                    "last 300 ms)\n"), 1);
}
END_TEST

START_TEST(progress_line_shows_done_total_rate_and_eta)
{
    struct lf_progress p = { .fd = -1, .total = 300ull << 20, .done = 100ull << 20,
                             .start_ns = 0 };
    char line[160];
    lf_progress_format(&p, 2000000000LL, line, sizeof(line));
    ck_assert_str_eq(line, "100.0 MiB / 300.0 MiB (33%)  52.4 MB/s  ETA 0:00:04");
    p.done = p.total;
    lf_progress_format(&p, 4000000000LL, line, sizeof(line));
    ck_assert_str_eq(line, "300.0 MiB / 300.0 MiB (100%)  78.6 MB/s  ETA 0:00:00");
}
END_TEST

START_TEST(usable_cpus_follow_the_affinity_mask)
{
    cpu_set_t all;
    ck_assert_int_eq(sched_getaffinity(0, sizeof(all), &all), 0);
    ck_assert_uint_eq(lf_usable_cpus(), (size_t)CPU_COUNT(&all));
    int first = 0;
    while (!CPU_ISSET(first, &all))
        first++;
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(first, &one);
    ck_assert_int_eq(sched_setaffinity(0, sizeof(one), &one), 0);
    ck_assert_uint_eq(lf_usable_cpus(), 1); /* taskset -c N, a cpuset of one CPU */
    ck_assert_int_eq(sched_setaffinity(0, sizeof(all), &all), 0);
    ck_assert_uint_eq(lf_usable_cpus(), (size_t)CPU_COUNT(&all));
}
END_TEST

int main(void)
{
    Suite *s = suite_create("util");
    TCase *tc = tcase_create("memory");
    tcase_add_test(tc, buf_grows_by_doubling_and_refuses_past_its_cap);
    tcase_add_test(tc, array_grow_doubles_from_first_and_keeps_the_items);
    tcase_add_test(tc, size_arithmetic_reports_wraparound);
    tcase_add_test(tc, arena_hands_out_aligned_memory_and_reset_keeps_the_first_block);
    suite_add_tcase(s, tc);
    TCase *tp = tcase_create("process");
    tcase_add_test(tp, usable_cpus_follow_the_affinity_mask);
    suite_add_tcase(s, tp);
    TCase *te = tcase_create("errors and logging");
    tcase_add_test(te, fail_formats_the_message_and_returns_the_code);
    tcase_add_test(te, log_levels_parse_by_name);
    tcase_add_test(te, repeated_warnings_are_written_once_then_counted);
    tcase_add_test(te, progress_line_shows_done_total_rate_and_eta);
    suite_add_tcase(s, te);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? 0 : 1;
}
