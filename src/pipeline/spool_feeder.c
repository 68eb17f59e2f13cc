/* spool_feeder.c - the spool feeder thread of a delivery pipeline.
 *
 *   spool (in order) ─► record read back into a batch ─► routed to the lanes its record names
 *
 * Owns the delivery's codec and payload buffer, and the spool's reading side. It reads
 * within the shared caps (it waits on p->space as a producer does) and routes each record to
 * the current lanes of the outputs it names, skipping an output already past it. Its thread
 * only; it takes the delivery's p->mu to take a batch and to queue it. */
#include "config.h"

#define LF_LOG_COMPONENT "pipeline"
#include "pipeline_int.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "logferry/log.h"
#include "logferry/watchdog.h"

/* How long the spool feeder waits for a commit before it looks again. */
#define LF_SPOOL_POLL_MS 200

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
    qb->primary = 0;
    if (err) {
        lf_error("spool record ending at segment %016" PRIx64 " offset %" PRIu64 " cannot be "
                 "read back (%s); skipped", end.seg, end.off, lf_err_str(err));
        lf_batch_reset(qb->batch);
        lf_spool_meta_release(&qb->meta);
        return; /* routed nowhere: released in its turn */
    }
    qb->bytes = lf_batch_bytes(qb->batch);
    qb->primary = lf_batch_count(qb->batch); /* a record's events, counted in its turn */
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
        if (k < p->n_outputs && !lf_pipeline__pos_before(lf_lane__pos_locked(p->lanes[k]), qb->end))
            continue; /* that output had it before a restart */
        if (k < p->n_outputs && !lf_lane__can_take(p->lanes[k], qb))
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
void lf_pipeline__spool_feeder_main(void *arg)
{
    struct lf_pipeline *p = arg;
    /* Stamped per record read, so a read that hangs shows; idle while the queue is full (the
     * outputs' lanes have their own slots) or the spool has nothing new. */
    lf_watchdog_enter("spool feeder");
    for (;;) {
        lf_watchdog_stamp();
        uv_mutex_lock(&p->mu);
        while (!p->stopping && !p->aborted && !p->failed &&
               (lf_pipeline__heavy_locked(p) >= LF_PIPELINE_MAX_BATCHES ||
                p->alive_bytes >= p->cfg->queue.max_bytes)) {
            lf_watchdog_idle();
            uv_cond_wait(&p->space, &p->mu);
        }
        lf_watchdog_stamp(); /* working again: a read that hangs from here is stuck */
        if (p->stopping || p->aborted || p->failed) {
            uv_mutex_unlock(&p->mu);
            break;
        }
        struct qbatch *qb = p->free_list;
        if (qb != NULL && !lf_pipeline__attach_locked(p, qb))
            qb = NULL; /* out of memory: as below */
        else if (qb != NULL)
            p->free_list = qb->next;
        else
            qb = lf_pipeline__qbatch_regular_locked(p);
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
            lf_watchdog_idle();
            lf_spool_wait(p->spool, LF_SPOOL_POLL_MS);
            continue;
        }
        restore_one(p, qb, end);
        uv_mutex_lock(&p->mu);
        route_restored_locked(p, qb);
        lf_pipeline__append_locked(p, qb, qb->n_routes);
        lf_pipeline__enqueue_locked(p, qb);
        uv_mutex_unlock(&p->mu);
    }
    lf_watchdog_leave();
}
