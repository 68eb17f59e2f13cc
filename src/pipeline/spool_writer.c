/* spool_writer.c - the spool writer thread of a spool-mode producer.
 *
 *   cut batches (alive list) ─► append (in order) ─► commit (fdatasync) ─► answered
 *
 * Owns the producer's codec and the appending side of the spool. A batch is answered only
 * once its record is durable; a failed write or sync drops the records past the last good
 * fdatasync, and their batches are appended again a second later. Its thread only, under the
 * producer's p->mu, released for the disk. */
#include "config.h"

#define LF_LOG_COMPONENT "pipeline"
#include "pipeline_int.h"

#include <inttypes.h>
#include <stdio.h>

#include "logferry/log.h"
#include "logferry/watchdog.h"

/* The spool writer tries a failed append or commit again after this long, and logs the
 * failures in a row once per LF_SPOOL_LOG_EVERY_MS. */
#define LF_SPOOL_RETRY_MS     1000
#define LF_SPOOL_LOG_EVERY_MS 30000

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
    for (size_t o; n < 16 && (o = lf_pipeline__output_of(qb, n)) != SIZE_MAX; n++)
        names[n] = qb->cfg->outputs[o].name;
    enum lf_err err = lf_spool_encode(&p->codec, qb->batch, in->id, names, n, LF_SPOOL_ZSTD_LEVEL);
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
    lf_pipeline__complete_locked(p);
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
    lf_watchdog_idle(); /* waiting for the disk's next try is not being stuck */
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
    lf_pipeline__complete_locked(p);
}

/* The producer's spool writer: appends cut batches in order, then one commit (fdatasync)
 * answers every batch appended since the last (group commit); batches cut while it syncs
 * go into the next round. A batch is answered only once its record is durable: a failed
 * write or sync drops the records past the last good fdatasync, and their batches are
 * appended again a second later (for as long as the disk fails). After an abort, what is
 * not appended is given up on. */
void lf_pipeline__spool_writer_main(void *arg)
{
    struct lf_pipeline *p = arg;
    struct disk_retry retry = { 0, 0 };
    /* Stamped per record and commit, so a write or fdatasync that hangs shows; idle while
     * it waits for a batch, for the preparer or for the disk's retry. */
    lf_watchdog_enter("spool writer");
    uv_mutex_lock(&p->mu);
    for (;;) {
        lf_watchdog_stamp();
        struct qbatch *qb = unspooled_locked(p);
        if (qb != NULL && p->aborted) {
            spool_give_up_locked(p, qb);
        } else if (disk_wait_locked(p, &retry)) {
            continue;
        } else if (qb != NULL) {
            while (qb->prep != PREP_DONE) {
                if (!lf_pipeline__prepare_one_locked(p)) {
                    lf_watchdog_idle(); /* the preparer's slot shows if it is stuck */
                    uv_cond_wait(&p->prepared, &p->mu);
                }
            }
            lf_watchdog_stamp(); /* working again: a write that hangs from here is stuck */
            uv_mutex_unlock(&p->mu);
            struct lf_errbuf eb = { "" };
            enum lf_err err = spool_one(p, qb, &eb);
            uv_mutex_lock(&p->mu);
            if (!err) {
                qb->spooled = true;
            } else if (err == LF_EIO) {
                disk_failed_locked(p, &retry, &eb);
            } else if (err == LF_EAGAIN && !p->stopping) {
                lf_watchdog_idle();
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
            lf_watchdog_idle();
            uv_cond_wait(&p->spool_work, &p->mu);
        }
    }
    uv_mutex_unlock(&p->mu);
    lf_watchdog_leave();
}
