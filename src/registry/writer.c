/* writer.c - the registry's writer thread: flushes without stalling the thread that reads.
 *
 * Rewriting the whole file takes tens of milliseconds at 100,000 entries (encoding, write,
 * fsync, rename, fsync of the directory). With a writer, the owner's registry stays where
 * it is and the writer keeps a copy of its own (the mirror). Every change the owner makes
 * (set, remove, sweep) is also noted as an operation in a list; a flush hands the list over
 * under a mutex (a pointer swap) and returns. The writer applies the operations to the
 * mirror and appends them to the journal, registry.log, as records (store.c): a flush
 * writes what changed, not every entry. Its first write, one after a failure, and one
 * where the journal would outgrow its bound write the whole mirror the way a flush without
 * a writer does (store.c: tmp file, fsync, rename, fsync of data_dir), which starts the
 * journal afresh; so does the writer's end, which leaves one whole file behind. The files
 * lag the owner by at most the write in progress. One writer: writes never overlap. A
 * failed write leaves the mirror dirty, is reported by the owner's next flush, and is
 * tried again then, as a whole file.
 *
 *   owner (tail thread)            writer thread
 *   set/remove/sweep -> ops[]
 *   flush: swap ops, signal  --->  apply ops to mirror, lf_registry_flush(mirror)
 *   sync:  wait until idle   <---  done: result, flushes */
#include "config.h"

#define LF_LOG_COMPONENT "registry"

#include <stdlib.h>
#include <string.h>
#include <uv.h>

#include "logferry/log.h"
#include "logferry/watchdog.h"
#include "registry_int.h"

enum op_kind { OP_SET, OP_REMOVE, OP_CLEAR };

struct op {
    enum op_kind kind;
    char *input_id; /* owned */
    struct lf_file_id id;
    uint64_t stream_id;
    uint64_t offset;
    char *path; /* owned; OP_SET only */
    int64_t updated_ms;
};

struct lf_registry__writer {
    uv_thread_t thread;
    uv_mutex_t mu;
    uv_cond_t wake; /* the writer waits for work */
    uv_cond_t idle; /* lf_registry_sync() waits for the writer */
    /* Guarded by mu: */
    struct op *ops; /* noted since the last hand-over */
    size_t n_ops;
    size_t cap_ops;
    bool lost;    /* an operation could not be noted: resend every entry */
    bool want;    /* a flush was asked and not yet taken */
    bool busy;    /* the writer is applying and writing */
    bool stop;    /* lf_registry_free(): finish what was asked, then end */
    bool failed;  /* the last write failed (the mirror is still dirty) */
    enum lf_err err;  /* the last failure not yet reported to the owner */
    struct lf_errbuf eb;
    uint64_t flushes; /* successful writes */
    /* The writer thread's alone once started: */
    struct lf_registry *mirror;
    struct lf_buf recs; /* journal records of one hand-over */
};

static void free_op(struct op *o)
{
    free(o->input_id);
    free(o->path);
}

static void free_ops(struct op *ops, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free_op(&ops[i]);
    free(ops);
}

/* Appends o to the list (taking its strings); on failure frees them and marks the list
 * lost. Called with mu held. */
static void push_op(struct lf_registry__writer *w, struct op *o)
{
    if (lf_array_grow(&w->ops, &w->cap_ops, w->n_ops, sizeof(*w->ops), 64)) {
        free_op(o);
        w->lost = true;
        return;
    }
    w->ops[w->n_ops++] = *o;
}

static void note(struct lf_registry__writer *w, enum op_kind kind,
                 const struct lf_registry_entry *e)
{
    struct op o = { kind,         strdup(e->input_id), e->id,
                    e->stream_id, e->offset,           kind == OP_SET ? strdup(e->path) : NULL,
                    e->updated_ms };
    uv_mutex_lock(&w->mu);
    if (o.input_id == NULL || (kind == OP_SET && o.path == NULL)) {
        free_op(&o);
        w->lost = true;
    } else {
        push_op(w, &o);
    }
    uv_mutex_unlock(&w->mu);
}

void lf_registry__note_set(struct lf_registry *r, const struct lf_registry_entry *e)
{
    if (r->writer != NULL)
        note(r->writer, OP_SET, e);
}

void lf_registry__note_remove(struct lf_registry *r, const struct lf_registry_entry *e)
{
    if (r->writer != NULL)
        note(r->writer, OP_REMOVE, e);
}

/* Applies o to the mirror m; false when out of memory (the mirror then misses it). */
static bool apply(struct lf_registry *m, const struct op *o)
{
    if (o->kind == OP_CLEAR)
        lf_registry__clear(m);
    else if (o->kind == OP_REMOVE)
        lf_registry_remove(m, o->input_id, o->id.dev, o->id.ino);
    else
        return lf_registry_set(m, o->input_id, &o->id, o->stream_id, o->offset, o->path,
                               o->updated_ms) == LF_OK;
    return true;
}

static void writer_main(void *arg)
{
    struct lf_registry__writer *w = arg;
    lf_watchdog_enter("registry writer"); /* idle between writes */
    uv_mutex_lock(&w->mu);
    for (;;) {
        lf_watchdog_idle();
        while (!w->want && !w->stop)
            uv_cond_wait(&w->wake, &w->mu);
        lf_watchdog_stamp();
        if (!w->want) { /* stopping, nothing asked: fold the journal into one file */
            if (w->mirror->jbytes > 0) {
                struct lf_errbuf eb = { "" };
                if (lf_registry__save(w->mirror, &eb))
                    lf_warn("%s; the journal beside it keeps the latest offsets", eb.msg);
            }
            break;
        }
        struct op *ops = w->ops;
        size_t n = w->n_ops;
        w->ops = NULL;
        w->n_ops = 0;
        w->cap_ops = 0;
        w->want = false;
        w->busy = true;
        uv_mutex_unlock(&w->mu);

        bool missed = false;
        bool whole = false; /* a clear, or records that could not be encoded */
        lf_buf_reset(&w->recs);
        for (size_t i = 0; i < n; i++) {
            const struct op *o = &ops[i];
            missed |= !apply(w->mirror, o);
            whole |= o->kind == OP_CLEAR;
            if (!whole) {
                struct lf_registry_entry e = { o->input_id,  o->id,   o->offset,
                                               o->stream_id, o->path, o->updated_ms };
                whole = lf_registry__journal_put(&w->recs, o->kind == OP_SET ? 's' : 'r', &e);
            }
        }
        free_ops(ops, n);
        struct lf_errbuf eb = { "" };
        enum lf_err err;
        if (!whole && !missed && w->recs.len > 0 &&
            lf_registry__journal_fits(w->mirror, w->recs.len)) {
            err = lf_registry__journal_append(w->mirror, &w->recs, &eb);
            if (!err) {
                w->mirror->dirty = false;
                w->mirror->flushes++;
            }
        } else {
            err = lf_registry_flush(w->mirror, &eb); /* the whole file, if anything changed */
        }

        uv_mutex_lock(&w->mu);
        if (missed)
            w->lost = true; /* the owner sends every entry again at its next flush */
        w->busy = false;
        w->failed = err != LF_OK;
        if (err) {
            w->err = err;
            w->eb = eb;
        }
        w->flushes = w->mirror->flushes;
        uv_cond_broadcast(&w->idle);
    }
    uv_mutex_unlock(&w->mu);
    lf_watchdog_leave();
}

/* Notes every entry of r, after a clear: what the mirror needs when an operation was lost.
 * Called with mu held. */
static void resend_all(struct lf_registry *r, struct lf_registry__writer *w)
{
    w->lost = false;
    free_ops(w->ops, w->n_ops);
    w->ops = NULL;
    w->n_ops = 0;
    w->cap_ops = 0;
    struct op clear = { OP_CLEAR, NULL, { 0, 0, 0, 0 }, 0, 0, NULL, 0 };
    push_op(w, &clear);
    for (size_t i = 0; i < r->n_buckets && !w->lost; i++) {
        for (const struct lf_registry__node *n = r->buckets[i]; n != NULL && !w->lost;
             n = n->next) {
            struct op o = { OP_SET,      strdup(n->e.input_id), n->e.id,        n->e.stream_id,
                            n->e.offset, strdup(n->e.path),     n->e.updated_ms };
            if (o.input_id == NULL || o.path == NULL) {
                free_op(&o);
                w->lost = true;
            } else {
                push_op(w, &o);
            }
        }
    }
}

enum lf_err lf_registry_start_writer(struct lf_registry *r, struct lf_errbuf *eb)
{
    if (r->writer != NULL)
        return LF_OK;
    struct lf_registry__writer *w = calloc(1, sizeof(*w));
    if (w == NULL)
        return lf_fail(eb, LF_ENOMEM, "registry: out of memory");
    enum lf_err err = lf_registry__new_empty(r->dir, &w->mirror);
    if (err) {
        free(w);
        return lf_fail(eb, err, "registry: out of memory");
    }
    for (size_t i = 0; i < r->n_buckets && !err; i++) {
        for (const struct lf_registry__node *n = r->buckets[i]; n != NULL && !err; n = n->next)
            err = lf_registry_set(w->mirror, n->e.input_id, &n->e.id, n->e.stream_id, n->e.offset,
                                  n->e.path, n->e.updated_ms);
    }
    w->mirror->dirty = r->dirty; /* what is on disk already need not be written again */
    lf_buf_init(&w->recs, SIZE_MAX / 2);
    w->mirror->flushes = r->flushes;
    w->flushes = r->flushes;
    if (err) {
        lf_registry_free(w->mirror);
        free(w);
        return lf_fail(eb, err, "registry: out of memory");
    }
    if (uv_mutex_init(&w->mu) != 0) {
        lf_registry_free(w->mirror);
        free(w);
        return lf_fail(eb, LF_EIO, "registry: cannot create a mutex");
    }
    if (uv_cond_init(&w->wake) != 0 || uv_cond_init(&w->idle) != 0 ||
        uv_thread_create(&w->thread, writer_main, w) != 0) {
        /* The conditions are not destroyed: one of them may not exist, and this is the
         * start of a daemon that is about to exit on the error. */
        uv_mutex_destroy(&w->mu);
        lf_registry_free(w->mirror);
        free(w);
        return lf_fail(eb, LF_EIO, "registry: cannot start the writer thread");
    }
    r->writer = w;
    return LF_OK;
}

enum lf_err lf_registry__writer_flush(struct lf_registry *r, struct lf_errbuf *eb)
{
    struct lf_registry__writer *w = r->writer;
    uv_mutex_lock(&w->mu);
    enum lf_err err = w->err;
    if (err) {
        lf_fail(eb, err, "%s", w->eb.msg);
        w->err = LF_OK;
    }
    if (w->lost)
        resend_all(r, w);
    if (r->dirty || w->n_ops > 0 || w->failed) {
        w->want = true;
        uv_cond_signal(&w->wake);
    }
    r->dirty = false;
    uv_mutex_unlock(&w->mu);
    return err;
}

enum lf_err lf_registry_sync(struct lf_registry *r, struct lf_errbuf *eb)
{
    if (r->writer == NULL)
        return lf_registry_flush(r, eb);
    struct lf_registry__writer *w = r->writer;
    enum lf_err err = lf_registry__writer_flush(r, eb);
    uv_mutex_lock(&w->mu);
    while (w->want || w->busy)
        uv_cond_wait(&w->idle, &w->mu);
    if (!err && w->err) {
        err = lf_fail(eb, w->err, "%s", w->eb.msg);
        w->err = LF_OK;
    }
    uv_mutex_unlock(&w->mu);
    return err;
}

uint64_t lf_registry__writer_flushes(struct lf_registry *r)
{
    struct lf_registry__writer *w = r->writer;
    uv_mutex_lock(&w->mu);
    uint64_t n = w->flushes;
    uv_mutex_unlock(&w->mu);
    return n;
}

void lf_registry__writer_stop(struct lf_registry *r)
{
    struct lf_registry__writer *w = r->writer;
    if (w == NULL)
        return;
    uv_mutex_lock(&w->mu);
    w->stop = true;
    uv_cond_signal(&w->wake);
    uv_mutex_unlock(&w->mu);
    uv_thread_join(&w->thread);
    free_ops(w->ops, w->n_ops);
    lf_registry_free(w->mirror);
    lf_buf_release(&w->recs);
    uv_cond_destroy(&w->wake);
    uv_cond_destroy(&w->idle);
    uv_mutex_destroy(&w->mu);
    free(w);
    r->writer = NULL;
}
