/* batcher.c - producers, their per-input current batches, the cut and the shared caps.
 *
 *   lf_pipeline_push(input, ev) ─► current[input] ──cut (full, flush)──► alive list (cut
 *   lf_producer_push(input, ev) ─► pr->current[input]                    order) ─► lanes
 *
 * Owns the current batches (each producer's own: its thread fills them without any lock) and
 * the cut: a full batch is appended to the alive list and queued to the lane of every output
 * its input routes to (spool mode: to the spool writer).
 *
 * Routing by content (an input's `routes:`): each event arrives with the routes it took
 * (lf_event.routes, set by the chain), and each producer fills, for such an input, one batch
 * per output its routes reach; an event for two outputs is copied into both. So each output
 * gets whole batches, encoded once, and every event of a source in the order it was read,
 * whichever route brought it. An input's batches are cut together, as a group that
 * completes together (group_next): completion hands a source's answers to the producer as
 * runs per batch, and the highest end offset of one batch must not pass an event of the
 * same source still in another (nor an event's copy for another output). A producer
 * waits for room only on the shared caps (batches alive, queue.max_bytes) through p->space, never
 * on a lane. Producer threads (the pipeline's own and lf_producer_new()'s); p->mu is taken once per
 * cut batch, not per event. */
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

/* A qbatch with room for every route of cfg (and for the 16 a spool record names) and no
 * batch yet, or NULL. */
static struct qbatch *qbatch_alloc(const struct lf_config *cfg)
{
    struct qbatch *qb = calloc(1, sizeof(*qb));
    if (qb == NULL)
        return NULL;
    qb->cap_routes = cfg->n_outputs > 16 ? cfg->n_outputs : 16;
    qb->routes = calloc(qb->cap_routes, sizeof(*qb->routes));
    if (qb->routes == NULL) {
        free(qb);
        return NULL;
    }
    return qb;
}

/* A batch of max_events and cfg's max_bytes in a new qbatch. Called with p->mu held: a
 * reconfiguration may switch cfg, and free the old one, at any time otherwise. */
struct qbatch *lf_pipeline__qbatch_new_locked(const struct lf_config *cfg, size_t max_events)
{
    struct qbatch *qb = qbatch_alloc(cfg);
    if (qb == NULL)
        return NULL;
    qb->batch = lf_batch_new(max_events, cfg->queue.batch_max_bytes);
    if (qb->batch == NULL) {
        free(qb->routes);
        free(qb);
        return NULL;
    }
    return qb;
}

struct qbatch *lf_pipeline__qbatch_regular_locked(struct lf_pipeline *p)
{
    if (p->n_spare == 0) {
        struct qbatch *qb = lf_pipeline__qbatch_new_locked(p->cfg, p->cfg->queue.batch_max_events);
        if (qb != NULL)
            p->n_batches++;
        return qb;
    }
    struct qbatch *qb = qbatch_alloc(p->cfg);
    if (qb != NULL)
        qb->batch = p->spare[--p->n_spare];
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

bool lf_pipeline__routed_to(const struct lf_config *cfg, size_t i, uint64_t route_bits, size_t o)
{
    const struct lf_input_conf *in = &cfg->inputs[i];
    if (route_bits == 0) {
        for (size_t k = 0; k < in->n_outputs; k++) {
            if (in->outputs[k] == o)
                return true;
        }
        return false;
    }
    for (size_t r = 0; r < in->n_routes; r++) {
        if (!(route_bits & (UINT64_C(1) << r)))
            continue;
        for (size_t k = 0; k < in->routes[r].n_outputs; k++) {
            if (in->routes[r].outputs[k] == o)
                return true;
        }
    }
    return false;
}

size_t lf_pipeline__output_of(const struct qbatch *qb, size_t k)
{
    const struct lf_input_conf *in = &qb->cfg->inputs[qb->input_idx];
    if (qb->to == LF_TO_INPUT)
        return k < in->n_outputs ? in->outputs[k] : SIZE_MAX;
    return k == 0 && qb->to != LF_TO_NONE ? qb->to : SIZE_MAX;
}

/* Per input of cfg: encode events as they are added unless an output one of its routes may
 * take (lanes, indexed like cfg->outputs) reads messages. */
void lf_pipeline__set_modes(const struct lf_config *cfg,
                            struct lane *const *lanes,
                            enum lf_batch_mode *modes)
{
    for (size_t i = 0; i < cfg->n_inputs; i++) {
        uint64_t every = cfg->inputs[i].n_routes >= 64
                             ? UINT64_MAX
                             : (UINT64_C(1) << cfg->inputs[i].n_routes) - 1;
        modes[i] = LF_BATCH_ENCODE_ON_ADD;
        for (size_t o = 0; o < cfg->n_outputs; o++) {
            if ((lf_pipeline__routed_to(cfg, i, 0, o) ||
                 lf_pipeline__routed_to(cfg, i, every, o)) &&
                lf_lane__needs_messages(lanes[o]))
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

/* Queues qb, input i's batch, to every output its routes go to (spool mode: to the writer).
 * Called with p->mu held. */
static void cut_one_locked(struct lf_pipeline *p, struct qbatch *qb, size_t i)
{
    qb->cfg = p->cfg;
    qb->input_idx = i;
    qb->spooled = false;
    qb->n_routes = 0;
    for (size_t o;
         p->delivery == NULL && (o = lf_pipeline__output_of(qb, qb->n_routes)) != SIZE_MAX;)
        qb->routes[qb->n_routes++] = p->lanes[o]; /* room: take_batch_locked() */
    /* Spool mode: one answer, the writer's. */
    lf_pipeline__append_locked(p, qb, p->delivery != NULL ? 1 : qb->n_routes);
    if (p->delivery != NULL) {
        uv_cond_signal(&p->spool_work);
        uv_cond_signal(&p->prep_work);
        return;
    }
    lf_pipeline__enqueue_locked(p, qb);
}

/* Cuts input i's batches in cur (a producer's current batches) that hold events, as one
 * group (see the top of the file). Called with p->mu held. */
static void cut_locked(struct lf_pipeline *p, struct qbatch **cur, size_t i)
{
    struct qbatch **slot = &cur[i * LF_INPUT_SLOTS];
    struct qbatch *group[LF_INPUT_SLOTS];
    size_t n = 0;
    for (size_t j = 0; j < LF_INPUT_SLOTS; j++) {
        if (slot[j] != NULL && lf_batch_count(slot[j]->batch) > 0) {
            group[n++] = slot[j];
            slot[j] = NULL;
        }
    }
    /* Marked before any is queued: a batch routed nowhere completes as it is queued. */
    for (size_t k = 0; k < n; k++)
        group[k]->group_next = k + 1 < n;
    for (size_t k = 0; k < n; k++)
        cut_one_locked(p, group[k], i);
}

/* The batches being filled, by every producer; an input's batches for its routed outputs count
 * as one, so routing by content does not shrink what the caps leave the outputs. Called
 * with p->mu held. */
static size_t current_locked(const struct lf_pipeline *p)
{
    size_t n = 0;
    for (const struct lf_producer *pr = p->producers;; pr = pr->next) {
        struct qbatch *const *cur = pr != NULL ? pr->current : p->current;
        for (size_t k = 0; k < p->cfg->n_inputs; k++) {
            bool any = false;
            for (size_t j = 0; j < LF_INPUT_SLOTS && !any; j++)
                any = cur[k * LF_INPUT_SLOTS + j] != NULL;
            n += any;
        }
        if (pr == NULL)
            break;
    }
    return n;
}

/* Gives input i an empty batch for output `to` (or LF_TO_*) in *slot (one of a producer's
 * current batches), waiting while the queue is at its caps; only the pipeline's own producer
 * (own) runs the wait hook. Called with p->mu held; may release it while waiting. */
static enum lf_err
take_batch_locked(struct lf_pipeline *p, struct qbatch **slot, size_t i, size_t to, bool own)
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
        qb = lf_pipeline__qbatch_regular_locked(p);
        if (qb == NULL)
            return LF_ENOMEM;
    }
    qb->next = NULL;
    qb->bytes = 0;
    qb->to = to;
    qb->primary = 0;
    qb->group_next = false;
    *slot = qb;
    if (!qbatch_reserve_routes(qb, p->cfg->n_outputs))
        return LF_ENOMEM; /* an empty current batch: cut_locked() skips it */
    return lf_batch_set_mode(qb->batch, p->modes[i]); /* the batch is empty: cannot fail */
}

/* Input i's current batch for output `to` in slot (LF_INPUT_SLOTS of them), or NULL. */
static struct qbatch **slot_of(struct qbatch **slot, size_t to)
{
    for (size_t j = 0; j < LF_INPUT_SLOTS; j++) {
        if (slot[j] != NULL && slot[j]->to == to)
            return &slot[j];
    }
    return NULL;
}

/* An empty entry of slot (there is one for every output an input's routes reach). */
static struct qbatch **slot_free(struct qbatch **slot)
{
    for (size_t j = 0; j < LF_INPUT_SLOTS; j++) {
        if (slot[j] == NULL)
            return &slot[j];
    }
    return NULL;
}

/* Adds ev to the batch at *at, counting it there when primary. */
static enum lf_err add(struct qbatch *qb, const struct lf_event *ev, bool primary)
{
    enum lf_err err = lf_batch_add(qb->batch, ev);
    if (err)
        return err;
    qb->bytes += ev->message.len;
    qb->primary += primary;
    ev->source->inflight++; /* answered once per batch that holds it */
    return LF_OK;
}

/* Adds ev to input i's batch for `to` (LF_TO_*: an input without routes, or a dropped
 * event), cutting the input's batches when it is full. */
static enum lf_err push_one(struct lf_pipeline *p,
                            struct qbatch **cur,
                            bool own,
                            size_t i,
                            size_t to,
                            const struct lf_event *ev)
{
    struct qbatch **slot = &cur[i * LF_INPUT_SLOTS];
    struct qbatch **at =
        slot[0] != NULL && (slot[0]->to == to || to == LF_TO_NONE) ? &slot[0] : slot_of(slot, to);
    if (at == NULL && to == LF_TO_NONE) { /* a dropped event: any batch carries its offsets */
        for (size_t j = 0; j < LF_INPUT_SLOTS && at == NULL; j++)
            at = slot[j] != NULL ? &slot[j] : NULL;
    }
    enum lf_err err = at != NULL ? add(*at, ev, true) : LF_ETOOBIG;
    if (err != LF_ETOOBIG)
        return err;
    uv_mutex_lock(&p->mu);
    if (at != NULL) /* full: the input's batches go as a group */
        cut_locked(p, cur, i);
    at = slot_free(slot);
    err = at != NULL ? take_batch_locked(p, at, i, to, own) : LF_ENOMEM;
    uv_mutex_unlock(&p->mu);
    return err ? err : add(*at, ev, true);
}

/* Adds ev, which took routes of input i, to the batch of each output they reach. Either
 * every copy goes into the batches being filled, or they are cut first (a group never holds
 * some of an event's copies and not the others). */
static enum lf_err push_routed(
    struct lf_pipeline *p, struct qbatch **cur, bool own, size_t i, const struct lf_event *ev)
{
    struct qbatch **slot = &cur[i * LF_INPUT_SLOTS];
    size_t to[LF_INPUT_SLOTS];
    size_t n = 0;
    bool full = false;
    for (size_t o = 0; o < p->cfg->n_outputs && n < LF_INPUT_SLOTS; o++) {
        if (!lf_pipeline__routed_to(p->cfg, i, ev->routes, o))
            continue;
        to[n++] = o;
        struct qbatch **at = slot_of(slot, o);
        full |= at != NULL && !lf_batch_has_room((*at)->batch, ev->message.len);
    }
    if (n == 0)
        return push_one(p, cur, own, i, LF_TO_NONE, ev); /* cannot be: the chain drops it */
    if (full) {
        uv_mutex_lock(&p->mu);
        cut_locked(p, cur, i);
        uv_mutex_unlock(&p->mu);
    }
    for (size_t k = 0; k < n; k++) {
        struct qbatch **at = slot_of(slot, to[k]);
        if (at == NULL) {
            at = slot_free(slot);
            uv_mutex_lock(&p->mu);
            enum lf_err err = at != NULL ? take_batch_locked(p, at, i, to[k], own) : LF_ENOMEM;
            uv_mutex_unlock(&p->mu);
            if (err)
                return err;
        }
        enum lf_err err = add(*at, ev, k == 0);
        if (err)
            return err;
    }
    return LF_OK;
}

/* lf_pipeline_push() and lf_producer_push(): into cur, counting in *events_in. */
static enum lf_err push(struct lf_pipeline *p,
                        struct qbatch **cur,
                        uint64_t *events_in,
                        bool own,
                        size_t input_idx,
                        const struct lf_event *ev)
{
    enum lf_err err;
    if (p->cfg->inputs[input_idx].n_routes == 0)
        err = push_one(p, cur, own, input_idx, LF_TO_INPUT, ev);
    else if (ev->flags & LF_EVENT_DROPPED)
        err = push_one(p, cur, own, input_idx, LF_TO_NONE, ev);
    else
        err = push_routed(p, cur, own, input_idx, ev);
    if (err)
        return err;
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
    pr->current = calloc(CURRENT_SLOTS(p->cfg->n_inputs), sizeof(*pr->current));
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
    for (size_t i = 0; i < p->cfg->n_inputs; i++)
        cut_locked(p, pr->current, i); /* what it filled is delivered, not lost */
    for (size_t k = 0; k < CURRENT_SLOTS(p->cfg->n_inputs); k++) {
        struct qbatch *qb = pr->current[k]; /* an empty one: back to the free list */
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

void lf_pipeline_set_wait_hook(struct lf_pipeline *p,
                               void (*fn)(void *arg),
                               void *arg,
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
