/* tail_registry.c - the tail thread's registry entries: where each followed file resumes,
 * its stream id saved before its first event is read, entries of files gone forgotten at
 * start-up (clean_removed).
 *
 * Tail thread only (between read phases, or from the wait hook inside a push); the
 * registry is the tail thread's while it runs (its writer thread only writes the file). */
#include "config.h"

#define LF_LOG_COMPONENT "tail"
#include "tail_int.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "logferry/log.h"

struct followed {
    uint64_t dev;
    uint64_t ino;
    size_t input_idx;
};

static int cmp_followed(const void *a, const void *b)
{
    const struct followed *x = a;
    const struct followed *y = b;
    if (x->dev != y->dev)
        return x->dev < y->dev ? -1 : 1;
    if (x->ino != y->ino)
        return x->ino < y->ino ? -1 : 1;
    return x->input_idx < y->input_idx ? -1 : x->input_idx > y->input_idx;
}

struct sweep_ctx {
    struct lf_tail *t;
    struct followed *f; /* every file a harvester follows or has found, sorted */
    size_t n;
    size_t removed;
};

/* clean_removed at start-up: an entry whose file is gone (its path leads nowhere, or to
 * another inode) and that no harvester has found is forgotten, so the registry holds the
 * files that exist, not every file ever seen. */
static bool sweep_gone(void *arg, const struct lf_registry_entry *e)
{
    struct sweep_ctx *c = arg;
    if (e->id.dev == 0 && e->id.ino == 0) {
        /* A journal's position: kept while a journald input of that id is configured. */
        size_t i = lf_tail__input_by_id(c->t, e->input_id);
        if (i != SIZE_MAX && c->t->cfg->inputs[i].type == LF_INPUT_JOURNALD)
            return false;
        c->removed++;
        return true;
    }
    for (size_t i = 0; i < c->t->cfg->n_inputs; i++) {
        if (strcmp(c->t->cfg->inputs[i].id, e->input_id) != 0)
            continue;
        struct followed key = { e->id.dev, e->id.ino, i };
        if (bsearch(&key, c->f, c->n, sizeof(*c->f), cmp_followed) != NULL)
            return false;
    }
    struct stat st;
    if (stat(e->path, &st) == 0 && (uint64_t)st.st_dev == e->id.dev &&
        (uint64_t)st.st_ino == e->id.ino)
        return false; /* still there (outside the globs now, or not found yet) */
    c->removed++;
    return true;
}

void lf_tail__clean_registry(struct lf_tail *t)
{
    struct sweep_ctx c = { .t = t };
    c.f = malloc((t->n_h ? t->n_h : 1) * sizeof(*c.f));
    if (c.f == NULL)
        return; /* tried again at the next start */
    for (size_t i = 0; i < t->n_h; i++)
        c.f[c.n++] = (struct followed){ t->h[i]->found_dev, t->h[i]->found_ino,
                                        t->h[i]->input_idx };
    qsort(c.f, c.n, sizeof(*c.f), cmp_followed);
    lf_registry_sweep(t->reg, sweep_gone, &c);
    free(c.f);
    if (c.removed > 0)
        lf_info("registry: forgot %zu files that no longer exist (clean_removed)", c.removed);
}

/* Sets h's registry entry when its offset or stream id changed: where a restart resumes
 * (acknowledged, never past a line given up on or an event a stage holds) and the stream
 * id of its content. False if nothing was set (nothing new, or out of memory: tried again
 * next time). */
static bool register_harv(struct lf_tail *t, struct harv *h, int64_t wall_ms)
{
    uint64_t acked = lf_tail__harv_acked(h);
    if (!h->identified || (acked == h->registered && !h->stream_unsaved))
        return false;
    uint64_t held = lf_chain_held_offset(h->chain);
    if (held < acked)
        acked = held; /* a later event overtook a held one: never pass the held line */
    if (acked == h->registered && !h->stream_unsaved)
        return false;
    lf_tail__harv_grow_id(h);
    const struct lf_input_conf *in = &t->cfg->inputs[h->input_idx];
    if (lf_registry_set(t->reg, in->id, &h->id, h->stream_id, acked, h->path, wall_ms))
        return false;
    h->registered = acked;
    h->stream_fp_empty = h->id.fp_len == 0;
    return true;
}

/* After a truncation h's fingerprint is empty until it is read: take it now from the
 * content about to be read, so the entry saved with the new stream id is not taken after
 * a crash for content that replaced this one meanwhile (an empty fingerprint matches
 * anything on the inode). */
static void fingerprint_now(struct harv *h)
{
    struct stat st;
    struct lf_file_id id;
    struct lf_errbuf eb = { "" };
    if (h->fd >= 0 && h->id.fp_len == 0 && fstat(h->fd, &st) == 0 && st.st_size > 0 &&
        (uint64_t)st.st_ino == h->id.ino && !lf_file_id_read(h->fd, &st, &id, &eb))
        h->id = id;
}

void lf_tail__save_streams(struct lf_tail *t)
{
    if (!t->streams_unsaved)
        return;
    t->streams_unsaved = false;
    int64_t wall_ms = lf_now_ns() / 1000000;
    size_t n = 0;
    for (size_t i = 0; i < t->n_h; i++) {
        struct harv *h = t->h[i];
        if (!h->stream_unsaved || !h->identified || h->pr != NULL)
            continue; /* never opened: open_harv() raises the flag again when it is */
        fingerprint_now(h);
        if (!register_harv(t, h, wall_ms)) {
            t->streams_unsaved = true; /* out of memory: tried again before the next read */
            continue;
        }
        h->stream_unsaved = false;
        n++;
    }
    if (n == 0)
        return;
    struct lf_errbuf eb = { "" };
    if (lf_registry_sync(t->reg, &eb)) /* one write for all, before any of their events */
        lf_error("%s; %zu new files or contents are read all the same (after a crash "
                 "before their offsets are saved, their events may be indexed twice)",
                 eb.msg, n);
}

void lf_tail__update_registry(struct lf_tail *t)
{
    int64_t wall_ms = lf_now_ns() / 1000000;
    if (t->in_stdin != NULL)
        lf_tail__harv_settle(t, t->in_stdin);
    for (size_t i = 0; i < t->n_jh; i++)
        lf_tail__journal_register(t, t->jh[i], wall_ms);
    for (size_t i = 0; i < t->n_h; i++) {
        struct harv *h = t->h[i];
        if (h->pr != NULL)
            continue;               /* a reader thread's until the read phase ends */
        lf_tail__harv_settle(t, h); /* events of flushes (rotation, truncation, the end) */
        register_harv(t, h, wall_ms);
    }
    struct lf_errbuf eb = { "" };
    if (lf_registry_flush(t->reg, &eb)) {
        lf_error("%s; offsets stay in memory and are written at the next flush",
                 eb.msg);
    }
    uv_mutex_lock(&t->mu);
    t->stats.registry_flushes = lf_registry_flushes(t->reg);
    t->stats.registry_entries = lf_registry_count(t->reg);
    uv_mutex_unlock(&t->mu);
}
