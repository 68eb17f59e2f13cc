/* pipeline.c - creation, stats, health, abort and teardown of a pipeline (see pipeline.h).
 *
 *   push ──► current[input] ──cut──► alive list (cut order) ──► lane of each routed output:
 *                ▲                         │                     its own thread, its own
 *                │                         │                     retries, sends in order
 *                │                  head answered by every  ◄─── done(): OK, EAGAIN (retry
 *                │                  routed output                 after backoff), refused
 *                └── free list (memory kept) ◄── answer log ──► lf_pipeline_take_acks()
 *
 * The parts live in batcher.c, lane.c, answers.c, prepare.c, spool_writer.c, spool_feeder.c
 * and reconfigure.c (pipeline_int.h says who owns what, and the one lock). In spool mode the
 * producer's pipeline has no lanes: its spool writer appends every cut batch and answers it
 * once durable, and a delivery pipeline of its own, with the outputs' lanes, is fed by its
 * spool feeder. This file starts and stops their threads; its readers of counters take
 * p->mu (the delivery's through p->dmu first). Any thread, except as pipeline.h says. */
#include "config.h"

#define LF_LOG_COMPONENT "pipeline"
#include "pipeline_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "logferry/log.h"

static void pipeline_release(struct lf_pipeline *p);

/* Wakes every thread of p that may wait (producers, the spool writer, the preparer, the
 * lanes) to look at p->stopping, p->aborted and p->failed again. Called with p->mu held. */
void lf_pipeline__wake_all_locked(struct lf_pipeline *p)
{
    uv_cond_broadcast(&p->space);
    uv_cond_broadcast(&p->spool_work);
    uv_cond_broadcast(&p->prep_work);
    for (size_t i = 0; i < p->n_lanes; i++)
        lf_lane__wake_locked(p->lanes[i]);
}

void lf_pipeline__set_failed(struct lf_pipeline *p, const char *msg)
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

static void qbatch_free(struct qbatch *qb)
{
    if (qb == NULL)
        return;
    lf_batch_free(qb->batch);
    lf_spool_meta_release(&qb->meta);
    free(qb->runs.a);
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

/* Makes a pipeline: the producer's (parent NULL), which in spool mode opens the spool and
 * makes the delivery pipeline, or that delivery pipeline (parent: its producer). */
static enum lf_err pipeline_make(const struct lf_config *cfg, struct lf_pipeline *parent,
                                 struct lf_pipeline **out, struct lf_errbuf *eb)
{
    enum lf_err err = LF_ENOMEM;
    struct lf_pipeline *p = aligned_alloc(LF_CACHE_LINE, sizeof(*p)); /* see events_in */
    if (p == NULL)
        return lf_fail(eb, LF_ENOMEM, "out of memory");
    memset(p, 0, sizeof(*p));
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
    p->current = calloc(CURRENT_SLOTS(cfg->n_inputs), sizeof(*p->current));
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
        lf_pipeline__set_modes(cfg, p->delivery->lanes, p->modes);
        if (uv_thread_create(&p->spool_thread, lf_pipeline__spool_writer_main, p) != 0) {
            err = lf_fail(eb, LF_EIO, "cannot start the spool writer");
            goto fail;
        }
        p->spool_thread_started = true;
    }
    for (size_t i = 0; i < cfg->n_outputs && p->delivery == NULL; i++) {
        err = lf_lane__new(p, &cfg->outputs[i], LANE_SLOTS(cfg->n_inputs), &p->lanes[i], eb);
        if (err)
            goto fail;
        p->n_outputs = i + 1;
        p->n_lanes = i + 1;
    }
    if (p->delivery == NULL)
        lf_pipeline__set_modes(cfg, p->lanes, p->modes);
    for (size_t i = 0; i < p->n_outputs; i++) {
        err = lf_lane__start(p->lanes[i], eb);
        if (err)
            goto fail;
    }
    if (parent != NULL) {
        if (uv_thread_create(&p->spool_thread, lf_pipeline__spool_feeder_main, p) != 0) {
            err = lf_fail(eb, LF_EIO, "cannot start the spool reader");
            goto fail;
        }
        p->spool_thread_started = true;
    }
    if (uv_thread_create(&p->preparer, lf_pipeline__preparer_main, p) != 0) {
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

enum lf_err lf_pipeline_new(const struct lf_config *cfg, struct lf_pipeline **out,
                            struct lf_errbuf *eb)
{
    return pipeline_make(cfg, NULL, out, eb);
}

/* The delivery pipeline of a spool-mode producer, locked (p->dmu) until
 * lf_pipeline__delivery_put(); NULL (nothing locked) otherwise. */
struct lf_pipeline *lf_pipeline__delivery_get(struct lf_pipeline *p)
{
    if (p->spool == NULL || p->parent != NULL)
        return NULL;
    uv_mutex_lock(&p->dmu);
    if (p->delivery == NULL)
        uv_mutex_unlock(&p->dmu);
    return p->delivery;
}

void lf_pipeline__delivery_put(struct lf_pipeline *p)
{
    uv_mutex_unlock(&p->dmu);
}

enum lf_err lf_pipeline_drain_spool(struct lf_pipeline *p, struct lf_errbuf *eb)
{
    struct lf_pipeline *d = lf_pipeline__delivery_get(p);
    if (d == NULL)
        return LF_OK;
    lf_pipeline__delivery_put(p); /* never replaced: only lf_pipeline_free() ends it */
    uv_mutex_lock(&d->mu);
    d->finishing = true; /* outputs gathering batches deliver them now */
    lf_pipeline__wake_all_locked(d);
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
    struct lf_pipeline *d = lf_pipeline__delivery_get(p);
    if (d != NULL) {
        lf_pipeline_output_stats(d, name, out);
        lf_pipeline__delivery_put(p);
        return;
    }
    *out = (struct lf_pipeline_output_stats){ 0 };
    uv_mutex_lock(&p->mu);
    for (size_t i = 0; i < p->n_outputs; i++) {
        if (strcmp(lf_lane__conf(p->lanes[i])->name, name) == 0) {
            lf_lane__stats_locked(p->lanes[i], out);
            out->backoff_ms = lf_lane__backoff_ms_locked(p->lanes[i]);
        }
    }
    uv_mutex_unlock(&p->mu);
}

void lf_pipeline_set_retry_budget(struct lf_pipeline *p, uint64_t budget_ms)
{
    struct lf_pipeline *d = lf_pipeline__delivery_get(p);
    if (d != NULL) {
        lf_pipeline_set_retry_budget(d, budget_ms);
        lf_pipeline__delivery_put(p);
    }
    uv_mutex_lock(&p->mu);
    p->retry_budget_ms = budget_ms;
    uv_mutex_unlock(&p->mu);
}

void lf_pipeline_abort(struct lf_pipeline *p, const char *why)
{
    struct lf_pipeline *d = lf_pipeline__delivery_get(p);
    if (d != NULL) {
        lf_pipeline_abort(d, why);
        lf_pipeline__delivery_put(p);
    }
    if (p->spool != NULL && p->parent == NULL)
        lf_spool_interrupt(p->spool);
    uv_mutex_lock(&p->mu);
    if (!p->failed) {
        p->failed = true;
        snprintf(p->fail_msg, sizeof(p->fail_msg), "%s", why);
    }
    p->aborted = true;
    lf_pipeline__wake_all_locked(p);
    uv_mutex_unlock(&p->mu);
}

void lf_pipeline_stats(struct lf_pipeline *p, struct lf_pipeline_stats *out)
{
    struct lf_pipeline_stats ds = { 0 };
    struct lf_pipeline *d = lf_pipeline__delivery_get(p);
    if (d != NULL) {
        lf_pipeline_stats(d, &ds);
        lf_pipeline__delivery_put(p);
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
    lf_pipeline__wake_all_locked(d);
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
    lf_pipeline__wake_all_locked(p);
    uv_mutex_unlock(&p->mu);
    if (p->spool_thread_started)
        uv_thread_join(&p->spool_thread);
    p->spool_thread_started = false;
    for (size_t i = 0; i < p->n_lanes; i++) /* retiring ones end too */
        lf_lane__join(p->lanes[i]);
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
    for (size_t i = 0; i < p->n_spare; i++)
        lf_batch_free(p->spare[i]);
    free(p->spare);
    if (p->current != NULL) {
        for (size_t i = 0; i < CURRENT_SLOTS(p->cfg->n_inputs); i++)
            qbatch_free(p->current[i]);
    }
    for (size_t i = 0; i < p->n_lanes; i++)
        lf_lane__free(p->lanes[i]);
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
