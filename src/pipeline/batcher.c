/* batcher.c - producers, their per-input current batches, the cut and the shared caps.
 *
 *   lf_pipeline_push(input, ev) ─► current[input] ──cut (full, flush)──► alive list (cut
 *   lf_producer_push(input, ev) ─► pr->current[input]                    order) ─► lanes
 *
 * Owns the current batches (each producer's own: its thread fills them without any lock) and
 * the cut: a full batch is appended to the alive list and queued to the lane of every output
 * its input routes to (spool mode: to the spool writer). A producer waits for room only on
 * the shared caps (batches alive, queue.max_bytes) through p->space, never on a lane.
 * Producer threads (the pipeline's own and lf_producer_new()'s); p->mu is taken once per cut
 * batch, not per event. */
#include "config.h"

#define LF_LOG_COMPONENT "pipeline"
#include "pipeline_int.h"

#include <stdlib.h>
#include <string.h>

#include "logferry/log.h"
#include "logferry/watchdog.h"

/* The same for a spool-mode producer: its batches wait for an fdatasync, not a network
 * answer, so more of them make each group commit cover more (queue.max_bytes still bounds
 * their bytes; the producer has no lanes to size by it). */
#define LF_SPOOL_MAX_BATCHES 16
/* Events a batch taken beyond the caps can hold (lf_pipeline_yield()): its producer stops
 * at the next line, and the reconfiguration that follows cuts it, so it holds a few. */
#define LF_EXTRA_BATCH_EVENTS 16

/* A batch of max_events and cfg's max_bytes, with room for every route of cfg (and for the
 * 16 a spool record names). Called with p->mu held: a reconfiguration may switch cfg, and
 * free the old one, at any time otherwise. */
struct qbatch *lf_pipeline__qbatch_new_locked(const struct lf_config *cfg, size_t max_events)
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

/* Per input of cfg: encode events as they are added unless an output of its route (lanes,
 * indexed like cfg->outputs) reads messages. */
void lf_pipeline__set_modes(const struct lf_config *cfg, struct lane *const *lanes,
                      enum lf_batch_mode *modes)
{
    for (size_t i = 0; i < cfg->n_inputs; i++) {
        const struct lf_input_conf *in = &cfg->inputs[i];
        modes[i] = LF_BATCH_ENCODE_ON_ADD;
        for (size_t k = 0; k < in->n_outputs; k++) {
            if (lf_lane__needs_messages(lanes[in->outputs[k]]))
                modes[i] = LF_BATCH_KEEP_EVENTS;
        }
    }
}

/* Queues qb (on the alive list) to the lane of every output it goes to. Called with p->mu
 * held. */
void lf_pipeline__enqueue_locked(struct lf_pipeline *p, struct qbatch *qb)
{
    for (size_t k = 0; k < qb->n_routes; k++) {
        struct lane *l = qb->routes[k];
        if (!lf_lane__insert(l, qb)) /* the newest: at the end */
            lf_lane__give_up_locked(l, qb, "out of memory");
    }
    uv_cond_signal(&p->prep_work);
    lf_pipeline__complete_locked(p); /* routed nowhere: answered at once */
}

/* Appends qb, just cut or read back from the spool, to the queue of batches alive, waiting
 * for `pending` answers. Called with p->mu held. */
void lf_pipeline__append_locked(struct lf_pipeline *p, struct qbatch *qb, size_t pending)
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
    /* Spool mode: one answer, the writer's. */
    lf_pipeline__append_locked(p, qb, p->delivery != NULL ? 1 : in->n_outputs);
    if (p->delivery != NULL) {
        uv_cond_signal(&p->spool_work);
        uv_cond_signal(&p->prep_work);
        return;
    }
    lf_pipeline__enqueue_locked(p, qb);
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
    while (!p->failed && !p->yield && lf_pipeline__heavy_locked(p) > 0 &&
           (lf_pipeline__heavy_locked(p) + current >= cap || p->alive_bytes >= max_bytes)) {
        lf_watchdog_idle(); /* the outputs are slow, not this thread */
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
    lf_watchdog_stamp();
    if (p->failed)
        return LF_EIO;
    /* Still at the caps: the wait was cut short by a yield. */
    current = current_locked(p);
    size_t heavy = lf_pipeline__heavy_locked(p);
    bool beyond = heavy > 0 && (heavy + current >= cap || p->alive_bytes >= max_bytes);
    struct qbatch *qb = p->free_list;
    if (qb != NULL) {
        if (!lf_pipeline__attach_locked(p, qb))
            return LF_ENOMEM;
        p->free_list = qb->next;
    } else if (beyond && p->extras != NULL) {
        qb = p->extras;
        p->extras = qb->next;
    } else if (beyond) {
        qb = lf_pipeline__qbatch_new_locked(p->cfg, LF_EXTRA_BATCH_EVENTS); /* a few lines' worth */
        if (qb == NULL)
            return LF_ENOMEM;
        qb->extra = true;
    } else {
        qb = lf_pipeline__qbatch_new_locked(p->cfg, p->cfg->queue.batch_max_events);
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
    struct lf_producer *pr = aligned_alloc(LF_CACHE_LINE, sizeof(*pr)); /* see events_in */
    if (pr == NULL)
        return LF_ENOMEM;
    memset(pr, 0, sizeof(*pr));
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
enum lf_err lf_pipeline__flush_current(struct lf_pipeline *p, struct qbatch **cur)
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
    return lf_pipeline__flush_current(pr->p, pr->current);
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
            lf_pipeline__recycle_locked(p, qb);
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

enum lf_err lf_pipeline_flush(struct lf_pipeline *p)
{
    return lf_pipeline__flush_current(p, p->current);
}

enum lf_err lf_pipeline_drain(struct lf_pipeline *p, struct lf_errbuf *eb)
{
    lf_err_ignore(lf_pipeline_flush(p)); /* a failure is reported below, after the wait */
    uv_mutex_lock(&p->mu);
    p->finishing = true; /* outputs gathering batches deliver them now */
    lf_pipeline__wake_all_locked(p);
    lf_watchdog_idle();
    while (p->alive > 0 && !p->aborted)
        uv_cond_wait(&p->space, &p->mu);
    lf_watchdog_stamp();
    bool failed = p->failed;
    uv_mutex_unlock(&p->mu);
    /* Every batch is answered, so the outputs hold nothing: no flush is due here (and the
     * outputs belong to their lanes' threads). */
    if (failed)
        return lf_fail(eb, LF_EIO, "%s", p->fail_msg);
    return LF_OK;
}
