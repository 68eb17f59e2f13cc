/* pipeline.c - batcher, bounded queue and the delivery worker (see pipeline.h).
 *
 *   push ──► current[input] ──cut──► queue ──► worker: send to each routed output
 *                ▲                                          │
 *                │                          in flight (send order) ◄── done(): OK, or
 *                │                                          │          EAGAIN -> retries
 *                └── free list (memory kept) ◄── ack ◄──────┘ head completed
 *
 * One mutex guards the queue, the in-flight list, the retries, the free list and the
 * counters; the producer takes it once per cut batch, not per event. Outputs answer each
 * batch through lf_output_done(), during send or later (a file output holds batches until
 * one fdatasync covers several); the worker flushes the outputs whenever it has nothing
 * else to send, so held batches are answered as soon as the queue runs dry. Batches are
 * allocated lazily up to LF_PIPELINE_MAX_BATCHES and then recycled, so the steady state
 * allocates nothing. A second thread, the preparer, computes the outputs' forms of queued
 * batches (zstd compression) ahead of the worker, so compression uses both cores while
 * sending stays in order on one. */
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

/* Batches alive at once, at most: current ones, queued and in flight. Bounds memory beyond
 * queue.max_bytes (each batch keeps its arena, encode buffer and compression context). */
#define LF_PIPELINE_MAX_BATCHES 6
/* Retries of a batch an output answered LF_EAGAIN for: backoff doubles from 100 ms to 5 s. */
#define LF_RETRY_INITIAL_MS 100
#define LF_RETRY_MAX_MS     5000
/* /healthz turns 503 once a batch has spent this long in backoff. */
#define LF_HEALTHY_RETRY_MS 60000

struct qbatch {
    struct lf_batch *batch; /* owned */
    size_t input_idx;
    size_t bytes;       /* message bytes, counted against queue.max_bytes */
    size_t pending;     /* routed outputs that have not answered yet */
    bool failed;        /* an output refused it, or retries ran out */
    unsigned attempts;  /* retries so far */
    uint64_t waited_ms; /* backoff slept so far */
    enum { PREP_NONE, PREP_RUNNING, PREP_DONE } prep; /* the outputs' forms computed yet? */
    struct qbatch *next; /* queue, in-flight list or free list */
};

/* Answers of completed batches, waiting for the producer (lf_pipeline_take_acks()). */
struct ack_log {
    struct lf_ack *a; /* owned */
    size_t len;
    size_t cap;
};

struct retry {
    struct qbatch *qb;
    size_t out_idx;
    struct retry *next;
};

struct lf_pipeline {
    const struct lf_config *cfg; /* borrowed */
    struct lf_output **outputs;  /* owned; one per cfg->outputs[i] */
    size_t n_outputs;
    struct qbatch **current; /* owned; per input, the batch being filled (or NULL) */
    enum lf_batch_mode *modes; /* owned; per input: encode on add unless an output of its
                                  route reads messages */

    uv_mutex_t mu;
    uv_cond_t work;  /* the worker has something to do */
    uv_cond_t space; /* a batch completed */
    uv_cond_t prepared; /* a batch's preparation finished */
    struct qbatch *head; /* queue, oldest first */
    struct qbatch *tail;
    struct qbatch *fl_head; /* in flight: sent, not yet completed, in send order */
    struct qbatch *fl_tail;
    struct retry *retries;  /* (batch, output) pairs to send again, oldest first */
    struct ack_log acks;    /* answers not yet taken by the producer */
    struct ack_log taking;  /* the producer's: swapped with acks, so both keep their memory */
    struct qbatch *free_list;
    size_t alive;        /* batches queued or in flight */
    size_t alive_bytes;  /* their message bytes */
    size_t n_batches;    /* batch objects allocated */
    bool needs_flush;    /* something was sent since the outputs were last flushed */
    bool stopping;
    bool failed;         /* a batch was given up on: --once cannot succeed */
    bool aborted;        /* lf_pipeline_abort(): waits end at once */
    uint64_t retry_budget_ms; /* backoff a batch may spend before it is given up; 0: never */
    char fail_msg[512];
    struct lf_pipeline_stats stats;
    struct lf_pipeline_output_stats *ostats; /* owned; per output */
    uint64_t events_in; /* producer writes, others read: relaxed atomics */

    bool worker_started;
    uv_thread_t worker;
    bool preparer_started;
    uv_thread_t preparer; /* compresses queued batches ahead of the worker */
};

static struct qbatch *qbatch_new(const struct lf_config *cfg)
{
    struct qbatch *qb = calloc(1, sizeof(*qb));
    if (qb == NULL)
        return NULL;
    qb->batch = lf_batch_new(cfg->queue.batch_max_events, cfg->queue.batch_max_bytes);
    if (qb->batch == NULL) {
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
    free(qb);
}

static size_t output_index(const struct lf_pipeline *p, const struct lf_output *out)
{
    for (size_t i = 0; i < p->n_outputs; i++) {
        if (p->outputs[i] == out)
            return i;
    }
    return SIZE_MAX;
}

/* Appends the answer for qb to the log the producer takes: one record per run of events
 * of one source (a batch interleaves the files of its input in runs). Called with p->mu
 * held. False when out of memory: the caller keeps the batch and tries again. */
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
                    return false; /* the caller drops the records of this batch */
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

/* Answers and recycles the completed batches at the head of the in-flight list.
 * Completion is cumulative, like TCP's: a batch that completes early waits for the ones
 * sent before it, so the producer learns the answers of a source's events in order. The
 * pipeline never writes into a source: the producer applies the answers on its own thread
 * (lf_pipeline_take_acks()), which is also where sources are freed. Called with p->mu
 * held. */
static void complete_locked(struct lf_pipeline *p)
{
    while (p->fl_head != NULL && p->fl_head->pending == 0) {
        struct qbatch *qb = p->fl_head;
        size_t mark = p->acks.len;
        if (!log_answers_locked(p, qb)) {
            p->acks.len = mark; /* out of memory: answered again at the next completion */
            lf_error("out of memory recording the answer for a batch; trying again");
            return;
        }
        p->fl_head = qb->next;
        if (p->fl_head == NULL)
            p->fl_tail = NULL;
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
        lf_batch_reset(qb->batch);
        qb->bytes = 0;
        qb->next = p->free_list;
        p->free_list = qb;
        uv_cond_broadcast(&p->space);
    }
}

/* Records that output out_idx gave up on qb (refused, failed to send, out of retries). */
static void give_up_locked(struct lf_pipeline *p, struct qbatch *qb, size_t out_idx,
                           const char *why)
{
    if (p->fail_msg[0] == '\0') {
        snprintf(p->fail_msg, sizeof(p->fail_msg), "output %s: batch of %zu events from input %s "
                 "not delivered: %s", p->cfg->outputs[out_idx].name, lf_batch_count(qb->batch),
                 p->cfg->inputs[qb->input_idx].id, why);
    }
    lf_error("%s", p->fail_msg);
    qb->failed = true;
    qb->pending--;
}

static void on_output_done(void *arg, struct lf_output *out, struct lf_batch *b, enum lf_err res)
{
    struct lf_pipeline *p = arg;
    uv_mutex_lock(&p->mu);
    struct qbatch *qb = p->fl_head;
    while (qb != NULL && qb->batch != b)
        qb = qb->next;
    size_t o = output_index(p, out);
    if (qb == NULL || o == SIZE_MAX) {
        uv_mutex_unlock(&p->mu);
        lf_error("an output answered for a batch it was not given; ignored");
        return;
    }
    if (res != LF_OK) {
        p->ostats[o].errors++;
    } else {
        p->ostats[o].events_acked += lf_batch_count(b) - lf_batch_dropped(b);
    }
    if (res == LF_EAGAIN) {
        struct retry *r = malloc(sizeof(*r));
        if (r == NULL) {
            give_up_locked(p, qb, o, "out of memory");
        } else {
            *r = (struct retry){ qb, o, NULL };
            struct retry **tail = &p->retries;
            while (*tail != NULL)
                tail = &(*tail)->next;
            *tail = r;
            uv_cond_broadcast(&p->work);
        }
    } else if (res != LF_OK) {
        give_up_locked(p, qb, o, lf_err_str(res));
    } else {
        qb->pending--;
    }
    complete_locked(p);
    uv_mutex_unlock(&p->mu);
}

/* Sends qb to output o; a send that fails up front counts as that output's answer.
 * Worker thread, without p->mu. */
static void send_one(struct lf_pipeline *p, struct qbatch *qb, size_t o)
{
    enum lf_err err = lf_output_send(p->outputs[o], qb->batch);
    uv_mutex_lock(&p->mu);
    if (err) {
        p->ostats[o].errors++;
        give_up_locked(p, qb, o, lf_err_str(err));
        complete_locked(p);
    }
    p->needs_flush = true;
    uint64_t bytes = 0;
    for (size_t i = 0; i < p->n_outputs; i++)
        bytes += lf_output_stats(p->outputs[i])->bytes_written;
    p->stats.bytes_out = bytes;
    uv_mutex_unlock(&p->mu);
}

/* Computes the forms qb's outputs will send (the expensive part: compression). Runs on the
 * preparer or the worker, never both for one batch, without p->mu. */
static void prepare(struct lf_pipeline *p, struct qbatch *qb)
{
    const struct lf_input_conf *in = &p->cfg->inputs[qb->input_idx];
    for (size_t i = 0; i < in->n_outputs; i++) {
        /* A failure here shows again, and is reported, when send computes the form. */
        lf_err_ignore(lf_output_prepare(p->outputs[in->outputs[i]], qb->batch));
    }
}

/* Prepares the oldest queued batch nobody has started on; false if there is none. Called
 * with p->mu held, which it releases while preparing. */
static bool prepare_one_locked(struct lf_pipeline *p)
{
    struct qbatch *qb = p->head;
    while (qb != NULL && qb->prep != PREP_NONE)
        qb = qb->next;
    if (qb == NULL)
        return false;
    qb->prep = PREP_RUNNING;
    uv_mutex_unlock(&p->mu);
    prepare(p, qb);
    uv_mutex_lock(&p->mu);
    qb->prep = PREP_DONE;
    uv_cond_broadcast(&p->prepared);
    return true;
}

/* The second thread: prepares queued batches, oldest first, while the worker sends, so that
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
        uv_cond_wait(&p->work, &p->mu);
    }
    uv_mutex_unlock(&p->mu);
}

/* Sends a queued batch to every output its input routes to. Worker thread, with p->mu held
 * on entry and exit. */
static void send_batch_locked(struct lf_pipeline *p)
{
    struct qbatch *qb = p->head;
    while (qb->prep != PREP_DONE) {
        /* Rather than wait for the preparer to finish the head, prepare the oldest batch
         * nobody is on (the head itself if it is untouched): both threads compress. */
        if (!prepare_one_locked(p))
            uv_cond_wait(&p->prepared, &p->mu);
    }
    p->head = qb->next;
    if (p->head == NULL)
        p->tail = NULL;
    const struct lf_input_conf *in = &p->cfg->inputs[qb->input_idx];
    qb->next = NULL;
    qb->pending = in->n_outputs;
    qb->failed = false;
    qb->attempts = 0;
    qb->waited_ms = 0;
    if (p->fl_tail != NULL)
        p->fl_tail->next = qb;
    else
        p->fl_head = qb;
    p->fl_tail = qb;
    uv_mutex_unlock(&p->mu);
    for (size_t i = 0; i < in->n_outputs; i++)
        send_one(p, qb, in->outputs[i]);
    uv_mutex_lock(&p->mu);
}

/* Sends the oldest retry again after its backoff, or gives up once the budget is spent.
 * Worker thread, with p->mu held on entry and exit. */
static void retry_locked(struct lf_pipeline *p)
{
    struct retry *r = p->retries;
    p->retries = r->next;
    struct qbatch *qb = r->qb;
    size_t o = r->out_idx;
    free(r);
    if (p->aborted || (p->retry_budget_ms > 0 && qb->waited_ms >= p->retry_budget_ms)) {
        give_up_locked(p, qb, o, p->aborted ? "given up at shutdown" : "still failing after retries");
        complete_locked(p);
        return;
    }
    uint64_t delay_ms = LF_RETRY_INITIAL_MS << (qb->attempts < 6 ? qb->attempts : 6);
    if (delay_ms > LF_RETRY_MAX_MS)
        delay_ms = LF_RETRY_MAX_MS;
    qb->attempts++;
    qb->waited_ms += delay_ms;
    p->stats.retries++;
    p->ostats[o].retries++;
    lf_warn("output %s: batch of %zu events not delivered; retry %u in %" PRIu64 " ms",
            p->cfg->outputs[o].name, lf_batch_count(qb->batch), qb->attempts, delay_ms);
    uv_mutex_unlock(&p->mu);
    uv_sleep((unsigned)delay_ms);
    send_one(p, qb, o);
    uv_mutex_lock(&p->mu);
}

/* Asks every output to make what it holds durable and answer for it. Worker thread, with
 * p->mu held on entry and exit. */
static void flush_outputs_locked(struct lf_pipeline *p)
{
    p->needs_flush = false;
    uv_mutex_unlock(&p->mu);
    for (size_t i = 0; i < p->n_outputs; i++) {
        struct lf_errbuf eb = { "" };
        if (lf_output_flush(p->outputs[i], &eb))
            lf_warn("%s", eb.msg);
    }
    uv_mutex_lock(&p->mu);
}

/* After lf_pipeline_abort() queued batches are not sent: each is answered as given up on,
 * so its events pin their sources' offsets. Worker thread, with p->mu held. */
static void discard_head_locked(struct lf_pipeline *p)
{
    struct qbatch *qb = p->head;
    while (qb->prep == PREP_RUNNING)
        uv_cond_wait(&p->prepared, &p->mu);
    p->head = qb->next;
    if (p->head == NULL)
        p->tail = NULL;
    qb->next = NULL;
    qb->pending = 0;
    qb->failed = true;
    if (p->fl_tail != NULL)
        p->fl_tail->next = qb;
    else
        p->fl_head = qb;
    p->fl_tail = qb;
    complete_locked(p);
}

/* Retries come first (they are older than anything queued), then the queue; when there is
 * nothing left to send, the outputs are flushed so held batches get acknowledged. */
static void worker_main(void *arg)
{
    struct lf_pipeline *p = arg;
    uv_mutex_lock(&p->mu);
    for (;;) {
        if (p->retries != NULL)
            retry_locked(p);
        else if (p->head != NULL && p->aborted)
            discard_head_locked(p);
        else if (p->head != NULL)
            send_batch_locked(p);
        else if (p->needs_flush)
            flush_outputs_locked(p);
        else if (p->stopping)
            break;
        else
            uv_cond_wait(&p->work, &p->mu);
    }
    uv_mutex_unlock(&p->mu);
}

enum lf_err lf_pipeline_new(const struct lf_config *cfg, struct lf_pipeline **out,
                            struct lf_errbuf *eb)
{
    enum lf_err err = LF_ENOMEM;
    struct lf_pipeline *p = calloc(1, sizeof(*p));
    if (p == NULL)
        return lf_fail(eb, LF_ENOMEM, "out of memory");
    p->cfg = cfg;
    p->retry_budget_ms = cfg->shutdown_timeout_ms > 30000 ? cfg->shutdown_timeout_ms : 30000;
    if (uv_mutex_init(&p->mu) != 0) {
        free(p);
        return lf_fail(eb, LF_EIO, "cannot create a mutex");
    }
    if (uv_cond_init(&p->work) != 0 || uv_cond_init(&p->space) != 0 ||
        uv_cond_init(&p->prepared) != 0) {
        uv_mutex_destroy(&p->mu);
        free(p);
        return lf_fail(eb, LF_EIO, "cannot create a condition variable");
    }
    p->outputs = calloc(cfg->n_outputs ? cfg->n_outputs : 1, sizeof(*p->outputs));
    p->current = calloc(cfg->n_inputs ? cfg->n_inputs : 1, sizeof(*p->current));
    p->modes = calloc(cfg->n_inputs ? cfg->n_inputs : 1, sizeof(*p->modes));
    p->ostats = calloc(cfg->n_outputs ? cfg->n_outputs : 1, sizeof(*p->ostats));
    if (p->outputs == NULL || p->current == NULL || p->modes == NULL || p->ostats == NULL)
        goto fail;
    for (size_t i = 0; i < cfg->n_outputs; i++) {
        err = lf_output_new(&cfg->outputs[i], on_output_done, p, &p->outputs[i], eb);
        if (err)
            goto fail;
        p->n_outputs = i + 1;
        err = lf_output_open(p->outputs[i], eb);
        if (err)
            goto fail;
    }
    for (size_t i = 0; i < cfg->n_inputs; i++) {
        const struct lf_input_conf *in = &cfg->inputs[i];
        p->modes[i] = LF_BATCH_ENCODE_ON_ADD;
        for (size_t k = 0; k < in->n_outputs; k++) {
            if (lf_output_needs_messages(p->outputs[in->outputs[k]]))
                p->modes[i] = LF_BATCH_KEEP_EVENTS;
        }
    }
    if (uv_thread_create(&p->worker, worker_main, p) != 0) {
        err = lf_fail(eb, LF_EIO, "cannot start the delivery thread");
        goto fail;
    }
    p->worker_started = true;
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

/* Queues input i's current batch, if any. Called with p->mu held. */
static void cut_locked(struct lf_pipeline *p, size_t i)
{
    struct qbatch *qb = p->current[i];
    if (qb == NULL || lf_batch_count(qb->batch) == 0)
        return;
    p->current[i] = NULL;
    qb->input_idx = i;
    qb->next = NULL;
    if (p->tail != NULL)
        p->tail->next = qb;
    else
        p->head = qb;
    p->tail = qb;
    qb->prep = PREP_NONE;
    p->alive++;
    p->alive_bytes += qb->bytes;
    uv_cond_broadcast(&p->work); /* the worker and the preparer */
}

/* Gives input i an empty batch, waiting while the queue is at its caps. Called with p->mu
 * held; may release it while waiting. */
static enum lf_err take_batch_locked(struct lf_pipeline *p, size_t i)
{
    size_t max_bytes = p->cfg->queue.max_bytes;
    /* The current batches count as alive too: they hold memory. */
    size_t current = 0;
    for (size_t k = 0; k < p->cfg->n_inputs; k++)
        current += p->current[k] != NULL;
    /* With nothing in flight nothing can complete, so never wait then. */
    while (!p->failed && p->alive > 0 &&
           (p->alive + current >= LF_PIPELINE_MAX_BATCHES || p->alive_bytes >= max_bytes))
        uv_cond_wait(&p->space, &p->mu);
    if (p->failed)
        return LF_EIO;
    struct qbatch *qb = p->free_list;
    if (qb != NULL) {
        p->free_list = qb->next;
    } else {
        qb = qbatch_new(p->cfg);
        if (qb == NULL)
            return LF_ENOMEM;
        p->n_batches++;
    }
    qb->next = NULL;
    qb->bytes = 0;
    p->current[i] = qb;
    return lf_batch_set_mode(qb->batch, p->modes[i]); /* the batch is empty: cannot fail */
}

enum lf_err lf_pipeline_push(struct lf_pipeline *p, size_t input_idx, const struct lf_event *ev)
{
    struct qbatch *qb = p->current[input_idx];
    if (qb != NULL) {
        enum lf_err err = lf_batch_add(qb->batch, ev);
        if (!err) {
            qb->bytes += ev->message.len;
            ev->source->inflight++;
            __atomic_store_n(&p->events_in, p->events_in + 1, __ATOMIC_RELAXED);
            return LF_OK;
        }
        if (err != LF_ETOOBIG)
            return err;
    }
    uv_mutex_lock(&p->mu);
    cut_locked(p, input_idx);
    enum lf_err err = take_batch_locked(p, input_idx);
    uv_mutex_unlock(&p->mu);
    if (err)
        return err;
    qb = p->current[input_idx];
    err = lf_batch_add(qb->batch, ev);
    if (err)
        return err;
    qb->bytes += ev->message.len;
    ev->source->inflight++;
    __atomic_store_n(&p->events_in, p->events_in + 1, __ATOMIC_RELAXED);
    return LF_OK;
}

size_t lf_pipeline_take_acks(struct lf_pipeline *p, lf_ack_fn *fn, void *arg)
{
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
    uv_mutex_lock(&p->mu);
    for (size_t i = 0; i < p->cfg->n_inputs; i++)
        cut_locked(p, i);
    bool failed = p->failed;
    uv_mutex_unlock(&p->mu);
    return failed ? LF_EIO : LF_OK;
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
     * outputs belong to the worker thread). */
    if (failed)
        return lf_fail(eb, LF_EIO, "%s", p->fail_msg);
    return LF_OK;
}

void lf_pipeline_output_stats(struct lf_pipeline *p, size_t out_idx,
                              struct lf_pipeline_output_stats *out)
{
    uv_mutex_lock(&p->mu);
    *out = p->ostats[out_idx];
    uv_mutex_unlock(&p->mu);
}

bool lf_pipeline_healthy(struct lf_pipeline *p)
{
    uv_mutex_lock(&p->mu);
    bool ok = !p->failed;
    for (struct retry *r = p->retries; r != NULL && ok; r = r->next)
        ok = r->qb->waited_ms < LF_HEALTHY_RETRY_MS;
    for (struct qbatch *qb = p->fl_head; qb != NULL && ok; qb = qb->next)
        ok = qb->waited_ms < LF_HEALTHY_RETRY_MS;
    uv_mutex_unlock(&p->mu);
    return ok;
}

void lf_pipeline_set_retry_budget(struct lf_pipeline *p, uint64_t budget_ms)
{
    uv_mutex_lock(&p->mu);
    p->retry_budget_ms = budget_ms;
    uv_mutex_unlock(&p->mu);
}

void lf_pipeline_abort(struct lf_pipeline *p, const char *why)
{
    uv_mutex_lock(&p->mu);
    if (!p->failed) {
        p->failed = true;
        snprintf(p->fail_msg, sizeof(p->fail_msg), "%s", why);
    }
    p->aborted = true;
    uv_cond_broadcast(&p->space);
    uv_cond_broadcast(&p->work);
    uv_mutex_unlock(&p->mu);
}

void lf_pipeline_stats(struct lf_pipeline *p, struct lf_pipeline_stats *out)
{
    uv_mutex_lock(&p->mu);
    *out = p->stats;
    out->queue_bytes = p->alive_bytes;
    uv_mutex_unlock(&p->mu);
    out->events_in = __atomic_load_n(&p->events_in, __ATOMIC_RELAXED);
}

void lf_pipeline_free(struct lf_pipeline *p)
{
    if (p == NULL)
        return;
    if (p->worker_started) {
        uv_mutex_lock(&p->mu);
        p->stopping = true;
        uv_cond_broadcast(&p->work);
        uv_mutex_unlock(&p->mu);
        uv_thread_join(&p->worker);
        if (p->preparer_started)
            uv_thread_join(&p->preparer);
    }
    for (struct qbatch *qb = p->head; qb != NULL;) {
        struct qbatch *next = qb->next;
        qbatch_free(qb);
        qb = next;
    }
    for (struct qbatch *qb = p->fl_head; qb != NULL;) {
        struct qbatch *next = qb->next;
        qbatch_free(qb);
        qb = next;
    }
    for (struct retry *r = p->retries; r != NULL;) {
        struct retry *next = r->next;
        free(r);
        r = next;
    }
    free(p->acks.a);
    free(p->taking.a);
    for (struct qbatch *qb = p->free_list; qb != NULL;) {
        struct qbatch *next = qb->next;
        qbatch_free(qb);
        qb = next;
    }
    if (p->current != NULL) {
        for (size_t i = 0; i < p->cfg->n_inputs; i++)
            qbatch_free(p->current[i]);
    }
    for (size_t i = 0; i < p->n_outputs; i++)
        lf_output_free(p->outputs[i]);
    free(p->outputs);
    free(p->current);
    free(p->modes);
    free(p->ostats);
    uv_cond_destroy(&p->work);
    uv_cond_destroy(&p->space);
    uv_cond_destroy(&p->prepared);
    uv_mutex_destroy(&p->mu);
    free(p);
}
