/* readers.c - read phases: the dirty files of a turn read on several threads at once.
 *
 *   tail thread                            reader threads, one per CPU (at most 8)
 *   ───────────                            ───────────────────────────────────────
 *   rechecks, picks the dirty harvesters
 *   gives each to one reader ─────phase──► each reads its harvesters a fair share,
 *   waits; every second meanwhile:         pushing through its own producer
 *   closes and warns about files            (nothing else of the engine is touched)
 *   outside the phase           ◄──done──
 *   counts, cuts, answers, registry...
 *
 * A phase is a fork and a join within one turn: before it and after it every harvester is
 * the tail thread's, so scans, polls, rotation, answers, the registry and reloads work as
 * with one thread. During it a harvester is read by exactly one reader, and the tail thread
 * touches no harvester of the phase (h->pr marks them). Per-file order: a harvester's
 * events go through one producer at a time, and its batches in the producer it last used
 * are cut (queued) before it pushes into another, so they reach every output in offset
 * order. The answers, the registry and the inbox wait until the phase ends, which it does
 * at the end of the first chunk after LF_TAIL_PHASE_MS; while the outputs hold the readers
 * up it lasts until the queue has room again, as a push on the tail thread would.
 *
 * In once mode (the backfill) the tail thread, which has nothing to sweep, is reader 0: it
 * reads the first share of each phase through the pipeline's own producer instead of
 * waiting, and one thread fewer is started. In once mode a share has no byte limit: each
 * reader reads its first file until the phase's deadline. */
#include "config.h"

#define LF_LOG_COMPONENT "tail"
#include "tail_int.h"

#include <stdlib.h>

#include "logferry/buf.h"
#include "logferry/log.h"
#include "logferry/watchdog.h"
#include "logferry/stage.h"

/* Cuts what pr (NULL: the pipeline's own producer) holds. */
static enum lf_err cut(struct lf_tail *t, struct lf_producer *pr)
{
    return pr != NULL ? lf_producer_flush(pr) : lf_pipeline_flush(t->pipeline);
}

enum lf_err lf_tail__cut_all(struct lf_tail *t)
{
    enum lf_err err = lf_pipeline_flush(t->pipeline);
    for (size_t i = 0; i < t->n_readers; i++) {
        if (t->readers[i].pr == NULL)
            continue; /* the tail thread's: the pipeline's own producer */
        enum lf_err e = lf_producer_flush(t->readers[i].pr);
        if (e)
            err = e;
    }
    return err;
}

static void run_jobs(struct tail_reader *r)
{
    struct lf_tail *t = r->t;
    for (size_t i = 0; i < r->n_jobs && !r->err; i++) {
        lf_watchdog_stamp();
        r->err = lf_tail__harv_read_phase(t, r->jobs[i], lf_tail__budget(t), t->phase_deadline_ms);
    }
}

static void reader_main(void *arg)
{
    struct tail_reader *r = arg;
    struct lf_tail *t = r->t;
    lf_watchdog_enter("reader"); /* stamped per file read in a phase, idle between phases */
    uv_mutex_lock(&t->pmu);
    for (;;) {
        lf_watchdog_idle();
        while (r->phase_seen == t->phase && !t->phase_quit)
            uv_cond_wait(&t->pgo, &t->pmu);
        if (t->phase_quit)
            break;
        r->phase_seen = t->phase;
        uv_mutex_unlock(&t->pmu);
        run_jobs(r);
        uv_mutex_lock(&t->pmu);
        if (--t->phase_pending == 0)
            uv_cond_signal(&t->pdone);
    }
    uv_mutex_unlock(&t->pmu);
    lf_watchdog_leave();
}

void lf_tail__readers_stop(struct lf_tail *t)
{
    if (t->readers == NULL)
        return;
    uv_mutex_lock(&t->pmu);
    t->phase_quit = true;
    uv_cond_broadcast(&t->pgo);
    uv_mutex_unlock(&t->pmu);
    for (size_t i = 0; i < t->n_readers; i++) {
        struct tail_reader *r = &t->readers[i];
        if (r->started)
            uv_thread_join(&r->thread);
        lf_producer_free(r->pr); /* queues what it holds: nothing is lost */
        free(r->jobs);
    }
    free(t->readers);
    t->readers = NULL;
    t->n_readers = 0;
    t->phase_quit = false;
    for (size_t i = 0; i < t->n_h; i++)
        t->h[i]->last_pr = NULL; /* those batches are queued now, ahead of anything new */
}

/* Bytes of h's file not read yet, as of the last poll or scan. */
static uint64_t unread(const struct harv *h)
{
    return h->size > h->read_pos ? h->size - h->read_pos : 0;
}

/* Makes the readers at the first phase. On failure the tail thread goes on reading alone. */
static bool start_readers(struct lf_tail *t, size_t n_backlog)
{
    if (t->readers != NULL)
        return true;
    if (t->spread_failed)
        return false;
    size_t n = t->max_readers;
    t->readers = calloc(n, sizeof(*t->readers));
    if (t->readers == NULL)
        return false; /* tried again at the next phase */
    t->n_readers = n;
    bool ok = true;
    for (size_t i = 0; i < n && ok; i++) {
        struct tail_reader *r = &t->readers[i];
        r->t = t;
        r->phase_seen = t->phase;
        if (i == 0 && t->once)
            continue; /* the tail thread itself, through the pipeline's own producer */
        ok = lf_producer_new(t->pipeline, &r->pr) == LF_OK &&
             uv_thread_create(&r->thread, reader_main, r) == 0;
        r->started = ok;
    }
    if (!ok) {
        lf_warn("cannot start %zu reading threads; files are read on the tail thread alone", n);
        lf_tail__readers_stop(t);
        t->spread_failed = true;
        return false;
    }
    lf_debug("%zu files have a backlog: reading them with %zu threads", n_backlog, n);
    return true;
}

/* Gives h to a reader: the one whose producer it used last, unless that one already has
 * its share of the phase; else the one with the fewest jobs. Cuts h's batches in the producer it
 * leaves. */
static enum lf_err assign(struct lf_tail *t, struct harv *h, size_t share)
{
    size_t k = t->n_readers;
    for (size_t i = 0; i < t->n_readers; i++) {
        if (t->readers[i].pr == h->last_pr)
            k = i;
    }
    if (k == t->n_readers || t->readers[k].n_jobs >= share) {
        k = 0;
        for (size_t i = 1; i < t->n_readers; i++) {
            if (t->readers[i].n_jobs < t->readers[k].n_jobs)
                k = i;
        }
    }
    struct tail_reader *r = &t->readers[k];
    if (lf_array_grow(&r->jobs, &r->cap_jobs, r->n_jobs, sizeof(*r->jobs), 16))
        return LF_ENOMEM;
    if (h->last_pr != r->pr) {
        if (h->last_pr != NULL)
            lf_debug("%s moves to reading thread %zu", h->path, k);
        enum lf_err err = cut(t, h->last_pr);
        if (err)
            return err;
        h->last_pr = r->pr;
    }
    r->jobs[r->n_jobs++] = h;
    h->pr = r->pr;
    return LF_OK;
}

/* Reads the n harvesters of dirty in a phase. LF_ENOMEM before anything was read: the
 * caller reads them itself. */
static enum lf_err phase(struct lf_tail *t, struct harv **dirty, size_t n, int64_t now_ms)
{
    if (t->n_readers == 0)
        return LF_ENOMEM; /* not started: the caller reads them itself */
    for (size_t i = 0; i < t->n_readers; i++)
        t->readers[i].n_jobs = 0;
    size_t share = (n + t->n_readers - 1) / t->n_readers;
    enum lf_err err = LF_OK;
    for (size_t i = 0; i < n && !err; i++)
        err = assign(t, dirty[i], share);
    if (err) {
        for (size_t i = 0; i < n; i++)
            dirty[i]->pr = NULL;
        return err;
    }
    t->phase_deadline_ms = now_ms + LF_TAIL_PHASE_MS;
    uv_mutex_lock(&t->pmu);
    t->phase++;
    t->phase_pending = t->n_readers - (t->once ? 1 : 0);
    uv_cond_broadcast(&t->pgo);
    if (t->once) {
        /* A backfill's tail thread has nothing else to do: it reads the first share, so
         * there are as many producers (and batches alive) as reading threads. Its wait hook
         * keeps off the harvesters meanwhile (in_phase). */
        uv_mutex_unlock(&t->pmu);
        t->in_phase = true;
        run_jobs(&t->readers[0]);
        t->in_phase = false;
        uv_mutex_lock(&t->pmu);
    }
    int64_t next_sweep = now_ms + LF_TAIL_POLL_MS;
    while (t->phase_pending > 0) {
        uint64_t wait_ns = (uint64_t)LF_TAIL_PHASE_MS * 1000000u;
        lf_err_ignore(uv_cond_timedwait(&t->pdone, &t->pmu, wait_ns) ? LF_EAGAIN : LF_OK);
        int64_t now = lf_tail__now_ms();
        if (t->phase_pending > 0 && now >= next_sweep) {
            /* The outputs hold the readers up: files outside the phase still close. */
            uv_mutex_unlock(&t->pmu);
            lf_tail__while_phase(t, now);
            uv_mutex_lock(&t->pmu);
            next_sweep = now + LF_TAIL_POLL_MS;
        }
    }
    uv_mutex_unlock(&t->pmu);
    for (size_t i = 0; i < t->n_readers; i++) {
        if (t->readers[i].err)
            err = t->readers[i].err;
        t->readers[i].err = LF_OK;
    }
    for (size_t i = 0; i < n; i++) {
        dirty[i]->pr = NULL;
        lf_tail__harv_settle(t, dirty[i]);
    }
    return err;
}

/* How many of the harvesters of dirty have bytes unread, when together they have
 * LF_TAIL_SPREAD_BYTES or more (worth a phase); else 0. */
static size_t backlog(const struct lf_tail *t, struct harv **dirty, size_t n)
{
    if (t->max_readers < 2 || t->spread_failed || n < 2)
        return 0;
    size_t files = 0;
    uint64_t bytes = 0;
    for (size_t i = 0; i < n; i++) {
        uint64_t u = unread(dirty[i]);
        files += u > 0;
        bytes += u;
    }
    return files >= 2 && bytes >= LF_TAIL_SPREAD_BYTES ? files : 0;
}

/* What a turn learns from h once it was read (here or in a phase): a held event's deadline
 * is due at the tick, and a fair share that ran out before EOF keeps the tail busy. */
static void after_read(struct lf_tail *t, const struct harv *h, int64_t now_ms)
{
    if (lf_chain_holding(h->chain))
        t->next_tick_ms = now_ms;
    t->busy |= h->dirty && h->fd >= 0;
}

enum lf_err lf_tail__read_dirty(struct lf_tail *t, int64_t now_ms)
{
    size_t n = 0;
    if (t->cap_dirty < t->n_h) {
        struct harv **d = realloc(t->dirty_h, t->n_h * sizeof(*d));
        if (d != NULL) {
            t->dirty_h = d;
            t->cap_dirty = t->n_h;
        }
    }
    bool listed = t->cap_dirty >= t->n_h; /* else (out of memory) read as they come */
    for (size_t i = 0; i < t->n_h && t->n_open > 0; i++) {
        struct harv *h = t->h[i];
        if (h->recheck)
            lf_tail__harv_poll(t, h); /* content replaced since the last read? */
        if (!h->dirty || h->fd < 0)
            continue;
        if (h->stream_fp_empty) { /* its stream was saved while the file was empty */
            h->stream_unsaved = true;
            t->streams_unsaved = true;
        }
        if (listed) {
            t->dirty_h[n++] = h;
            continue;
        }
        if (lf_pipeline_yielding(t->pipeline))
            break; /* a reload waits: the rest stay dirty */
        lf_tail__save_streams(t);
        enum lf_err err = lf_tail__harv_read(t, h, lf_tail__budget(t));
        if (err)
            return err; /* the pipeline failed for good */
        after_read(t, h, now_ms);
    }
    lf_tail__save_streams(t); /* new streams reach the registry before their first event */
    size_t files = backlog(t, t->dirty_h, n);
    bool spread = files > 0 && start_readers(t, files);
    if (spread) {
        enum lf_err err = phase(t, t->dirty_h, n, now_ms);
        if (err && err != LF_ENOMEM)
            return err;
        spread = err == LF_OK; /* out of memory before reading: read them here */
    }
    for (size_t i = 0; i < n; i++) {
        struct harv *h = t->dirty_h[i];
        if (!spread && lf_pipeline_yielding(t->pipeline)) {
            t->busy = true; /* a reload waits: the rest are read after it */
            break;
        }
        enum lf_err err = spread ? LF_OK : lf_tail__harv_read(t, h, lf_tail__budget(t));
        if (err)
            return err;
        after_read(t, h, now_ms);
    }
    return LF_OK;
}
