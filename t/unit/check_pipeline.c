/* check_pipeline.c - batching, routing, ordering, acknowledgement and backpressure; and the
 * spool writer on a failing disk (spool_faults.h). */
#include "config.h"

#include <check.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <uv.h>

#include "logferry/buf.h"
#include "logferry/config.h"
#include "logferry/event.h"
#include "logferry/pipeline.h"
#include "spool_faults.h"

static char root[256];

static void setup(void)
{
    snprintf(root, sizeof(root), "/tmp/lf-pipeline-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(root));
}

static void teardown(void)
{
    char cmd[PATH_MAX + 16];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
    ck_assert_int_eq(system(cmd), 0);
}

static struct lf_config *load(const char *fmt)
{
    char yaml[4096];
    snprintf(yaml, sizeof(yaml), fmt, root, root, root, root);
    struct lf_buf errors;
    lf_buf_init(&errors, 65536);
    struct lf_config *cfg = NULL;
    enum lf_err err = lf_config_load_mem("test.yml", yaml, strlen(yaml), &cfg, &errors);
    if (err)
        ck_abort_msg("config: %.*s", (int)errors.len, errors.ptr);
    lf_buf_release(&errors);
    return cfg;
}

/* Reads the single file in dir (uncompressed output) into buf. */
static size_t read_output(const char *sub, char *buf, size_t cap)
{
    char cmd[PATH_MAX + 64];
    snprintf(cmd, sizeof(cmd), "cat '%s/%s'/logferry-*.ndjson", root, sub);
    FILE *p = popen(cmd, "r");
    ck_assert_ptr_nonnull(p);
    size_t n = fread(buf, 1, cap - 1, p);
    buf[n] = '\0';
    pclose(p);
    return n;
}

static size_t count_lines(const char *s)
{
    size_t n = 0;
    for (; *s; s++)
        n += *s == '\n';
    return n;
}

/* A pipeline for cfg and a source of its input "a". */
static struct lf_pipeline *start_a(const struct lf_config *cfg, struct lf_source **sa)
{
    struct lf_pipeline *p = NULL;
    struct lf_errbuf eb = { "" };
    ck_assert_msg(lf_pipeline_new(cfg, &p, &eb) == LF_OK, "%s", eb.msg);
    ck_assert_int_eq(lf_source_new("/x/a.log", "a", "h", NULL, false, sa), LF_OK);
    return p;
}

static const char *two_inputs = "data_dir: %s/data\n"
                                "inputs:\n"
                                "  - {id: a, paths: [/x/a.log], outputs: [oa]}\n"
                                "  - {id: b, paths: [/x/b.log], outputs: [ob, oa]}\n"
                                "outputs:\n"
                                "  - {name: oa, type: file, path: '%s/oa', compression: none}\n"
                                "  - {name: ob, type: file, path: '%s/ob', compression: none}\n"
                                "queue: {max_bytes: 64, batch: {max_events: 3, max_bytes: 1MiB}}\n";

START_TEST(batches_reach_only_the_outputs_their_input_routes_to_in_order)
{
    struct lf_config *cfg = load(two_inputs);
    struct lf_pipeline *p = NULL;
    struct lf_errbuf eb = { "" };
    ck_assert_int_eq(lf_pipeline_new(cfg, &p, &eb), LF_OK);
    struct lf_source *sa = NULL;
    struct lf_source *sb = NULL;
    ck_assert_int_eq(lf_source_new("/x/a.log", "a", "h", NULL, false, &sa), LF_OK);
    ck_assert_int_eq(lf_source_new("/x/b.log", "b", "h", NULL, false, &sb), LF_OK);
    char msg[32];
    for (int i = 0; i < 10; i++) {
        snprintf(msg, sizeof(msg), "line %d", i);
        struct lf_event ev = { .message = { msg, strlen(msg) },
                               .offset = (uint64_t)i * 10,
                               .end_offset = (uint64_t)i * 10 + 10,
                               .source = i % 2 ? sb : sa };
        ck_assert_int_eq(lf_pipeline_push(p, i % 2, &ev), LF_OK);
    }
    ck_assert_int_eq(lf_pipeline_drain(p, &eb), LF_OK);
    struct lf_pipeline_stats st;
    lf_pipeline_stats(p, &st);
    ck_assert_uint_eq(st.events_in, 10);
    ck_assert_uint_eq(st.events_acked, 10);
    ck_assert_uint_eq(st.batches_acked, 4); /* a: 5 events -> 3+2, b: 5 -> 3+2 */
    /* The answers reach the sources only on the producer's thread, when it takes them. */
    ck_assert_uint_eq(sa->inflight, 5);
    ck_assert_uint_eq(sa->acked_offset, 0);
    ck_assert_uint_eq(lf_pipeline_take_acks(p, NULL, NULL), 4);
    ck_assert_uint_eq(sa->acked_offset, 90);
    ck_assert_uint_eq(sb->acked_offset, 100);
    ck_assert_uint_eq(sa->inflight, 0);
    ck_assert_uint_eq(sb->inflight, 0);
    ck_assert_uint_eq(sa->pinned_offset, UINT64_MAX);
    ck_assert_uint_eq(lf_pipeline_take_acks(p, NULL, NULL), 0);
    lf_pipeline_free(p);

    static char buf[8192];
    read_output("oa", buf, sizeof(buf));
    ck_assert_uint_eq(count_lines(buf), 10);
    read_output("ob", buf, sizeof(buf));
    ck_assert_uint_eq(count_lines(buf), 5);
    const char *prev = buf;
    for (int i = 1; i < 10; i += 2) {
        snprintf(msg, sizeof(msg), "\"line %d\"", i);
        const char *at = strstr(prev, msg);
        ck_assert_ptr_nonnull(at);
        prev = at;
    }
    lf_source_free(sa);
    lf_source_free(sb);
    lf_config_free(cfg);
}
END_TEST

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* The producer of the backpressure case: pushes N_SLOW events of 32 bytes, then drains. */
enum {
    N_SLOW = 300
};

struct producer {
    struct lf_pipeline *p;
    struct lf_source *src;
    int pushed;     /* events whose push returned (atomic) */
    double done_at; /* when the last push returned */
    enum lf_err err;
};

static void produce(void *arg)
{
    struct producer *pr = arg;
    char msg[40];
    for (int i = 0; i < N_SLOW && !pr->err; i++) {
        snprintf(msg, sizeof(msg), "event %03d 0123456789abcdefghijkl", i); /* 32 bytes */
        struct lf_event ev = { .message = { msg, strlen(msg) },
                               .offset = (uint64_t)i * 33,
                               .end_offset = (uint64_t)i * 33 + 33,
                               .source = pr->src };
        pr->err = lf_pipeline_push(pr->p, 0, &ev);
        __atomic_store_n(&pr->pushed, i + 1, __ATOMIC_RELEASE);
    }
    pr->done_at = now_s();
    struct lf_errbuf eb = { "" };
    if (!pr->err)
        pr->err = lf_pipeline_drain(pr->p, &eb);
    lf_pipeline_take_acks(pr->p, NULL, NULL); /* answers reach the source on this thread */
}

/* Makes fd 1 the blocking write end of a pipe that is full (*filled bytes of junk), so that
 * a console output blocks on its first write; returns the read end. */
static int block_stdout(size_t *filled)
{
    int fds[2];
    ck_assert_int_eq(pipe(fds), 0);
    ck_assert_int_eq(fcntl(fds[1], F_SETFL, O_NONBLOCK), 0);
    static char junk[4096];
    memset(junk, 'j', sizeof(junk));
    *filled = 0;
    for (;;) {
        ssize_t w = write(fds[1], junk, sizeof(junk));
        if (w <= 0)
            break;
        *filled += (size_t)w;
    }
    for (;;) { /* the last bytes of the pipe, below a whole chunk */
        ssize_t w = write(fds[1], junk, 1);
        if (w <= 0)
            break;
        *filled += (size_t)w;
    }
    ck_assert_int_eq(fcntl(fds[1], F_SETFL, 0), 0);
    ck_assert_int_eq(dup2(fds[1], STDOUT_FILENO), STDOUT_FILENO);
    close(fds[1]);
    return fds[0];
}

/* Reads exactly want bytes from fd into a new NUL-terminated buffer (free it). */
static char *read_pipe(int fd, size_t want)
{
    static char buf[1 << 16];
    size_t got = 0;
    char *out = malloc(want + 1);
    ck_assert_ptr_nonnull(out);
    while (got < want) {
        ssize_t r = read(fd, buf, sizeof(buf));
        ck_assert_int_gt(r, 0);
        ck_assert_uint_le(got + (size_t)r, want);
        memcpy(out + got, buf, (size_t)r);
        got += (size_t)r;
    }
    out[got] = '\0';
    return out;
}

/* at holds "event 000 ..." to "event n-1 ...", 33 bytes each, in order. */
static void assert_events(const char *at, int n)
{
    char line[48];
    for (int i = 0; i < n; i++) {
        snprintf(line, sizeof(line), "event %03d 0123456789abcdefghijkl\n", i);
        ck_assert_msg(strncmp(at, line, 33) == 0, "event %d: %.33s", i, at);
        at += 33;
    }
}

/* A console output writing into a pipe that is full and not read: the output cannot finish
 * a batch, so with queue.max_bytes 64 and batches of 3 events (96 bytes) the producer must
 * block in push after a batch or two, and go on only once the pipe is read. */
START_TEST(a_tiny_queue_cap_blocks_push_until_the_output_completes)
{
    struct lf_config *cfg = load("data_dir: %s/data\n"
                                 "inputs: [{id: a, paths: [/x/a.log]}]\n"
                                 "outputs: [{name: screen, type: console, format: text}]\n"
                                 "queue: {max_bytes: 64, batch: {max_events: 3, "
                                 "max_bytes: 1MiB, flush_interval: 10s}}\n");
    size_t filled = 0;
    int rfd = block_stdout(&filled);

    struct lf_source *sa = NULL;
    struct lf_pipeline *p = start_a(cfg, &sa);
    struct producer pr = { .p = p, .src = sa };
    uv_thread_t th;
    ck_assert_int_eq(uv_thread_create(&th, produce, &pr), 0);

    /* Wait until the producer has stopped making progress (blocked), at most 10 s. */
    int last = -1;
    int still = 0;
    for (int i = 0; i < 1000 && still < 20; i++) {
        usleep(10000);
        int n = __atomic_load_n(&pr.pushed, __ATOMIC_ACQUIRE);
        still = n == last ? still + 1 : 0;
        last = n;
    }
    int pushed_blocked = __atomic_load_n(&pr.pushed, __ATOMIC_ACQUIRE);
    struct lf_pipeline_stats st;
    lf_pipeline_stats(p, &st);
    /* Blocked for 200 ms with at most the cap plus one batch queued, nothing acknowledged. */
    ck_assert_int_lt(pushed_blocked, N_SLOW);
    ck_assert_uint_eq(st.events_acked, 0);
    ck_assert_uint_le(st.queue_bytes, 64 + 3 * 32);
    ck_assert_uint_gt(st.queue_bytes, 0);

    /* Read the pipe: the output completes its batches, and only then does push go on. */
    double released = now_s();
    char *out = read_pipe(rfd, filled + N_SLOW * 33);
    ck_assert_int_eq(uv_thread_join(&th), 0);
    ck_assert_int_eq(pr.err, LF_OK);
    ck_assert_int_eq(pr.pushed, N_SLOW);
    ck_assert_double_gt(pr.done_at, released);

    lf_pipeline_stats(p, &st);
    ck_assert_uint_eq(st.events_acked, N_SLOW);
    ck_assert_uint_eq(st.batches_acked, N_SLOW / 3);
    ck_assert_uint_eq(st.queue_bytes, 0);
    ck_assert_uint_eq(sa->acked_offset, (N_SLOW - 1) * 33 + 33);
    ck_assert_uint_eq(sa->inflight, 0);
    lf_pipeline_free(p);
    assert_events(out + filled, N_SLOW); /* once each, in order, after the junk */
    free(out);
    close(rfd);
    lf_source_free(sa);
    lf_config_free(cfg);
}
END_TEST

static void assert_in_order(const char *buf, const char *name, int n);

/* A lane is the only thing that waits on its output: with the console blocked on a full
 * pipe, the file output of the same route still gets and acknowledges every batch cut, and
 * the producer is held up only by the shared cap on batches alive (never by the console's
 * lane itself); once the pipe is read, both outputs have every event once, in order. */
START_TEST(a_blocked_output_holds_up_another_only_through_the_shared_caps)
{
    struct lf_config *cfg = load("data_dir: %s/data\n"
                                 "inputs: [{id: a, paths: [/x/a.log], outputs: [screen, f]}]\n"
                                 "outputs: [{name: screen, type: console, format: text},"
                                 " {name: f, type: file, path: '%s/f', compression: none}]\n"
                                 "queue: {max_bytes: 1MiB, batch: {max_events: 3, "
                                 "max_bytes: 1MiB, flush_interval: 10s}}\n");
    size_t filled = 0;
    int rfd = block_stdout(&filled);
    struct lf_source *sa = NULL;
    struct lf_pipeline *p = start_a(cfg, &sa);
    struct producer pr = { .p = p, .src = sa };
    uv_thread_t th;
    ck_assert_int_eq(uv_thread_create(&th, produce, &pr), 0);

    /* Wait until the producer is held up and the file output has acknowledged every batch
     * cut (everything pushed: a push that waits has cut the full batch first), at most 10 s. */
    struct lf_pipeline_output_stats fs, ss;
    int pushed = -1;
    int still = 0;
    for (int i = 0; i < 1000 && still < 20; i++) {
        usleep(10000);
        int n = __atomic_load_n(&pr.pushed, __ATOMIC_ACQUIRE);
        lf_pipeline_output_stats(p, "f", &fs);
        still = n == pushed && fs.events_acked == (uint64_t)n ? still + 1 : 0;
        pushed = n;
    }
    lf_pipeline_output_stats(p, "screen", &ss);
    struct lf_pipeline_stats st;
    lf_pipeline_stats(p, &st);
    ck_assert_int_gt(pushed, 0);
    ck_assert_int_lt(pushed, N_SLOW); /* held up: the cap on batches alive */
    ck_assert_uint_eq(fs.events_acked, (uint64_t)pushed);
    ck_assert_uint_eq(ss.events_acked, 0);
    ck_assert_uint_eq(st.events_acked, 0); /* a batch is answered once both answered */
    static char buf[1 << 17];
    read_output("f", buf, sizeof(buf));
    ck_assert_uint_eq(count_lines(buf), (size_t)pushed);

    char *out = read_pipe(rfd, filled + N_SLOW * 33);
    ck_assert_int_eq(uv_thread_join(&th), 0);
    ck_assert_int_eq(pr.err, LF_OK);
    ck_assert_int_eq(pr.pushed, N_SLOW);
    lf_pipeline_stats(p, &st);
    ck_assert_uint_eq(st.events_acked, N_SLOW);
    ck_assert_uint_eq(sa->acked_offset, N_SLOW * 33);
    lf_pipeline_free(p);
    assert_events(out + filled, N_SLOW);
    free(out);
    close(rfd);
    read_output("f", buf, sizeof(buf));
    ck_assert_uint_eq(count_lines(buf), N_SLOW);
    assert_in_order(buf, "event", N_SLOW);
    lf_source_free(sa);
    lf_config_free(cfg);
}
END_TEST

/* Pushes n events "event %03d ..." of 32 bytes (33 with the newline) into input 0, the
 * even ones with the routes even_routes, the odd ones with odd_routes. */
static void push_routed(
    struct lf_pipeline *p, struct lf_source *src, int n, uint64_t even_routes, uint64_t odd_routes)
{
    char msg[48];
    for (int i = 0; i < n; i++) {
        snprintf(msg, sizeof(msg), "event %03d 0123456789abcdefghijkl", i);
        struct lf_event ev = { .message = { msg, strlen(msg) },
                               .offset = (uint64_t)i * 33,
                               .end_offset = (uint64_t)i * 33 + 33,
                               .source = src,
                               .routes = i % 2 ? odd_routes : even_routes };
        ck_assert_int_eq(lf_pipeline_push(p, 0, &ev), LF_OK);
    }
}

/* Output sub has exactly the events first, first + 2, ... below n, in order. */
static void assert_every_other(const char *sub, int first, int n)
{
    static char buf[8192];
    char msg[32];
    read_output(sub, buf, sizeof(buf));
    ck_assert_uint_eq(count_lines(buf), (size_t)(n - first + 1) / 2);
    const char *prev = buf;
    for (int i = first; i < n; i += 2) {
        snprintf(msg, sizeof(msg), "\"event %03d ", i);
        const char *at = strstr(prev, msg);
        ck_assert_msg(at != NULL, "event %d in %s", i, buf);
        prev = at;
    }
}

/* Routing by content: one input's events go to two outputs by their routes (even events:
 * the default, the file; odd ones: route 0, the console, blocked on a full pipe). The file
 * acknowledges its batch at once, but the source's offset must not move past the odd
 * events the console still holds: the two batches were cut together and complete
 * together. Once the pipe is read, each output has exactly its events, in order. */
START_TEST(routed_batches_of_one_input_complete_together)
{
    struct lf_config *cfg =
        load("data_dir: %s/data\n"
             "inputs: [{id: a, paths: [/x/a.log], outputs: [f],"
             " routes: [{name: odd, when: 'exists(odd)', outputs: [screen]}]}]\n"
             "outputs: [{name: screen, type: console, format: text},"
             " {name: f, type: file, path: '%s/f', compression: none}]\n"
             "queue: {max_bytes: 1MiB, batch: {max_events: 4, max_bytes: 1MiB, "
             "flush_interval: 10s}}\n");
    size_t filled = 0;
    int rfd = block_stdout(&filled);
    struct lf_errbuf eb = { "" };
    struct lf_source *sa = NULL;
    struct lf_pipeline *p = start_a(cfg, &sa);
    push_routed(p, sa, 8, 0, 1); /* odd events: route 0 */
    char msg[48];
    ck_assert_int_eq(lf_pipeline_flush(p), LF_OK);
    struct lf_pipeline_output_stats fs;
    for (int i = 0; i < 1000; i++) {
        lf_pipeline_output_stats(p, "f", &fs);
        if (fs.events_acked == 4)
            break;
        usleep(10000);
    }
    ck_assert_uint_eq(fs.events_acked, 4);
    usleep(50000);
    /* The file's batch is answered, but its group is not: nothing reaches the source. */
    ck_assert_uint_eq(lf_pipeline_take_acks(p, NULL, NULL), 0);
    ck_assert_uint_eq(sa->acked_offset, 0);
    ck_assert_uint_eq(sa->inflight, 8);

    char *out = read_pipe(rfd, filled + 4 * 33);
    ck_assert_int_eq(lf_pipeline_drain(p, &eb), LF_OK);
    ck_assert_uint_eq(lf_pipeline_take_acks(p, NULL, NULL), 2);
    ck_assert_uint_eq(sa->acked_offset, 8 * 33);
    ck_assert_uint_eq(sa->inflight, 0);
    lf_pipeline_free(p);
    for (int i = 0; i < 4; i++) { /* the console: the odd events, in order */
        snprintf(msg, sizeof(msg), "event %03d 0123456789abcdefghijkl\n", 2 * i + 1);
        ck_assert_msg(strncmp(out + filled + i * 33, msg, 33) == 0, "%.33s", out + filled + i * 33);
    }
    free(out);
    close(rfd);
    assert_every_other("f", 0, 8); /* the file: the even events, in order */
    lf_source_free(sa);
    lf_config_free(cfg);
}
END_TEST

/* Two routes that name the same output share one batch: their events reach it in the
 * order they were read, in as many batches as without routes. */
START_TEST(routes_with_the_same_outputs_share_a_batch)
{
    struct lf_config *cfg = load("data_dir: %s/data\n"
                                 "inputs: [{id: a, paths: [/x/a.log], outputs: [g],"
                                 " routes: [{when: 'exists(x)', outputs: [f]},"
                                 " {when: 'exists(y)', outputs: [f]}]}]\n"
                                 "outputs: [{name: f, type: file, path: '%s/f', compression: none},"
                                 " {name: g, type: file, path: '%s/g', compression: none}]\n"
                                 "queue: {max_bytes: 1MiB, batch: {max_events: 8, max_bytes: 1MiB, "
                                 "flush_interval: 10s}}\n");
    struct lf_errbuf eb = { "" };
    struct lf_source *sa = NULL;
    struct lf_pipeline *p = start_a(cfg, &sa);
    push_routed(p, sa, 16, 1, 2); /* routes 0 and 1 in turn: both to f */
    ck_assert_int_eq(lf_pipeline_drain(p, &eb), LF_OK);
    struct lf_pipeline_stats st;
    lf_pipeline_stats(p, &st);
    ck_assert_uint_eq(st.batches_acked, 2); /* 16 events, 8 a batch: as one route would */
    ck_assert_uint_eq(lf_pipeline_take_acks(p, NULL, NULL), 2);
    ck_assert_uint_eq(sa->acked_offset, 16 * 33);
    lf_pipeline_free(p);
    static char buf[8192];
    read_output("f", buf, sizeof(buf));
    ck_assert_uint_eq(count_lines(buf), 16);
    assert_in_order(buf, "event", 16);
    lf_source_free(sa);
    lf_config_free(cfg);
}
END_TEST

/* An event on two routes goes to both outputs: each gets every event its routes send it in
 * the order they were read (the default output g all 16, f the odd ones too), and each event
 * counts once. */
START_TEST(an_output_two_routes_reach_gets_their_events_in_order)
{
    struct lf_config *cfg = load("data_dir: %s/data\n"
                                 "inputs: [{id: a, paths: [/x/a.log], outputs: [g],"
                                 " routes: [{when: 'exists(x)', outputs: [f], continue: true},"
                                 " {outputs: [g]}]}]\n"
                                 "outputs: [{name: f, type: file, path: '%s/f', compression: none},"
                                 " {name: g, type: file, path: '%s/g', compression: none}]\n"
                                 "queue: {max_bytes: 1MiB, batch: {max_events: 5, max_bytes: 1MiB, "
                                 "flush_interval: 10s}}\n");
    struct lf_errbuf eb = { "" };
    struct lf_source *sa = NULL;
    struct lf_pipeline *p = start_a(cfg, &sa);
    push_routed(p, sa, 16, 2, 3); /* even: route 1 (g); odd: routes 0 and 1 (f and g) */
    ck_assert_int_eq(lf_pipeline_drain(p, &eb), LF_OK);
    struct lf_pipeline_stats st;
    lf_pipeline_stats(p, &st);
    ck_assert_uint_eq(st.events_in, 16);
    ck_assert_uint_eq(st.events_acked, 16);
    lf_pipeline_take_acks(p, NULL, NULL);
    ck_assert_uint_eq(sa->acked_offset, 16 * 33);
    ck_assert_uint_eq(sa->inflight, 0);
    lf_pipeline_free(p);
    static char buf[8192];
    read_output("g", buf, sizeof(buf));
    ck_assert_uint_eq(count_lines(buf), 16);
    assert_in_order(buf, "event", 16);
    assert_every_other("f", 1, 16);
    lf_source_free(sa);
    lf_config_free(cfg);
}
END_TEST

START_TEST(an_output_that_cannot_open_fails_creation_naming_it)
{
    char path[PATH_MAX + 8];
    snprintf(path, sizeof(path), "%s/file", root);
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fclose(f);
    struct lf_config *cfg = load("data_dir: %s/data\n"
                                 "inputs: [{id: a, paths: [/x.log]}]\n"
                                 "outputs: [{name: o, type: file, path: '%s/file/sub'}]\n");
    struct lf_pipeline *p = NULL;
    struct lf_errbuf eb = { "" };
    ck_assert_int_ne(lf_pipeline_new(cfg, &p, &eb), LF_OK);
    ck_assert_ptr_null(p);
    ck_assert_msg(strstr(eb.msg, "file/sub") != NULL, "message: %s", eb.msg);
    lf_config_free(cfg);
}
END_TEST

/* Pushes n events "NAME i" numbered from first to input idx of p, from src (named NAME). */
static void
push_n(struct lf_pipeline *p, size_t idx, struct lf_source *src, const char *name, int first, int n)
{
    char msg[32];
    for (int i = first; i < first + n; i++) {
        snprintf(msg, sizeof(msg), "%s %d", name, i);
        struct lf_event ev = { .message = { msg, strlen(msg) },
                               .offset = (uint64_t)i * 10,
                               .end_offset = (uint64_t)i * 10 + 10,
                               .source = src };
        ck_assert_int_eq(lf_pipeline_push(p, idx, &ev), LF_OK);
    }
}

START_TEST(a_reconfiguration_keeps_same_outputs_and_replaces_changed_ones)
{
    struct lf_config *cfg = load(two_inputs);
    struct lf_config *cfg2 = load("data_dir: %s/data\n"
                                  "inputs:\n"
                                  "  - {id: b, paths: [/x/b.log], outputs: [ob]}\n"
                                  "  - {id: a, paths: [/x/a.log], outputs: [oa]}\n"
                                  "  - {id: c, paths: [/x/c.log], outputs: [oa, ob]}\n"
                                  "outputs:\n"
                                  "  - {name: ob, type: file, path: '%s/ob2', compression: none}\n"
                                  "  - {name: oa, type: file, path: '%s/oa', compression: none}\n"
                                  "queue: {max_bytes: 64, batch: {max_events: 3}}\n");
    struct lf_config *bad = load("data_dir: %s/data\n"
                                 "inputs: [{id: a, paths: [/x/a.log]}]\n"
                                 "outputs: [{name: oa, type: file, path: '%s/oa/x/y'},"
                                 " {name: new, type: file, path: '/dev/null/nope'}]\n");
    struct lf_pipeline *p = NULL;
    struct lf_errbuf eb = { "" };
    ck_assert_int_eq(lf_pipeline_new(cfg, &p, &eb), LF_OK);
    struct lf_source *sa = NULL;
    struct lf_source *sb = NULL;
    struct lf_source *sc = NULL;
    ck_assert_int_eq(lf_source_new("/x/a.log", "a", "h", NULL, false, &sa), LF_OK);
    ck_assert_int_eq(lf_source_new("/x/b.log", "b", "h", NULL, false, &sb), LF_OK);
    ck_assert_int_eq(lf_source_new("/x/c.log", "c", "h", NULL, false, &sc), LF_OK);
    push_n(p, 0, sa, "a", 0, 4);
    push_n(p, 1, sb, "b", 0, 4);
    /* The two batches cut (3 events each) are delivered, one event of each input is still
     * in its current batch: not drained, whatever the lanes got to. */
    struct lf_pipeline_output_stats os;
    for (int i = 0; i < 5000; i++) {
        struct lf_pipeline_output_stats ob;
        lf_pipeline_output_stats(p, "oa", &os);
        lf_pipeline_output_stats(p, "ob", &ob);
        if (os.events_acked == 6 && ob.events_acked == 3)
            break;
        usleep(1000);
    }
    ck_assert_uint_eq(os.events_acked, 6);
    /* Not drained: the events still in the current batches go by the old routes. Refused
     * by the file output's check, as the config loader would have. */
    ck_assert_int_eq(lf_pipeline_reconfigure(p, bad, &eb), LF_ECONFIG);
    ck_assert_msg(strstr(eb.msg, "nope") != NULL, "message: %s", eb.msg);
    ck_assert_int_eq(lf_pipeline_reconfigure(p, cfg2, &eb), LF_OK);
    ck_assert(lf_pipeline_borrows(p, cfg)); /* oa was kept: its settings are cfg's */
    ck_assert(lf_pipeline_borrows(p, cfg2));
    ck_assert(!lf_pipeline_borrows(p, bad));
    push_n(p, 0, sb, "b", 4, 2); /* b is input 0 now */
    push_n(p, 1, sa, "a", 4, 2);
    push_n(p, 2, sc, "c", 0, 2);
    ck_assert_int_eq(lf_pipeline_drain(p, &eb), LF_OK);
    lf_pipeline_output_stats(p, "ob", &os);
    ck_assert_uint_eq(os.events_acked, 4 + 2 + 2); /* counted on across the replacement */
    lf_pipeline_output_stats(p, "oa", &os);
    ck_assert_uint_eq(os.events_acked, 8 + 2 + 2);
    ck_assert(!lf_pipeline_borrows(p, bad));
    lf_pipeline_output_stats(p, "gone", &os);
    ck_assert_uint_eq(os.events_acked, 0);
    lf_pipeline_take_acks(p, NULL, NULL);
    ck_assert_uint_eq(sa->acked_offset, 60);
    ck_assert_uint_eq(sb->acked_offset, 60);
    ck_assert_uint_eq(sc->acked_offset, 20);
    lf_pipeline_free(p);

    static char buf[8192];
    read_output("oa", buf, sizeof(buf));
    ck_assert_uint_eq(count_lines(buf), 4 + 4 + 2 + 2); /* a, b before; a, c after */
    ck_assert_ptr_null(strstr(buf, "\"b 4\""));
    ck_assert_ptr_nonnull(strstr(buf, "\"c 1\""));
    /* b 3, cut at the switch, went to the old ob or was handed to its successor. */
    read_output("ob", buf, sizeof(buf));
    size_t old_ob = count_lines(buf);
    ck_assert_uint_ge(old_ob, 3);
    read_output("ob2", buf, sizeof(buf));
    ck_assert_uint_eq(old_ob + count_lines(buf), 4 + 2 + 2);
    ck_assert_ptr_nonnull(strstr(buf, "\"b 5\""));
    lf_source_free(sa);
    lf_source_free(sb);
    lf_source_free(sc);
    lf_config_free(bad);
    lf_config_free(cfg2);
    lf_config_free(cfg);
}
END_TEST

/* Pushes "event NNN 0123456789abcdefghijkl" (33 bytes as text lines) first..first+n-1 to
 * input 0 of p, at offsets 10 apart. */
static void push_events(struct lf_pipeline *p, struct lf_source *src, int first, int n)
{
    char msg[40];
    for (int i = first; i < first + n; i++) {
        snprintf(msg, sizeof(msg), "event %03d 0123456789abcdefghijkl", i);
        struct lf_event ev = { .message = { msg, strlen(msg) },
                               .offset = (uint64_t)i * 10,
                               .end_offset = (uint64_t)i * 10 + 10,
                               .source = src };
        ck_assert_int_eq(lf_pipeline_push(p, 0, &ev), LF_OK);
    }
}

/* Outputs that are down never hold up a reconfiguration: with the console blocked on a full
 * pipe and batches queued for it, pushes do not wait while lf_pipeline_yield() is on, and a
 * reconfiguration that keeps the console and adds a file output applies at once; the
 * console later gets every event once, in order, and the file output what came after. */
START_TEST(a_reconfiguration_never_waits_for_a_blocked_output)
{
    struct lf_config *cfg = load("data_dir: %s/data\n"
                                 "inputs: [{id: a, paths: [/x/a.log], outputs: [screen]}]\n"
                                 "outputs: [{name: screen, type: console, format: text}]\n"
                                 "queue: {max_bytes: 64, batch: {max_events: 3, "
                                 "max_bytes: 1MiB, flush_interval: 10s}}\n");
    struct lf_config *cfg2 = load("data_dir: %s/data\n"
                                  "inputs: [{id: a, paths: [/x/a.log], outputs: [screen, f]}]\n"
                                  "outputs: [{name: screen, type: console, format: text},"
                                  " {name: f, type: file, path: '%s/f', compression: none}]\n"
                                  "queue: {max_bytes: 64, batch: {max_events: 3, "
                                  "max_bytes: 1MiB, flush_interval: 10s}}\n");
    size_t filled = 0;
    int rfd = block_stdout(&filled);
    struct lf_errbuf eb = { "" };
    struct lf_source *sa = NULL;
    struct lf_pipeline *p = start_a(cfg, &sa);
    lf_pipeline_yield(p, true); /* else the second batch would wait for the console */
    ck_assert(lf_pipeline_yielding(p));
    push_events(p, sa, 0, 30);
    double t0 = now_s();
    ck_assert_int_eq(lf_pipeline_reconfigure(p, cfg2, &eb), LF_OK);
    ck_assert_double_lt(now_s() - t0, 1.0);
    ck_assert(lf_pipeline_borrows(p, cfg)); /* the console kept: made from cfg */
    push_events(p, sa, 30, 30);
    lf_pipeline_yield(p, false);
    ck_assert(!lf_pipeline_yielding(p));
    ck_assert_int_eq(lf_pipeline_flush(p), LF_OK); /* the last batch too */
    char *out = read_pipe(rfd, filled + 60 * 33);
    ck_assert_int_eq(lf_pipeline_drain(p, &eb), LF_OK);
    lf_pipeline_take_acks(p, NULL, NULL);
    ck_assert_uint_eq(sa->acked_offset, 600);
    ck_assert_uint_eq(sa->inflight, 0);
    lf_pipeline_free(p);
    assert_events(out + filled, 60);
    free(out);
    close(rfd);
    static char buf[8192];
    read_output("f", buf, sizeof(buf));
    ck_assert_uint_eq(count_lines(buf), 30);
    ck_assert_ptr_null(strstr(buf, "\"event 029"));
    ck_assert_ptr_nonnull(strstr(buf, "\"event 030"));
    lf_source_free(sa);
    lf_config_free(cfg2);
    lf_config_free(cfg);
}
END_TEST

/* A lane that waits for a batch the preparer is compressing releases the lock meanwhile; a
 * reconfiguration that changes its output then hands that batch (and the rest of its queue)
 * to the new lane. The old lane must look at its queue again, not send the batch it had
 * picked: it is no longer its own (sending it too answered it twice and emptied the ring
 * under a count of -1). Slow compression (zstd level 19) and many switches make the window
 * wide; every event must be acknowledged once, and counted once in the output's counters,
 * which go on across every replacement (a lane replaced twice in a row while its requests
 * were still in flight counted their answers into its first successor's, which no longer
 * spoke for the output). */
START_TEST(a_lane_waiting_for_a_batch_being_prepared_lets_a_reconfiguration_take_it)
{
    static const char *fmt = "data_dir: %%s/data\n"
                             "inputs: [{id: a, paths: [/x/a.log], outputs: [o]}]\n"
                             "outputs: [{name: o, type: file, path: '%%s/o%d', level: 12}]\n"
                             "queue: {max_bytes: 64MiB, batch: {max_events: 400, "
                             "max_bytes: 1MiB, flush_interval: 10s}}\n";
    char yaml[2][512];
    struct lf_config *cfg[2];
    for (int i = 0; i < 2; i++) {
        snprintf(yaml[i], sizeof(yaml[i]), fmt, i);
        cfg[i] = load(yaml[i]);
    }
    struct lf_pipeline *p = NULL;
    struct lf_errbuf eb = { "" };
    ck_assert_int_eq(lf_pipeline_new(cfg[0], &p, &eb), LF_OK);
    struct lf_source *sa = NULL;
    ck_assert_int_eq(lf_source_new("/x/a.log", "a", "h", NULL, false, &sa), LF_OK);
    enum {
        ROUNDS = 30,
        PER_ROUND = 1200
    };
    char msg[160];
    int n = 0;
    for (int r = 0; r < ROUNDS; r++) {
        for (int i = 0; i < PER_ROUND; i++, n++) {
            snprintf(msg, sizeof(msg),
                     "event %d %08x some words of a log line, %d, varied "
                     "enough that zstd has work to do: %x",
                     n, (unsigned)n * 2654435761u, n % 977, (unsigned)n * 40503u);
            struct lf_event ev = { .message = { msg, strlen(msg) },
                                   .offset = (uint64_t)n * 10,
                                   .end_offset = (uint64_t)n * 10 + 10,
                                   .source = sa };
            ck_assert_int_eq(lf_pipeline_push(p, 0, &ev), LF_OK);
        }
        ck_assert_int_eq(lf_pipeline_reconfigure(p, cfg[(r + 1) % 2], &eb), LF_OK);
        lf_pipeline_take_acks(p, NULL, NULL);
    }
    ck_assert_int_eq(lf_pipeline_drain(p, &eb), LF_OK);
    lf_pipeline_take_acks(p, NULL, NULL);
    struct lf_pipeline_stats st;
    lf_pipeline_stats(p, &st);
    ck_assert_uint_eq(st.events_acked, (uint64_t)n);
    ck_assert_uint_eq(st.batches_failed, 0);
    struct lf_pipeline_output_stats os;
    lf_pipeline_output_stats(p, "o", &os);
    ck_assert_uint_eq(os.events_acked, (uint64_t)n); /* once each, across the switches */
    ck_assert_uint_eq(sa->acked_offset, (uint64_t)n * 10);
    ck_assert_uint_eq(sa->inflight, 0);
    lf_pipeline_free(p);
    lf_source_free(sa);
    for (int i = 0; i < 2; i++)
        lf_config_free(cfg[i]);
}
END_TEST

/* Producers on threads of their own: each thread pushes one source through its producer. */
#define PROD_EVENTS 3000

struct prod_arg {
    struct lf_producer *pr;
    struct lf_source *src;
    const char *name;
    bool flush_first; /* lf_producer_flush() before lf_producer_free(), or free alone */
};

static void produce_through(void *arg)
{
    struct prod_arg *a = arg;
    char msg[32];
    for (int i = 0; i < PROD_EVENTS; i++) {
        snprintf(msg, sizeof(msg), "%s %d", a->name, i);
        struct lf_event ev = { .message = { msg, strlen(msg) },
                               .offset = (uint64_t)i * 10,
                               .end_offset = (uint64_t)i * 10 + 10,
                               .source = a->src };
        ck_assert_int_eq(lf_producer_push(a->pr, 0, &ev), LF_OK);
    }
    if (a->flush_first)
        ck_assert_int_eq(lf_producer_flush(a->pr), LF_OK);
    lf_producer_free(a->pr); /* queues what it still holds */
}

/* The numbers of "NAME i" messages in buf, in order, must be 0, 1, ... n - 1. */
static void assert_in_order(const char *buf, const char *name, int n)
{
    char key[40];
    snprintf(key, sizeof(key), "\"message\":\"%s ", name);
    int want = 0;
    for (const char *at = strstr(buf, key); at != NULL; at = strstr(at + 1, key)) {
        int got = atoi(at + strlen(key));
        ck_assert_msg(got == want, "%s: event %d where %d was due", name, got, want);
        want++;
    }
    ck_assert_int_eq(want, n);
}

START_TEST(producers_on_threads_keep_each_source_in_order_and_lose_nothing)
{
    struct lf_config *cfg =
        load("data_dir: %s/data\n"
             "inputs: [{id: a, paths: [/x/*.log]}]\n"
             "outputs: [{name: o, type: file, path: '%s/o', compression: none}]\n"
             "queue: {max_bytes: 64KiB, batch: {max_events: 7, max_bytes: 1MiB}}\n");
    struct lf_config *cfg2 = load("data_dir: %s/data\n"
                                  "inputs: [{id: a, paths: [/x/*.log]}]\n"
                                  "outputs: [{name: o2, type: console}]\n");
    struct lf_pipeline *p = NULL;
    struct lf_errbuf eb = { "" };
    ck_assert_int_eq(lf_pipeline_new(cfg, &p, &eb), LF_OK);
    struct lf_source *src[3] = { NULL, NULL, NULL };
    const char *names[3] = { "s0", "s1", "s2" };
    for (int k = 0; k < 3; k++)
        ck_assert_int_eq(lf_source_new(names[k], "a", "h", NULL, false, &src[k]), LF_OK);

    /* Eight producers at most; a reconfiguration waits until they are gone. */
    struct lf_producer *extra[8];
    for (int k = 0; k < 8; k++)
        ck_assert_int_eq(lf_producer_new(p, &extra[k]), LF_OK);
    struct lf_producer *ninth = NULL;
    ck_assert_int_eq(lf_producer_new(p, &ninth), LF_EINVAL);
    ck_assert_ptr_null(ninth);
    ck_assert_int_eq(lf_pipeline_reconfigure(p, cfg2, &eb), LF_EINVAL);
    ck_assert_msg(strstr(eb.msg, "producers") != NULL, "message: %s", eb.msg);
    for (int k = 2; k < 8; k++)
        lf_producer_free(extra[k]);

    struct prod_arg args[2] = { { extra[0], src[1], names[1], true },
                                { extra[1], src[2], names[2], false } };
    uv_thread_t th[2];
    for (int k = 0; k < 2; k++)
        ck_assert_int_eq(uv_thread_create(&th[k], produce_through, &args[k]), 0);
    push_n(p, 0, src[0], names[0], 0, PROD_EVENTS); /* the pipeline's own, meanwhile */
    for (int k = 0; k < 2; k++)
        ck_assert_int_eq(uv_thread_join(&th[k]), 0);
    ck_assert_int_eq(lf_pipeline_drain(p, &eb), LF_OK);

    struct lf_pipeline_stats st;
    lf_pipeline_stats(p, &st);
    ck_assert_uint_eq(st.events_in, 3 * PROD_EVENTS);
    ck_assert_uint_eq(st.events_acked, 3 * PROD_EVENTS);
    lf_pipeline_take_acks(p, NULL, NULL);
    for (int k = 0; k < 3; k++) {
        ck_assert_uint_eq(src[k]->acked_offset, PROD_EVENTS * 10);
        ck_assert_uint_eq(src[k]->inflight, 0);
    }
    ck_assert_int_eq(lf_pipeline_reconfigure(p, cfg2, &eb), LF_OK); /* none left */
    lf_pipeline_free(p);

    static char buf[3 * PROD_EVENTS * 200];
    read_output("o", buf, sizeof(buf));
    ck_assert_uint_eq(count_lines(buf), 3 * PROD_EVENTS);
    for (int k = 0; k < 3; k++)
        assert_in_order(buf, names[k], PROD_EVENTS);
    for (int k = 0; k < 3; k++)
        lf_source_free(src[k]);
    lf_config_free(cfg2);
    lf_config_free(cfg);
}
END_TEST

/* Takes the answers for ms milliseconds, asserting none comes: the spool's disk fails. */
static void assert_no_answer_for(struct lf_pipeline *p, struct lf_source *src, int ms)
{
    for (int t = 0; t < ms; t += 100) {
        ck_assert_uint_eq(lf_pipeline_take_acks(p, NULL, NULL), 0);
        struct lf_pipeline_stats st;
        lf_pipeline_stats(p, &st);
        ck_assert_uint_eq(st.events_acked, 0);
        ck_assert_uint_eq(src->acked_offset, 0);
        usleep(100 * 1000);
    }
}

/* With the spool on, an answer means the batch's record is durable. While every fdatasync
 * of the spool fails, nothing is answered; once they succeed again, every batch is answered
 * and delivered once (the records a failed fdatasync covered are appended again, never
 * kept beside their new copies); failed writes likewise. */
START_TEST(a_failing_spool_disk_answers_nothing_until_a_good_fdatasync)
{
    struct lf_config *cfg =
        load("data_dir: %s/data\n"
             "inputs: [{id: a, paths: [/x/a.log]}]\n"
             "outputs: [{name: o, type: file, path: '%s/o', compression: none}]\n"
             "queue: {max_bytes: 1MiB, batch: {max_events: 5, max_bytes: 1MiB},\n"
             "        spool: {enabled: true, max_bytes: 64MiB}}\n");
    struct lf_pipeline *p = NULL;
    struct lf_errbuf eb = { "" };
    ck_assert_int_eq(lf_pipeline_new(cfg, &p, &eb), LF_OK);
    struct lf_source *src = NULL;
    ck_assert_int_eq(lf_source_new("/x/a.log", "a", "h", NULL, false, &src), LF_OK);

    fault_set(&fail_syncs, 1000000);
    push_n(p, 0, src, "ev", 0, 20); /* four batches */
    ck_assert_int_eq(lf_pipeline_flush(p), LF_OK);
    assert_no_answer_for(p, src, 2500); /* the writer tries again every second */
    ck_assert_int_lt(__atomic_load_n(&fail_syncs, __ATOMIC_SEQ_CST), 1000000 - 1);
    ck_assert_int_eq(__atomic_load_n(&good_syncs, __ATOMIC_SEQ_CST), 0);
    fault_set(&fail_syncs, 0);
    ck_assert_int_eq(lf_pipeline_drain(p, &eb), LF_OK);
    lf_pipeline_take_acks(p, NULL, NULL);
    ck_assert_uint_eq(src->acked_offset, 200);

    fault_set(&fail_writes, 2); /* a header, then the record after it is appended again */
    push_n(p, 0, src, "ev", 20, 20);
    ck_assert_int_eq(lf_pipeline_drain(p, &eb), LF_OK);
    ck_assert_int_eq(__atomic_load_n(&fail_writes, __ATOMIC_SEQ_CST), 0);
    lf_pipeline_take_acks(p, NULL, NULL);
    ck_assert_uint_eq(src->acked_offset, 400);
    ck_assert_int_eq(lf_pipeline_drain_spool(p, &eb), LF_OK);
    lf_pipeline_free(p);

    static char buf[40 * 400];
    read_output("o", buf, sizeof(buf));
    ck_assert_uint_eq(count_lines(buf), 40);
    assert_in_order(buf, "ev", 40);
    lf_source_free(src);
    lf_config_free(cfg);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("pipeline");
    TCase *tc = tcase_create("delivery");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, batches_reach_only_the_outputs_their_input_routes_to_in_order);
    tcase_add_test(tc, a_tiny_queue_cap_blocks_push_until_the_output_completes);
    tcase_add_test(tc, a_blocked_output_holds_up_another_only_through_the_shared_caps);
    tcase_add_test(tc, routed_batches_of_one_input_complete_together);
    tcase_add_test(tc, routes_with_the_same_outputs_share_a_batch);
    tcase_add_test(tc, an_output_two_routes_reach_gets_their_events_in_order);
    tcase_add_test(tc, an_output_that_cannot_open_fails_creation_naming_it);
    tcase_add_test(tc, a_reconfiguration_keeps_same_outputs_and_replaces_changed_ones);
    tcase_add_test(tc, a_reconfiguration_never_waits_for_a_blocked_output);
    tcase_add_test(tc, a_lane_waiting_for_a_batch_being_prepared_lets_a_reconfiguration_take_it);
    tcase_add_test(tc, producers_on_threads_keep_each_source_in_order_and_lose_nothing);
    suite_add_tcase(s, tc);
    tc = tcase_create("spool faults");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, a_failing_spool_disk_answers_nothing_until_a_good_fdatasync);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? 0 : 1;
}
