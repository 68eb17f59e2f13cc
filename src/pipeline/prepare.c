/* prepare.c - the preparer thread: the outputs' forms of queued batches (zstd), ahead of
 * the lanes, so compression uses both cores while each output still sends in order.
 *
 * A batch is prepared once (qb->prep), by the preparer or by a lane or the spool writer that
 * would otherwise wait for it, never by two threads; while one is prepared no lane is freed
 * (p->preparing). Preparing runs without p->mu; picking a batch and marking it done under
 * it. */
#include "config.h"

#define LF_LOG_COMPONENT "pipeline"
#include "pipeline_int.h"

#include "logferry/log.h"
#include "logferry/watchdog.h"

/* Computes the forms qb's lanes will send (the expensive part: compression). Runs on the
 * preparer or a lane, never two threads for one batch, without p->mu. */
static void prepare(struct lf_pipeline *p, struct qbatch *qb, struct lane *const *lanes, size_t n)
{
    if (p->delivery != NULL) { /* the spool writer's form */
        struct lf_str z;
        if (lf_batch_get_mode(qb->batch) == LF_BATCH_ENCODE_ON_ADD)
            lf_err_ignore(lf_batch_zstd(qb->batch, LF_SPOOL_ZSTD_LEVEL, &z));
        return;
    }
    for (size_t i = 0; i < n; i++)
        lf_lane__prepare(lanes[i], qb->batch);
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
bool lf_pipeline__prepare_one_locked(struct lf_pipeline *p)
{
    struct qbatch *qb = p->head;
    while (qb != NULL && qb->prep != PREP_NONE)
        qb = qb->next;
    if (qb == NULL)
        return false;
    qb->prep = PREP_RUNNING;
    /* Its lanes as they are now (a reconfiguration may hand it over meanwhile): no lane is
     * freed while a batch is prepared. */
    struct lane *lanes[16];
    size_t n = 0;
    for (size_t k = 0; k < qb->n_routes && n < 16; k++) {
        if (lane_alive_locked(p, qb->routes[k]))
            lanes[n++] = qb->routes[k];
    }
    p->preparing++;
    uv_mutex_unlock(&p->mu);
    prepare(p, qb, lanes, n);
    uv_mutex_lock(&p->mu);
    p->preparing--;
    qb->prep = PREP_DONE;
    uv_cond_broadcast(&p->prepared);
    /* It may have been answered (given up on) while it was prepared. */
    lf_pipeline__complete_locked(p);
    return true;
}

/* The preparer: prepares queued batches, oldest first, while the lanes send, so that
 * compression runs on both cores. */
void lf_pipeline__preparer_main(void *arg)
{
    struct lf_pipeline *p = arg;
    lf_watchdog_enter("preparer"); /* stamped per batch, idle while there is none */
    uv_mutex_lock(&p->mu);
    for (;;) {
        lf_watchdog_stamp();
        if (lf_pipeline__prepare_one_locked(p))
            continue;
        if (p->stopping)
            break;
        lf_watchdog_idle();
        uv_cond_wait(&p->prep_work, &p->mu);
    }
    uv_mutex_unlock(&p->mu);
    lf_watchdog_leave();
}
