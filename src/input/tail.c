/* tail.c - the tail thread: inbox, scans, the turn loop, registry updates (see tail.h).
 *
 *   loop thread ──notify(path) / rescan / stop──► inbox (mutex + cond)
 *                                                    │
 *   tail thread: ┌─────────────────────────────────────┘
 *                ├─ scan (every scan_interval or on demand): globs -> harvesters, rotation,
 *                │  registry lookups, opens within max_open_files, dirs to watch
 *                ├─ poll (every second): fstat of open files: growth, truncation, deletion
 *                ├─ read the dirty harvesters, each a fair share per turn -> pipeline
 *                ├─ cut batches (every batch flush_interval)
 *                └─ registry (every registry.flush_interval): acknowledged offsets, close
 *                   inactive files, forget deleted ones, free retired sources
 *
 * Harvesters are kept in one array sorted by (path, input), so a notification costs a
 * binary search; a scan merges the globs' sorted results against it. */
#include "config.h"

#define LF_LOG_COMPONENT "tail"
#include "tail_int.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "logferry/log.h"

#define LF_TAIL_POLL_MS    1000       /* fstat of open files, for missed or absent events */
#define LF_TAIL_TURN_BYTES (4u << 20) /* read per file per turn before others get a go */
#define LF_TAIL_WARN_MS    60000      /* a repeated warning about one file, at most this often */

static int cmp_harv(const struct harv *a, const char *path, size_t input_idx)
{
    int c = strcmp(a->path, path);
    if (c != 0)
        return c;
    return a->input_idx < input_idx ? -1 : a->input_idx > input_idx;
}

/* Index of the first harvester not below (path, input_idx). */
static size_t lower_bound(const struct lf_tail *t, const char *path, size_t input_idx)
{
    size_t lo = 0;
    size_t hi = t->n_h;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (cmp_harv(t->h[mid], path, input_idx) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

static enum lf_err insert_harv(struct lf_tail *t, struct harv *h)
{
    if (t->n_h == t->cap_h) {
        size_t cap = t->cap_h ? t->cap_h * 2 : 64;
        struct harv **a = realloc(t->h, cap * sizeof(*a));
        if (a == NULL)
            return LF_ENOMEM;
        t->h = a;
        t->cap_h = cap;
    }
    size_t i = lower_bound(t, h->path, h->input_idx);
    memmove(t->h + i + 1, t->h + i, (t->n_h - i) * sizeof(*t->h));
    t->h[i] = h;
    t->n_h++;
    return LF_OK;
}

static int by_path(const void *a, const void *b)
{
    const struct harv *x = *(struct harv *const *)a;
    const struct harv *y = *(struct harv *const *)b;
    return cmp_harv(x, y->path, y->input_idx);
}

static void resort(struct lf_tail *t)
{
    if (t->n_h > 1)
        qsort(t->h, t->n_h, sizeof(*t->h), by_path);
}

/* ---- inbox ---------------------------------------------------------------------- */

void lf_tail_notify(struct lf_tail *t, const char *path, enum lf_change change)
{
    if (change == LF_CHANGE_NAME) {
        /* Several renames and creates in a burst still cost one scan: it runs at the next
         * turn, after every note that arrived by then. */
        uv_mutex_lock(&t->mu);
        t->want_scan = true;
        uv_mutex_unlock(&t->mu);
    }
    char *copy = strdup(path);
    if (copy == NULL) {
        lf_tail_rescan(t); /* the scan finds whatever the note was about */
        return;
    }
    uv_mutex_lock(&t->mu);
    if (t->n_notes == t->cap_notes) {
        size_t cap = t->cap_notes ? t->cap_notes * 2 : 64;
        char **n = realloc(t->notes, cap * sizeof(*n));
        if (n == NULL) {
            free(copy);
            t->want_scan = true;
            uv_cond_signal(&t->cond);
            uv_mutex_unlock(&t->mu);
            return;
        }
        t->notes = n;
        t->cap_notes = cap;
    }
    t->notes[t->n_notes++] = copy;
    uv_cond_signal(&t->cond);
    uv_mutex_unlock(&t->mu);
}

void lf_tail_rescan(struct lf_tail *t)
{
    uv_mutex_lock(&t->mu);
    t->want_scan = true;
    uv_cond_signal(&t->cond);
    uv_mutex_unlock(&t->mu);
}

void lf_tail_stop(struct lf_tail *t)
{
    uv_mutex_lock(&t->mu);
    t->want_stop = true;
    uv_cond_signal(&t->cond);
    uv_mutex_unlock(&t->mu);
}

void lf_tail_input_stats(struct lf_tail *t, size_t input_idx, struct lf_tail_input_stats *out)
{
    uv_mutex_lock(&t->mu);
    *out = t->in_stats[input_idx];
    uv_mutex_unlock(&t->mu);
}

void lf_tail_stats(struct lf_tail *t, struct lf_tail_stats *out)
{
    uv_mutex_lock(&t->mu);
    *out = t->stats;
    uv_mutex_unlock(&t->mu);
}

/* Marks the harvesters at path dirty; a path no harvester has that a glob matches means a
 * new file: rescan. */
static void handle_note(struct lf_tail *t, const char *path)
{
    bool known = false;
    for (size_t i = lower_bound(t, path, 0); i < t->n_h && strcmp(t->h[i]->path, path) == 0; i++) {
        struct harv *h = t->h[i];
        known = true;
        h->dirty = true;
        if (h->fd < 0 && !h->gone)
            t->want_open = true; /* closed for inactivity and growing again: reopen */
    }
    if (known)
        return;
    for (size_t i = 0; i < t->cfg->n_inputs; i++) {
        const struct lf_input_conf *in = &t->cfg->inputs[i];
        for (size_t k = 0; k < in->n_paths; k++) {
            if (lf_glob_match(in->paths[k], path)) {
                t->next_scan_ms = 0;
                return;
            }
        }
    }
}

/* ---- scan ----------------------------------------------------------------------- */

struct scan_ctx {
    struct lf_tail *t;
    size_t input_idx;
    bool first_scan; /* files found now were there at start-up (start_at applies) */
    struct harv **by_id; /* this input's harvesters sorted by (dev, ino) */
    size_t n_by_id;
    enum lf_err err;
};

static int cmp_id(const struct harv *h, uint64_t dev, uint64_t ino)
{
    if (h->id.dev != dev)
        return h->id.dev < dev ? -1 : 1;
    if (h->id.ino != ino)
        return h->id.ino < ino ? -1 : 1;
    return 0;
}

static int by_id(const void *a, const void *b)
{
    const struct harv *x = *(struct harv *const *)a;
    const struct harv *y = *(struct harv *const *)b;
    return cmp_id(x, y->id.dev, y->id.ino);
}

static struct harv *find_by_id(const struct scan_ctx *c, uint64_t dev, uint64_t ino)
{
    size_t lo = 0;
    size_t hi = c->n_by_id;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int r = cmp_id(c->by_id[mid], dev, ino);
        if (r == 0)
            return c->by_id[mid];
        if (r < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return NULL;
}

static void count_rotation(struct lf_tail *t)
{
    uv_mutex_lock(&t->mu);
    t->stats.rotations++;
    uv_mutex_unlock(&t->mu);
}

/* One file a glob found: an old friend, an old friend under a new name, or a new file. */
static int on_found(void *arg, const char *path, const struct stat *st)
{
    struct scan_ctx *c = arg;
    struct lf_tail *t = c->t;
    uint64_t dev = (uint64_t)st->st_dev;
    uint64_t ino = (uint64_t)st->st_ino;
    int64_t mtime_ms = (int64_t)st->st_mtim.tv_sec * 1000 + st->st_mtim.tv_nsec / 1000000;
    struct harv *same_path = NULL;
    size_t i = lower_bound(t, path, c->input_idx);
    for (; i < t->n_h && cmp_harv(t->h[i], path, c->input_idx) == 0; i++) {
        struct harv *h = t->h[i];
        if (h->identified) {
            if (h->id.dev == dev && h->id.ino == ino) {
                h->seen = true;
                h->mtime_ms = mtime_ms;
                if (h->fd < 0 && (uint64_t)st->st_size != h->read_pos)
                    h->dirty = true; /* grew (or shrank) while closed: reopen */
                return 0;
            }
        } else {
            same_path = h; /* known by path only: never opened yet */
        }
    }
    if (same_path != NULL) {
        same_path->found_dev = dev;
        same_path->found_ino = ino;
        same_path->seen = true;
        same_path->mtime_ms = mtime_ms;
        same_path->dirty = true; /* could not be opened last time: try again */
        return 0;
    }
    struct harv *renamed = find_by_id(c, dev, ino);
    if (renamed != NULL && !renamed->deleted) {
        /* The same file under another name (rename rotation within the glob): go on. */
        if (strcmp(renamed->path, path) != 0) {
            lf_info("input %s: %s is now %s; following it", t->cfg->inputs[c->input_idx].id,
                    renamed->path, path);
            char *p = strdup(path);
            if (p == NULL) {
                c->err = LF_ENOMEM;
                return 1;
            }
            free(renamed->path);
            renamed->path = p;
            renamed->gone = false;
            count_rotation(t);
            /* Events from here on carry the new path. */
            if (lf_tail__harv_new_source(t, renamed, lf_tail__harv_acked(renamed))) {
                c->err = LF_ENOMEM;
                return 1;
            }
        }
        renamed->seen = true;
        renamed->mtime_ms = mtime_ms;
        return 0;
    }
    struct harv *h = lf_tail__harv_new(t, c->input_idx, path);
    if (h == NULL || insert_harv(t, h)) {
        if (h != NULL)
            lf_tail__harv_free(t, h);
        c->err = LF_ENOMEM;
        return 1;
    }
    h->seen = true;
    h->mtime_ms = mtime_ms;
    h->dirty = true;
    h->initial = c->first_scan;
    h->found_dev = dev;
    h->found_ino = ino;
    return 0;
}

/* A new file whose first 1 KiB equals that of a followed file of the same input, whose
 * path it extends (app.log -> app.log.1, app.log-20261130), is a rotated copy
 * (copytruncate): it was read up to where the original was. Returns the original and sets
 * *offset, or NULL. Files under 1 KiB are never taken for copies: identical short files
 * are common and must each be read. */
static const struct harv *copy_origin(const struct lf_tail *t, const struct harv *h,
                                      const struct lf_file_id *now, uint64_t *offset)
{
    if (now->fp_len < LF_FINGERPRINT_MAX)
        return NULL;
    for (size_t i = 0; i < t->n_h; i++) {
        const struct harv *o = t->h[i];
        size_t plen = strlen(o->path);
        if (o == h || o->input_idx != h->input_idx || !o->identified ||
            strncmp(h->path, o->path, plen) != 0 || h->path[plen] == '\0')
            continue;
        if (o->prev_id.fp_len == LF_FINGERPRINT_MAX && o->prev_id.fp_hash == now->fp_hash) {
            *offset = o->prev_end; /* the truncation was seen first */
            return o;
        }
        if (o->id.fp_len == LF_FINGERPRINT_MAX && o->id.fp_hash == now->fp_hash &&
            (o->id.dev != now->dev || o->id.ino != now->ino)) {
            *offset = o->emitted_end; /* the copy was seen first */
            return o;
        }
    }
    return NULL;
}

/* Decides where a file never opened before starts: from the registry if it knows this very
 * file (same inode, and the fingerprint still a prefix), else at 0, or at its end for
 * start_at: end at start-up. */
static uint64_t start_offset(struct lf_tail *t, struct harv *h, int fd, const struct stat *st,
                             const struct lf_file_id *now)
{
    const struct lf_input_conf *in = &t->cfg->inputs[h->input_idx];
    struct lf_registry_entry *e = lf_registry_find(t->reg, in->id, now->dev, now->ino);
    if (e != NULL) {
        enum lf_id_match m = LF_ID_DIFFERENT;
        struct lf_errbuf eb = { "" };
        if (lf_file_id_match(&e->id, fd, now, &m, &eb))
            lf_warn("input %s: %s: %s", in->id, h->path, eb.msg);
        if (m == LF_ID_SAME) {
            if (e->offset > (uint64_t)st->st_size) {
                lf_info("input %s: %s is shorter than its saved offset %" PRIu64
                        " (truncated while stopped); reading it from the start", in->id, h->path,
                        e->offset);
                return 0;
            }
            return e->offset;
        }
        lf_info("input %s: %s reuses the inode of %s with other content; reading it as a new "
                "file", in->id, h->path, e->path);
        return 0;
    }
    uint64_t copied = 0;
    const struct harv *origin = copy_origin(t, h, now, &copied);
    if (origin != NULL) {
        if (copied > (uint64_t)st->st_size)
            copied = (uint64_t)st->st_size;
        lf_info("input %s: %s is a copy of %s (copytruncate: same first %u bytes); reading it "
                "from %" PRIu64 ", where the original had been read to", in->id, h->path,
                origin->path, (unsigned)now->fp_len, copied);
        return copied;
    }
    if (h->initial && in->start_at == LF_START_END)
        return (uint64_t)st->st_size;
    return 0;
}

/* Opens h: a file never opened is placed by start_offset(); a file closed for inactivity
 * must still be the same inode, else its path now leads to a new file. */
static void open_harv(struct lf_tail *t, struct harv *h, int64_t now_ms)
{
    const struct lf_input_conf *in = &t->cfg->inputs[h->input_idx];
    int fd = open(h->path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
    if (fd < 0) {
        int e = errno;
        if (now_ms - h->removed_warned_ms >= LF_TAIL_WARN_MS || h->removed_warned_ms == 0) {
            lf_warn("input %s: cannot open %s: %s; will try again at the next scan", in->id,
                    h->path, lf_strerror(e));
            h->removed_warned_ms = now_ms;
        }
        h->dirty = false;
        return;
    }
    struct stat st;
    struct lf_file_id now;
    struct lf_errbuf eb = { "" };
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || lf_file_id_read(fd, &st, &now, &eb)) {
        lf_warn("input %s: %s is not a readable regular file%s%s; skipping it", in->id, h->path,
                eb.msg[0] ? ": " : "", eb.msg);
        close(fd);
        h->dirty = false;
        return;
    }
    uint64_t offset;
    bool never_opened = !h->identified;
    if (never_opened) {
        offset = start_offset(t, h, fd, &st, &now);
    } else if (h->id.dev == now.dev && h->id.ino == now.ino) {
        offset = h->read_pos <= (uint64_t)st.st_size ? h->read_pos : 0;
    } else {
        close(fd); /* another file took the path: the next scan adds it */
        h->gone = true;
        h->dirty = false;
        t->next_scan_ms = 0;
        return;
    }
    if (!never_opened && offset != h->read_pos && lf_tail__harv_new_source(t, h, offset)) {
        close(fd);
        return;
    }
    h->id = now;
    h->identified = true;
    if (never_opened) {
        /* Nothing of it was read: it is acknowledged up to where it starts. A reopened
         * file keeps its source, whose events may still be in flight. */
        __atomic_store_n(&h->src->acked_offset, offset, __ATOMIC_RELEASE);
        h->registered = UINT64_MAX;
    }
    if (lf_tail__harv_start(t, h, fd, &st, offset))
        h->dirty = false;
}

static int by_mtime(const void *a, const void *b)
{
    const struct harv *x = *(struct harv *const *)a;
    const struct harv *y = *(struct harv *const *)b;
    return x->mtime_ms < y->mtime_ms ? -1 : x->mtime_ms > y->mtime_ms;
}

/* Opens the closed harvesters that have data, oldest data first, within max_open_files
 * (the smallest limit of their inputs). */
static void open_pending(struct lf_tail *t, int64_t now_ms)
{
    size_t n = 0;
    for (size_t i = 0; i < t->n_h; i++)
        n += t->h[i]->fd < 0 && t->h[i]->dirty && !t->h[i]->gone && !t->h[i]->deleted;
    if (n == 0)
        return;
    struct harv **want = malloc(n * sizeof(*want));
    if (want == NULL)
        return;
    n = 0;
    for (size_t i = 0; i < t->n_h; i++) {
        struct harv *h = t->h[i];
        if (h->fd < 0 && h->dirty && !h->gone && !h->deleted)
            want[n++] = h;
    }
    qsort(want, n, sizeof(*want), by_mtime);
    for (size_t i = 0; i < n; i++) {
        struct harv *h = want[i];
        size_t limit = t->cfg->inputs[h->input_idx].max_open_files;
        h->waiting = t->n_open >= limit;
        if (!h->waiting)
            open_harv(t, h, now_ms);
    }
    free(want);
}

/* The fixed directory of a glob: everything before its first segment with a wildcard. */
static size_t glob_dir_len(const char *pattern)
{
    size_t dir_end = 0;
    for (size_t i = 0; pattern[i] != '\0'; i++) {
        if (pattern[i] == '/')
            dir_end = i;
        else if (strchr("*?[", pattern[i]) != NULL)
            break;
    }
    return dir_end;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static void free_dirs(char **dirs, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(dirs[i]);
    free(dirs);
}

/* Tells the watcher which directories matter: the globs' fixed directories and the
 * directories of the files followed; only when the list changed since the last time. */
static void report_dirs(struct lf_tail *t)
{
    if (t->hooks == NULL || t->hooks->on_dirs == NULL)
        return;
    size_t cap = t->n_h;
    for (size_t i = 0; i < t->cfg->n_inputs; i++)
        cap += t->cfg->inputs[i].n_paths;
    char **dirs = calloc(cap ? cap : 1, sizeof(*dirs));
    if (dirs == NULL)
        return;
    size_t n = 0;
    for (size_t i = 0; i < t->cfg->n_inputs; i++) {
        const struct lf_input_conf *in = &t->cfg->inputs[i];
        for (size_t k = 0; k < in->n_paths; k++) {
            size_t len = glob_dir_len(in->paths[k]);
            dirs[n] = strndup(in->paths[k], len == 0 ? 1 : len);
            n += dirs[n] != NULL;
        }
    }
    for (size_t i = 0; i < t->n_h; i++) {
        const char *slash = strrchr(t->h[i]->path, '/');
        if (slash == NULL || t->h[i]->gone)
            continue;
        size_t len = (size_t)(slash - t->h[i]->path);
        dirs[n] = strndup(t->h[i]->path, len == 0 ? 1 : len);
        n += dirs[n] != NULL;
    }
    qsort(dirs, n, sizeof(*dirs), cmp_str);
    size_t u = 0;
    for (size_t i = 0; i < n; i++) {
        if (u > 0 && strcmp(dirs[u - 1], dirs[i]) == 0)
            free(dirs[i]);
        else
            dirs[u++] = dirs[i];
    }
    bool same = u == t->n_dirs;
    for (size_t i = 0; i < u && same; i++)
        same = strcmp(dirs[i], t->dirs[i]) == 0;
    if (!same)
        t->hooks->on_dirs(t->hooks->arg, dirs, u);
    free_dirs(t->dirs, t->n_dirs);
    t->dirs = dirs; /* kept to tell the next list from this one */
    t->n_dirs = u;
}

/* Drops harvester i (its events are all acknowledged, its file gone). */
static void forget(struct lf_tail *t, size_t i)
{
    lf_tail__harv_free(t, t->h[i]);
    memmove(t->h + i, t->h + i + 1, (t->n_h - i - 1) * sizeof(*t->h));
    t->n_h--;
}

static enum lf_err scan_all(struct lf_tail *t, bool first_scan, int64_t now_ms)
{
    for (size_t i = 0; i < t->n_h; i++)
        t->h[i]->seen = false;
    struct scan_ctx c = { .t = t, .first_scan = first_scan };
    c.by_id = malloc((t->n_h ? t->n_h : 1) * sizeof(*c.by_id));
    if (c.by_id == NULL)
        return LF_ENOMEM;
    for (size_t in = 0; in < t->cfg->n_inputs && !c.err; in++) {
        if (t->disc[in] == NULL)
            continue;
        c.input_idx = in;
        c.n_by_id = 0;
        for (size_t i = 0; i < t->n_h; i++) {
            if (t->h[i]->input_idx == in && t->h[i]->identified)
                c.by_id[c.n_by_id++] = t->h[i];
        }
        qsort(c.by_id, c.n_by_id, sizeof(*c.by_id), by_id);
        enum lf_err err = lf_discover_scan(t->disc[in], lf_now_ns() / 1000000, on_found, &c);
        if (err && !c.err)
            c.err = err;
        /* on_found inserts and renames: the by_id index must be rebuilt per input. */
        free(c.by_id);
        c.by_id = malloc((t->n_h ? t->n_h : 1) * sizeof(*c.by_id));
        if (c.by_id == NULL)
            return LF_ENOMEM;
    }
    free(c.by_id);
    if (c.err)
        return c.err;
    resort(t); /* renames changed paths */
    for (size_t i = 0; i < t->n_h;) {
        struct harv *h = t->h[i];
        if (!h->seen && t->disc[h->input_idx] != NULL) {
            if (h->fd >= 0) {
                if (!h->gone) {
                    h->gone = true; /* renamed out of the globs, deleted, or replaced */
                    h->dirty = true;
                    count_rotation(t);
                }
            } else if (lf_tail__harv_acked(h) >= h->emitted_end) {
                const struct lf_input_conf *in = &t->cfg->inputs[h->input_idx];
                if (t->cfg->registry.clean_removed && h->identified && access(h->path, F_OK) != 0)
                    lf_registry_remove(t->reg, in->id, h->id.dev, h->id.ino);
                forget(t, i);
                continue;
            }
        }
        i++;
    }
    open_pending(t, now_ms);
    report_dirs(t);
    return LF_OK;
}

/* ---- registry, inactivity, retired sources -------------------------------------- */

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

static void clean_registry(struct lf_tail *t)
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

static void update_registry(struct lf_tail *t)
{
    int64_t wall_ms = lf_now_ns() / 1000000;
    for (size_t i = 0; i < t->n_h; i++) {
        struct harv *h = t->h[i];
        uint64_t acked = lf_tail__harv_acked(h);
        if (!h->identified || acked == h->registered)
            continue;
        uint64_t held = lf_chain_held_offset(h->chain);
        if (held < acked)
            acked = held; /* a later event overtook a held one: never pass the held line */
        if (acked == h->registered)
            continue;
        if (h->fd >= 0 && h->id.fp_len < LF_FINGERPRINT_MAX && h->read_pos > h->id.fp_len) {
            struct stat st;
            struct lf_errbuf eb = { "" };
            struct lf_file_id id;
            if (fstat(h->fd, &st) == 0 && !lf_file_id_read(h->fd, &st, &id, &eb))
                h->id = id; /* a longer fingerprint, as the file grew */
        }
        const struct lf_input_conf *in = &t->cfg->inputs[h->input_idx];
        if (lf_registry_set(t->reg, in->id, &h->id, acked, h->path, wall_ms))
            continue; /* out of memory: tried again next time */
        h->registered = acked;
    }
    struct lf_errbuf eb = { "" };
    if (lf_registry_flush(t->reg, &eb)) {
        lf_error("registry: %s; offsets stay in memory and are written at the next flush",
                 eb.msg);
    }
    uv_mutex_lock(&t->mu);
    t->stats.registry_flushes = lf_registry_flushes(t->reg);
    uv_mutex_unlock(&t->mu);
}

static void free_retired(struct lf_tail *t, bool all)
{
    size_t k = 0;
    for (size_t i = 0; i < t->n_retired; i++) {
        struct retired *r = &t->retired[i];
        if (all || __atomic_load_n(&r->src->acked_offset, __ATOMIC_ACQUIRE) >= r->last_end)
            lf_source_free(r->src);
        else
            t->retired[k++] = *r;
    }
    t->n_retired = k;
}

/* Closes files idle for close_inactive (at once when others wait for an fd), forgets
 * deleted files whose every event is acknowledged, and warns about deleted files held open
 * with unread data. */
static void housekeeping(struct lf_tail *t, int64_t now_ms)
{
    bool others_wait = false;
    for (size_t i = 0; i < t->n_h; i++)
        others_wait |= t->h[i]->waiting;
    uint64_t removed_open = 0;
    for (size_t i = 0; i < t->n_h;) {
        struct harv *h = t->h[i];
        const struct lf_input_conf *in = &t->cfg->inputs[h->input_idx];
        if (h->fd >= 0 && !h->dirty && h->reader == NULL && !lf_chain_holding(h->chain) &&
            (others_wait || now_ms - h->active_ms >= (int64_t)in->close_inactive_ms))
            lf_tail__harv_close(t, h);
        if (h->deleted && h->fd >= 0 && in->close_removed_after_ms > 0 &&
            now_ms - h->deleted_ms >= (int64_t)in->close_removed_after_ms) {
            struct stat st;
            uint64_t size = fstat(h->fd, &st) == 0 ? (uint64_t)st.st_size : h->read_pos;
            uint64_t lost = size > h->emitted_end ? size - h->emitted_end : 0;
            lf_warn("input %s: %s was deleted %" PRId64 " s ago and is still unread; giving up "
                    "its last %" PRIu64 " bytes (close_removed_after)", in->id, h->path,
                    (now_ms - h->deleted_ms) / 1000, lost);
            uv_mutex_lock(&t->mu);
            t->stats.bytes_given_up += lost;
            uv_mutex_unlock(&t->mu);
            lf_tail__harv_close(t, h);
        }
        if (h->deleted && h->fd >= 0) {
            removed_open++;
            if (now_ms - h->removed_warned_ms >= LF_TAIL_WARN_MS) {
                lf_warn("input %s: %s was deleted but is held open: %" PRIu64 " bytes read, "
                        "waiting for the outputs", in->id, h->path, h->read_pos);
                h->removed_warned_ms = now_ms;
            }
        }
        if (h->deleted && h->fd < 0 && lf_tail__harv_acked(h) >= h->emitted_end) {
            if (t->cfg->registry.clean_removed && h->identified)
                lf_registry_remove(t->reg, in->id, h->id.dev, h->id.ino);
            forget(t, i);
            continue;
        }
        i++;
    }
    free_retired(t, false);
    uv_mutex_lock(&t->mu);
    for (size_t k = 0; k < t->cfg->n_inputs; k++)
        t->in_stats[k].files_open = 0;
    for (size_t i = 0; i < t->n_h; i++)
        t->in_stats[t->h[i]->input_idx].files_open += t->h[i]->fd >= 0;
    t->stats.files_open = t->n_open;
    t->stats.files_known = t->n_h;
    t->stats.files_removed_open = removed_open;
    uv_mutex_unlock(&t->mu);
}

/* ---- the thread ------------------------------------------------------------------ */

/* Takes the inbox; returns false when asked to stop. Waits until there is something to do
 * or the next timer is due. */
static bool take_inbox(struct lf_tail *t, int64_t now_ms)
{
    bool busy = t->busy; /* the last turn left data unread: no waiting */
    int64_t due = t->next_scan_ms;
    if (t->next_poll_ms < due)
        due = t->next_poll_ms;
    if (t->next_registry_ms < due)
        due = t->next_registry_ms;
    if (t->events_since_cut > 0 && t->next_cut_ms < due)
        due = t->next_cut_ms;
    if (t->next_tick_ms < due)
        due = t->next_tick_ms;
    uv_mutex_lock(&t->mu);
    if (!busy && !t->want_stop && !t->want_scan && t->n_notes == 0 && due > now_ms) {
        uint64_t wait_ns = (uint64_t)(due - now_ms) * 1000000u;
        lf_err_ignore(uv_cond_timedwait(&t->cond, &t->mu, wait_ns) ? LF_EAGAIN : LF_OK);
    }
    char **notes = t->notes;
    size_t n_notes = t->n_notes;
    t->notes = NULL;
    t->n_notes = 0;
    t->cap_notes = 0;
    if (t->want_scan)
        t->next_scan_ms = 0;
    t->want_scan = false;
    bool stop = t->want_stop;
    uv_mutex_unlock(&t->mu);
    for (size_t i = 0; i < n_notes; i++) {
        handle_note(t, notes[i]);
        free(notes[i]);
    }
    free(notes);
    return !stop;
}

/* One turn: whatever timers are due, then a fair share of reading for every dirty file. */
static enum lf_err turn(struct lf_tail *t, bool *first_scan)
{
    const struct lf_config *cfg = t->cfg;
    int64_t now = lf_tail__now_ms();
    enum lf_err err = LF_OK;
    if (now >= t->next_scan_ms) {
        uint64_t scan_ms = UINT64_MAX;
        for (size_t i = 0; i < cfg->n_inputs; i++) {
            if (cfg->inputs[i].scan_interval_ms < scan_ms)
                scan_ms = cfg->inputs[i].scan_interval_ms;
        }
        err = scan_all(t, *first_scan, now);
        if (*first_scan && !err && cfg->registry.clean_removed)
            clean_registry(t);
        *first_scan = false;
        if (err)
            lf_error("scan failed: %s; trying again in %" PRIu64 " ms", lf_err_str(err), scan_ms);
        t->next_scan_ms = now + (int64_t)(scan_ms ? scan_ms : 1000);
    }
    if (now >= t->next_poll_ms) {
        for (size_t i = 0; i < t->n_h && t->n_open > 0; i++) {
            if (t->h[i]->fd >= 0)
                lf_tail__harv_poll(t, t->h[i]);
        }
        t->next_poll_ms = now + LF_TAIL_POLL_MS;
    }
    t->busy = false;
    for (size_t i = 0; i < t->n_h && t->n_open > 0; i++) {
        struct harv *h = t->h[i];
        if (h->dirty && h->fd >= 0) {
            err = lf_tail__harv_read(t, h, LF_TAIL_TURN_BYTES);
            if (err)
                return err; /* the pipeline failed for good */
            if (lf_chain_holding(h->chain))
                t->next_tick_ms = now; /* learn its deadline at the tick below */
            t->busy |= h->dirty && h->fd >= 0; /* its fair share ran out before EOF */
        }
    }
    now = lf_tail__now_ms();
    if (now >= t->next_tick_ms) {
        /* Multiline timeouts: events held with no new line for too long go out. */
        t->next_tick_ms = INT64_MAX;
        for (size_t i = 0; i < t->n_h; i++) {
            struct harv *h = t->h[i];
            if (!lf_chain_holding(h->chain))
                continue;
            int64_t next = INT64_MAX;
            err = lf_chain_tick(h->chain, now, &next);
            if (err)
                return err;
            if (next < t->next_tick_ms)
                t->next_tick_ms = next;
        }
    }
    now = lf_tail__now_ms();
    if (now >= t->next_cut_ms) {
        if (t->events_since_cut > 0 && lf_pipeline_flush(t->pipeline))
            return LF_EIO;
        t->events_since_cut = 0;
        t->next_cut_ms = now + (int64_t)cfg->queue.batch_flush_interval_ms;
    }
    if (now >= t->next_registry_ms) {
        update_registry(t);
        housekeeping(t, now); /* may close files, making room for waiting ones */
        t->want_open = true;
        t->next_registry_ms = now + (int64_t)cfg->registry.flush_interval_ms;
    }
    if (t->want_open) {
        t->want_open = false;
        size_t before = t->n_open;
        open_pending(t, now);
        t->busy |= t->n_open > before; /* read what was just opened without waiting */
    }
    return LF_OK;
}

static void tail_main(void *arg)
{
    struct lf_tail *t = arg;
    bool first_scan = true;
    enum lf_err err = LF_OK;
    while (take_inbox(t, lf_tail__now_ms())) {
        err = turn(t, &first_scan);
        if (err)
            break;
    }
    /* Stopping: what was read goes out, held multiline events included, and is waited for
     * (until shutdown_timeout, when the daemon aborts the pipeline); then the acknowledged
     * offsets are persisted. */
    for (size_t i = 0; i < t->n_h && !err; i++)
        err = lf_tail__harv_flush(t, t->h[i]);
    struct lf_errbuf eb = { "" };
    enum lf_err derr = lf_pipeline_drain(t->pipeline, &eb);
    if (derr)
        lf_error("stopping: %s; the registry keeps only acknowledged offsets", eb.msg);
    update_registry(t);
    t->result = err ? err : derr;
    if (t->hooks != NULL && t->hooks->on_end != NULL)
        t->hooks->on_end(t->hooks->arg);
}

/* ---- lifecycle ------------------------------------------------------------------- */

enum lf_err lf_tail_new(const struct lf_config *cfg, struct lf_chain_spec *const *specs,
                        struct lf_pipeline *p, struct lf_registry *reg,
                        const struct lf_tail_hooks *hooks, struct lf_tail **out,
                        struct lf_errbuf *eb)
{
    struct lf_tail *t = calloc(1, sizeof(*t));
    if (t == NULL)
        return LF_ENOMEM;
    t->cfg = cfg;
    t->specs = specs;
    t->next_tick_ms = INT64_MAX;
    t->pipeline = p;
    t->reg = reg;
    t->hooks = hooks;
    if (gethostname(t->host, sizeof(t->host)) != 0)
        snprintf(t->host, sizeof(t->host), "localhost");
    t->host[sizeof(t->host) - 1] = '\0';
    if (uv_mutex_init(&t->mu) != 0) {
        free(t);
        return lf_fail(eb, LF_EIO, "cannot create a mutex");
    }
    if (uv_cond_init(&t->cond) != 0) {
        uv_mutex_destroy(&t->mu);
        free(t);
        return lf_fail(eb, LF_EIO, "cannot create a condition variable");
    }
    t->disc = calloc(cfg->n_inputs ? cfg->n_inputs : 1, sizeof(*t->disc));
    t->in_stats = calloc(cfg->n_inputs ? cfg->n_inputs : 1, sizeof(*t->in_stats));
    if (t->disc == NULL || t->in_stats == NULL) {
        lf_tail_free(t);
        return LF_ENOMEM;
    }
    for (size_t i = 0; i < cfg->n_inputs; i++) {
        if (cfg->inputs[i].type != LF_INPUT_FILE)
            continue;
        enum lf_err err = lf_discover_new(&cfg->inputs[i], &t->disc[i], eb);
        if (err) {
            lf_tail_free(t);
            return err;
        }
    }
    *out = t;
    return LF_OK;
}

enum lf_err lf_tail_start(struct lf_tail *t, struct lf_errbuf *eb)
{
    if (uv_thread_create(&t->thread, tail_main, t) != 0)
        return lf_fail(eb, LF_EIO, "cannot start the tail thread");
    t->started = true;
    return LF_OK;
}

enum lf_err lf_tail_join(struct lf_tail *t)
{
    if (t->started) {
        uv_thread_join(&t->thread);
        t->started = false;
    }
    return t->result;
}

void lf_tail_free(struct lf_tail *t)
{
    if (t == NULL)
        return;
    for (size_t i = 0; i < t->n_h; i++)
        lf_tail__harv_free(t, t->h[i]);
    free(t->h);
    free_dirs(t->dirs, t->n_dirs);
    free_retired(t, true);
    free(t->retired);
    if (t->disc != NULL) {
        for (size_t i = 0; i < t->cfg->n_inputs; i++)
            lf_discover_free(t->disc[i]);
        free(t->disc);
    }
    for (size_t i = 0; i < t->n_notes; i++)
        free(t->notes[i]);
    free(t->notes);
    free(t->in_stats);
    uv_cond_destroy(&t->cond);
    uv_mutex_destroy(&t->mu);
    free(t);
}
