/* answers.c - completion in cut order, and the answer log the producer drains.
 *
 *   alive list head, answered by every routed output ─► answer log ─► lf_pipeline_take_acks()
 *                                                 └──► free list (memory kept)
 *
 * Owns the answer log (p->acks, filled under p->mu; p->taking, the producer's) and the free
 * lists. Completion is cumulative: a batch answered early waits for the ones cut before it,
 * so a source's answers arrive in offset order. The pipeline never writes into a source: the
 * producer applies the answers on its own thread (lf_pipeline_take_acks()). Completion runs
 * on whichever thread answered (a lane, an output's callback, the preparer, the spool writer)
 * under p->mu; lf_pipeline_take_acks() on the producer's thread. */
#include "config.h"

#define LF_LOG_COMPONENT "pipeline"
#include "pipeline_int.h"

#include <stdlib.h>

#include "logferry/log.h"

/* Appends b's answer runs to dst: one record per run of events of one source (a batch
 * interleaves the files of its input in runs, recorded as they were added), delivered as
 * given. False when out of memory: the caller drops what this call appended. */
static bool batch_runs(const struct lf_batch *b, bool delivered, struct ack_log *dst)
{
    size_t n;
    const struct lf_batch_run *runs = lf_batch_runs(b, &n);
    for (size_t i = 0; i < n; i++) {
        if (lf_array_grow(&dst->a, &dst->cap, dst->len, sizeof(*dst->a), 64))
            return false;
        dst->a[dst->len++] = (struct lf_ack){ .source = runs[i].source,
                                              .first = runs[i].first,
                                              .end = runs[i].end,
                                              .events = (uint32_t)runs[i].events,
                                              .delivered = delivered };
    }
    return true;
}

/* Appends the answer for qb to the log the producer takes (a stub's runs were taken when
 * its batch was given back). Called with p->mu held. False when out of memory: the caller
 * drops what this call appended. */
static bool log_answers_locked(struct lf_pipeline *p, struct qbatch *qb)
{
    if (!qb->stub)
        return batch_runs(qb->batch, !qb->failed, &p->acks);
    struct ack_log *l = &p->acks;
    for (size_t i = 0; i < qb->runs.len; i++) {
        if (lf_array_grow(&l->a, &l->cap, l->len, sizeof(*l->a), 64))
            return false;
        l->a[l->len] = qb->runs.a[i];
        l->a[l->len++].delivered = !qb->failed;
    }
    return true;
}

size_t lf_pipeline__count(const struct qbatch *qb)
{
    return qb->stub ? qb->n_events : lf_batch_count(qb->batch);
}

size_t lf_pipeline__heavy_locked(const struct lf_pipeline *p)
{
    return p->alive - p->stubs;
}

/* A batch's memory (arena, encodings) is what the caps bound; once only outputs that hold
 * it owe answers, nobody reads it again, so it goes back for the next cut and qb stays on
 * the alive list as a stub: completion in cut order still waits for it, and it still
 * answers its sources, from the runs taken here. Extra batches (small, taken beyond the caps
 * while yielding) keep theirs: a spare must be of the regular size. */
void lf_pipeline__maybe_stub_locked(struct lf_pipeline *p, struct qbatch *qb)
{
    if (qb->stub || qb->held == 0 || qb->pending != qb->held || qb->extra ||
        qb->prep == PREP_RUNNING)
        return;
    if (lf_array_grow(&p->spare, &p->cap_spare, p->n_spare, sizeof(*p->spare), 8))
        return; /* out of memory: it stays whole, which is only slower */
    qb->runs.len = 0;
    if (p->parent == NULL && !batch_runs(qb->batch, true, &qb->runs))
        return; /* delivery answers the spool from qb->end: no runs needed there */
    qb->n_events = lf_batch_count(qb->batch);
    lf_batch_reset(qb->batch);
    p->spare[p->n_spare++] = qb->batch;
    qb->batch = NULL;
    qb->stub = true;
    p->stubs++;
    p->alive_bytes -= qb->bytes;
    qb->bytes = 0;
    uv_cond_broadcast(&p->space);
}

bool lf_pipeline__attach_locked(struct lf_pipeline *p, struct qbatch *qb)
{
    if (qb->batch != NULL)
        return true;
    if (p->n_spare > 0) {
        qb->batch = p->spare[--p->n_spare];
        return true;
    }
    qb->batch = lf_batch_new(p->cfg->queue.batch_max_events, p->cfg->queue.batch_max_bytes);
    return qb->batch != NULL;
}

/* Puts qb, answered or empty, back on its free list: extra batches (taken beyond the caps
 * while yielding) on their own, so that they are reused only as extras. Neither list is
 * ever freed before the pipeline: freeing and making batches again at every reload
 * fragments the heap. Called with p->mu held. */
void lf_pipeline__recycle_locked(struct lf_pipeline *p, struct qbatch *qb)
{
    if (qb->stub) { /* its batch went back already: a batch is attached when it is taken */
        qb->stub = false;
        p->stubs--;
    } else {
        lf_batch_reset(qb->batch);
    }
    qb->held = 0;
    qb->runs.len = 0;
    lf_spool_meta_release(&qb->meta);
    qb->bytes = 0;
    struct qbatch **list = qb->extra ? &p->extras : &p->free_list;
    qb->next = *list;
    *list = qb;
}

/* True when qb and the batches cut with it (group_next) are answered: they complete
 * together. */
static bool group_answered(const struct qbatch *qb)
{
    for (;;) {
        if (qb->pending != 0 || qb->prep == PREP_RUNNING)
            return false;
        if (!qb->group_next)
            return true;
        qb = qb->next;
        if (qb == NULL)
            return false; /* the rest of its group is being cut */
    }
}

/* Answers and recycles the batches at the head of the alive list that every routed output
 * has answered. Completion is cumulative, like TCP's: a batch answered early waits for the
 * ones cut before it, so the producer learns the answers of a source's events in order. The
 * pipeline never writes into a source: the producer applies the answers on its own thread
 * (lf_pipeline_take_acks()), which is also where sources are freed. Called with p->mu
 * held. */
void lf_pipeline__complete_locked(struct lf_pipeline *p)
{
    while (p->head != NULL && group_answered(p->head)) {
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
        size_t n = qb->primary; /* each event once, though routed to two outputs */
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
        lf_pipeline__recycle_locked(p, qb);
        uv_cond_broadcast(&p->space);
    }
}

size_t lf_pipeline_take_acks(struct lf_pipeline *p, lf_ack_fn *fn, void *arg)
{
    lf_pipeline__reap_lanes(p);
    struct lf_pipeline *d = lf_pipeline__delivery_get(p);
    if (d != NULL) {
        lf_pipeline__reap_lanes(d);
        lf_pipeline__delivery_put(p);
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
