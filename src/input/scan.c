/* scan.c - the tail thread's glob scans: harvesters found, renamed, opened, forgotten.
 *
 * Harvesters are kept in one array sorted by (path, input): a notification costs a binary
 * search, and a scan, whose results come in path order, marks what it finds. Files seen
 * for the first time are placed by the registry (same inode and fingerprint prefix), as
 * copies of a followed file (copytruncate), or at 0 (at their end for start_at: end). */
#include "config.h"

#define LF_LOG_COMPONENT "tail"
#include "tail_int.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "logferry/buf.h"
#include "logferry/kube.h"
#include "logferry/log.h"

static int cmp_harv(const struct harv *a, const char *path, size_t input_idx)
{
    int c = strcmp(a->path, path);
    if (c != 0)
        return c;
    return a->input_idx < input_idx ? -1 : a->input_idx > input_idx;
}

/* Index of the first harvester not below (path, input_idx). */
size_t lf_tail__lower_bound(const struct lf_tail *t, const char *path, size_t input_idx)
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
    if (lf_array_grow(&t->h, &t->cap_h, t->n_h, sizeof(*t->h), 64))
        return LF_ENOMEM;
    size_t i = lf_tail__lower_bound(t, h->path, h->input_idx);
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

void lf_tail__resort(struct lf_tail *t)
{
    if (t->n_h > 1)
        qsort(t->h, t->n_h, sizeof(*t->h), by_path);
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

static int cmp_key_id(const void *key, const void *elem)
{
    const struct lf_file_id *k = key;
    return -cmp_id(*(struct harv *const *)elem, k->dev, k->ino); /* key against element */
}

static struct harv *find_by_id(const struct scan_ctx *c, uint64_t dev, uint64_t ino)
{
    struct lf_file_id key = { .dev = dev, .ino = ino };
    struct harv **h = bsearch(&key, c->by_id, c->n_by_id, sizeof(*c->by_id), cmp_key_id);
    return h != NULL ? *h : NULL;
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
    size_t i = lf_tail__lower_bound(t, path, c->input_idx);
    for (; i < t->n_h && cmp_harv(t->h[i], path, c->input_idx) == 0; i++) {
        struct harv *h = t->h[i];
        if (h->identified) {
            if (h->id.dev == dev && h->id.ino == ino) {
                h->seen = true;
                h->mtime_ms = mtime_ms;
                h->size = (uint64_t)st->st_size;
                if (h->fd < 0 && (uint64_t)st->st_size != h->closed_size)
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
            renamed->registered = UINT64_MAX; /* the registry must learn the new path */
            count_rotation(t);
            /* Events from here on carry the new path. */
            if (lf_tail__harv_new_source(t, renamed, 0, false)) {
                c->err = LF_ENOMEM;
                return 1;
            }
        }
        renamed->seen = true;
        renamed->mtime_ms = mtime_ms;
        if (renamed->fd < 0 && (uint64_t)st->st_size != renamed->closed_size)
            renamed->dirty = true; /* changed while closed: reopening checks its content */
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
    h->size = (uint64_t)st->st_size;
    h->dirty = true;
    h->initial = c->first_scan;
    h->found_ms = lf_tail__now_ms();
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

/* True if h's path extends that of another followed file of its input (app.log.1 beside
 * app.log): the name a copytruncate copy gets. */
static bool copy_candidate(const struct lf_tail *t, const struct harv *h)
{
    for (size_t i = 0; i < t->n_h; i++) {
        const struct harv *o = t->h[i];
        size_t plen = strlen(o->path);
        if (o != h && o->input_idx == h->input_idx && o->identified &&
            strncmp(h->path, o->path, plen) == 0 && h->path[plen] != '\0')
            return true;
    }
    return false;
}

/* Decides where a file never opened before starts: from the registry if it knows this very
 * file (same inode, and the fingerprint still a prefix), else at 0, or at its end for
 * start_at: end at start-up. Resumed from the registry, h goes on with the stream id saved
 * there (if the entry has one); else it keeps the new one it was made with. */
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
            if (e->stream_id != 0) {
                h->stream_id = e->stream_id; /* the same content: its events keep their names */
                h->stream_unsaved = false;
                h->stream_fp_empty = e->id.fp_len == 0;
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
    if (h->initial && in->start_at == LF_START_END && !t->once)
        return (uint64_t)st->st_size; /* a backfill reads everything */
    return 0;
}

/* h's file cannot be opened or is no regular file (warned): counted; not read until it
 * changes (following), or at all (once mode). */
static void skip(struct lf_tail *t, struct harv *h)
{
    lf_tail__harv_unreadable(t, h);
    lf_tail__progress(t, h->size);
    h->dirty = false;
}

static bool has_container_parser(const struct lf_input_conf *in)
{
    for (size_t i = 0; i < in->n_parsers; i++) {
        if (in->parsers[i].kind == LF_PARSER_CONTAINER)
            return true;
    }
    return false;
}

/* A container's log whose pod the API server's watch has not reported yet waits for it, up
 * to kubernetes.wait from when the scan found it, so its first events carry the pod's
 * metadata. Nothing waits while the watch is down (lf_kube_cache_awaits()), nor in a
 * backfill (its pods were listed before it started). True: h was deferred. */
static bool kube_defer(struct lf_tail *t, struct harv *h, const struct lf_input_conf *in,
                       int64_t now_ms)
{
    struct lf_kube_cache *kc = lf_kube_cache_current();
    struct lf_kube_names k;
    if (kc == NULL || t->once || now_ms - h->found_ms >= (int64_t)t->cfg->kubernetes.wait_ms ||
        !has_container_parser(in) || !lf_kube_names_from_path(h->path, &k) ||
        !lf_kube_cache_awaits(kc, k.ns, k.pod))
        return false;
    h->defer_ms = now_ms + LF_TAIL_KUBE_RETRY_MS;
    if (h->defer_ms < t->next_open_ms)
        t->next_open_ms = h->defer_ms;
    return true;
}

/* Opens h: a file never opened is placed by start_offset(); a file closed for inactivity
 * must still be the same inode, else its path now leads to a new file. */
static void open_harv(struct lf_tail *t, struct harv *h, int64_t now_ms)
{
    const struct lf_input_conf *in = &t->cfg->inputs[h->input_idx];
    int fd = -1;
    int open_errno = 0;
    struct stat st;
    struct lf_file_id now;
    struct lf_errbuf eb = { "" };
    enum lf_err err = lf_tail__open(in, h->path, &fd, &st, &now, &open_errno, &eb);
    if (open_errno == EMFILE || open_errno == ENFILE) {
        /* Out of descriptors: wait like a file over max_open_files, so idle files are
         * closed to make room; the warning says so once a minute. */
        lf_warn("input %s: out of file descriptors (%s): files wait for one to be closed; "
                "raise the limit (LimitNOFILE) or lower max_open_files", in->id,
                lf_strerror(open_errno));
        h->waiting = true;
        t->fd_starved = true;
        return;
    }
    if (open_errno == 0)
        t->fd_starved = false;
    if (err == LF_EREJECTED) {
        if (!h->refused)
            lf_warn("input %s: refusing %s: %s; skipping it", in->id, h->path, eb.msg);
        h->refused = true;
        h->dirty = false;
        lf_tail__progress(t, h->size);
        return;
    }
    if (err) {
        if (now_ms - h->removed_warned_ms >= LF_TAIL_WARN_MS || h->removed_warned_ms == 0) {
            lf_warn("input %s: cannot read %s: %s; %s", in->id, h->path, eb.msg,
                    t->once ? "skipping it" : "will try again at the next scan");
            h->removed_warned_ms = now_ms;
        }
        skip(t, h);
        return;
    }
    h->refused = false;
    uint64_t offset;
    bool never_opened = !h->identified;
    if (never_opened && !h->initial && now.fp_len < LF_FINGERPRINT_MAX &&
        now_ms - h->found_ms < LF_TAIL_COPY_WAIT_MS && copy_candidate(t, h)) {
        /* Under 1 KiB, just created, named like a copy of a followed file: most likely a
         * copytruncate copy still being written, which cannot be told from a new file until
         * its first KiB is there. Wait a little rather than read it again from 0. */
        close(fd);
        h->defer_ms = now_ms + LF_TAIL_COPY_WAIT_MS / 4;
        return;
    }
    if (never_opened && kube_defer(t, h, in, now_ms)) {
        close(fd);
        return;
    }
    if (never_opened) {
        offset = start_offset(t, h, fd, &st, &now);
    } else if (h->id.dev == now.dev && h->id.ino == now.ino) {
        offset = h->read_pos;
        if (lf_tail__harv_replaced(t, h, fd, (uint64_t)st.st_size, h->read_pos)) {
            lf_info("input %s: %s changed while closed (truncated, or its inode reused by "
                    "other content); reading it again from the start", in->id, h->path);
            lf_tail__harv_restart(t, h);
            offset = 0;
        }
    } else {
        close(fd); /* another file took the path: the next scan adds it */
        h->gone = true;
        h->dirty = false;
        t->next_scan_ms = 0;
        return;
    }
    if (!never_opened && offset != h->read_pos && lf_tail__harv_new_source(t, h, offset, true)) {
        close(fd);
        return;
    }
    h->id = now;
    h->identified = true;
    if (never_opened) {
        h->src->file_dev = now.dev; /* no event of the source yet: nobody else reads it */
        h->src->file_ino = now.ino;
        h->src->stream_id = h->stream_id;
        t->streams_unsaved |= h->stream_unsaved; /* saved before the first read */
        /* Nothing of it was read: it is acknowledged up to where it starts. A reopened
         * file keeps its source, whose events may still be in flight. */
        h->acked = offset;
        h->pinned = UINT64_MAX;
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
void lf_tail__open_pending(struct lf_tail *t, int64_t now_ms)
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
        if (h->fd < 0 && h->dirty && !h->gone && !h->deleted && h->defer_ms <= now_ms)
            want[n++] = h;
    }
    if (!t->once)
        qsort(want, n, sizeof(*want), by_mtime); /* a backfill keeps the path order */
    for (size_t i = 0; i < n; i++) {
        struct harv *h = want[i];
        size_t limit = t->cfg->inputs[h->input_idx].max_open_files;
        h->waiting = t->n_open >= limit;
        if (!h->waiting)
            open_harv(t, h, now_ms);
        if (h->waiting && h->fd < 0 && t->n_open < limit) {
            /* open_harv found the process out of descriptors: the rest wait too. */
            for (size_t k = i + 1; k < n; k++)
                want[k]->waiting = true;
            break;
        }
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

void lf_tail__free_dirs(char **dirs, size_t n)
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
    lf_tail__free_dirs(t->dirs, t->n_dirs);
    t->dirs = dirs; /* kept to tell the next list from this one */
    t->n_dirs = u;
}

/* Drops harvester i (its events are all acknowledged, its file gone). */
void lf_tail__forget(struct lf_tail *t, size_t i)
{
    lf_tail__harv_free(t, t->h[i]);
    memmove(t->h + i, t->h + i + 1, (t->n_h - i - 1) * sizeof(*t->h));
    t->n_h--;
}

enum lf_err lf_tail__scan(struct lf_tail *t, bool first_scan, int64_t now_ms)
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
        c.first_scan = first_scan || t->fresh[in]; /* a new input at a reload: as at start */
        c.n_by_id = 0;
        for (size_t i = 0; i < t->n_h; i++) {
            if (t->h[i]->input_idx == in && t->h[i]->identified)
                c.by_id[c.n_by_id++] = t->h[i];
        }
        qsort(c.by_id, c.n_by_id, sizeof(*c.by_id), by_id);
        enum lf_err err = lf_discover_scan(t->disc[in], lf_now_ns() / 1000000, on_found, &c);
        if (err && !c.err)
            c.err = err;
        if (!err)
            t->fresh[in] = false;
        if (lf_discover_incomplete(t->disc[in])) {
            /* A directory could not be listed (EMFILE, EACCES): its files are unknown, not
             * gone. Nothing of this input is marked gone or forgotten by this scan. */
            for (size_t i = 0; i < t->n_h; i++)
                t->h[i]->seen |= t->h[i]->input_idx == in;
        }
        /* on_found inserts and renames: the by_id index must be rebuilt per input. */
        free(c.by_id);
        c.by_id = malloc((t->n_h ? t->n_h : 1) * sizeof(*c.by_id));
        if (c.by_id == NULL)
            return LF_ENOMEM;
    }
    free(c.by_id);
    if (c.err)
        return c.err;
    lf_tail__resort(t); /* renames changed paths */
    for (size_t i = 0; i < t->n_h;) {
        struct harv *h = t->h[i];
        if (!h->seen && t->disc[h->input_idx] != NULL) {
            if (h->fd >= 0) {
                if (!h->gone) {
                    h->gone = true; /* renamed out of the globs, deleted, or replaced */
                    h->dirty = true;
                    count_rotation(t);
                }
            } else if (h->inflight == 0 && !lf_chain_holding(h->chain)) {
                const struct lf_input_conf *in = &t->cfg->inputs[h->input_idx];
                if (t->cfg->registry.clean_removed && h->identified && access(h->path, F_OK) != 0)
                    lf_registry_remove(t->reg, in->id, h->id.dev, h->id.ino);
                lf_tail__forget(t, i);
                continue;
            }
        }
        i++;
    }
    lf_tail__open_pending(t, now_ms);
    report_dirs(t);
    return LF_OK;
}

