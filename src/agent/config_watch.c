/* config_watch.c - config_watch: true: the daemon reloads, as on SIGHUP, when the bytes of
 * its config file change.
 *
 *   uv_fs_event(dir of the path) ─┐
 *   uv_fs_event(dir it resolves to)┼─► debounce 500 ms ─► hash the bytes ─► differ? reload
 *   every 10 s: stat, changed? ────┘
 *
 * The file itself is never watched: editors and Kubernetes replace it (a rename over it; a
 * ConfigMap swaps the `..data` symlink its path goes through), so an inotify watch on it
 * would stay on the old inode. The directory holding the path is watched instead, and the
 * directory the path resolves to when that is elsewhere (re-resolved at every look); a
 * stat every 10 s is the fallback where no event comes (network file systems, a watch that
 * failed). Whether it changed is decided on the bytes: a FNV-1a hash of what the last
 * reload (or the start) read, so a touch or the same text written again reloads nothing.
 *
 * struct lf_cfgwatch is owned by struct daemon (d->cfgwatch) and lives on the loop thread
 * only; it frees itself when its last handle has closed. */
#include "config.h"

#define LF_LOG_COMPONENT "daemon"
#include "daemon_int.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "logferry/log.h"

#define LF_CFGWATCH_DEBOUNCE_MS  500
#define LF_CFGWATCH_BURST_MAX_MS 5000 /* a burst that never ends is looked at this often */
#define LF_CFGWATCH_POLL_MS      10000

/* What the path resolved to at one look (stat only). */
struct snap {
    bool ok;
    dev_t dev;
    ino_t ino;
    off_t size;
    struct timespec mtim;
    char real[PATH_MAX];
};

struct lf_cfgwatch {
    struct daemon *d;
    uv_fs_event_t dir_ev;  /* the directory of the path as configured */
    uv_fs_event_t real_ev; /* the directory of what it resolves to, when elsewhere */
    uv_timer_t debounce;
    uv_timer_t poll;
    char *dir;         /* owned */
    char *name;        /* owned; the path's last component */
    char *real_dir;    /* owned; what real_ev watches, or NULL */
    char *real_name;   /* owned; the resolved file's last component, or NULL */
    uint64_t burst_ns; /* when the first event of the pending burst came; 0: none pending */
    struct snap seen;  /* at the latest look */
    uint64_t hash;     /* of the bytes the running config was loaded from */
    bool hashed;       /* hash is known */
    bool unreadable_logged;
    int open_handles;
};

/* Splits path into its directory ("." for none) and last component. false: out of memory. */
static bool split_path(const char *path, char **dir, char **name)
{
    const char *slash = strrchr(path, '/');
    *dir = slash == NULL   ? strdup(".")
           : slash == path ? strdup("/")
                           : strndup(path, (size_t)(slash - path));
    *name = strdup(slash != NULL ? slash + 1 : path);
    if (*dir == NULL || *name == NULL) {
        free(*dir);
        free(*name);
        return false;
    }
    return true;
}

static void take_snap(const char *path, struct snap *s)
{
    struct stat st;
    memset(s, 0, sizeof(*s));
    if (realpath(path, s->real) == NULL || stat(s->real, &st) != 0) {
        s->real[0] = '\0';
        return;
    }
    s->ok = true;
    s->dev = st.st_dev;
    s->ino = st.st_ino;
    s->size = st.st_size;
    s->mtim = st.st_mtim;
}

static bool snap_same(const struct snap *a, const struct snap *b)
{
    return a->ok == b->ok && a->dev == b->dev && a->ino == b->ino && a->size == b->size &&
           a->mtim.tv_sec == b->mtim.tv_sec && a->mtim.tv_nsec == b->mtim.tv_nsec &&
           strcmp(a->real, b->real) == 0;
}

/* FNV-1a over the file's bytes. 0, or an errno value. */
static int hash_file(const char *path, uint64_t *out)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return errno;
    uint64_t h = 0xcbf29ce484222325u;
    char buf[8192];
    for (;;) {
        ssize_t n = read(fd, buf, sizeof(buf));
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            int e = errno;
            close(fd);
            return e;
        }
        if (n == 0)
            break;
        for (ssize_t i = 0; i < n; i++)
            h = (h ^ (unsigned char)buf[i]) * 0x100000001b3u;
    }
    close(fd);
    *out = h;
    return 0;
}

static void on_fs_event(uv_fs_event_t *handle, const char *filename, int events, int status);

/* Watches the directory the path resolves to, when it is not the path's own: a symlinked
 * config edited where it really lives. Kubernetes' timestamped directory is deleted at the
 * next update; the path then resolves elsewhere and the watch moves with it. */
static void follow_real_dir(struct lf_cfgwatch *w)
{
    char *dir = NULL;
    char *name = NULL;
    if (w->seen.ok && !split_path(w->seen.real, &dir, &name))
        return;
    if (dir != NULL && strcmp(dir, w->dir) == 0) {
        free(dir);
        free(name);
        dir = name = NULL;
    }
    if (dir != NULL && w->real_dir != NULL && strcmp(dir, w->real_dir) == 0) {
        free(w->real_name);
        w->real_name = name;
        free(dir);
        return;
    }
    if (w->real_dir != NULL)
        uv_fs_event_stop(&w->real_ev);
    free(w->real_dir);
    free(w->real_name);
    w->real_dir = dir;
    w->real_name = name;
    if (dir != NULL && uv_fs_event_start(&w->real_ev, on_fs_event, dir, 0) != 0) {
        free(w->real_dir);
        free(w->real_name);
        w->real_dir = w->real_name = NULL; /* the 10 s stat covers it */
    }
}

/* Records the bytes a reload (or the start) is about to load as the running ones. */
static void note_loaded(struct lf_cfgwatch *w)
{
    w->hashed = hash_file(w->d->cfg->path, &w->hash) == 0;
}

/* Looks at the file: reloads when its bytes differ from the running config's. */
static void look(struct lf_cfgwatch *w)
{
    struct daemon *d = w->d;
    const char *path = d->cfg->path;
    take_snap(path, &w->seen);
    follow_real_dir(w);
    if (d->stopping)
        return;
    uint64_t h = 0;
    int e = hash_file(path, &h);
    if (e != 0) {
        if (!w->unreadable_logged)
            lf_warn("config_watch: cannot read %s: %s; the running configuration stays", path,
                    strerror(e));
        w->unreadable_logged = true;
        return;
    }
    w->unreadable_logged = false;
    if (w->hashed && h == w->hash) {
        lf_info("config_watch: %s changed on disk, its content did not: no reload", path);
        return;
    }
    if (d->reloading) {
        d->reload_again = true; /* the reload after this one reads the latest bytes */
        d->again_cause = "config file changed";
        return;
    }
    lf_daemon__start_reload(d, "config file changed");
}

static void on_debounce(uv_timer_t *t)
{
    struct lf_cfgwatch *w = t->data;
    w->burst_ns = 0;
    look(w);
}

static void on_fs_event(uv_fs_event_t *handle, const char *filename, int events, int status)
{
    struct lf_cfgwatch *w = handle->data;
    (void)events;
    if (status < 0) {
        lf_warn("config_watch: watching for changes failed: %s; %s is checked every %d s",
                uv_strerror(status), w->d->cfg->path, LF_CFGWATCH_POLL_MS / 1000);
        uv_fs_event_stop(handle);
        return;
    }
    /* Only the file's name, or a Kubernetes `..data` swap, or an overflow (NULL). */
    const char *want = handle == &w->dir_ev ? w->name : w->real_name;
    if (filename != NULL && strncmp(filename, "..", 2) != 0 &&
        (want == NULL || strcmp(filename, want) != 0))
        return;
    uint64_t now = uv_hrtime();
    if (w->burst_ns == 0)
        w->burst_ns = now;
    if (now - w->burst_ns < (uint64_t)LF_CFGWATCH_BURST_MAX_MS * 1000000u ||
        !uv_is_active((uv_handle_t *)&w->debounce))
        uv_timer_start(&w->debounce, on_debounce, LF_CFGWATCH_DEBOUNCE_MS, 0);
}

/* The fallback: stat only; the bytes are read when what the path resolves to changed. */
static void on_poll(uv_timer_t *t)
{
    struct lf_cfgwatch *w = t->data;
    struct snap now;
    take_snap(w->d->cfg->path, &now);
    if (!snap_same(&now, &w->seen) && !uv_is_active((uv_handle_t *)&w->debounce))
        look(w);
}

static void on_closed(uv_handle_t *h)
{
    struct lf_cfgwatch *w = h->data;
    if (--w->open_handles > 0)
        return;
    free(w->dir);
    free(w->name);
    free(w->real_dir);
    free(w->real_name);
    free(w);
}

static void cfgwatch_close(struct daemon *d)
{
    struct lf_cfgwatch *w = d->cfgwatch;
    if (w == NULL)
        return;
    d->cfgwatch = NULL;
    uv_close((uv_handle_t *)&w->dir_ev, on_closed);
    uv_close((uv_handle_t *)&w->real_ev, on_closed);
    uv_close((uv_handle_t *)&w->debounce, on_closed);
    uv_close((uv_handle_t *)&w->poll, on_closed);
}

static void cfgwatch_start(struct daemon *d)
{
    struct lf_cfgwatch *w = calloc(1, sizeof(*w));
    if (w == NULL || !split_path(d->cfg->path, &w->dir, &w->name)) {
        free(w);
        lf_error("config_watch: out of memory; reload with SIGHUP");
        return;
    }
    w->d = d;
    uv_fs_event_init(&d->loop, &w->dir_ev);
    uv_fs_event_init(&d->loop, &w->real_ev);
    uv_timer_init(&d->loop, &w->debounce);
    uv_timer_init(&d->loop, &w->poll);
    w->dir_ev.data = w->real_ev.data = w->debounce.data = w->poll.data = w;
    w->open_handles = 4;
    d->cfgwatch = w;
    note_loaded(w);
    take_snap(d->cfg->path, &w->seen);
    follow_real_dir(w);
    int rc = uv_fs_event_start(&w->dir_ev, on_fs_event, w->dir, 0);
    uv_timer_start(&w->poll, on_poll, LF_CFGWATCH_POLL_MS, LF_CFGWATCH_POLL_MS);
    if (rc != 0)
        lf_warn("config_watch: cannot watch %s: %s; %s is checked every %d s", w->dir,
                uv_strerror(rc), d->cfg->path, LF_CFGWATCH_POLL_MS / 1000);
    else
        lf_info("config_watch: reloading when %s changes (watching %s)", d->cfg->path, w->dir);
}

/* Starts or stops watching as the running config's config_watch says. Loop thread. */
void lf_daemon__cfgwatch_apply(struct daemon *d)
{
    bool want = d->cfg->config_watch && !d->stopping;
    if (want && d->cfgwatch == NULL)
        cfgwatch_start(d);
    else if (!want && d->cfgwatch != NULL)
        cfgwatch_close(d);
}

/* A reload is about to read the file: its bytes are the running ones from now on. */
void lf_daemon__cfgwatch_loading(struct daemon *d)
{
    if (d->cfgwatch != NULL)
        note_loaded(d->cfgwatch);
}

void lf_daemon__cfgwatch_close(struct daemon *d)
{
    cfgwatch_close(d);
}
