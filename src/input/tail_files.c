/* tail_files.c - the snapshot of each input's files that /status shows (lf_tail_files()).
 *
 * The harvesters belong to the tail thread; other threads see them only through this
 * snapshot, which the tail thread refreshes, with t->mu held, each time it counts the lag
 * (after each poll and at each registry turn). Entries keep their path between refreshes
 * while it does not change, so a refresh of an unchanged set allocates nothing. A journald
 * input has one entry: its acknowledged position and the cursor the registry keeps for it.
 * The snapshot (t->files) is owned by the tail and guarded by t->mu. */
#include "config.h"

#include "tail_int.h"

#include <stdlib.h>
#include <string.h>

#include "logferry/registry.h"

/* Sets entry k to (h's input, path, size, acked); false when out of memory. */
static bool put(struct lf_tail *t, size_t k, const struct harv *h, const char *path,
                uint64_t size, uint64_t acked, bool journal)
{
    if (k == t->cap_files) {
        size_t cap = t->cap_files ? 2 * t->cap_files : 16;
        struct lf_tail_file *f = realloc(t->files, cap * sizeof(*f));
        if (f == NULL)
            return false;
        memset(f + t->cap_files, 0, (cap - t->cap_files) * sizeof(*f));
        t->files = f;
        t->cap_files = cap;
    }
    struct lf_tail_file *f = &t->files[k];
    if (f->path == NULL || strcmp(f->path, path) != 0) {
        char *copy = strdup(path);
        if (copy == NULL)
            return false;
        free(f->path);
        f->path = copy;
    }
    f->input_idx = h->input_idx;
    f->size = size;
    f->acked = acked;
    f->read = journal ? acked : h->read_pos;
    f->journal = journal;
    return true;
}

void lf_tail__publish_files_locked(struct lf_tail *t)
{
    size_t k = 0;
    bool ok = true;
    for (size_t i = 0; i < t->n_h && ok; i++) {
        const struct harv *h = t->h[i];
        if (h->gone || h->refused)
            continue;
        ok = put(t, k++, h, h->path, h->size, h->acked, false);
    }
    for (size_t i = 0; i < t->n_jh && ok; i++) {
        const struct harv *h = t->jh[i];
        const char *id = t->cfg->inputs[h->input_idx].id;
        const struct lf_registry_entry *e =
            t->reg != NULL ? lf_registry_find(t->reg, id, 0, 0) : NULL;
        ok = put(t, k++, h, e != NULL && e->path != NULL ? e->path : "",
                 0, e != NULL ? e->offset : 0, true);
    }
    if (!ok)
        k--; /* out of memory: the entries before it are still right */
    for (size_t i = k; i < t->n_files; i++) {
        free(t->files[i].path);
        t->files[i].path = NULL;
    }
    t->n_files = k;
}

void lf_tail_files(struct lf_tail *t, const char *id,
                   void (*fn)(void *arg, const struct lf_tail_file *f), void *arg)
{
    uv_mutex_lock(&t->mu);
    size_t idx = lf_tail__input_by_id(t, id);
    for (size_t i = 0; i < t->n_files && idx != SIZE_MAX; i++) {
        if (t->files[i].input_idx == idx)
            fn(arg, &t->files[i]);
    }
    uv_mutex_unlock(&t->mu);
}

void lf_tail__free_files(struct lf_tail *t)
{
    for (size_t i = 0; i < t->cap_files; i++)
        free(t->files[i].path);
    free(t->files);
    t->files = NULL;
    t->n_files = t->cap_files = 0;
}
