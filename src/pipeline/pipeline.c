/* pipeline.c - batcher, bounded queue and the delivery worker (see pipeline.h).
 *
 *   push ──► current[input] ──cut──► queue ──► worker: send to each routed output ──► ack
 *                ▲                                                                   │
 *                └──────────── free list (batches keep their memory) ◄───────────────┘
 *
 * One mutex guards the queue, the free list and the counters; the producer touches it
 * once per cut batch, not per event. Batches are allocated lazily up to max_batches and
 * then recycled, so the steady state allocates nothing. */
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

/* Batches alive at once, at most: current ones plus queued. Bounds memory beyond
 * queue.max_bytes (each batch keeps its arena, encode buffer and compression context). */
#define LF_PIPELINE_MAX_QUEUED 4
/* Retries of a batch an output answered LF_EAGAIN for: backoff doubles from 100 ms to 5 s. */
#define LF_RETRY_INITIAL_MS 100
#define LF_RETRY_MAX_MS     5000

struct qbatch {
    struct lf_batch *batch; /* owned */
    size_t input_idx;
    size_t bytes; /* message bytes, counted against queue.max_bytes */
    struct qbatch *next;
};

struct lf_pipeline {
    const struct lf_config *cfg; /* borrowed */
    struct lf_output **outputs;  /* owned; one per cfg->outputs[i] */
    size_t n_outputs;
    struct qbatch **current; /* owned; per input, the batch being filled (or NULL) */

    uv_mutex_t mu;
    uv_cond_t work;  /* signalled when a batch is queued or stop is asked */
    uv_cond_t space; /* signalled when a batch is acknowledged or given up */
    struct qbatch *head; /* queue, oldest first */
    struct qbatch *tail;
    struct qbatch *free_list;
    size_t queued;         /* batches queued or being delivered */
    size_t queued_bytes;   /* their message bytes */
    size_t n_batches;      /* batch objects alive */
    bool stopping;
    bool failed;           /* a batch was given up on: --once cannot succeed */
    char fail_msg[512];
    struct lf_pipeline_stats stats;
    uint64_t events_in; /* producer writes, others read: relaxed atomics */

    enum lf_err last_res; /* worker only: the fate lf_output_done() reported */
    bool worker_started;
    uv_thread_t worker;
};

static void on_output_done(void *arg, struct lf_output *out, struct lf_batch *b, enum lf_err res)
{
    struct lf_pipeline *p = arg;
    (void)out;
    (void)b;
    p->last_res = res;
}

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

/* Sends qb to one output, retrying LF_EAGAIN with backoff. Worker thread. */
static enum lf_err deliver_one(struct lf_pipeline *p, struct lf_output *out, struct qbatch *qb,
                               const char *name)
{
    uint64_t delay_ms = LF_RETRY_INITIAL_MS;
    uint64_t waited_ms = 0;
    uint64_t budget_ms = p->cfg->shutdown_timeout_ms > 30000 ? p->cfg->shutdown_timeout_ms : 30000;
    for (;;) {
        p->last_res = LF_EIO;
        enum lf_err err = lf_output_send(out, qb->batch);
        if (err) {
            snprintf(p->fail_msg, sizeof(p->fail_msg), "output %s: send failed: %s", name,
                     lf_err_str(err));
            return err;
        }
        if (p->last_res != LF_EAGAIN)
            return p->last_res;
        if (waited_ms >= budget_ms) {
            snprintf(p->fail_msg, sizeof(p->fail_msg),
                     "output %s: still failing after %" PRIu64 " ms of retries", name, waited_ms);
            return LF_EIO;
        }
        lf_warn("output %s: batch of %zu events not delivered; retrying in %" PRIu64 " ms", name,
                lf_batch_count(qb->batch), delay_ms);
        uv_mutex_lock(&p->mu);
        p->stats.retries++;
        uv_mutex_unlock(&p->mu);
        uv_sleep((unsigned)delay_ms);
        waited_ms += delay_ms;
        delay_ms = delay_ms * 2 > LF_RETRY_MAX_MS ? LF_RETRY_MAX_MS : delay_ms * 2;
    }
}

/* Delivers qb to every output its input routes to, then acknowledges its offsets. */
static void deliver(struct lf_pipeline *p, struct qbatch *qb)
{
    const struct lf_input_conf *in = &p->cfg->inputs[qb->input_idx];
    enum lf_err res = LF_OK;
    uint64_t bytes_before = 0;
    for (size_t i = 0; i < in->n_outputs; i++)
        bytes_before += lf_output_stats(p->outputs[in->outputs[i]])->bytes_written;
    for (size_t i = 0; i < in->n_outputs && !res; i++) {
        size_t o = in->outputs[i];
        res = deliver_one(p, p->outputs[o], qb, p->cfg->outputs[o].name);
    }
    uint64_t bytes_after = 0;
    for (size_t i = 0; i < in->n_outputs; i++)
        bytes_after += lf_output_stats(p->outputs[in->outputs[i]])->bytes_written;

    size_t n = lf_batch_count(qb->batch);
    if (!res) {
        /* Events of one source are in offset order within and across batches, so the last
         * one of each source carries its new acknowledged offset. */
        for (size_t i = 0; i < n; i++) {
            const struct lf_event *ev = lf_batch_event(qb->batch, i);
            ev->source->acked_offset = ev->end_offset;
        }
    } else if (p->fail_msg[0] == '\0') {
        snprintf(p->fail_msg, sizeof(p->fail_msg), "input %s: batch of %zu events rejected (%s)",
                 in->id, n, lf_err_str(res));
    }

    uv_mutex_lock(&p->mu);
    if (!res) {
        p->stats.events_acked += n;
        p->stats.batches_acked++;
    } else {
        p->stats.batches_failed++;
        p->failed = true;
    }
    p->stats.bytes_out += bytes_after - bytes_before;
    p->queued--;
    p->queued_bytes -= qb->bytes;
    lf_batch_reset(qb->batch);
    qb->bytes = 0;
    qb->next = p->free_list;
    p->free_list = qb;
    uv_cond_broadcast(&p->space);
    uv_mutex_unlock(&p->mu);
}

static void worker_main(void *arg)
{
    struct lf_pipeline *p = arg;
    uv_mutex_lock(&p->mu);
    for (;;) {
        while (p->head == NULL && !p->stopping)
            uv_cond_wait(&p->work, &p->mu);
        if (p->head == NULL)
            break;
        struct qbatch *qb = p->head;
        p->head = qb->next;
        if (p->head == NULL)
            p->tail = NULL;
        uv_mutex_unlock(&p->mu);
        deliver(p, qb);
        uv_mutex_lock(&p->mu);
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
    if (uv_mutex_init(&p->mu) != 0) {
        free(p);
        return lf_fail(eb, LF_EIO, "cannot create a mutex");
    }
    if (uv_cond_init(&p->work) != 0 || uv_cond_init(&p->space) != 0) {
        uv_mutex_destroy(&p->mu);
        free(p);
        return lf_fail(eb, LF_EIO, "cannot create a condition variable");
    }
    p->outputs = calloc(cfg->n_outputs ? cfg->n_outputs : 1, sizeof(*p->outputs));
    p->current = calloc(cfg->n_inputs ? cfg->n_inputs : 1, sizeof(*p->current));
    if (p->outputs == NULL || p->current == NULL)
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
    if (uv_thread_create(&p->worker, worker_main, p) != 0) {
        err = lf_fail(eb, LF_EIO, "cannot start the delivery thread");
        goto fail;
    }
    p->worker_started = true;
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
    p->queued++;
    p->queued_bytes += qb->bytes;
    uv_cond_signal(&p->work);
}

/* Gives input i an empty batch, waiting while the queue is at its caps. Called with p->mu
 * held; may release it while waiting. */
static enum lf_err take_batch_locked(struct lf_pipeline *p, size_t i)
{
    size_t max_bytes = p->cfg->queue.max_bytes;
    while (!p->failed && (p->queued >= LF_PIPELINE_MAX_QUEUED ||
                          (p->queued > 0 && p->queued_bytes >= max_bytes)))
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
    return LF_OK;
}

enum lf_err lf_pipeline_push(struct lf_pipeline *p, size_t input_idx, const struct lf_event *ev)
{
    struct qbatch *qb = p->current[input_idx];
    if (qb != NULL) {
        enum lf_err err = lf_batch_add(qb->batch, ev);
        if (!err) {
            qb->bytes += ev->message.len;
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
    __atomic_store_n(&p->events_in, p->events_in + 1, __ATOMIC_RELAXED);
    return LF_OK;
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
    while (p->queued > 0)
        uv_cond_wait(&p->space, &p->mu);
    bool failed = p->failed;
    uv_mutex_unlock(&p->mu);
    if (failed)
        return lf_fail(eb, LF_EIO, "%s", p->fail_msg);
    for (size_t i = 0; i < p->n_outputs; i++) {
        enum lf_err err = lf_output_flush(p->outputs[i], eb);
        if (err)
            return err;
    }
    return LF_OK;
}

void lf_pipeline_stats(struct lf_pipeline *p, struct lf_pipeline_stats *out)
{
    uv_mutex_lock(&p->mu);
    *out = p->stats;
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
        uv_cond_signal(&p->work);
        uv_mutex_unlock(&p->mu);
        uv_thread_join(&p->worker);
    }
    for (struct qbatch *qb = p->head; qb != NULL;) {
        struct qbatch *next = qb->next;
        qbatch_free(qb);
        qb = next;
    }
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
    uv_cond_destroy(&p->work);
    uv_cond_destroy(&p->space);
    uv_mutex_destroy(&p->mu);
    free(p);
}
