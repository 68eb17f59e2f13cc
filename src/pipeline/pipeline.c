/* pipeline.c - batcher, bounded queue and one delivery lane per output (see pipeline.h).
 *
 *   push ──► current[input] ──cut──► alive list (cut order) ──► lane of each routed output:
 *                ▲                         │                     its own thread, its own
 *                │                         │                     retries, sends in order
 *                │                  head answered by every  ◄─── done(): OK, EAGAIN (retry
 *                │                  routed output                 after backoff), refused
 *                └── free list (memory kept) ◄── answer log ──► lf_pipeline_take_acks()
 *
 * One mutex guards the alive list, the lanes' queues and retries, the free list, the answer
 * log and the counters; the producer takes it once per cut batch, not per event. A cut batch
 * goes into the queue (a small ring) of every output its input routes to; each output's lane
 * sends from its own thread, so a slow or failing output never holds up another: only the
 * shared caps (queue.max_bytes, LF_PIPELINE_MAX_BATCHES) make the others wait, and then the
 * readers, never memory. Outputs answer each batch through lf_output_done(), during send or
 * later (a file output holds batches until one fdatasync covers several); a lane flushes its
 * output whenever it has nothing else to send. A batch is answered when every routed output
 * answered it; answers are logged in cut order, cumulatively, so a source's offset moves
 * forward in order. Batches are allocated lazily up to LF_PIPELINE_MAX_BATCHES and then
 * recycled, so the steady state allocates nothing. A preparer thread computes the outputs'
 * forms of queued batches (zstd compression) ahead of the lanes, so compression uses both
 * cores while each output still sends in order. */
#include "config.h"

#define LF_LOG_COMPONENT "pipeline"
#include "logferry/pipeline.h"

#include <inttypes.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <uv.h>

#include "logferry/batch.h"
#include "logferry/log.h"
#include "logferry/output.h"
#include "logferry/spool.h"

/* Batches alive at once, at most: current ones, queued and in flight. Bounds memory beyond
 * queue.max_bytes (each batch keeps its arena, encode buffer and compression context). */
#define LF_PIPELINE_MAX_BATCHES 6
/* The same for a spool-mode producer: its batches wait for an fdatasync, not a network
 * answer, so more of them make each group commit cover more (queue.max_bytes still bounds
 * their bytes; the producer has no lanes to size by it). */
#define LF_SPOOL_MAX_BATCHES 16
/* Producers besides the pipeline's own (lf_producer_new()), at most. Each one raises the cap
 * on batches alive by one, so every producer can fill a batch while the others' are queued. */
#define LF_PIPELINE_MAX_PRODUCERS 8
/* Room in a lane's ring for every batch that can be alive: the cap, and the current batches
 * of every producer (a flush cuts them all at once). */
#define LANE_SLOTS(n_inputs)                               \
    (LF_PIPELINE_MAX_BATCHES + LF_PIPELINE_MAX_PRODUCERS + \
     (n_inputs) * (1 + LF_PIPELINE_MAX_PRODUCERS))
/* Retries of a batch a file or console output answered LF_EAGAIN for: backoff doubles from
 * 100 ms to 5 s. Network outputs use their own `backoff:` (retry_delay_ms()). */
#define LF_RETRY_INITIAL_MS 100
#define LF_RETRY_MAX_MS     5000
/* Events a batch taken beyond the caps can hold (lf_pipeline_yield()): its producer stops
 * at the next line, and the reconfiguration that follows cuts it, so it holds a few. */
#define LF_EXTRA_BATCH_EVENTS 16
/* How long an output removed by a reconfiguration keeps retrying what it still holds. */
#define LF_RETIRE_GRACE_MS 30000
/* /healthz turns 503 once a batch has spent this long in backoff. */
#define LF_HEALTHY_RETRY_MS 60000
/* zstd level of spool records: the HTTP output's, so its zstd form is compressed once. */
#define LF_SPOOL_ZSTD_LEVEL 1
/* How long the spool feeder waits for a commit before it looks again. */
#define LF_SPOOL_POLL_MS 200
/* The spool writer tries a failed append or commit again after this long, and logs the
 * failures in a row once per LF_SPOOL_LOG_EVERY_MS. */
#define LF_SPOOL_RETRY_MS     1000
#define LF_SPOOL_LOG_EVERY_MS 30000

struct lane;

struct qbatch {
    struct lf_batch *batch; /* owned */
    const struct lf_config *cfg; /* borrowed: the config it was cut under (NULL: read back
                                    from the spool); names its input and routes */
    size_t input_idx;       /* in cfg */
    uint64_t order;         /* cut (or read back) order, for handing batches over in order */
    size_t bytes;       /* message bytes, counted against queue.max_bytes */
    size_t pending;     /* routed outputs that have not answered yet */
    uint64_t cut_ns;    /* when it was cut (uv_hrtime), for the latency histogram */
    bool failed;        /* an output refused it, or retries ran out */
    enum { PREP_NONE, PREP_RUNNING, PREP_DONE } prep; /* the outputs' forms computed yet? */
    bool spooled;       /* spool mode, producer: appended to the spool */
    bool extra;         /* taken beyond the caps while yielding: small, reused only so */
    uint64_t seq;       /* spool mode, producer: its record's number (lf_spool_appended()) */
    /* Spool mode, delivery: read back from the spool. */
    struct lf_spool_pos end;   /* where its record ends */
    struct lf_spool_meta meta; /* its sources (owned) */
    struct lane **routes;      /* owned array; the lanes it was queued to (borrowed; only
                                  read while the batch is not prepared, when they all live) */
    size_t n_routes;
    size_t cap_routes;
    uint32_t answered;         /* delivery: bit k set once routes[k] delivered it */
    struct qbatch *next; /* alive list or free list */
};

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
    size_t in_flight;                  /* sent, not answered */
    size_t max_in_flight;              /* 0: no limit but the queue's caps */
    bool needs_flush;                  /* something was sent since the last flush */
    uint64_t rng;                      /* xorshift state for the backoff's jitter */
    struct lf_pipeline_output_stats own; /* its counters, while it is the output's lane */
    struct lf_pipeline_output_stats *st; /* where it counts: own, or its successor's */
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

/* Answers of completed batches, waiting for the producer (lf_pipeline_take_acks()). */
struct ack_log {
    struct lf_ack *a; /* owned */
    size_t len;
    size_t cap;
};

/* A producer besides the pipeline's own: a thread of its own pushes through it. */
struct lf_producer {
    struct lf_pipeline *p;
    struct qbatch **current;  /* owned; per input, the batch being filled (or NULL) */
    uint64_t events_in;       /* its thread writes, others read: relaxed atomics */
    struct lf_producer *next; /* p->producers, under p->mu */
};

struct lf_pipeline {
    const struct lf_config *cfg; /* borrowed */
    struct lane **lanes;         /* owned; the lanes of cfg->outputs (n_outputs, in order),
                                    then those retiring (up to n_lanes); under mu */
    size_t n_outputs;
    size_t n_lanes;
    struct qbatch **current; /* owned; per input, the batch being filled (or NULL) */
    enum lf_batch_mode *modes; /* owned; per input: encode on add unless an output of its
                                  route reads messages */

    uv_mutex_t mu;
    uv_cond_t prep_work; /* the preparer has something to do */
    uv_cond_t space;     /* a batch completed */
    uv_cond_t prepared;  /* a batch's preparation finished */
    struct qbatch *head; /* alive: cut, not yet answered by every routed output; cut order */
    struct qbatch *tail;
    struct ack_log acks;    /* answers not yet taken by the producer */
    struct ack_log taking;  /* the producer's: swapped with acks, so both keep their memory */
    struct qbatch *free_list;
    struct qbatch *extras;   /* extra batches answered, for the next yield (never freed) */
    size_t alive;        /* batches on the alive list */
    size_t alive_bytes;  /* their message bytes */
    size_t n_batches;    /* batch objects allocated */
    bool stopping;
    bool failed;         /* a batch was given up on: --once cannot succeed */
    bool aborted;        /* lf_pipeline_abort(): waits end at once */
    uint64_t retry_budget_ms; /* backoff a batch may spend before it is given up; 0: never */
    char fail_msg[512];
    struct lf_pipeline_stats stats;
    uint64_t next_order; /* the order of the next batch cut or read back */
    bool yield;          /* lf_pipeline_yield(): a push does not wait for room */
    size_t preparing;    /* batches being prepared: retired lanes are not freed meanwhile */
    bool lane_ended;     /* a retiring lane ended: join and free it (reap_lanes()) */
    uint64_t events_in;  /* producer writes, others read: relaxed atomics */
    struct lf_producer *producers; /* the other producers (lf_producer_new()) */
    size_t n_producers;
    uint64_t events_in_gone;    /* pushed through producers since freed */
    void (*wait_fn)(void *arg); /* called while a push waits (lf_pipeline_set_wait_hook) */
    void *wait_arg;
    uint64_t wait_interval_ms;

    bool preparer_started;
    uv_thread_t preparer; /* compresses queued batches ahead of the lanes */

    /* Spool mode (queue.spool.enabled). The producer's pipeline has no lanes: its writer
     * appends every cut batch to the spool and answers it once committed; the delivery
     * pipeline, with the outputs' lanes, is fed by its feeder reading the spool in order. */
    struct lf_spool *spool;       /* producer: owned; delivery: borrowed */
    struct lf_pipeline *delivery; /* producer: owned */
    struct lf_pipeline *parent;   /* delivery: the producer, told when delivery fails */
    bool detaching;               /* delivery: being stopped; give-ups are not failures */
    struct lf_spool_codec codec;  /* writer (producer) or feeder (delivery) */
    struct lf_buf payload;        /* feeder: the record read */
    uv_cond_t spool_work;         /* producer: a batch was cut */
    uv_mutex_t dmu;               /* producer: guards the delivery pointer */
    bool spool_thread_started;
    uv_thread_t spool_thread;     /* producer: the writer; delivery: the feeder */
};

static const char *input_name(const struct qbatch *qb)
{
    return qb->cfg != NULL && qb->input_idx < qb->cfg->n_inputs
               ? qb->cfg->inputs[qb->input_idx].id
               : "(spooled)";
}

static void set_failed(struct lf_pipeline *p, const char *msg);
static void delivery_stop(struct lf_pipeline *d);
static void pipeline_join(struct lf_pipeline *p);
static void pipeline_release(struct lf_pipeline *p);

/* A batch of max_events and cfg's max_bytes, with room for every route of cfg (and for the
 * 16 a spool record names). Called with p->mu held: a reconfiguration may switch cfg, and
 * free the old one, at any time otherwise. */
static struct qbatch *qbatch_new_locked(const struct lf_config *cfg, size_t max_events)
{
    struct qbatch *qb = calloc(1, sizeof(*qb));
    if (qb == NULL)
        return NULL;
    qb->cap_routes = cfg->n_outputs > 16 ? cfg->n_outputs : 16;
    qb->routes = calloc(qb->cap_routes, sizeof(*qb->routes));
    qb->batch = lf_batch_new(max_events, cfg->queue.batch_max_bytes);
    if (qb->batch == NULL || qb->routes == NULL) {
        lf_batch_free(qb->batch);
        free(qb->routes);
        free(qb);
        return NULL;
    }
    return qb;
}

static void qbatch_free(struct qbatch *qb)
{
    if (qb == NULL)
        return;
    lf_batch_free(qb->batch);
    lf_spool_meta_release(&qb->meta);
    free(qb->routes);
    free(qb);
}

static void free_list(struct qbatch *qb)
{
    while (qb != NULL) {
        struct qbatch *next = qb->next;
        qbatch_free(qb);
        qb = next;
    }
}

/* Makes room for n routes in qb. False when out of memory. */
static bool qbatch_reserve_routes(struct qbatch *qb, size_t n)
{
    if (n <= qb->cap_routes)
        return true;
    struct lane **r = realloc(qb->routes, n * sizeof(*r));
    if (r == NULL)
        return false;
    qb->routes = r;
    qb->cap_routes = n;
    return true;
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

/* Appends the answer for qb to the log the producer takes: one record per run of events
 * of one source (a batch interleaves the files of its input in runs). Called with p->mu
 * held. False when out of memory: the caller drops what this call appended. */
static bool log_answers_locked(struct lf_pipeline *p, struct qbatch *qb)
{
    size_t n = lf_batch_count(qb->batch);
    struct lf_ack *run = NULL;
    for (size_t i = 0; i < n; i++) {
        const struct lf_event *ev = lf_batch_event(qb->batch, i);
        if (run == NULL || run->source != ev->source) {
            struct ack_log *l = &p->acks;
            if (l->len == l->cap) {
                size_t cap = l->cap ? l->cap * 2 : 64;
                struct lf_ack *a = realloc(l->a, cap * sizeof(*a));
                if (a == NULL)
                    return false;
                l->a = a;
                l->cap = cap;
            }
            run = &l->a[l->len++];
            *run = (struct lf_ack){ .source = ev->source, .first = ev->offset,
                                    .end = ev->end_offset, .delivered = !qb->failed };
        }
        run->events++;
        if (ev->offset < run->first)
            run->first = ev->offset;
        if (ev->end_offset > run->end)
            run->end = ev->end_offset;
    }
    return true;
}

/* Puts qb, answered or empty, back on its free list: extra batches (taken beyond the caps
 * while yielding) on their own, so that they are reused only as extras. Neither list is
 * ever freed before the pipeline: freeing and making batches again at every reload
 * fragments the heap. Called with p->mu held. */
static void recycle_locked(struct lf_pipeline *p, struct qbatch *qb)
{
    lf_batch_reset(qb->batch);
    lf_spool_meta_release(&qb->meta);
    qb->bytes = 0;
    struct qbatch **list = qb->extra ? &p->extras : &p->free_list;
    qb->next = *list;
    *list = qb;
}

/* Answers and recycles the batches at the head of the alive list that every routed output
 * has answered. Completion is cumulative, like TCP's: a batch answered early waits for the
 * ones cut before it, so the producer learns the answers of a source's events in order. The
 * pipeline never writes into a source: the producer applies the answers on its own thread
 * (lf_pipeline_take_acks()), which is also where sources are freed. Called with p->mu
 * held. */
static void complete_locked(struct lf_pipeline *p)
{
    while (p->head != NULL && p->head->pending == 0 && p->head->prep != PREP_RUNNING) {
        struct qbatch *qb = p->head;
        size_t mark = p->acks.len;
        if (p->parent != NULL) {
            /* Delivery: the sources heard at the spool write; the spool hears now. Nothing
             * after a batch given up on is released: the next run sends it again. */
            if (qb->failed || p->failed)
                p->failed = true;
            else
                lf_spool_release(p->spool, &qb->end);
        } else if (!log_answers_locked(p, qb)) {
            p->acks.len = mark; /* out of memory: answered again at the next completion */
            lf_error("out of memory recording the answer for a batch; trying again");
            return;
        }
        p->head = qb->next;
        if (p->head == NULL)
            p->tail = NULL;
        size_t n = lf_batch_count(qb->batch);
        if (!qb->failed) {
            p->stats.events_acked += n;
            p->stats.batches_acked++;
        } else {
            p->stats.batches_failed++;
            p->stats.events_failed += n;
            p->failed = true;
        }
        p->alive--;
        p->alive_bytes -= qb->bytes;
        recycle_locked(p, qb);
        uv_cond_broadcast(&p->space);
    }
}

/* Records that lane l's output gave up on qb (refused, failed to send, out of retries). */
static void give_up_locked(struct lane *l, struct qbatch *qb, const char *why)
{
    struct lf_pipeline *p = l->p;
    qb->failed = true;
    qb->pending--;
    if (p->detaching)
        return; /* stopped: the spool keeps the batch for the next delivery */
    char msg[sizeof(p->fail_msg)];
    snprintf(msg, sizeof(msg), "output %s: batch of %zu events from input %s not delivered: %s",
             l->conf->name, lf_batch_count(qb->batch), input_name(qb), why);
    if (p->fail_msg[0] == '\0')
        snprintf(p->fail_msg, sizeof(p->fail_msg), "%s", msg);
    lf_error("%s", msg);
    if (p->parent != NULL)
        set_failed(p->parent, msg);
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
static bool lane_insert(struct lane *l, struct qbatch *qb)
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
static bool lane_can_take(const struct lane *to, struct qbatch *qb)
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
    if (to == NULL || !lane_can_take(to, qb) || !lane_insert(to, qb))
        return false;
    for (size_t k = 0; k < qb->n_routes; k++) {
        if (qb->routes[k] == l)
            qb->routes[k] = to;
    }
    return true;
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

/* Schedules qb to be sent again by lane l after its backoff, or gives up on it once the
 * retry budget is spent. Called with p->mu held. */
static void schedule_retry_locked(struct lane *l, struct qbatch *qb)
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
    /* With a budget (a backfill), once a batch was given up on the run cannot succeed: a
     * later one that fails too is given up on at once, not after a budget of its own. */
    bool doomed = p->retry_budget_ms > 0 && p->failed;
    if (p->aborted || doomed || (p->retry_budget_ms > 0 && a->waited_ms >= p->retry_budget_ms)) {
        drop_attempt(l, a);
        give_up_locked(l, qb,
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
    l->st->retries++;
    lf_warn("output %s: batch of %zu events not delivered; retry %u in %" PRIu64 " ms",
            l->conf->name, lf_batch_count(qb->batch), a->count, delay_ms);
}

const double lf_pipeline_latency_bounds[LF_LATENCY_BUCKETS] = {
    0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300,
};

/* Adds one acknowledgement's latency to lane l's histogram. Called with p->mu held. */
static void time_answer_locked(struct lane *l, const struct qbatch *qb)
{
    struct lf_pipeline_output_stats *s = l->st;
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

static bool pos_before(struct lf_spool_pos a, struct lf_spool_pos b)
{
    return a.seg < b.seg || (a.seg == b.seg && a.off < b.off);
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
        if (pos_before(pos, b->end))
            pos = b->end;
    }
    if (!pos_before(l->pos, pos))
        return;
    l->pos = pos;
    lf_spool_set_output_pos(p->spool, l->conf->name, pos);
}

static void on_output_done(
    void *arg, struct lf_output *out, struct lf_batch *b, enum lf_err res, size_t n_dead)
{
    struct lf_pipeline *p = arg;
    uv_mutex_lock(&p->mu);
    struct qbatch *qb = p->head;
    while (qb != NULL && qb->batch != b)
        qb = qb->next;
    struct lane *l = lane_of(p, out);
    if (qb == NULL || l == NULL) {
        uv_mutex_unlock(&p->mu);
        lf_error("an output answered for a batch it was not given; ignored");
        return;
    }
    l->in_flight--;
    if (res != LF_OK) {
        l->st->errors++;
        l->failing++;
    } else {
        if (l->failing > 0)
            lf_info("output %s: delivering again after %u failed attempts", l->conf->name,
                    l->failing);
        l->failing = 0;
        l->st->events_acked += lf_batch_count(b) - lf_batch_dropped(b) - n_dead;
        l->st->dead_letters += n_dead;
        time_answer_locked(l, qb);
    }
    struct attempt *a = find_attempt(l, qb);
    if (res == LF_EAGAIN && hand_over_locked(l, qb)) {
        if (a != NULL)
            drop_attempt(l, a); /* the changed output's new settings try it next */
    } else if (res == LF_EAGAIN) {
        schedule_retry_locked(l, qb);
    } else {
        if (a != NULL)
            drop_attempt(l, a);
        if (res != LF_OK) {
            give_up_locked(l, qb, lf_err_str(res));
        } else {
            qb->pending--;
            if (p->parent != NULL)
                advance_locked(p, l, qb);
        }
    }
    complete_locked(p);
    uv_cond_signal(&l->work);
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
        l->st->errors++;
        struct attempt *a = find_attempt(l, qb);
        if (a != NULL)
            drop_attempt(l, a);
        give_up_locked(l, qb, lf_err_str(err));
        complete_locked(p);
    }
    p->stats.bytes_out += written - l->obytes;
    l->obytes = written;
}

/* Computes the forms qb's outputs will send (the expensive part: compression). Runs on the
 * preparer or a lane, never two threads for one batch, without p->mu. */
static void prepare(struct lf_pipeline *p, struct qbatch *qb, struct lf_output *const *outs,
                    size_t n)
{
    if (p->delivery != NULL) { /* the spool writer's form */
        struct lf_str z;
        if (lf_batch_get_mode(qb->batch) == LF_BATCH_ENCODE_ON_ADD)
            lf_err_ignore(lf_batch_zstd(qb->batch, LF_SPOOL_ZSTD_LEVEL, &z));
        return;
    }
    for (size_t i = 0; i < n; i++) {
        /* A failure here shows again, and is reported, when send computes the form. */
        lf_err_ignore(lf_output_prepare(outs[i], qb->batch));
    }
}

/* True if l is one of p's lanes (not freed). Called with p->mu held. */
static bool lane_alive_locked(const struct lf_pipeline *p, const struct lane *l)
{
    for (size_t i = 0; i < p->n_lanes; i++) {
        if (p->lanes[i] == l)
            return true;
    }
    return false;
}

/* Prepares the oldest alive batch nobody has started on; false if there is none. Called
 * with p->mu held, which it releases while preparing. */
static bool prepare_one_locked(struct lf_pipeline *p)
{
    struct qbatch *qb = p->head;
    while (qb != NULL && qb->prep != PREP_NONE)
        qb = qb->next;
    if (qb == NULL)
        return false;
    qb->prep = PREP_RUNNING;
    /* Its outputs as they are now (a reconfiguration may hand it over meanwhile): no lane
     * is freed while a batch is prepared. */
    struct lf_output *outs[16];
    size_t n = 0;
    for (size_t k = 0; k < qb->n_routes && n < 16; k++) {
        if (lane_alive_locked(p, qb->routes[k]))
            outs[n++] = qb->routes[k]->out;
    }
    p->preparing++;
    uv_mutex_unlock(&p->mu);
    prepare(p, qb, outs, n);
    uv_mutex_lock(&p->mu);
    p->preparing--;
    qb->prep = PREP_DONE;
    uv_cond_broadcast(&p->prepared);
    complete_locked(p); /* it may have been answered (given up on) while it was prepared */
    return true;
}

/* The preparer: prepares queued batches, oldest first, while the lanes send, so that
 * compression runs on both cores. */
static void preparer_main(void *arg)
{
    struct lf_pipeline *p = arg;
    uv_mutex_lock(&p->mu);
    for (;;) {
        if (prepare_one_locked(p))
            continue;
        if (p->stopping)
            break;
        uv_cond_wait(&p->prep_work, &p->mu);
    }
    uv_mutex_unlock(&p->mu);
}

/* Takes the oldest batch of lane l's queue, prepared. Lane thread, with p->mu held. */
static struct qbatch *take_queued_locked(struct lane *l)
{
    struct lf_pipeline *p = l->p;
    struct qbatch *qb = l->queue[l->q_head];
    while (qb->prep != PREP_DONE) {
        /* Rather than wait for the preparer to finish it, prepare the oldest batch nobody
         * is on (this one, if it is untouched): both threads compress. */
        if (!prepare_one_locked(p))
            uv_cond_wait(&p->prepared, &p->mu);
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

/* One output's lane: retries first (they are older than anything queued), then its queue;
 * when there is nothing left to send, the output is flushed so held batches get answered.
 * After an abort, what is queued or in backoff is given up on without being sent. */
static void lane_main(void *arg)
{
    struct lane *l = arg;
    struct lf_pipeline *p = l->p;
    uv_mutex_lock(&p->mu);
    for (;;) {
        struct attempt *a = waiting_attempt(l);
        if (a != NULL && p->aborted) {
            struct qbatch *qb = a->qb;
            drop_attempt(l, a);
            give_up_locked(l, qb, "given up at shutdown");
            complete_locked(p);
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
                lf_err_ignore(uv_cond_timedwait(&l->work, &p->mu,
                                                (uint64_t)(a->due_ms - now) * 1000000u)
                                  ? LF_EAGAIN : LF_OK);
            }
        } else if (l->q_len > 0 && p->aborted) {
            struct qbatch *qb = l->queue[l->q_head];
            l->q_head = (l->q_head + 1) % l->slots;
            l->q_len--;
            give_up_locked(l, qb, "given up at shutdown");
            complete_locked(p);
        } else if (l->q_len > 0 && l->pred == NULL &&
                   (l->max_in_flight == 0 || l->in_flight < l->max_in_flight)) {
            send_locked(l, take_queued_locked(l));
        } else if (l->needs_flush) {
            l->needs_flush = false;
            uv_mutex_unlock(&p->mu);
            struct lf_errbuf eb = { "" };
            if (lf_output_flush(l->out, &eb))
                lf_warn("%s", eb.msg);
            uv_mutex_lock(&p->mu);
        } else if ((p->stopping || l->quit) && l->q_len == 0 && l->in_flight == 0 &&
                   l->n_att == 0 && l->pred == NULL) {
            break;
        } else {
            uv_cond_wait(&l->work, &p->mu);
        }
    }
    if (l->succ != NULL) { /* the changed output's new lane may send now */
        l->succ->pred = NULL;
        uv_cond_signal(&l->succ->work);
    }
    l->ended = true;
    p->lane_ended = true;
    uv_mutex_unlock(&p->mu);
}

static void lane_free(struct lane *l);

/* Makes and opens the output for conf and its lane (not started) in *out, with room for
 * slots batches. Free with lane_free(). */
static enum lf_err lane_new(struct lf_pipeline *p, const struct lf_output_conf *conf,
                            size_t slots, struct lane **out, struct lf_errbuf *eb)
{
    struct lane *l = calloc(1, sizeof(*l));
    if (l == NULL)
        return lf_fail(eb, LF_ENOMEM, "out of memory");
    *l = (struct lane){ .p = p, .conf = conf, .slots = slots,
                        .max_in_flight = (size_t)conf->max_in_flight,
                        .rng = (uv_hrtime() ^ (uint64_t)(uintptr_t)l) | 1 };
    l->st = &l->own;
    if (p->parent != NULL) /* delivery: where this output is in the spool */
        l->pos = lf_spool_output_pos(p->spool, conf->name);
    l->queue = calloc(slots, sizeof(*l->queue));
    l->att = calloc(slots, sizeof(*l->att));
    if (l->queue == NULL || l->att == NULL) {
        free(l->queue);
        free(l->att);
        free(l);
        return lf_fail(eb, LF_ENOMEM, "out of memory");
    }
    if (uv_cond_init(&l->work) != 0) {
        free(l->queue);
        free(l->att);
        free(l);
        return lf_fail(eb, LF_EIO, "cannot create a condition variable");
    }
    enum lf_err err = lf_output_new(conf, on_output_done, p, &l->out, eb);
    if (!err)
        err = lf_output_open(l->out, eb);
    if (err) {
        lane_free(l);
        return err;
    }
    *out = l;
    return LF_OK;
}

static enum lf_err lane_start(struct lane *l, struct lf_errbuf *eb)
{
    if (uv_thread_create(&l->thread, lane_main, l) != 0)
        return lf_fail(eb, LF_EIO, "cannot start the delivery thread of output %s",
                       l->conf->name);
    l->started = true;
    return LF_OK;
}

/* Waits for lane l's thread to end (after p->stopping or l->quit was set). */
static void lane_join(struct lane *l)
{
    if (l->started)
        uv_thread_join(&l->thread);
    l->started = false;
}

/* Closes l's output and frees l; its thread has ended. NULL is a no-op. */
static void lane_free(struct lane *l)
{
    if (l == NULL)
        return;
    lf_output_free(l->out);
    uv_cond_destroy(&l->work);
    free(l->queue);
    free(l->att);
    free(l);
}

/* Joins and frees the retiring lanes whose threads ended, unless a batch is being prepared
 * (for their outputs, perhaps). Never on a lane's thread. */
static void reap_lanes(struct lf_pipeline *p)
{
    struct lane *done[16];
    size_t n = 0;
    uv_mutex_lock(&p->mu);
    if (p->lane_ended && p->preparing == 0) {
        p->lane_ended = false;
        size_t k = p->n_outputs;
        for (size_t i = p->n_outputs; i < p->n_lanes; i++) {
            struct lane *l = p->lanes[i];
            if (l->ended && n < 16) {
                done[n++] = l;
                continue;
            }
            p->lane_ended |= l->ended; /* the next call takes it */
            p->lanes[k++] = l;
        }
        p->n_lanes = k;
    }
    uv_mutex_unlock(&p->mu);
    for (size_t i = 0; i < n; i++) {
        lane_join(done[i]);
        lane_free(done[i]);
    }
}

/* Per input of cfg: encode events as they are added unless an output of its route (lanes,
 * indexed like cfg->outputs) reads messages. */
static void set_modes(const struct lf_config *cfg, struct lane *const *lanes,
                      enum lf_batch_mode *modes)
{
    for (size_t i = 0; i < cfg->n_inputs; i++) {
        const struct lf_input_conf *in = &cfg->inputs[i];
        modes[i] = LF_BATCH_ENCODE_ON_ADD;
        for (size_t k = 0; k < in->n_outputs; k++) {
            if (lf_output_needs_messages(lanes[in->outputs[k]]->out))
                modes[i] = LF_BATCH_KEEP_EVENTS;
        }
    }
}

static void enqueue_locked(struct lf_pipeline *p, struct qbatch *qb);
static void append_locked(struct lf_pipeline *p, struct qbatch *qb, size_t pending);

static void set_failed(struct lf_pipeline *p, const char *msg)
{
    uv_mutex_lock(&p->mu);
    if (!p->failed) {
        p->failed = true;
        snprintf(p->fail_msg, sizeof(p->fail_msg), "%s", msg);
    }
    uv_cond_broadcast(&p->space);
    uv_cond_broadcast(&p->spool_work);
    uv_mutex_unlock(&p->mu);
    /* Delivery failed for good: nothing will make room in the spool, so a writer waiting
     * for it gives up (its batch is not acknowledged) rather than wait for ever. */
    lf_spool_interrupt(p->spool);
}

/* The next batch for the spool writer: the oldest alive one not appended yet. */
static struct qbatch *unspooled_locked(struct lf_pipeline *p)
{
    struct qbatch *qb = p->head;
    while (qb != NULL && (qb->spooled || qb->pending == 0))
        qb = qb->next;
    return qb;
}

/* Appends qb to the spool (without p->mu) and numbers it; LF_EAGAIN after an interrupt,
 * LF_EIO (eb filled), LF_ENOMEM or LF_ETOOBIG (logged: it cannot be encoded). */
static enum lf_err spool_one(struct lf_pipeline *p, struct qbatch *qb, struct lf_errbuf *eb)
{
    /* The config it was cut under: the input's routes then (borrowed while it lives). */
    const struct lf_input_conf *in = &qb->cfg->inputs[qb->input_idx];
    const char *names[16];
    size_t n = 0;
    for (size_t k = 0; k < in->n_outputs && n < 16; k++)
        names[n++] = qb->cfg->outputs[in->outputs[k]].name;
    enum lf_err err = lf_spool_encode(&p->codec, qb->batch, in->id, names, n,
                                      LF_SPOOL_ZSTD_LEVEL);
    if (err) {
        lf_error("spool: cannot encode a batch of input %s: %s", in->id, lf_err_str(err));
        return err;
    }
    err = lf_spool_append(p->spool, p->codec.out.ptr, p->codec.out.len, eb);
    if (!err)
        qb->seq = lf_spool_appended(p->spool);
    return err;
}

/* Squares the batches appended with the spool: those whose records are durable are answered;
 * those whose records a failure dropped are to be appended again (in order: the oldest
 * alive batch not appended goes first). Called with p->mu held. */
static void settle_spooled_locked(struct lf_pipeline *p)
{
    uint64_t appended = lf_spool_appended(p->spool);
    uint64_t durable = lf_spool_durable(p->spool);
    for (struct qbatch *b = p->head; b != NULL; b = b->next) {
        if (!b->spooled || b->pending != 1)
            continue;
        if (b->seq <= durable)
            b->pending = 0;
        else if (b->seq > appended)
            b->spooled = false;
    }
    complete_locked(p);
}

/* The spool writer's state of a failing disk: when to try again, and what was logged. */
struct disk_retry {
    uint64_t due_ms;   /* 0: the disk is fine */
    unsigned failures; /* in a row */
};

/* Logs a failed append or commit (the first, then every 30 s) and sets the next try a second
 * away. Called with p->mu held. */
static void
disk_failed_locked(struct lf_pipeline *p, struct disk_retry *r, const struct lf_errbuf *eb)
{
    size_t waiting = 0;
    for (struct qbatch *b = p->head; b != NULL; b = b->next)
        waiting += b->pending == 1;
    if (r->failures++ % (LF_SPOOL_LOG_EVERY_MS / LF_SPOOL_RETRY_MS) == 0)
        lf_error("%s; batches waiting: %zu, none acknowledged past the last good fdatasync "
                 "(failed %u times in a row); trying again every second",
                 eb->msg, waiting, r->failures);
    r->due_ms = uv_hrtime() / 1000000u + LF_SPOOL_RETRY_MS;
}

/* Notes a good commit after failures (a good append proves nothing). */
static void disk_recovered(struct disk_retry *r)
{
    if (r->failures > 0)
        lf_info("spool: the disk takes writes again after %u failed tries", r->failures);
    *r = (struct disk_retry){ 0, 0 };
}

/* Waits (p->mu held) until r's next try is due, or an abort; true if it waited. */
static bool disk_wait_locked(struct lf_pipeline *p, const struct disk_retry *r)
{
    uint64_t now = uv_hrtime() / 1000000u;
    if (r->due_ms == 0 || now >= r->due_ms || p->aborted)
        return false;
    /* Woken early (a batch cut, a stop, an abort): the loop looks again. */
    lf_err_ignore(uv_cond_timedwait(&p->spool_work, &p->mu, (r->due_ms - now) * 1000000u)
                      ? LF_EAGAIN
                      : LF_OK);
    return true;
}

/* Gives up on qb: it is answered as not delivered (the registry does not move past it). */
static void spool_give_up_locked(struct lf_pipeline *p, struct qbatch *qb)
{
    qb->failed = true;
    qb->pending = 0;
    complete_locked(p);
}

/* The producer's spool writer: appends cut batches in order, then one commit (fdatasync)
 * answers every batch appended since the last (group commit); batches cut while it syncs
 * go into the next round. A batch is answered only once its record is durable: a failed
 * write or sync drops the records past the last good fdatasync, and their batches are
 * appended again a second later (for as long as the disk fails). After an abort, what is
 * not appended is given up on. */
static void spool_writer_main(void *arg)
{
    struct lf_pipeline *p = arg;
    struct disk_retry retry = { 0, 0 };
    uv_mutex_lock(&p->mu);
    for (;;) {
        struct qbatch *qb = unspooled_locked(p);
        if (qb != NULL && p->aborted) {
            spool_give_up_locked(p, qb);
        } else if (disk_wait_locked(p, &retry)) {
            continue;
        } else if (qb != NULL) {
            while (qb->prep != PREP_DONE) {
                if (!prepare_one_locked(p))
                    uv_cond_wait(&p->prepared, &p->mu);
            }
            uv_mutex_unlock(&p->mu);
            struct lf_errbuf eb = { "" };
            enum lf_err err = spool_one(p, qb, &eb);
            uv_mutex_lock(&p->mu);
            if (!err) {
                qb->spooled = true;
            } else if (err == LF_EIO) {
                disk_failed_locked(p, &retry, &eb);
            } else if (err == LF_EAGAIN && !p->stopping) {
                uv_cond_wait(&p->spool_work, &p->mu); /* interrupted: until an abort */
            } else {
                spool_give_up_locked(p, qb); /* cannot be encoded, or stopped */
            }
            settle_spooled_locked(p);
        } else if (lf_spool_appended(p->spool) > lf_spool_durable(p->spool)) {
            uv_mutex_unlock(&p->mu);
            struct lf_errbuf eb = { "" };
            enum lf_err err = lf_spool_commit(p->spool, &eb);
            uv_mutex_lock(&p->mu);
            if (err)
                disk_failed_locked(p, &retry, &eb);
            else
                disk_recovered(&retry);
            settle_spooled_locked(p);
        } else if (p->stopping) {
            break;
        } else {
            uv_cond_wait(&p->spool_work, &p->mu);
        }
    }
    uv_mutex_unlock(&p->mu);
}

/* The input whose id is id, or SIZE_MAX. */
static size_t input_by_id(const struct lf_config *cfg, struct lf_str id)
{
    for (size_t i = 0; i < cfg->n_inputs; i++) {
        if (strlen(cfg->inputs[i].id) == id.len && memcmp(cfg->inputs[i].id, id.ptr, id.len) == 0)
            return i;
    }
    return SIZE_MAX;
}

/* Turns the record just read into qb: its batch and end. Feeder thread, without p->mu. */
static void restore_one(struct lf_pipeline *p, struct qbatch *qb, struct lf_spool_pos end)
{
    lf_batch_reset(qb->batch);
    enum lf_err err = lf_spool_decode(&p->codec, lf_buf_str(&p->payload), qb->batch, &qb->meta);
    qb->end = end;
    qb->cfg = NULL;
    qb->n_routes = 0;
    qb->input_idx = SIZE_MAX;
    qb->bytes = 0;
    if (err) {
        lf_error("spool record ending at segment %016" PRIx64 " offset %" PRIu64 " cannot be "
                 "read back (%s); skipped", end.seg, end.off, lf_err_str(err));
        lf_batch_reset(qb->batch);
        lf_spool_meta_release(&qb->meta);
        return; /* routed nowhere: released in its turn */
    }
    qb->bytes = lf_batch_bytes(qb->batch);
}

/* Routes qb, read back from the spool, to the lanes of the outputs its record names that
 * the current config has (its outputs can change at any reconfiguration: hence under
 * p->mu). Feeder thread. */
static void route_restored_locked(struct lf_pipeline *p, struct qbatch *qb)
{
    if (qb->meta.sources == NULL && lf_batch_count(qb->batch) == 0)
        return; /* could not be read back */
    qb->input_idx = input_by_id(p->cfg, qb->meta.input_id);
    qb->answered = 0;
    for (size_t i = 0; i < qb->meta.n_routes; i++) {
        struct lf_str name = qb->meta.routes[i];
        size_t k = 0;
        while (k < p->n_outputs && (strlen(p->cfg->outputs[k].name) != name.len ||
                                    memcmp(p->cfg->outputs[k].name, name.ptr, name.len) != 0))
            k++;
        if (k < p->n_outputs && !pos_before(p->lanes[k]->pos, qb->end))
            continue; /* that output had it before a restart */
        if (k < p->n_outputs && !lane_can_take(p->lanes[k], qb))
            /* Spooled as NDJSON for outputs that did not read messages; this one (a changed
             * config) does, and the record has none to give it. */
            lf_error("spooled batch of %zu events has no messages for output %s, which now "
                     "reads them: not sent there", lf_batch_count(qb->batch),
                     p->cfg->outputs[k].name);
        else if (k < p->n_outputs)
            qb->routes[qb->n_routes++] = p->lanes[k];
        else
            lf_warn("spooled batch for output %.*s, which the configuration no longer has: "
                    "not sent there", (int)name.len, name.ptr);
    }
}

/* The delivery pipeline's feeder: reads the spool in order into batches, within the queue's
 * caps, and queues each to the lanes of the outputs its record names. */
static void spool_feeder_main(void *arg)
{
    struct lf_pipeline *p = arg;
    for (;;) {
        uv_mutex_lock(&p->mu);
        while (!p->stopping && !p->aborted && !p->failed &&
               (p->alive >= LF_PIPELINE_MAX_BATCHES || p->alive_bytes >= p->cfg->queue.max_bytes))
            uv_cond_wait(&p->space, &p->mu);
        if (p->stopping || p->aborted || p->failed) {
            uv_mutex_unlock(&p->mu);
            break;
        }
        struct qbatch *qb = p->free_list;
        if (qb != NULL)
            p->free_list = qb->next;
        else if ((qb = qbatch_new_locked(p->cfg, p->cfg->queue.batch_max_events)) != NULL)
            p->n_batches++;
        uv_mutex_unlock(&p->mu);
        struct lf_spool_pos end;
        enum lf_err err = qb != NULL ? lf_spool_next(p->spool, &p->payload, &end) : LF_ENOMEM;
        if (err) {
            uv_mutex_lock(&p->mu);
            if (qb != NULL) {
                qb->next = p->free_list;
                p->free_list = qb;
            }
            uv_mutex_unlock(&p->mu);
            lf_spool_wait(p->spool, LF_SPOOL_POLL_MS);
            continue;
        }
        restore_one(p, qb, end);
        uv_mutex_lock(&p->mu);
        route_restored_locked(p, qb);
        append_locked(p, qb, qb->n_routes);
        enqueue_locked(p, qb);
        uv_mutex_unlock(&p->mu);
    }
}

static enum lf_err pipeline_make(const struct lf_config *cfg, struct lf_pipeline *parent,
                                 struct lf_pipeline **out, struct lf_errbuf *eb);

enum lf_err lf_pipeline_new(const struct lf_config *cfg, struct lf_pipeline **out,
                            struct lf_errbuf *eb)
{
    return pipeline_make(cfg, NULL, out, eb);
}

/* Makes a pipeline: the producer's (parent NULL), which in spool mode opens the spool and
 * makes the delivery pipeline, or that delivery pipeline (parent: its producer). */
static enum lf_err pipeline_make(const struct lf_config *cfg, struct lf_pipeline *parent,
                                 struct lf_pipeline **out, struct lf_errbuf *eb)
{
    enum lf_err err = LF_ENOMEM;
    struct lf_pipeline *p = calloc(1, sizeof(*p));
    if (p == NULL)
        return lf_fail(eb, LF_ENOMEM, "out of memory");
    p->cfg = cfg;
    p->retry_budget_ms = cfg->shutdown_timeout_ms > 30000 ? cfg->shutdown_timeout_ms : 30000;
    if (parent != NULL)
        p->retry_budget_ms = parent->retry_budget_ms;
    lf_buf_init(&p->payload, LF_SPOOL_MAX_RECORD);
    if (uv_mutex_init(&p->mu) != 0) {
        free(p);
        return lf_fail(eb, LF_EIO, "cannot create a mutex");
    }
    if (uv_cond_init(&p->prep_work) != 0 || uv_cond_init(&p->space) != 0 ||
        uv_cond_init(&p->prepared) != 0 || uv_cond_init(&p->spool_work) != 0) {
        uv_mutex_destroy(&p->mu);
        free(p);
        return lf_fail(eb, LF_EIO, "cannot create a condition variable");
    }
    if (uv_mutex_init(&p->dmu) != 0) {
        uv_mutex_destroy(&p->mu);
        free(p);
        return lf_fail(eb, LF_EIO, "cannot create a mutex");
    }
    p->lanes = calloc(cfg->n_outputs ? cfg->n_outputs : 1, sizeof(*p->lanes));
    p->current = calloc(cfg->n_inputs ? cfg->n_inputs : 1, sizeof(*p->current));
    p->modes = calloc(cfg->n_inputs ? cfg->n_inputs : 1, sizeof(*p->modes));
    if (p->lanes == NULL || p->current == NULL || p->modes == NULL)
        goto fail;
    if (parent != NULL) {
        p->parent = parent;
        p->spool = parent->spool;
    } else if (cfg->queue.spool_enabled) {
        char dir[4200];
        snprintf(dir, sizeof(dir), "%s/spool", cfg->data_dir);
        err = lf_spool_open(dir, cfg->queue.spool_max_bytes, 0, &p->spool, eb);
        if (!err)
            err = pipeline_make(cfg, p, &p->delivery, eb);
        if (err)
            goto fail;
        set_modes(cfg, p->delivery->lanes, p->modes);
        if (uv_thread_create(&p->spool_thread, spool_writer_main, p) != 0) {
            err = lf_fail(eb, LF_EIO, "cannot start the spool writer");
            goto fail;
        }
        p->spool_thread_started = true;
    }
    for (size_t i = 0; i < cfg->n_outputs && p->delivery == NULL; i++) {
        err = lane_new(p, &cfg->outputs[i], LANE_SLOTS(cfg->n_inputs), &p->lanes[i], eb);
        if (err)
            goto fail;
        p->n_outputs = i + 1;
        p->n_lanes = i + 1;
    }
    if (p->delivery == NULL)
        set_modes(cfg, p->lanes, p->modes);
    for (size_t i = 0; i < p->n_outputs; i++) {
        err = lane_start(p->lanes[i], eb);
        if (err)
            goto fail;
    }
    if (parent != NULL) {
        if (uv_thread_create(&p->spool_thread, spool_feeder_main, p) != 0) {
            err = lf_fail(eb, LF_EIO, "cannot start the spool reader");
            goto fail;
        }
        p->spool_thread_started = true;
    }
    if (uv_thread_create(&p->preparer, preparer_main, p) != 0) {
        err = lf_fail(eb, LF_EIO, "cannot start the compression thread");
        goto fail;
    }
    p->preparer_started = true;
    *out = p;
    return LF_OK;
fail:
    if (err == LF_ENOMEM)
        lf_fail(eb, LF_ENOMEM, "out of memory");
    lf_pipeline_free(p);
    return err;
}

/* Queues qb (on the alive list) to the lane of every output it goes to. Called with p->mu
 * held. */
static void enqueue_locked(struct lf_pipeline *p, struct qbatch *qb)
{
    for (size_t k = 0; k < qb->n_routes; k++) {
        struct lane *l = qb->routes[k];
        if (!lane_insert(l, qb)) /* the newest: at the end */
            give_up_locked(l, qb, "out of memory");
    }
    uv_cond_signal(&p->prep_work);
    complete_locked(p); /* routed nowhere: answered at once */
}

/* Appends qb, just cut or read back from the spool, to the queue of batches alive, waiting
 * for `pending` answers. Called with p->mu held. */
static void append_locked(struct lf_pipeline *p, struct qbatch *qb, size_t pending)
{
    qb->next = NULL;
    qb->prep = PREP_NONE;
    qb->failed = false;
    qb->pending = pending;
    qb->order = p->next_order++;
    qb->cut_ns = uv_hrtime();
    if (p->tail != NULL)
        p->tail->next = qb;
    else
        p->head = qb;
    p->tail = qb;
    p->alive++;
    p->alive_bytes += qb->bytes;
}

/* Queues input i's batch in cur (a producer's current batches), if any, to every output its
 * input routes to. Called with p->mu held. */
static void cut_locked(struct lf_pipeline *p, struct qbatch **cur, size_t i)
{
    struct qbatch *qb = cur[i];
    if (qb == NULL || lf_batch_count(qb->batch) == 0)
        return;
    cur[i] = NULL;
    const struct lf_input_conf *in = &p->cfg->inputs[i];
    qb->cfg = p->cfg;
    qb->input_idx = i;
    qb->spooled = false;
    qb->n_routes = 0;
    for (size_t k = 0; k < in->n_outputs && p->delivery == NULL; k++)
        qb->routes[qb->n_routes++] = p->lanes[in->outputs[k]]; /* room: take_batch_locked() */
    append_locked(p, qb, p->delivery != NULL ? 1 : in->n_outputs); /* spool mode: the writer */
    if (p->delivery != NULL) {
        uv_cond_signal(&p->spool_work);
        uv_cond_signal(&p->prep_work);
        return;
    }
    enqueue_locked(p, qb);
}

/* The batches being filled, by every producer. Called with p->mu held. */
static size_t current_locked(const struct lf_pipeline *p)
{
    size_t n = 0;
    for (size_t k = 0; k < p->cfg->n_inputs; k++)
        n += p->current[k] != NULL;
    for (const struct lf_producer *pr = p->producers; pr != NULL; pr = pr->next) {
        for (size_t k = 0; k < p->cfg->n_inputs; k++)
            n += pr->current[k] != NULL;
    }
    return n;
}

/* Gives input i an empty batch in cur (a producer's current batches), waiting while the queue
 * is at its caps; only the pipeline's own producer (own) runs the wait hook. Called with
 * p->mu held; may release it while waiting. */
static enum lf_err take_batch_locked(struct lf_pipeline *p, struct qbatch **cur, size_t i, bool own)
{
    size_t max_bytes = p->cfg->queue.max_bytes;
    /* The current batches count as alive too: they hold memory. */
    size_t current = current_locked(p);
    size_t cap =
        (p->delivery != NULL ? LF_SPOOL_MAX_BATCHES : LF_PIPELINE_MAX_BATCHES) + p->n_producers;
    /* With nothing in flight nothing can complete, so never wait then. */
    uint64_t last_hook = uv_hrtime();
    /* While a reload waits (lf_pipeline_yield()), no wait: the caller stops reading soon. */
    while (!p->failed && !p->yield && p->alive > 0 &&
           (p->alive + current >= cap || p->alive_bytes >= max_bytes)) {
        if (p->wait_fn == NULL || !own) {
            uv_cond_wait(&p->space, &p->mu);
            current = current_locked(p); /* another producer may have cut or taken one */
            continue;
        }
        uint64_t interval_ns = p->wait_interval_ms * 1000000u;
        lf_err_ignore(uv_cond_timedwait(&p->space, &p->mu, interval_ns) ? LF_EAGAIN : LF_OK);
        if (uv_hrtime() - last_hook >= interval_ns) {
            uv_mutex_unlock(&p->mu);
            p->wait_fn(p->wait_arg); /* the producer's own work: answers, offsets */
            uv_mutex_lock(&p->mu);
            last_hook = uv_hrtime();
        }
    }
    if (p->failed)
        return LF_EIO;
    /* Still at the caps: the wait was cut short by a yield. */
    current = current_locked(p);
    bool beyond = p->alive > 0 && (p->alive + current >= cap || p->alive_bytes >= max_bytes);
    struct qbatch *qb = p->free_list;
    if (qb != NULL) {
        p->free_list = qb->next;
    } else if (beyond && p->extras != NULL) {
        qb = p->extras;
        p->extras = qb->next;
    } else if (beyond) {
        qb = qbatch_new_locked(p->cfg, LF_EXTRA_BATCH_EVENTS); /* a few lines' worth */
        if (qb == NULL)
            return LF_ENOMEM;
        qb->extra = true;
    } else {
        qb = qbatch_new_locked(p->cfg, p->cfg->queue.batch_max_events);
        if (qb == NULL)
            return LF_ENOMEM;
        p->n_batches++;
    }
    qb->next = NULL;
    qb->bytes = 0;
    cur[i] = qb;
    if (!qbatch_reserve_routes(qb, p->cfg->inputs[i].n_outputs))
        return LF_ENOMEM; /* an empty current batch: cut_locked() skips it */
    return lf_batch_set_mode(qb->batch, p->modes[i]); /* the batch is empty: cannot fail */
}

/* lf_pipeline_push() and lf_producer_push(): into cur, counting in *events_in. */
static enum lf_err push(struct lf_pipeline *p,
                        struct qbatch **cur,
                        uint64_t *events_in,
                        bool own,
                        size_t input_idx,
                        const struct lf_event *ev)
{
    struct qbatch *qb = cur[input_idx];
    enum lf_err err = qb != NULL ? lf_batch_add(qb->batch, ev) : LF_ETOOBIG;
    if (err == LF_ETOOBIG) {
        uv_mutex_lock(&p->mu);
        cut_locked(p, cur, input_idx);
        err = take_batch_locked(p, cur, input_idx, own);
        uv_mutex_unlock(&p->mu);
        if (err)
            return err;
        qb = cur[input_idx];
        err = lf_batch_add(qb->batch, ev);
    }
    if (err)
        return err;
    qb->bytes += ev->message.len;
    ev->source->inflight++;
    __atomic_store_n(events_in, *events_in + 1, __ATOMIC_RELAXED);
    return LF_OK;
}

enum lf_err lf_pipeline_push(struct lf_pipeline *p, size_t input_idx, const struct lf_event *ev)
{
    return push(p, p->current, &p->events_in, true, input_idx, ev);
}

enum lf_err lf_producer_new(struct lf_pipeline *p, struct lf_producer **out)
{
    *out = NULL;
    struct lf_producer *pr = calloc(1, sizeof(*pr));
    if (pr == NULL)
        return LF_ENOMEM;
    pr->p = p;
    pr->current = calloc(p->cfg->n_inputs ? p->cfg->n_inputs : 1, sizeof(*pr->current));
    if (pr->current == NULL) {
        free(pr);
        return LF_ENOMEM;
    }
    uv_mutex_lock(&p->mu);
    bool room = p->n_producers < LF_PIPELINE_MAX_PRODUCERS;
    if (room) {
        pr->next = p->producers;
        p->producers = pr;
        p->n_producers++;
    }
    uv_mutex_unlock(&p->mu);
    if (!room) {
        free(pr->current);
        free(pr);
        return LF_EINVAL;
    }
    *out = pr;
    return LF_OK;
}

enum lf_err lf_producer_push(struct lf_producer *pr, size_t input_idx, const struct lf_event *ev)
{
    return push(pr->p, pr->current, &pr->events_in, false, input_idx, ev);
}

/* Cuts every non-empty batch in cur (a producer's current batches) and queues it. */
static enum lf_err flush_current(struct lf_pipeline *p, struct qbatch **cur)
{
    uv_mutex_lock(&p->mu);
    for (size_t i = 0; i < p->cfg->n_inputs; i++)
        cut_locked(p, cur, i);
    bool failed = p->failed;
    uv_mutex_unlock(&p->mu);
    return failed ? LF_EIO : LF_OK;
}

enum lf_err lf_producer_flush(struct lf_producer *pr)
{
    return flush_current(pr->p, pr->current);
}

void lf_producer_free(struct lf_producer *pr)
{
    if (pr == NULL)
        return;
    struct lf_pipeline *p = pr->p;
    uv_mutex_lock(&p->mu);
    for (size_t i = 0; i < p->cfg->n_inputs; i++) {
        cut_locked(p, pr->current, i);      /* what it filled is delivered, not lost */
        struct qbatch *qb = pr->current[i]; /* an empty one: back to the free list */
        if (qb != NULL)
            recycle_locked(p, qb);
    }
    struct lf_producer **link = &p->producers;
    while (*link != pr)
        link = &(*link)->next;
    *link = pr->next;
    p->n_producers--;
    p->events_in_gone += __atomic_load_n(&pr->events_in, __ATOMIC_RELAXED);
    uv_cond_broadcast(&p->space); /* the cap fell, and so did the batches being filled */
    uv_mutex_unlock(&p->mu);
    free(pr->current);
    free(pr);
}

void lf_pipeline_set_wait_hook(struct lf_pipeline *p, void (*fn)(void *arg), void *arg,
                               uint64_t interval_ms)
{
    p->wait_fn = fn;
    p->wait_arg = arg;
    p->wait_interval_ms = interval_ms ? interval_ms : 1000;
}

static struct lf_pipeline *delivery_get(struct lf_pipeline *p);
static void delivery_put(struct lf_pipeline *p);

void lf_pipeline_yield(struct lf_pipeline *p, bool on)
{
    uv_mutex_lock(&p->mu);
    __atomic_store_n(&p->yield, on, __ATOMIC_RELAXED); /* read per line without the lock */
    uv_cond_broadcast(&p->space);
    uv_mutex_unlock(&p->mu);
}

bool lf_pipeline_yielding(struct lf_pipeline *p)
{
    return __atomic_load_n(&p->yield, __ATOMIC_RELAXED);
}

size_t lf_pipeline_take_acks(struct lf_pipeline *p, lf_ack_fn *fn, void *arg)
{
    reap_lanes(p);
    struct lf_pipeline *d = delivery_get(p);
    if (d != NULL) {
        reap_lanes(d);
        delivery_put(p);
    }
    uv_mutex_lock(&p->mu);
    struct ack_log l = p->acks;
    p->acks = p->taking;
    p->acks.len = 0;
    uv_mutex_unlock(&p->mu);
    for (size_t i = 0; i < l.len; i++) {
        const struct lf_ack *a = &l.a[i];
        struct lf_source *src = a->source;
        src->inflight -= a->events;
        if (!a->delivered) {
            if (a->first < src->pinned_offset)
                src->pinned_offset = a->first;
        } else if (a->end > src->acked_offset) {
            src->acked_offset = a->end;
        }
        if (fn != NULL)
            fn(arg, a); /* may free the source: the last use of it here */
    }
    p->taking = l; /* keeps its memory for the next swap */
    return l.len;
}

enum lf_err lf_pipeline_flush(struct lf_pipeline *p)
{
    return flush_current(p, p->current);
}

enum lf_err lf_pipeline_drain(struct lf_pipeline *p, struct lf_errbuf *eb)
{
    lf_err_ignore(lf_pipeline_flush(p)); /* a failure is reported below, after the wait */
    uv_mutex_lock(&p->mu);
    while (p->alive > 0 && !p->aborted)
        uv_cond_wait(&p->space, &p->mu);
    bool failed = p->failed;
    uv_mutex_unlock(&p->mu);
    /* Every batch is answered, so the outputs hold nothing: no flush is due here (and the
     * outputs belong to their lanes' threads). */
    if (failed)
        return lf_fail(eb, LF_EIO, "%s", p->fail_msg);
    return LF_OK;
}

/* The delivery pipeline of a spool-mode producer, locked (p->dmu) until delivery_put();
 * NULL (nothing locked) otherwise. */
static struct lf_pipeline *delivery_get(struct lf_pipeline *p)
{
    if (p->spool == NULL || p->parent != NULL)
        return NULL;
    uv_mutex_lock(&p->dmu);
    if (p->delivery == NULL)
        uv_mutex_unlock(&p->dmu);
    return p->delivery;
}

static void delivery_put(struct lf_pipeline *p)
{
    uv_mutex_unlock(&p->dmu);
}

enum lf_err lf_pipeline_drain_spool(struct lf_pipeline *p, struct lf_errbuf *eb)
{
    struct lf_pipeline *d = delivery_get(p);
    if (d == NULL)
        return LF_OK;
    delivery_put(p); /* never replaced: only lf_pipeline_free() ends it */
    uv_mutex_lock(&d->mu);
    while (!d->failed && !d->aborted && !(d->alive == 0 && lf_spool_empty(p->spool)))
        lf_err_ignore(uv_cond_timedwait(&d->space, &d->mu, 100000000u) ? LF_EAGAIN : LF_OK);
    enum lf_err err = d->failed || d->aborted ? LF_EIO : LF_OK;
    if (err)
        lf_fail(eb, LF_EIO, "%s; the spool keeps what was not delivered",
                d->fail_msg[0] ? d->fail_msg : "delivery stopped");
    uv_mutex_unlock(&d->mu);
    return err;
}

bool lf_pipeline_spool_stats(struct lf_pipeline *p, struct lf_spool_stats *out)
{
    *out = (struct lf_spool_stats){ 0 };
    if (p->spool == NULL)
        return false;
    lf_spool_stats(p->spool, out);
    return true;
}

void lf_pipeline_output_stats(struct lf_pipeline *p, const char *name,
                              struct lf_pipeline_output_stats *out)
{
    struct lf_pipeline *d = delivery_get(p);
    if (d != NULL) {
        lf_pipeline_output_stats(d, name, out);
        delivery_put(p);
        return;
    }
    *out = (struct lf_pipeline_output_stats){ 0 };
    uv_mutex_lock(&p->mu);
    for (size_t i = 0; i < p->n_outputs; i++) {
        if (strcmp(p->lanes[i]->conf->name, name) == 0)
            *out = p->lanes[i]->own;
    }
    uv_mutex_unlock(&p->mu);
}

/* What a reconfiguration builds before it changes anything, so that it can still fail
 * without effect. */
struct reconf {
    struct lane **lanes; /* per new output: an old lane kept, or a new one (started) */
    bool *kept;          /* per new output */
    struct lane **all;   /* the new p->lanes: room for the new ones and every old one */
    struct qbatch **current; /* per new input (the producer) */
    enum lf_batch_mode *modes;
};

/* Ends and frees the new lanes of r (a reconfiguration that failed), and r. */
static void reconf_undo(struct lf_pipeline *p, struct reconf *r, size_t n_new)
{
    for (size_t j = 0; j < n_new && r->lanes != NULL; j++) {
        struct lane *l = r->lanes[j];
        if (l == NULL || r->kept[j])
            continue;
        uv_mutex_lock(&p->mu);
        l->quit = true; /* it has nothing: it ends at once */
        uv_cond_signal(&l->work);
        uv_mutex_unlock(&p->mu);
        lane_join(l);
        lane_free(l);
    }
    free(r->lanes);
    free(r->kept);
    free(r->all);
    free(r->current);
    free(r->modes);
}

/* p's current lane for the output named name, or NULL. Producer thread (the only one that
 * changes the current lanes). */
static struct lane *current_lane(const struct lf_pipeline *p, const char *name)
{
    for (size_t i = 0; i < p->n_outputs; i++) {
        if (strcmp(p->lanes[i]->conf->name, name) == 0)
            return p->lanes[i];
    }
    return NULL;
}

/* Builds r for cfg: an output whose settings are the same keeps its lane, the others get
 * a new lane, made, opened and started (with nothing to send yet). Nothing of lp changes.
 * n_inputs sizes the producer's new arrays. */
static enum lf_err reconf_build(struct lf_pipeline *lp, const struct lf_config *cfg,
                                struct reconf *r, struct lf_errbuf *eb)
{
    size_t n_new = cfg->n_outputs ? cfg->n_outputs : 1;
    size_t n_in = cfg->n_inputs ? cfg->n_inputs : 1;
    r->lanes = calloc(n_new, sizeof(*r->lanes));
    r->kept = calloc(n_new, sizeof(*r->kept));
    r->all = calloc(n_new + lp->n_lanes, sizeof(*r->all));
    r->current = calloc(n_in, sizeof(*r->current));
    r->modes = calloc(n_in, sizeof(*r->modes));
    if (r->lanes == NULL || r->kept == NULL || r->all == NULL || r->current == NULL ||
        r->modes == NULL)
        return lf_fail(eb, LF_ENOMEM, "out of memory");
    for (size_t j = 0; j < cfg->n_outputs; j++) {
        const struct lf_output_conf *oc = &cfg->outputs[j];
        struct lane *old = current_lane(lp, oc->name);
        if (old != NULL && lf_config_output_same(old->conf, oc)) {
            r->kept[j] = true;
            r->lanes[j] = old;
            continue;
        }
        enum lf_err err = lane_new(lp, oc, LANE_SLOTS(cfg->n_inputs), &r->lanes[j], eb);
        if (!err)
            err = lane_start(r->lanes[j], eb);
        if (err)
            return err;
    }
    return LF_OK;
}

/* Retires lane l (its output is no longer in the config as it was). With a successor (the
 * same name, other settings), l hands it every batch it has not sent (or sends it itself,
 * when the new settings cannot: see lane_can_take()), its counters go on in succ's, and
 * succ sends nothing until l's requests in flight are answered. Called with p->mu held. */
static void retire_locked(struct lf_pipeline *p, struct lane *l, struct lane *succ)
{
    l->quit = true;
    l->quit_ms = (int64_t)(uv_hrtime() / 1000000);
    uv_cond_signal(&l->work);
    if (succ == NULL)
        return;
    l->succ = succ;
    succ->pred = l;
    succ->pos = l->pos; /* spool mode: it starts where its predecessor is */
    succ->own = *l->st;
    l->st = &succ->own;
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
    (void)p;
}

/* Switches lp's lanes to r's: the new ones first, in cfg's order, then the retiring ones
 * (old lanes not kept, and those retiring already). lp->cfg is the caller's to switch.
 * Called with lp->mu held. */
static void lanes_switch_locked(struct lf_pipeline *lp, const struct lf_config *cfg,
                                struct reconf *r)
{
    size_t k = 0;
    for (size_t j = 0; j < cfg->n_outputs; j++)
        r->all[k++] = r->lanes[j];
    for (size_t i = 0; i < lp->n_outputs; i++) {
        struct lane *l = lp->lanes[i];
        struct lane *succ = NULL;
        bool kept = false;
        for (size_t j = 0; j < cfg->n_outputs; j++) {
            kept |= r->lanes[j] == l;
            if (!r->kept[j] && strcmp(r->lanes[j]->conf->name, l->conf->name) == 0)
                succ = r->lanes[j];
        }
        if (kept)
            continue;
        retire_locked(lp, l, succ);
        r->all[k++] = l;
    }
    for (size_t i = lp->n_outputs; i < lp->n_lanes; i++)
        r->all[k++] = lp->lanes[i];
    struct lane **old = lp->lanes;
    lp->lanes = r->all;
    r->all = old; /* freed with r */
    lp->n_outputs = cfg->n_outputs;
    lp->n_lanes = k;
}

/* The producer's side: cfg's inputs, their batch modes (from lp's new lanes), empty current
 * batches. Called with p->mu held. */
static void producer_switch_locked(struct lf_pipeline *p, const struct lf_config *cfg,
                                   struct reconf *r)
{
    for (size_t i = 0; i < p->cfg->n_inputs; i++) {
        struct qbatch *qb = p->current[i]; /* empty: flushed before */
        if (qb != NULL)
            recycle_locked(p, qb);
    }
    struct qbatch **cur = p->current;
    enum lf_batch_mode *modes = p->modes;
    p->current = r->current;
    p->modes = r->modes;
    r->current = cur;
    r->modes = modes; /* freed with r */
    p->cfg = cfg;
}

enum lf_err lf_pipeline_reconfigure(struct lf_pipeline *p, const struct lf_config *cfg,
                                    struct lf_errbuf *eb)
{
    uv_mutex_lock(&p->mu);
    size_t producers = p->n_producers;
    uv_mutex_unlock(&p->mu);
    if (producers > 0)
        return lf_fail(eb, LF_EINVAL, "reconfigured with other producers alive");
    /* Spool mode: the delivery pipeline's lanes change; the producer's inputs. */
    struct lf_pipeline *lp = p->spool != NULL ? p->delivery : p;
    size_t n_new = cfg->n_outputs ? cfg->n_outputs : 1;
    struct reconf r = { 0 };
    enum lf_err err = reconf_build(lp, cfg, &r, eb);
    if (err) {
        reconf_undo(lp, &r, n_new);
        return err;
    }
    /* What was read under the old config is cut and queued (or spooled) by its routes. A
     * failure shows again at the next push. */
    lf_err_ignore(flush_current(p, p->current));
    uv_mutex_lock(&lp->mu);
    lanes_switch_locked(lp, cfg, &r);
    set_modes(cfg, lp->lanes, r.modes);
    if (lp == p)
        producer_switch_locked(p, cfg, &r); /* sets p->cfg, after the old one's inputs */
    else
        lp->cfg = cfg;
    uv_mutex_unlock(&lp->mu);
    if (lp != p) {
        uv_mutex_lock(&p->mu);
        producer_switch_locked(p, cfg, &r);
        uv_mutex_unlock(&p->mu);
    }
    free(r.lanes);
    free(r.kept);
    free(r.all);
    free(r.current);
    free(r.modes);
    reap_lanes(lp);
    return LF_OK;
}

bool lf_pipeline_borrows(struct lf_pipeline *p, const struct lf_config *cfg)
{
    struct lf_pipeline *d = delivery_get(p);
    if (d != NULL) {
        bool used = lf_pipeline_borrows(d, cfg);
        delivery_put(p);
        if (used)
            return true;
    }
    uintptr_t lo = (uintptr_t)cfg->outputs;
    uintptr_t hi = (uintptr_t)(cfg->outputs + cfg->n_outputs);
    uv_mutex_lock(&p->mu);
    bool used = p->cfg == cfg;
    for (size_t i = 0; i < p->n_lanes && !used; i++) { /* retiring ones too */
        uintptr_t c = (uintptr_t)p->lanes[i]->conf;
        used = c >= lo && c < hi;
    }
    for (const struct qbatch *qb = p->head; qb != NULL && !used; qb = qb->next)
        used = qb->cfg == cfg; /* cut under it: names its input and routes */
    uv_mutex_unlock(&p->mu);
    return used;
}

bool lf_pipeline_healthy(struct lf_pipeline *p)
{
    struct lf_pipeline *d = delivery_get(p);
    if (d != NULL) {
        bool ok = lf_pipeline_healthy(d);
        delivery_put(p);
        if (!ok)
            return false;
    }
    uv_mutex_lock(&p->mu);
    bool ok = !p->failed;
    for (size_t o = 0; o < p->n_lanes && ok; o++) {
        for (size_t i = 0; i < p->lanes[o]->n_att && ok; i++)
            ok = p->lanes[o]->att[i].waited_ms < LF_HEALTHY_RETRY_MS;
    }
    uv_mutex_unlock(&p->mu);
    return ok;
}

void lf_pipeline_set_retry_budget(struct lf_pipeline *p, uint64_t budget_ms)
{
    struct lf_pipeline *d = delivery_get(p);
    if (d != NULL) {
        lf_pipeline_set_retry_budget(d, budget_ms);
        delivery_put(p);
    }
    uv_mutex_lock(&p->mu);
    p->retry_budget_ms = budget_ms;
    uv_mutex_unlock(&p->mu);
}

void lf_pipeline_abort(struct lf_pipeline *p, const char *why)
{
    struct lf_pipeline *d = delivery_get(p);
    if (d != NULL) {
        lf_pipeline_abort(d, why);
        delivery_put(p);
    }
    if (p->spool != NULL && p->parent == NULL)
        lf_spool_interrupt(p->spool);
    uv_mutex_lock(&p->mu);
    if (!p->failed) {
        p->failed = true;
        snprintf(p->fail_msg, sizeof(p->fail_msg), "%s", why);
    }
    p->aborted = true;
    uv_cond_broadcast(&p->space);
    uv_cond_broadcast(&p->spool_work);
    for (size_t i = 0; i < p->n_lanes; i++)
        uv_cond_signal(&p->lanes[i]->work);
    uv_mutex_unlock(&p->mu);
}

void lf_pipeline_stats(struct lf_pipeline *p, struct lf_pipeline_stats *out)
{
    struct lf_pipeline_stats ds = { 0 };
    struct lf_pipeline *d = delivery_get(p);
    if (d != NULL) {
        lf_pipeline_stats(d, &ds);
        delivery_put(p);
    }
    uv_mutex_lock(&p->mu);
    *out = p->stats;
    out->queue_bytes = p->alive_bytes + ds.queue_bytes;
    out->bytes_out += ds.bytes_out;
    out->retries += ds.retries;
    out->events_in = __atomic_load_n(&p->events_in, __ATOMIC_RELAXED) + p->events_in_gone;
    for (const struct lf_producer *pr = p->producers; pr != NULL; pr = pr->next)
        out->events_in += __atomic_load_n(&pr->events_in, __ATOMIC_RELAXED);
    uv_mutex_unlock(&p->mu);
}

/* Stops a delivery pipeline at once: what is queued or waiting for a retry is dropped
 * (the spool keeps it: not released), what is in flight is waited for. */
static void delivery_stop(struct lf_pipeline *d)
{
    uv_mutex_lock(&d->mu);
    d->detaching = true;
    d->aborted = true;
    uv_cond_broadcast(&d->space);
    for (size_t i = 0; i < d->n_lanes; i++)
        uv_cond_signal(&d->lanes[i]->work);
    uv_mutex_unlock(&d->mu);
    pipeline_release(d);
}

/* Frees a spool-mode producer (the writer appends what is cut, then ends; the delivery
 * stops where it is), or a delivery pipeline. */
static void spool_stop(struct lf_pipeline *p)
{
    if (p->parent != NULL) {
        delivery_stop(p);
        return;
    }
    struct lf_pipeline *d = p->delivery;
    uv_mutex_lock(&p->dmu);
    p->delivery = NULL;
    uv_mutex_unlock(&p->dmu);
    if (d != NULL)
        delivery_stop(d);
    lf_spool_interrupt(p->spool); /* an append waiting for room gives up: not acknowledged */
    pipeline_release(p); /* closes the spool */
}

void lf_pipeline_free(struct lf_pipeline *p)
{
    if (p == NULL)
        return;
    if (p->spool != NULL) {
        spool_stop(p);
        return;
    }
    pipeline_release(p);
}

/* Stops a pipeline's threads: its lanes send what is queued, then end. */
static void pipeline_join(struct lf_pipeline *p)
{
    /* The lanes send what is queued, then end; the preparer ends once nothing is left. */
    uv_mutex_lock(&p->mu);
    p->stopping = true;
    uv_cond_broadcast(&p->spool_work);
    uv_cond_broadcast(&p->space);
    for (size_t i = 0; i < p->n_lanes; i++)
        uv_cond_signal(&p->lanes[i]->work);
    uv_cond_broadcast(&p->prep_work);
    uv_mutex_unlock(&p->mu);
    if (p->spool_thread_started)
        uv_thread_join(&p->spool_thread);
    p->spool_thread_started = false;
    for (size_t i = 0; i < p->n_lanes; i++) /* retiring ones end too */
        lane_join(p->lanes[i]);
    if (p->preparer_started)
        uv_thread_join(&p->preparer);
    p->preparer_started = false;
}

/* Stops (pipeline_join()) and frees a pipeline. */
static void pipeline_release(struct lf_pipeline *p)
{
    pipeline_join(p);
    lf_spool_codec_release(&p->codec);
    lf_buf_release(&p->payload);
    if (p->parent == NULL)
        lf_spool_close(p->spool);
    free_list(p->head);
    free_list(p->free_list);
    free_list(p->extras);
    free(p->acks.a);
    free(p->taking.a);
    if (p->current != NULL) {
        for (size_t i = 0; i < p->cfg->n_inputs; i++)
            qbatch_free(p->current[i]);
    }
    for (size_t i = 0; i < p->n_lanes; i++)
        lane_free(p->lanes[i]);
    free(p->lanes);
    free(p->current);
    free(p->modes);
    uv_cond_destroy(&p->prep_work);
    uv_cond_destroy(&p->space);
    uv_cond_destroy(&p->prepared);
    uv_cond_destroy(&p->spool_work);
    uv_mutex_destroy(&p->mu);
    uv_mutex_destroy(&p->dmu);
    free(p);
}
