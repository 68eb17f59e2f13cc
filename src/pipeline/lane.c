/* lane.c - one output's delivery: its queue, sends, answers, retries and backoff.
 *
 *   queue (cut order) ─► send ─► lf_output_done() ─► OK: answered (spool: cursor moves)
 *        ▲                            │               EAGAIN: retry after backoff, or hand
 *        └──── retries (attempts) ◄───┘                       over to a successor
 *                                                     else: given up on
 *
 * A lane is the only thing that touches its output (sends, flushes, prepares forms, reads
 * its counters) and its queue, retries and, in spool mode, spool position: struct lane is
 * defined here only, and the other files go through lf_lane__*(). Its thread sends in cut
 * order, retries first, then the queue; it flushes its output whenever it has nothing else
 * to send. A reconfiguration keeps an unchanged output's lane; a changed one's retires,
 * handing what it has not sent to its successor; a removed one's retires and ends once
 * nothing is left.
 *
 * Threads and lock: the lane's thread, the output's answer callback (on_output_done(), any
 * thread: the output's own or the lane's), the batcher (lf_lane__insert()), the preparer
 * (lf_lane__prepare(), without the lock) and a reconfiguration (lf_lane__retire_locked()),
 * all under the pipeline's one mutex p->mu, released while sending or flushing. One lock, and
 * why: every step of a lane also changes what the pipeline shares (a batch's pending answers,
 * completion of the alive list, the pipeline's counters and failure, the hand-over between a
 * retiring lane and its successor), so a lane lock would be taken with p->mu at each step,
 * never instead of it; the lock is taken per batch, not per event, and never held across a
 * send, a flush or a compression. */
#include "config.h"

#define LF_LOG_COMPONENT "pipeline"
#include "pipeline_int.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "logferry/log.h"
#include "logferry/watchdog.h"

/* Retries of a batch a file or console output answered LF_EAGAIN for: backoff doubles from
 * 100 ms to 5 s. Network outputs use their own `backoff:` (retry_delay_ms()). */
#define LF_RETRY_INITIAL_MS 100
#define LF_RETRY_MAX_MS     5000
/* How long an output removed by a reconfiguration keeps retrying what it still holds. */
#define LF_RETIRE_GRACE_MS 30000

/* A batch an output answered LF_EAGAIN for at least once: sent again after its backoff. */
struct attempt {
    struct qbatch *qb;
    unsigned count;     /* retries so far */
    uint64_t waited_ms; /* backoff slept so far */
    int64_t due_ms;     /* when to send it again (monotonic) */
    bool waiting;       /* in backoff; false while it is sent again */
};

/* One output's delivery: a queue of batches to send, its retries, its thread. A
 * reconfiguration keeps the lane of an unchanged output as it is; a changed output's lane
 * retires, handing what it has not sent to its successor (which sends nothing until the
 * old one's requests in flight are answered, so the output still gets batches in order);
 * a removed output's lane retires and ends once everything it holds is answered. */
struct lane {
    struct lf_pipeline *p;
    struct lf_output *out;             /* owned */
    const struct lf_output_conf *conf; /* borrowed: what out was made from */
    size_t slots;                      /* room in queue and att (grows with the batches alive) */
    struct qbatch **queue;             /* owned; to send, oldest first (a ring of slots) */
    size_t q_head;
    size_t q_len;
    struct attempt *att;               /* owned; slots of them, oldest first */
    size_t n_att;
    size_t in_flight;                  /* sent, not answered (held ones included) */
    size_t held;                       /* of those, held by the output (lf_output_hold()):
                                          not counted against max_in_flight */
    bool drained;                      /* its output was asked to deliver what it holds */
    bool gave_up;                      /* ... and, at an abort, to give it up */
    int64_t drain_ms;                  /* when it was asked to deliver (monotonic) */
    size_t max_in_flight;              /* 0: no limit but the queue's caps */
    bool needs_flush;                  /* something was sent since the last flush */
    uint64_t rng;                      /* xorshift state for the backoff's jitter */
    struct lf_pipeline_output_stats own; /* its counters, while it is the output's lane
                                            (retired and replaced: counters()) */
    uint64_t obytes;                   /* its output's bytes_written as last read */
    unsigned failing;                  /* failed answers since its last delivery */
    bool quit;                         /* retiring: end once nothing is left */
    int64_t quit_ms;                   /* when it started retiring (monotonic) */
    struct lane *succ;                 /* retiring, changed: the lane taking over */
    struct lane *pred;                 /* a changed output's predecessor, still answering:
                                          send nothing until it ends */
    bool ended;                        /* its thread returned: ready to be joined */
    struct lf_spool_pos pos;           /* delivery: every record before it delivered by this
                                          output (or not routed to it) */
    uv_cond_t work;
    bool started;
    uv_thread_t thread;
};

static const char *input_name(const struct qbatch *qb)
{
    return qb->cfg != NULL && qb->input_idx < qb->cfg->n_inputs
               ? qb->cfg->inputs[qb->input_idx].id
               : "(spooled)";
}

/* The monotonic clock in ms. */
static int64_t ms_now(void)
{
    return (int64_t)(uv_hrtime() / 1000000);
}

/* The lane (current or retiring) whose output is out, or NULL. Called with p->mu held. */
static struct lane *lane_of(const struct lf_pipeline *p, const struct lf_output *out)
{
    for (size_t i = 0; i < p->n_lanes; i++) {
        if (p->lanes[i]->out == out)
            return p->lanes[i];
    }
    return NULL;
}

/* Where lane l counts: its own counters, or, once retired for a changed output, its newest
 * successor's, which go on under the output's name (a lane replaced again since passes
 * them on). Every lane of that chain lives while l does: a successor ends only after its
 * predecessor. Called with p->mu held. */
static struct lf_pipeline_output_stats *counters(struct lane *l)
{
    while (l->succ != NULL)
        l = l->succ;
    return &l->own;
}

/* Records that lane l's output gave up on qb (refused, failed to send, out of retries). */
void lf_lane__give_up_locked(struct lane *l, struct qbatch *qb, const char *why)
{
    struct lf_pipeline *p = l->p;
    qb->failed = true;
    qb->pending--;
    if (p->detaching)
        return; /* stopped: the spool keeps the batch for the next delivery */
    char msg[sizeof(p->fail_msg)];
    snprintf(msg, sizeof(msg), "output %s: batch of %zu events from input %s not delivered: %s",
             l->conf->name, lf_pipeline__count(qb), input_name(qb), why);
    if (p->fail_msg[0] == '\0')
        snprintf(p->fail_msg, sizeof(p->fail_msg), "%s", msg);
    lf_error("%s", msg);
    if (p->parent != NULL)
        lf_pipeline__set_failed(p->parent, msg);
}

static struct attempt *find_attempt(struct lane *l, const struct qbatch *qb)
{
    for (size_t i = 0; i < l->n_att; i++) {
        if (l->att[i].qb == qb)
            return &l->att[i];
    }
    return NULL;
}

static void drop_attempt(struct lane *l, struct attempt *a)
{
    size_t i = (size_t)(a - l->att);
    memmove(&l->att[i], &l->att[i + 1], (l->n_att - i - 1) * sizeof(*a));
    l->n_att--;
}

/* Makes room in l's queue and retries for n batches (every batch alive, at most: a lane
 * holds nothing else). False when out of memory. Called with p->mu held. */
static bool lane_reserve(struct lane *l, size_t n)
{
    if (n <= l->slots)
        return true;
    size_t slots = l->slots * 2 > n ? l->slots * 2 : n;
    struct qbatch **q = calloc(slots, sizeof(*q));
    struct attempt *a = calloc(slots, sizeof(*a));
    if (q == NULL || a == NULL) {
        free(q);
        free(a);
        return false;
    }
    for (size_t i = 0; i < l->q_len; i++)
        q[i] = l->queue[(l->q_head + i) % l->slots];
    memcpy(a, l->att, l->n_att * sizeof(*a));
    free(l->queue);
    free(l->att);
    l->queue = q;
    l->att = a;
    l->q_head = 0;
    l->slots = slots;
    return true;
}

/* Puts qb in l's queue among the others by cut order (a batch handed over from a retiring
 * lane goes before the later ones already there). False when out of memory. Called with
 * p->mu held. */
bool lf_lane__insert(struct lane *l, struct qbatch *qb)
{
    if (!lane_reserve(l, l->p->alive))
        return false;
    size_t at = l->q_len;
    while (at > 0 && l->queue[(l->q_head + at - 1) % l->slots]->order > qb->order) {
        l->queue[(l->q_head + at) % l->slots] = l->queue[(l->q_head + at - 1) % l->slots];
        at--;
    }
    l->queue[(l->q_head + at) % l->slots] = qb;
    l->q_len++;
    uv_cond_signal(&l->work);
    return true;
}

/* True when lane to can send qb: a batch encoded as NDJSON when cut has no messages for an
 * output that reads them. */
bool lf_lane__can_take(const struct lane *to, struct qbatch *qb)
{
    return lf_batch_get_mode(qb->batch) != LF_BATCH_ENCODE_ON_ADD ||
           !lf_output_needs_messages(to->out);
}

/* Hands qb, which retiring lane l has not delivered, to l's successor. False when l has
 * none, or it cannot send qb. Called with p->mu held. */
static bool hand_over_locked(struct lane *l, struct qbatch *qb)
{
    struct lane *to = l->succ;
    while (to != NULL && to->quit && to->succ != NULL)
        to = to->succ; /* replaced again since: the newest takes it */
    if (to == NULL || !lf_lane__can_take(to, qb) || !lf_lane__insert(to, qb))
        return false;
    for (size_t k = 0; k < qb->n_routes; k++) {
        if (qb->routes[k] == l)
            qb->routes[k] = to;
    }
    return true;
}

/* Retires lane l (its output is no longer in the config as it was). With a successor (the
 * same name, other settings), l hands it every batch it has not sent (or sends it itself,
 * when the new settings cannot: see lf_lane__can_take()), its counters go on in succ's, and
 * succ sends nothing until l's requests in flight are answered. Called with p->mu held. */
void lf_lane__retire_locked(struct lane *l, struct lane *succ)
{
    l->quit = true;
    l->quit_ms = (int64_t)(uv_hrtime() / 1000000);
    uv_cond_signal(&l->work);
    if (succ == NULL)
        return;
    l->succ = succ;
    succ->pred = l;
    succ->pos = l->pos; /* spool mode: it starts where its predecessor is */
    succ->own = l->own; /* l counts on in succ's from now on: counters() */
    for (size_t i = 0; i < l->n_att;) {
        struct attempt *a = &l->att[i];
        if (a->waiting && hand_over_locked(l, a->qb)) {
            drop_attempt(l, a);
            continue;
        }
        i++;
    }
    size_t n = l->q_len;
    for (size_t i = 0; i < n; i++) {
        struct qbatch *qb = l->queue[l->q_head];
        l->q_head = (l->q_head + 1) % l->slots;
        l->q_len--;
        if (!hand_over_locked(l, qb)) {
            l->queue[(l->q_head + l->q_len) % l->slots] = qb; /* kept, in order */
            l->q_len++;
        }
    }
}

const struct lf_output_conf *lf_lane__conf(const struct lane *l)
{
    return l->conf;
}

bool lf_lane__needs_messages(const struct lane *l)
{
    return lf_output_needs_messages(l->out);
}

void lf_lane__prepare(struct lane *l, struct lf_batch *b)
{
    /* A failure here shows again, and is reported, when send computes the form. */
    lf_err_ignore(lf_output_prepare(l->out, b));
}

bool lf_lane__ended_locked(const struct lane *l)
{
    return l->ended;
}

void lf_lane__wake_locked(struct lane *l)
{
    uv_cond_signal(&l->work);
}

void lf_lane__stats_locked(const struct lane *l, struct lf_pipeline_output_stats *out)
{
    *out = l->own;
}

uint64_t lf_lane__backoff_ms_locked(const struct lane *l)
{
    uint64_t ms = 0;
    for (size_t i = 0; i < l->n_att; i++) {
        if (l->att[i].waited_ms > ms)
            ms = l->att[i].waited_ms;
    }
    return ms;
}

struct lf_spool_pos lf_lane__pos_locked(const struct lane *l)
{
    return l->pos;
}

/* The delay before retry count + 1 of lane l. Network outputs: exponential from their
 * backoff.initial up to backoff.max, with full jitter (uniform in 1 ms..the ceiling), so
 * agents that failed together do not come back together. Called with p->mu held. */
static uint64_t retry_delay_ms(struct lane *l, unsigned count)
{
    const struct lf_output_conf *oc = l->conf;
    if (oc->type == LF_OUTPUT_FILE || oc->type == LF_OUTPUT_CONSOLE) {
        uint64_t d = (uint64_t)LF_RETRY_INITIAL_MS << (count < 6 ? count : 6);
        return d < LF_RETRY_MAX_MS ? d : LF_RETRY_MAX_MS;
    }
    uint64_t ceiling = oc->backoff_initial_ms;
    for (unsigned i = 0; i < count && ceiling < oc->backoff_max_ms; i++)
        ceiling *= 2;
    if (ceiling > oc->backoff_max_ms)
        ceiling = oc->backoff_max_ms;
    l->rng ^= l->rng << 13;
    l->rng ^= l->rng >> 7;
    l->rng ^= l->rng << 17;
    return 1 + l->rng % (ceiling > 0 ? ceiling : 1);
}

/* Schedules qb to be sent again by lane l after its backoff (min_ms at least: the peer's
 * Retry-After), or gives up on it once the
 * retry budget is spent. Called with p->mu held. */
static void schedule_retry_locked(struct lane *l, struct qbatch *qb, uint64_t min_ms)
{
    struct lf_pipeline *p = l->p;
    struct attempt *a = find_attempt(l, qb);
    if (a == NULL) {
        a = &l->att[l->n_att++]; /* room: slots covers every alive batch */
        *a = (struct attempt){ .qb = qb };
    }
    int64_t now_ms = (int64_t)(uv_hrtime() / 1000000);
    if (l->quit && l->succ == NULL && now_ms - l->quit_ms >= LF_RETIRE_GRACE_MS) {
        /* Its output was removed by a reconfiguration: nothing sends there any more. */
        drop_attempt(l, a);
        qb->pending--;
        lf_warn("output %s (removed by a reload): a batch of %zu events is still not "
                "delivered there after %d s; no longer sent there", l->conf->name,
                lf_batch_count(qb->batch), LF_RETIRE_GRACE_MS / 1000);
        return;
    }
    uint64_t delay_ms = retry_delay_ms(l, a->count);
    if (delay_ms < min_ms)
        delay_ms = min_ms;
    /* With a budget (a backfill), once a batch was given up on the run cannot succeed: a
     * later one that fails too is given up on at once, not after a budget of its own. */
    bool doomed = p->retry_budget_ms > 0 && p->failed;
    if (p->aborted || doomed || (p->retry_budget_ms > 0 && a->waited_ms >= p->retry_budget_ms)) {
        drop_attempt(l, a);
        lf_lane__give_up_locked(l, qb,
                       p->aborted ? "given up at shutdown"
                       : doomed   ? "an earlier batch was given up on, so this one is too"
                                  : "still failing after retries");
        return;
    }
    a->count++;
    a->waited_ms += delay_ms;
    a->due_ms = now_ms + (int64_t)delay_ms;
    a->waiting = true;
    p->stats.retries++;
    counters(l)->retries++;
    lf_warn("output %s: batch of %zu events not delivered; retry %u in %" PRIu64 " ms",
            l->conf->name, lf_batch_count(qb->batch), a->count, delay_ms);
}

const double lf_pipeline_latency_bounds[LF_LATENCY_BUCKETS] = {
    0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300,
};

/* Adds one acknowledgement's latency to lane l's histogram. Called with p->mu held. */
static void time_answer_locked(struct lane *l, const struct qbatch *qb)
{
    struct lf_pipeline_output_stats *s = counters(l);
    uint64_t us = (uv_hrtime() - qb->cut_ns) / 1000;
    double secs = (double)us / 1e6;
    for (size_t i = 0; i < LF_LATENCY_BUCKETS; i++) {
        if (secs <= lf_pipeline_latency_bounds[i]) {
            s->latency_in[i]++;
            break;
        }
    }
    s->latency_count++;
    s->latency_sum_us += us;
}

/* True if lane l, or one of its predecessors (whose requests in flight may still come back
 * to l; each lives until it has none), owes batch b an answer. Called with p->mu held. */
static bool owed(const struct lane *l, const struct qbatch *b)
{
    for (size_t k = 0; k < b->n_routes; k++) {
        bool mine = false;
        for (const struct lane *x = l; x != NULL && !mine; x = x->pred)
            mine = b->routes[k] == x;
        if (mine && (k >= 32 || (b->answered >> k & 1) == 0))
            return true;
    }
    return false;
}

/* Delivery: lane l delivered qb. Moves l's spool position past the batches, oldest first,
 * that it delivered or that do not go to it, and tells the spool (a restart then sends this
 * output nothing before it). A retiring lane only marks qb: its successor, or nobody (a
 * removed output), speaks for the name. Called with p->mu held. */
static void advance_locked(struct lf_pipeline *p, struct lane *l, struct qbatch *qb)
{
    for (size_t k = 0; k < qb->n_routes && k < 32; k++) {
        if (qb->routes[k] == l)
            qb->answered |= UINT32_C(1) << k;
    }
    if (l->quit)
        return;
    struct lf_spool_pos pos = l->pos;
    for (const struct qbatch *b = p->head; b != NULL && !owed(l, b); b = b->next) {
        if (lf_pipeline__pos_before(pos, b->end))
            pos = b->end;
    }
    if (!lf_pipeline__pos_before(l->pos, pos))
        return;
    l->pos = pos;
    lf_spool_set_output_pos(p->spool, l->conf->name, pos);
}

/* Counts lane l's answer res for qb, events of it delivered (LF_OK) with n_dead of them
 * dead-lettered and rejected refused. Called with p->mu held. */
static void count_answer_locked(struct lane *l, struct qbatch *qb, enum lf_err res,
                                size_t events, size_t n_dead, size_t rejected)
{
    l->in_flight--;
    struct lf_pipeline_output_stats *st = counters(l);
    if (res != LF_OK) {
        st->errors++;
        if (l->failing == 0) {
            struct timespec ts;
            clock_gettime(CLOCK_REALTIME, &ts);
            st->failing_since_ms = (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
        }
        l->failing++;
        st->failing = l->failing;
        st->last_error = lf_err_str(res);
        return;
    }
    st->failing = 0;
    st->failing_since_ms = 0;
    if (l->failing > 0)
        lf_info("output %s: delivering again after %u failed attempts", l->conf->name,
                l->failing);
    l->failing = 0;
    st->events_acked += events - n_dead - rejected;
    st->dead_letters += n_dead;
    st->rejected += rejected;
    time_answer_locked(l, qb);
}

/* Wakes lane l after an answer, and its successors: one may have waited for l (pred_busy()). */
static void wake_answered_locked(struct lane *l)
{
    for (; l != NULL; l = l->succ)
        uv_cond_signal(&l->work);
}

/* Lane l's final answer res for qb: delivered (delivery: its spool position moves), or given
 * up on. Called with p->mu held. */
static void settle_locked(struct lane *l, struct qbatch *qb, enum lf_err res)
{
    if (res != LF_OK) {
        lf_lane__give_up_locked(l, qb, lf_err_str(res));
        return;
    }
    qb->pending--;
    if (l->p->parent != NULL)
        advance_locked(l->p, l, qb);
}

/* The alive batch whose batch is b, or NULL. Called with p->mu held. */
static struct qbatch *find_batch(struct lf_pipeline *p, const struct lf_batch *b)
{
    struct qbatch *qb = p->head;
    while (qb != NULL && qb->batch != b)
        qb = qb->next;
    return qb;
}

/* The alive batch qb is, or NULL. Called with p->mu held. */
static struct qbatch *find_alive(struct lf_pipeline *p, const struct qbatch *qb)
{
    struct qbatch *x = p->head;
    while (x != NULL && x != qb)
        x = x->next;
    return x;
}

static void on_output_done(
    void *arg, struct lf_output *out, struct lf_batch *b, enum lf_err res, size_t n_dead)
{
    struct lf_pipeline *p = arg;
    uv_mutex_lock(&p->mu);
    struct qbatch *qb = find_batch(p, b);
    struct lane *l = lane_of(p, out);
    if (qb == NULL || l == NULL) {
        uv_mutex_unlock(&p->mu);
        lf_error("an output answered for a batch it was not given; ignored");
        return;
    }
    count_answer_locked(l, qb, res, lf_batch_count(b) - lf_batch_dropped(b), n_dead,
                        res == LF_OK ? lf_output_answer(out)->n_rejected : 0);
    struct attempt *a = find_attempt(l, qb);
    if (res == LF_EAGAIN && hand_over_locked(l, qb)) {
        if (a != NULL)
            drop_attempt(l, a); /* the changed output's new settings try it next */
    } else if (res == LF_EAGAIN) {
        schedule_retry_locked(l, qb, lf_output_answer(out)->retry_after_ms);
    } else {
        if (a != NULL)
            drop_attempt(l, a);
        settle_locked(l, qb, res);
        lf_pipeline__maybe_stub_locked(p, qb); /* the others may all be holding it */
    }
    lf_pipeline__complete_locked(p);
    wake_answered_locked(l);
    uv_mutex_unlock(&p->mu);
}

/* lf_output_hold(): out takes over b's answer; the token is b's qbatch, which stays alive
 * (and may become a stub) until on_output_done_held(). Any thread. */
static void *on_output_hold(void *arg, struct lf_output *out, struct lf_batch *b)
{
    struct lf_pipeline *p = arg;
    uv_mutex_lock(&p->mu);
    struct qbatch *qb = find_batch(p, b);
    struct lane *l = lane_of(p, out);
    if (qb != NULL && l != NULL) {
        struct attempt *a = find_attempt(l, qb); /* answered "later" once, held now */
        if (a != NULL)
            drop_attempt(l, a);
        qb->held++;
        qb->n_sent = lf_batch_count(b) - lf_batch_dropped(b);
        l->held++;
        l->drained = false; /* a drain covers what was held then: this one is new */
        lf_pipeline__maybe_stub_locked(p, qb);
        uv_cond_signal(&l->work); /* max_in_flight no longer counts it */
    } else {
        lf_error("an output held a batch it was not given");
    }
    uv_mutex_unlock(&p->mu);
    return qb;
}

/* lf_output_done_held(): the answer for a held batch. A held batch is never sent again
 * here: anything but LF_OK gives it up (its events are read again at the next start). */
static void on_output_done_held(void *arg, struct lf_output *out, void *token, enum lf_err res)
{
    struct lf_pipeline *p = arg;
    uv_mutex_lock(&p->mu);
    struct qbatch *qb = find_alive(p, token);
    struct lane *l = lane_of(p, out);
    if (qb == NULL || l == NULL || qb->held == 0) {
        uv_mutex_unlock(&p->mu);
        lf_error("an output answered for a batch it did not hold; ignored");
        return;
    }
    count_answer_locked(l, qb, res, qb->n_sent, 0, 0);
    qb->held--;
    l->held--;
    if (res != LF_OK && l->quit && l->succ == NULL && l->gave_up && !p->aborted) {
        /* Its output was removed by a reconfiguration and its grace is over: as for its
         * retries, nothing sends there any more. */
        qb->pending--;
        lf_warn("output %s (removed by a reload): %zu events it held are still not delivered "
                "there after %d s; no longer sent there",
                l->conf->name, qb->n_sent, LF_RETIRE_GRACE_MS / 1000);
    } else {
        settle_locked(l, qb, res);
    }
    lf_pipeline__complete_locked(p);
    wake_answered_locked(l);
    uv_mutex_unlock(&p->mu);
}

/* Sends qb to lane l's output; a send that fails up front counts as that output's answer.
 * Lane thread, with p->mu held on entry and exit (released while sending). */
static void send_locked(struct lane *l, struct qbatch *qb)
{
    struct lf_pipeline *p = l->p;
    l->in_flight++;
    l->needs_flush = true;
    uv_mutex_unlock(&p->mu);
    struct lf_output *out = l->out;
    enum lf_err err = lf_output_send(out, qb->batch);
    uint64_t written = lf_output_stats(out)->bytes_written; /* this lane's output only */
    uv_mutex_lock(&p->mu);
    if (err) {
        l->in_flight--;
        counters(l)->errors++;
        struct attempt *a = find_attempt(l, qb);
        if (a != NULL)
            drop_attempt(l, a);
        lf_lane__give_up_locked(l, qb, lf_err_str(err));
        lf_pipeline__complete_locked(p);
    }
    p->stats.bytes_out += written - l->obytes;
    l->obytes = written;
}

/* Takes the oldest batch of lane l's queue if it is prepared. Otherwise prepares the oldest
 * batch nobody is on (this one, if it is untouched: both threads compress) or waits for
 * one to be prepared, and returns NULL: p->mu was released meanwhile, so the queue may have
 * changed (a reconfiguration may have handed the batch to l's successor), and the caller
 * looks at it again. Lane thread, with p->mu held. */
static struct qbatch *take_queued_locked(struct lane *l)
{
    struct lf_pipeline *p = l->p;
    struct qbatch *qb = l->queue[l->q_head];
    if (qb->prep != PREP_DONE) {
        if (!lf_pipeline__prepare_one_locked(p))
            uv_cond_wait(&p->prepared, &p->mu);
        return NULL;
    }
    l->q_head = (l->q_head + 1) % l->slots;
    l->q_len--;
    return qb;
}

/* The oldest retry of lane l in backoff, or NULL. */
static struct attempt *waiting_attempt(struct lane *l)
{
    for (size_t i = 0; i < l->n_att; i++) {
        if (l->att[i].waiting)
            return &l->att[i];
    }
    return NULL;
}

/* True while a predecessor of l (a changed output's old lane) may still answer a batch it
 * sent, queued or retries: l sends nothing then, so the output gets its batches in order.
 * What a predecessor holds (lf_output_hold()) does not count: it is delivered from the old
 * output's own copy, and waiting for it would make a reload wait for an output that may
 * never recover under its old settings. Called with p->mu held. */
static bool pred_busy(const struct lane *l)
{
    for (const struct lane *x = l->pred; x != NULL; x = x->pred) {
        if (x->q_len > 0 || x->n_att > 0 || x->in_flight > x->held)
            return true;
    }
    return false;
}

/* When lane l's output must give up what it holds (monotonic ms), INT64_MAX for never: a
 * removed output's lane after its grace (as its retries are), a backfill's after its retry
 * budget from the drain. A changed output's old lane keeps delivering what it holds (its
 * successor does not wait for that), and a daemon that stops gives up at the abort. Called
 * with p->mu held. */
static int64_t give_up_at(const struct lane *l)
{
    const struct lf_pipeline *p = l->p;
    int64_t at = INT64_MAX;
    if (l->held == 0 || l->gave_up)
        return at;
    if (l->quit && l->succ == NULL)
        at = l->quit_ms + LF_RETIRE_GRACE_MS;
    if (p->retry_budget_ms > 0 && l->drained && p->finishing &&
        l->drain_ms + (int64_t)p->retry_budget_ms < at)
        at = l->drain_ms + (int64_t)p->retry_budget_ms;
    return at;
}

/* One output's lane: retries first (they are older than anything queued), then its queue;
 * when there is nothing left to send, the output is flushed so held batches get answered.
 * After an abort, what is queued or in backoff is given up on without being sent. */
static void lane_main(void *arg)
{
    struct lane *l = arg;
    struct lf_pipeline *p = l->p;
    char name[64];
    snprintf(name, sizeof(name), "output %s", l->conf->name);
    lf_watchdog_enter(name); /* stamped each turn, idle while there is nothing to do or a
                                retry waits out its backoff */
    uv_mutex_lock(&p->mu);
    for (;;) {
        lf_watchdog_stamp();
        struct attempt *a = waiting_attempt(l);
        if (a != NULL && p->aborted) {
            struct qbatch *qb = a->qb;
            drop_attempt(l, a);
            lf_lane__give_up_locked(l, qb, "given up at shutdown");
            lf_pipeline__complete_locked(p);
        } else if (a != NULL) {
            int64_t now = (int64_t)(uv_hrtime() / 1000000);
            if (now >= a->due_ms) {
                a->waiting = false;
                send_locked(l, a->qb);
            } else if (l->needs_flush) {
                uv_mutex_unlock(&p->mu); /* held batches are answered during the backoff */
                struct lf_errbuf eb = { "" };
                l->needs_flush = false;
                if (lf_output_flush(l->out, &eb))
                    lf_warn("%s", eb.msg);
                uv_mutex_lock(&p->mu);
            } else {
                /* A retry's backoff (up to backoff.max, which may exceed stuck_after) is a
                 * wait for the output, not the thread being stuck. */
                lf_watchdog_idle();
                lf_err_ignore(uv_cond_timedwait(&l->work, &p->mu,
                                                (uint64_t)(a->due_ms - now) * 1000000u)
                                  ? LF_EAGAIN : LF_OK);
            }
        } else if (l->q_len > 0 && p->aborted) {
            struct qbatch *qb = l->queue[l->q_head];
            l->q_head = (l->q_head + 1) % l->slots;
            l->q_len--;
            lf_lane__give_up_locked(l, qb, "given up at shutdown");
            lf_pipeline__complete_locked(p);
        } else if (l->q_len > 0 && !pred_busy(l) &&
                   (l->max_in_flight == 0 || l->in_flight - l->held < l->max_in_flight)) {
            struct qbatch *qb = take_queued_locked(l);
            if (qb != NULL)
                send_locked(l, qb);
        } else if (l->needs_flush) {
            l->needs_flush = false;
            uv_mutex_unlock(&p->mu);
            struct lf_errbuf eb = { "" };
            if (lf_output_flush(l->out, &eb))
                lf_warn("%s", eb.msg);
            uv_mutex_lock(&p->mu);
        } else if (l->held > 0 &&
                   ((!l->gave_up && (p->aborted || ms_now() >= give_up_at(l))) ||
                    ((p->finishing || p->stopping || l->quit) && !l->drained))) {
            /* What the output gathers goes out now: nothing more is coming (a drain, a
             * stop, a retirement); or, at an abort, after a retired lane's grace or a
             * backfill's budget, it is given up on (read again at the next start). */
            bool give_up = !l->gave_up && (p->aborted || ms_now() >= give_up_at(l));
            if (!l->drained)
                l->drain_ms = ms_now();
            l->drained = true;
            l->gave_up = give_up;
            uv_mutex_unlock(&p->mu);
            lf_output_drain(l->out, give_up);
            uv_mutex_lock(&p->mu);
        } else if ((p->stopping || l->quit) && l->q_len == 0 && l->in_flight == 0 &&
                   l->n_att == 0 && l->pred == NULL) {
            break;
        } else if (give_up_at(l) != INT64_MAX) {
            lf_watchdog_idle(); /* the output delivers what it holds: a wait for it */
            int64_t wait = give_up_at(l) - ms_now();
            if (wait > 0)
                lf_err_ignore(uv_cond_timedwait(&l->work, &p->mu, (uint64_t)wait * 1000000u)
                                  ? LF_EAGAIN : LF_OK);
        } else {
            lf_watchdog_idle();
            uv_cond_wait(&l->work, &p->mu);
        }
    }
    lf_watchdog_leave();
    if (l->succ != NULL) { /* the changed output's new lane may send now */
        l->succ->pred = NULL;
        uv_cond_signal(&l->succ->work);
    }
    l->ended = true;
    p->lane_ended = true;
    uv_mutex_unlock(&p->mu);
}

/* Closes l's output and frees l; its thread has ended. NULL is a no-op. */
void lf_lane__free(struct lane *l)
{
    if (l == NULL)
        return;
    lf_output_free(l->out);
    uv_cond_destroy(&l->work);
    free(l->queue);
    free(l->att);
    free(l);
}

/* Makes and opens the output for conf and its lane (not started) in *out, with room for
 * slots batches. Free with lf_lane__free(). */
enum lf_err lf_lane__new(struct lf_pipeline *p, const struct lf_output_conf *conf,
                            size_t slots, struct lane **out, struct lf_errbuf *eb)
{
    struct lane *l = calloc(1, sizeof(*l));
    if (l == NULL)
        return lf_fail(eb, LF_ENOMEM, "out of memory");
    *l = (struct lane){ .p = p, .conf = conf, .slots = slots,
                        .max_in_flight = (size_t)conf->max_in_flight,
                        .rng = (uv_hrtime() ^ (uint64_t)(uintptr_t)l) | 1 };
    if (p->parent != NULL) /* delivery: where this output is in the spool */
        l->pos = lf_spool_output_pos(p->spool, conf->name);
    l->queue = calloc(slots, sizeof(*l->queue));
    l->att = calloc(slots, sizeof(*l->att));
    enum lf_err err = LF_OK;
    if (l->queue == NULL || l->att == NULL)
        err = lf_fail(eb, LF_ENOMEM, "out of memory");
    else if (uv_cond_init(&l->work) != 0)
        err = lf_fail(eb, LF_EIO, "cannot create a condition variable");
    if (err) {
        free(l->queue);
        free(l->att);
        free(l);
        return err;
    }
    err = lf_output_new(conf, on_output_done, p, &l->out, eb);
    if (!err)
        lf_output_set_holder(l->out, on_output_hold, on_output_done_held);
    if (!err)
        err = lf_output_open(l->out, eb);
    if (err) {
        lf_lane__free(l);
        return err;
    }
    *out = l;
    return LF_OK;
}

enum lf_err lf_lane__start(struct lane *l, struct lf_errbuf *eb)
{
    if (uv_thread_create(&l->thread, lane_main, l) != 0)
        return lf_fail(eb, LF_EIO, "cannot start the delivery thread of output %s",
                       l->conf->name);
    l->started = true;
    return LF_OK;
}

/* Waits for lane l's thread to end (after p->stopping or l->quit was set). */
void lf_lane__join(struct lane *l)
{
    if (l->started)
        uv_thread_join(&l->thread);
    l->started = false;
}
