/* discover.c - glob expansion with `**`, symlink-aware, deduplicated (see discover.h).
 *
 * A pattern is split into '/'-separated segments and walked from its root directory:
 * a literal segment is a stat, a wildcard segment a readdir + fnmatch, and `**` tries the
 * rest of the pattern here and then in every subdirectory, recursively. Walking keeps the
 * (device, inode) of the directories on the current path to refuse symlink cycles. Found
 * files are collected, deduplicated by (device, inode) keeping the first path, and
 * reported in path order. */
#include "config.h"

#define LF_LOG_COMPONENT "discover"
#include "logferry/discover.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <pcre2.h>
#include <stdlib.h>
#include <string.h>

#include "logferry/buf.h"
#include "logferry/log.h"
#include "logferry/roots.h"

#define LF_DISCOVER_MAX_DEPTH 64 /* directories below a `**`, at most */
#define LF_DISCOVER_MAX_SEGS  128
#define LF_DISCOVER_MAX_ODD   256 /* non-regular paths remembered, to warn once each */

struct found {
    char *path; /* owned */
    struct stat st;
    size_t order; /* discovery order, to keep the first path of a file seen twice */
};

struct lf_discover {
    const struct lf_input_conf *in; /* borrowed */
    pcre2_code **exclude;           /* owned; in->n_exclude_files compiled regexes */
    pcre2_match_data *md;           /* owned */
    char **odd;                     /* owned; non-regular paths already warned about */
    size_t n_odd;
    struct found *found;            /* owned; this scan's results */
    size_t n_found;
    size_t cap_found;
    int64_t now_ms;
    bool incomplete; /* the last scan could not list a directory that exists */
};

/* One walk of one pattern. */
struct walk {
    struct lf_discover *d;
    char *segs[LF_DISCOVER_MAX_SEGS]; /* borrowed from a copy of the pattern */
    size_t n_segs;
    struct {
        dev_t dev;
        ino_t ino;
    } stack[LF_DISCOVER_MAX_DEPTH + LF_DISCOVER_MAX_SEGS]; /* directories on the current path */
    size_t depth;
    size_t globstar_depth; /* directories entered below the current `**` */
    enum lf_err err;
};

static bool has_magic(const char *s)
{
    return strpbrk(s, "*?[") != NULL;
}

enum lf_err lf_discover_new(const struct lf_input_conf *in, struct lf_discover **out,
                            struct lf_errbuf *eb)
{
    struct lf_discover *d = calloc(1, sizeof(*d));
    if (d == NULL)
        return LF_ENOMEM;
    d->in = in;
    d->exclude = calloc(in->n_exclude_files ? in->n_exclude_files : 1, sizeof(*d->exclude));
    d->md = pcre2_match_data_create(4, NULL);
    if (d->exclude == NULL || d->md == NULL) {
        lf_discover_free(d);
        return LF_ENOMEM;
    }
    for (size_t i = 0; i < in->n_exclude_files; i++) {
        int code;
        PCRE2_SIZE off;
        d->exclude[i] = pcre2_compile((PCRE2_SPTR)in->exclude_files[i], PCRE2_ZERO_TERMINATED, 0,
                                      &code, &off, NULL);
        if (d->exclude[i] == NULL) {
            PCRE2_UCHAR msg[256];
            pcre2_get_error_message(code, msg, sizeof(msg));
            lf_discover_free(d);
            return lf_fail(eb, LF_ECONFIG, "input %s: exclude_files[%zu]: %s at offset %zu",
                           in->id, i, (const char *)msg, (size_t)off);
        }
        /* JIT is an optimisation: where it is unavailable the interpreter matches the same. */
        pcre2_jit_compile(d->exclude[i], PCRE2_JIT_COMPLETE);
    }
    *out = d;
    return LF_OK;
}

void lf_discover_free(struct lf_discover *d)
{
    if (d == NULL)
        return;
    if (d->exclude != NULL) {
        for (size_t i = 0; i < d->in->n_exclude_files; i++)
            pcre2_code_free(d->exclude[i]);
        free(d->exclude);
    }
    pcre2_match_data_free(d->md);
    for (size_t i = 0; i < d->n_odd; i++)
        free(d->odd[i]);
    free(d->odd);
    for (size_t i = 0; i < d->n_found; i++)
        free(d->found[i].path);
    free(d->found);
    free(d);
}

static bool excluded(struct lf_discover *d, const char *path)
{
    size_t len = strlen(path);
    for (size_t i = 0; i < d->in->n_exclude_files; i++) {
        if (pcre2_match(d->exclude[i], (PCRE2_SPTR)path, len, 0, 0, d->md, NULL) >= 0)
            return true;
    }
    return false;
}

/* A glob matched something that is not a regular file: say so once per path (at most
 * LF_DISCOVER_MAX_ODD paths are remembered; past that, only debug). */
static void warn_odd(struct lf_discover *d, const char *path, const struct stat *st)
{
    for (size_t i = 0; i < d->n_odd; i++) {
        if (strcmp(d->odd[i], path) == 0)
            return;
    }
    if (d->n_odd == LF_DISCOVER_MAX_ODD) {
        lf_debug("input %s: %s is %s; skipping it", d->in->id, path, lf_roots_kind_of(st->st_mode));
        return;
    }
    char **a = realloc(d->odd, (d->n_odd + 1) * sizeof(*a));
    if (a == NULL)
        return;
    d->odd = a;
    d->odd[d->n_odd] = strdup(path);
    if (d->odd[d->n_odd] != NULL)
        d->n_odd++;
    lf_warn("input %s: %s is %s, not a regular file; skipping it", d->in->id, path,
            lf_roots_kind_of(st->st_mode));
}

static void add_found(struct walk *w, const char *path, const struct stat *st)
{
    struct lf_discover *d = w->d;
    if (excluded(d, path))
        return;
    if (!S_ISREG(st->st_mode)) {
        warn_odd(d, path, st);
        return;
    }
    if (d->in->ignore_older_ms > 0) {
        int64_t mtime_ms = (int64_t)st->st_mtim.tv_sec * 1000 + st->st_mtim.tv_nsec / 1000000;
        if (d->now_ms - mtime_ms > (int64_t)d->in->ignore_older_ms)
            return;
    }
    if (lf_array_grow(&d->found, &d->cap_found, d->n_found, sizeof(*d->found), 64)) {
        w->err = LF_ENOMEM;
        return;
    }
    char *copy = strdup(path);
    if (copy == NULL) {
        w->err = LF_ENOMEM;
        return;
    }
    d->found[d->n_found].path = copy;
    d->found[d->n_found].st = *st;
    d->found[d->n_found].order = d->n_found;
    d->n_found++;
}

static bool on_stack(const struct walk *w, const struct stat *st)
{
    for (size_t i = 0; i < w->depth; i++) {
        if (w->stack[i].dev == st->st_dev && w->stack[i].ino == st->st_ino)
            return true;
    }
    return false;
}

static void walk(struct walk *w, struct lf_buf *path, size_t seg);

/* The last segment matched name in the directory open as dfd (path): stat it relative to
 * the directory, which spares the kernel a walk of the whole path per file. */
static void found_at(struct walk *w, struct lf_buf *path, int dfd, const char *name)
{
    struct stat st;
    if (fstatat(dfd, name, &st, 0) != 0)
        return; /* vanished, or a dangling link: nothing to follow */
    size_t saved = path->len;
    bool need_slash = path->len > 0 && path->ptr[path->len - 1] != '/';
    if ((need_slash && lf_buf_append(path, "/", 1)) ||
        lf_buf_append(path, name, strlen(name) + 1)) {
        w->err = LF_ENOMEM;
    } else {
        add_found(w, path->ptr, &st);
    }
    path->len = saved;
    path->ptr[saved] = '\0';
}

/* Appends "/name" (or "name" after a root "/") to path, walks, and restores path. */
static void walk_child(struct walk *w, struct lf_buf *path, const char *name, size_t seg)
{
    size_t saved = path->len;
    bool need_slash = path->len > 0 && path->ptr[path->len - 1] != '/';
    if ((need_slash && lf_buf_append(path, "/", 1)) ||
        lf_buf_append(path, name, strlen(name) + 1)) {
        w->err = LF_ENOMEM;
        path->len = saved;
        return;
    }
    path->len--; /* keep the NUL after the bytes, not in len */
    walk(w, path, seg);
    path->len = saved;
    path->ptr[saved] = '\0';
}

/* Enters directory `path` (already stat'ed as st) to continue matching at segment seg. */
static void walk_dir(struct walk *w, struct lf_buf *path, const struct stat *st, size_t seg,
                     bool globstar)
{
    if (on_stack(w, st) || w->depth >= sizeof(w->stack) / sizeof(w->stack[0]))
        return;
    if (globstar && w->globstar_depth >= LF_DISCOVER_MAX_DEPTH)
        return;
    const char *pat = w->segs[seg];
    const char *dir = path->len > 0 ? path->ptr : ".";
    DIR *dh = opendir(dir);
    if (dh == NULL) {
        int e = errno;
        if (e != ENOENT && e != ENOTDIR) {
            lf_warn("input %s: cannot list %s: %s; skipping it", w->d->in->id, dir, lf_strerror(e));
            w->d->incomplete = true; /* what it holds is unknown, not gone */
        }
        return;
    }
    w->stack[w->depth].dev = st->st_dev;
    w->stack[w->depth].ino = st->st_ino;
    w->depth++;
    struct dirent *de;
    while (w->err == LF_OK && (de = readdir(dh)) != NULL) {
        const char *name = de->d_name;
        if (strcmp(name, ".") == 0 || strcmp(name, "..") == 0)
            continue;
        if (globstar) {
            /* Only directories (or links that may lead to one) continue a `**`: a file
             * here is matched by the segments after it, in the zero-directory branch. */
            if (name[0] == '.' ||
                (de->d_type != DT_DIR && de->d_type != DT_LNK && de->d_type != DT_UNKNOWN))
                continue;
            w->globstar_depth++;
            walk_child(w, path, name, seg); /* stay on the `**` segment, one level down */
            w->globstar_depth--;
        } else if (fnmatch(pat, name, FNM_PERIOD) == 0) {
            if (seg + 1 == w->n_segs)
                found_at(w, path, dirfd(dh), name);
            else
                walk_child(w, path, name, seg + 1);
        }
    }
    closedir(dh);
    w->depth--;
}

/* path (NUL-terminated, len without the NUL) has matched segments [0, seg). */
static void walk(struct walk *w, struct lf_buf *path, size_t seg)
{
    if (w->err)
        return;
    struct stat st;
    const char *p = path->len > 0 ? path->ptr : ".";
    if (seg == w->n_segs) {
        if (stat(p, &st) == 0)
            add_found(w, p, &st);
        return;
    }
    if (stat(p, &st) != 0 || !S_ISDIR(st.st_mode))
        return;
    const char *pat = w->segs[seg];
    if (strcmp(pat, "**") == 0) {
        walk(w, path, seg + 1);            /* `**` as zero directories */
        walk_dir(w, path, &st, seg, true); /* and as one more */
    } else if (!has_magic(pat)) {
        walk_child(w, path, pat, seg + 1);
    } else {
        walk_dir(w, path, &st, seg, false);
    }
}

static enum lf_err scan_pattern(struct lf_discover *d, const char *pattern)
{
    struct walk w = { .d = d };
    char *copy = strdup(pattern);
    if (copy == NULL)
        return LF_ENOMEM;
    struct lf_buf path;
    lf_buf_init(&path, SIZE_MAX);
    if (lf_buf_grow(&path, strlen(pattern) + 256)) {
        free(copy);
        return LF_ENOMEM;
    }
    path.ptr[0] = '\0';
    if (pattern[0] == '/') {
        path.ptr[0] = '/';
        path.ptr[1] = '\0';
        path.len = 1;
    }
    char *save = NULL;
    for (char *s = strtok_r(copy, "/", &save); s != NULL; s = strtok_r(NULL, "/", &save)) {
        if (w.n_segs == LF_DISCOVER_MAX_SEGS) {
            lf_warn("input %s: pattern %s has too many segments; skipping it", d->in->id, pattern);
            goto out;
        }
        /* Consecutive `**` mean the same as one. */
        if (strcmp(s, "**") == 0 && w.n_segs > 0 && strcmp(w.segs[w.n_segs - 1], "**") == 0)
            continue;
        w.segs[w.n_segs++] = s;
    }
    walk(&w, &path, 0);
out:
    lf_buf_release(&path);
    free(copy);
    return w.err;
}

static int by_identity(const void *a, const void *b)
{
    const struct found *x = a;
    const struct found *y = b;
    if (x->st.st_dev != y->st.st_dev)
        return x->st.st_dev < y->st.st_dev ? -1 : 1;
    if (x->st.st_ino != y->st.st_ino)
        return x->st.st_ino < y->st.st_ino ? -1 : 1;
    return x->order < y->order ? -1 : x->order > y->order;
}

static int by_path(const void *a, const void *b)
{
    const struct found *x = a;
    const struct found *y = b;
    return strcmp(x->path, y->path);
}

enum lf_err lf_discover_scan(struct lf_discover *d, int64_t now_ms, lf_found_fn *fn, void *arg)
{
    d->now_ms = now_ms;
    d->incomplete = false;
    enum lf_err err = LF_OK;
    for (size_t i = 0; i < d->in->n_paths && !err; i++)
        err = scan_pattern(d, d->in->paths[i]);
    if (!err && d->n_found > 0) {
        qsort(d->found, d->n_found, sizeof(*d->found), by_identity);
        size_t n = 1;
        for (size_t i = 1; i < d->n_found; i++) {
            if (d->found[i].st.st_dev == d->found[n - 1].st.st_dev &&
                d->found[i].st.st_ino == d->found[n - 1].st.st_ino) {
                free(d->found[i].path);
                continue;
            }
            d->found[n++] = d->found[i];
        }
        d->n_found = n;
        qsort(d->found, d->n_found, sizeof(*d->found), by_path);
        for (size_t i = 0; i < d->n_found; i++) {
            if (fn(arg, d->found[i].path, &d->found[i].st) != 0)
                break;
        }
    }
    for (size_t i = 0; i < d->n_found; i++)
        free(d->found[i].path);
    d->n_found = 0;
    return err;
}

bool lf_discover_incomplete(const struct lf_discover *d)
{
    return d->incomplete;
}

/* Matches path segments [p, pe) against pattern segments [g, ge). */
static bool match_segs(char **g, char **ge, char **p, char **pe)
{
    for (; g < ge; g++, p++) {
        if (strcmp(*g, "**") == 0) {
            for (char **q = p; q <= pe; q++) {
                if (match_segs(g + 1, ge, q, pe))
                    return true;
                if (q < pe && (*q)[0] == '.')
                    return false;
            }
            return false;
        }
        if (p == pe || fnmatch(*g, *p, FNM_PERIOD) != 0)
            return false;
    }
    return p == pe;
}

static size_t split(char *s, char **segs, size_t max)
{
    size_t n = 0;
    char *save = NULL;
    for (char *t = strtok_r(s, "/", &save); t != NULL && n < max; t = strtok_r(NULL, "/", &save))
        segs[n++] = t;
    return n;
}

bool lf_glob_match(const char *pattern, const char *path)
{
    if ((pattern[0] == '/') != (path[0] == '/'))
        return false;
    char *g = strdup(pattern);
    char *p = strdup(path);
    bool ok = false;
    if (g != NULL && p != NULL) {
        char *gs[LF_DISCOVER_MAX_SEGS];
        char *ps[LF_DISCOVER_MAX_SEGS];
        size_t ng = split(g, gs, LF_DISCOVER_MAX_SEGS);
        size_t np = split(p, ps, LF_DISCOVER_MAX_SEGS);
        ok = match_segs(gs, gs + ng, ps, ps + np);
    }
    free(g);
    free(p);
    return ok;
}
