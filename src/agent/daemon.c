/* daemon.c - the tailing agent's loop thread: signals, directory watchers, timers.
 *
 *   main thread (libuv loop)                tail thread              delivery threads
 *   SIGTERM/SIGINT ─► lf_tail_stop ───────► drain, registry ───────► (pipeline)
 *   SIGHUP ─► load + validate ─► lf_tail_reload ─► apply ──────────► reconfigure
 *          ◄── uv_async: reloaded (ok or not) ◄──────┘
 *   uv_fs_event(dir, name) ─► lf_tail_notify(dir/name)
 *   config_watch: the config file's directory ─► the same reload (config_watch.c)
 *   ◄── uv_async: the directories to watch, after each scan
 *   timers: status line every 10 s; shutdown_timeout ─► lf_pipeline_abort
 *
 * The loop does no file I/O of its own: everything that touches a log file happens on the
 * tail thread. Watchers only make reading prompt; when inotify is unavailable or out of
 * watches, the tail thread's own polling (open files every second, globs every
 * scan_interval) keeps everything working, just later. While every watch works, the tail
 * thread polls unchanged files less often (lf_tail_set_watched). */
#include "config.h"

#define LF_LOG_COMPONENT "daemon"
#include "logferry/daemon.h"

#include <errno.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <uv.h>
#ifdef HAVE_LIBSYSTEMD
#include <systemd/sd-daemon.h>
#else
#include <sys/socket.h>
#include <sys/un.h>
#endif

#include "logferry/fsutil.h"
#include "daemon_int.h"
#include "logferry/log.h"
#include "logferry/metrics.h"
#include "logferry/startup.h"
#include "logferry/pipeline.h"
#include "logferry/registry.h"
#include "logferry/stage.h"
#include "logferry/tail.h"

#define LF_STATUS_MS 10000


/* ---- watchers ------------------------------------------------------------------ */

static void on_fs_event(uv_fs_event_t *handle, const char *filename, int events, int status)
{
    struct watch *w = handle->data;
    if (status < 0) {
        lf_warn("watching %s failed: %s; its files are polled instead", w->dir,
                uv_strerror(status));
        w->failed = true;
        lf_tail_set_watched(w->d->tail, false);
        return;
    }
    if (filename == NULL) {
        lf_tail_rescan(w->d->tail);
        return;
    }
    char path[4096];
    int n = snprintf(path, sizeof(path), "%s%s%s", w->dir,
                     w->dir[strlen(w->dir) - 1] == '/' ? "" : "/", filename);
    if (n > 0 && (size_t)n < sizeof(path))
        lf_tail_notify(w->d->tail, path, (events & UV_RENAME) ? LF_CHANGE_NAME : LF_CHANGE_DATA);
}

static void free_watch(uv_handle_t *h)
{
    struct watch *w = h->data;
    free(w->dir);
    free(w);
}

/* Starts watching dir. false when it could not (a directory that does not exist has no
 * files to miss: true). */
static bool add_watch(struct daemon *d, const char *dir)
{
    struct watch *w = calloc(1, sizeof(*w));
    struct watch **a = realloc(d->watches, (d->n_watches + 1) * sizeof(*a));
    if (w == NULL || a == NULL) {
        free(w);
        if (a != NULL)
            d->watches = a;
        return false;
    }
    d->watches = a;
    w->dir = strdup(dir);
    w->d = d;
    w->keep = true;
    if (w->dir == NULL || uv_fs_event_init(&d->loop, &w->handle) != 0) {
        free(w->dir);
        free(w);
        return false;
    }
    w->handle.data = w;
    int rc = uv_fs_event_start(&w->handle, on_fs_event, w->dir, 0);
    if (rc != 0) {
        if (rc != UV_ENOENT && !d->watch_failed_logged) {
            lf_warn("cannot watch %s: %s; files there are polled every second and new files "
                    "found every scan_interval (logged once)", dir, uv_strerror(rc));
            d->watch_failed_logged = true;
        }
        uv_close((uv_handle_t *)&w->handle, free_watch);
        return rc == UV_ENOENT;
    }
    d->watches[d->n_watches++] = w;
    return true;
}

static int cmp_watch(const void *a, const void *b)
{
    return strcmp((*(struct watch *const *)a)->dir, (*(struct watch *const *)b)->dir);
}

static int cmp_dir_watch(const void *key, const void *elem)
{
    return strcmp(key, (*(struct watch *const *)elem)->dir);
}

/* The watch on dir among the first n of d->watches, which are sorted by dir; or NULL. */
static struct watch *find_watch(struct daemon *d, size_t n, const char *dir)
{
    if (n == 0)
        return NULL; /* d->watches may be NULL: bsearch() wants an array */
    struct watch **w = bsearch(dir, d->watches, n, sizeof(*d->watches), cmp_dir_watch);
    return w != NULL ? *w : NULL;
}

/* Makes the watched set equal the tail thread's latest list of directories. */
static void on_dirs_async(uv_async_t *a)
{
    struct daemon *d = a->data;
    uv_mutex_lock(&d->dirs_mu);
    char **dirs = d->dirs;
    size_t n = d->n_dirs;
    bool fresh = d->dirs_new;
    d->dirs = NULL;
    d->n_dirs = 0;
    d->dirs_new = false;
    uv_mutex_unlock(&d->dirs_mu);
    if (!fresh || d->stopping)
        goto out;
    for (size_t i = 0; i < d->n_watches; i++)
        d->watches[i]->keep = false;
    size_t old = d->n_watches;
    bool all = true;
    for (size_t k = 0; k < n; k++) {
        /* Only the first `old` watches are sorted; new ones are appended after them. */
        struct watch *w = find_watch(d, old, dirs[k]);
        if (w != NULL) {
            w->keep = true;
            all &= !w->failed;
        } else {
            all &= add_watch(d, dirs[k]);
        }
    }
    lf_tail_set_watched(d->tail, all);
    size_t kept = 0;
    for (size_t i = 0; i < d->n_watches; i++) {
        struct watch *w = d->watches[i];
        if (w->keep)
            d->watches[kept++] = w;
        else
            uv_close((uv_handle_t *)&w->handle, free_watch);
    }
    d->n_watches = kept;
    if (d->n_watches > 1)
        qsort(d->watches, d->n_watches, sizeof(*d->watches), cmp_watch);
out:
    for (size_t k = 0; k < n; k++)
        free(dirs[k]);
    free(dirs);
}

/* Tail thread: hands the directory list to the loop. */
static void on_dirs(void *arg, char *const *dirs, size_t n)
{
    struct daemon *d = arg;
    char **copy = calloc(n ? n : 1, sizeof(*copy));
    if (copy == NULL)
        return;
    size_t m = 0;
    for (size_t i = 0; i < n; i++) {
        copy[m] = strdup(dirs[i]);
        m += copy[m] != NULL; /* a directory left out is only polled */
    }
    n = m;
    uv_mutex_lock(&d->dirs_mu);
    for (size_t i = 0; i < d->n_dirs; i++)
        free(d->dirs[i]);
    free(d->dirs);
    d->dirs = copy;
    d->n_dirs = n;
    d->dirs_new = true;
    uv_mutex_unlock(&d->dirs_mu);
    uv_async_send(&d->dirs_async);
}

/* ---- status, signals, stopping --------------------------------------------------- */

static void on_status(uv_timer_t *timer)
{
    struct daemon *d = timer->data;
    struct lf_tail_stats ts;
    struct lf_pipeline_stats ps;
    lf_tail_stats(d->tail, &ts);
    lf_pipeline_stats(d->pipeline, &ps);
    double secs = LF_STATUS_MS / 1000.0;
    lf_info("status: %" PRIu64 " files open of %" PRIu64 " followed; %.0f events/s in, %.0f "
            "events/s acknowledged; %" PRIu64 " events read, %" PRIu64 " acknowledged; queue %"
            PRIu64 " bytes; %" PRIu64 " rotations, %" PRIu64 " truncations%s",
            ts.files_open, ts.files_known, (double)(ps.events_in - d->last.events_in) / secs,
            (double)(ps.events_acked - d->last.events_acked) / secs, ps.events_in,
            ps.events_acked, ps.queue_bytes, ts.rotations, ts.truncations,
            ts.files_removed_open > 0 ? "; deleted files held open, waiting for outputs" : "");
    d->last = ps;
}

static void close_all(struct daemon *d)
{
    uv_close((uv_handle_t *)&d->sigterm, NULL);
    uv_close((uv_handle_t *)&d->sigint, NULL);
    uv_close((uv_handle_t *)&d->sighup, NULL);
    uv_close((uv_handle_t *)&d->status, NULL);
    uv_close((uv_handle_t *)&d->end_async, NULL);
    uv_close((uv_handle_t *)&d->shutdown, NULL);
    uv_close((uv_handle_t *)&d->dirs_async, NULL);
    uv_close((uv_handle_t *)&d->reload_async, NULL);
    uv_close((uv_handle_t *)&d->stdin_async, NULL);
    lf_daemon__journal_close(d);
    lf_daemon__cfgwatch_close(d);
    if (d->stdin_polled)
        uv_close((uv_handle_t *)&d->stdin_poll, NULL);
    d->stdin_polled = false;
    lf_metrics_server_stop(d->metrics);
    d->metrics = NULL;
    for (size_t i = 0; i < d->n_watches; i++)
        uv_close((uv_handle_t *)&d->watches[i]->handle, free_watch);
    d->n_watches = 0;
}

/* The tail thread has drained and persisted the registry (or the pipeline failed). */
static void on_end_async(uv_async_t *a)
{
    struct daemon *d = a->data;
    if (!d->stopping)
        lf_error("the tail thread ended on its own: delivery failed for good; stopping");
    close_all(d);
}

/* Tail thread. */
static void on_end(void *arg)
{
    struct daemon *d = arg;
    uv_async_send(&d->end_async);
}

static void on_shutdown_timeout(uv_timer_t *timer)
{
    struct daemon *d = timer->data;
    lf_warn("shutdown_timeout of %" PRIu64 " ms reached with events unacknowledged; they are "
            "read again at the next start", d->cfg->shutdown_timeout_ms);
    lf_pipeline_abort(d->pipeline, "shutdown_timeout reached");
    d->aborted = true;
}

/* Tells systemd (Type=notify) how we are doing, when NOTIFY_SOCKET is set. systemd not
 * listening is not our failure, so errors are dropped. */
#ifdef HAVE_LIBSYSTEMD
void lf_daemon__sd_notify(const char *state)
{
    int r = sd_notify(0, state);
    (void)r;
}
#else
/* Without libsystemd: the same datagram, sent by hand. */
void lf_daemon__sd_notify(const char *state)
{
    const char *sock = getenv("NOTIFY_SOCKET");
    if (sock == NULL || sock[0] == '\0')
        return;
    struct sockaddr_un addr = { .sun_family = AF_UNIX };
    size_t len = strlen(sock);
    if (len >= sizeof(addr.sun_path))
        return;
    memcpy(addr.sun_path, sock, len);
    if (addr.sun_path[0] == '@')
        addr.sun_path[0] = '\0'; /* abstract namespace */
    int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return;
    ssize_t n = sendto(fd, state, strlen(state), 0, (struct sockaddr *)&addr,
                       (socklen_t)(offsetof(struct sockaddr_un, sun_path) + len));
    (void)n;
    close(fd);
}
#endif

static void begin_stop(struct daemon *d, const char *why)
{
    if (d->stopping) {
        lf_info("%s again: still stopping (delivering what was read, then saving offsets)", why);
        return;
    }
    d->stopping = true;
    d->view.stopping = true;
    lf_daemon__sd_notify("STOPPING=1");
    lf_info("%s: stopping; delivering what was read (up to shutdown_timeout %" PRIu64 " ms)", why,
            d->cfg->shutdown_timeout_ms);
    lf_tail_stop(d->tail);
    uv_timer_start(&d->shutdown, on_shutdown_timeout, d->cfg->shutdown_timeout_ms, 0);
    uv_timer_stop(&d->status);
}

static void on_signal(uv_signal_t *s, int signum)
{
    struct daemon *d = s->data;
    if (signum == SIGHUP) {
        if (d->stopping) {
            lf_info("SIGHUP while stopping: not reloading");
        } else if (d->reloading) {
            d->reload_again = true; /* one more reload afterwards reads the latest file */
            d->again_cause = "SIGHUP";
        } else {
            lf_daemon__start_reload(d, "SIGHUP");
        }
        return;
    }
    begin_stop(d, signum == SIGTERM ? "SIGTERM" : "SIGINT");
}

/* The k-th input (from 0) of type stdin, or NULL. */
const struct lf_input_conf *lf_daemon__stdin_input(const struct lf_config *cfg, size_t k)
{
    for (size_t i = 0; i < cfg->n_inputs; i++) {
        if (cfg->inputs[i].type == LF_INPUT_STDIN && k-- == 0)
            return &cfg->inputs[i];
    }
    return NULL;
}

/* ---- stdin ----------------------------------------------------------------------- */

/* fd 0 is readable (or hung up): the tail thread reads one chunk, then asks for more. */
static void on_stdin_poll(uv_poll_t *p, int status, int events)
{
    struct daemon *d = p->data;
    (void)status; /* an error shows when the tail thread reads */
    (void)events;
    uv_poll_stop(p);
    lf_tail_stdin_ready(d->tail);
}

/* Tail thread: it read what fd 0 had. */
static void on_stdin_wait(void *arg)
{
    struct daemon *d = arg;
    uv_async_send(&d->stdin_async);
}

static void on_stdin_async(uv_async_t *a)
{
    struct daemon *d = a->data;
    if (d->stopping)
        return;
    if (d->stdin_polled)
        uv_poll_start(&d->stdin_poll, UV_READABLE | UV_DISCONNECT, on_stdin_poll);
    else
        lf_tail_stdin_ready(d->tail); /* a regular file never blocks: read on to its end */
}

/* Starts reading fd 0 for a stdin input: poll-driven for a pipe, a socket or a terminal, so
 * an idle stdin costs nothing; straight through for a regular file, which epoll refuses. */
static void start_stdin(struct daemon *d)
{
    const struct lf_input_conf *in = lf_daemon__stdin_input(d->cfg, 0);
    if (in == NULL)
        return;
    int rc = uv_poll_init(&d->loop, &d->stdin_poll, STDIN_FILENO);
    if (rc == 0) {
        d->stdin_poll.data = d;
        d->stdin_polled = true;
        uv_poll_start(&d->stdin_poll, UV_READABLE | UV_DISCONNECT, on_stdin_poll);
    } else {
        lf_tail_stdin_ready(d->tail);
    }
    lf_info("input %s: reading stdin%s", in->id, rc == 0 ? "" : " (a file: to its end)");
}

/* ---- start and run -------------------------------------------------------------- */


/* Serves /metrics, /healthz, /readyz and /status on metrics.listen, unless it is "". */
static enum lf_err start_metrics(struct daemon *d, struct lf_errbuf *eb)
{
    const struct lf_config *cfg = d->cfg;
    if (cfg->metrics.listen == NULL || cfg->metrics.listen[0] == '\0')
        return LF_OK;
    d->view = (struct lf_agent_view){ .cfg = cfg, .specs = d->specs, .tail = d->tail,
                                      .pipeline = d->pipeline, .kube = d->kube.cache };
    lf_log_set_hook(lf_output_errors_hook); /* each output's last error, for /status */
    d->view.scratch_inputs = calloc(cfg->n_inputs ? cfg->n_inputs : 1,
                                    sizeof(*d->view.scratch_inputs));
    if (d->view.scratch_inputs == NULL)
        return lf_fail(eb, LF_ENOMEM, "out of memory");
    enum lf_err err = lf_metrics_server_start(&d->loop, cfg->metrics.listen,
                                              lf_agent_render_metrics, lf_agent_probe,
                                              &d->view, &d->metrics, eb);
    if (err) {
        struct lf_errbuf why = *eb;
        return lf_fail(eb, err, "%s; set metrics.listen: \"\" to run without the endpoint",
                       why.msg);
    }
    /* The port actually bound, for listen addresses with port 0. */
    const char *colon = strrchr(cfg->metrics.listen, ':');
    int host_len = colon != NULL ? (int)(colon - cfg->metrics.listen) : 0;
    lf_info("metrics on http://%.*s:%d/metrics, probes on /healthz and /readyz, /status",
            host_len,
            cfg->metrics.listen, lf_metrics_server_port(d->metrics));
    return LF_OK;
}

static int init_loop(struct daemon *d)
{
    if (uv_loop_init(&d->loop) != 0)
        return -1;
    uv_signal_init(&d->loop, &d->sigterm);
    uv_signal_init(&d->loop, &d->sigint);
    uv_signal_init(&d->loop, &d->sighup);
    uv_timer_init(&d->loop, &d->status);
    uv_timer_init(&d->loop, &d->shutdown);
    uv_async_init(&d->loop, &d->end_async, on_end_async);
    uv_async_init(&d->loop, &d->dirs_async, on_dirs_async);
    uv_async_init(&d->loop, &d->reload_async, lf_daemon__on_reload_async);
    d->reload_async.data = d;
    uv_async_init(&d->loop, &d->stdin_async, on_stdin_async);
    d->stdin_async.data = d;
    lf_daemon__journal_init(d);
    d->sigterm.data = d;
    d->sigint.data = d;
    d->sighup.data = d;
    d->status.data = d;
    d->shutdown.data = d;
    d->end_async.data = d;
    d->dirs_async.data = d;
    return 0;
}

int lf_daemon_run(const struct lf_config *cfg)
{
    const struct lf_input_conf *second = lf_daemon__stdin_input(cfg, 1);
    if (second != NULL) {
        /* Refused rather than ignored: two inputs cannot share one stream. */
        fprintf(stderr, "%s:%u:%u: inputs[%zu].type: stdin is already read by input %s; the "
                        "daemon reads it into one input\n", cfg->path, second->pos.line,
                second->pos.col, (size_t)(second - cfg->inputs),
                lf_daemon__stdin_input(cfg, 0)->id);
        return 2;
    }
    struct lf_chain_spec **specs = NULL;
    int rc = lf_agent_compile_chains(cfg, &specs);
    if (rc)
        return rc;
    struct daemon *d = lf_agent_data_dir_ok(cfg) ? calloc(1, sizeof(*d)) : NULL;
    if (d == NULL) {
        lf_agent_free_chains(cfg, specs);
        return 1;
    }
    d->cfg = cfg;
    d->specs = specs;
    struct lf_errbuf eb = { "" };
    rc = 1;
    d->spec_cfg = calloc(cfg->n_inputs ? cfg->n_inputs : 1, sizeof(*d->spec_cfg));
    if (d->spec_cfg == NULL || uv_mutex_init(&d->dirs_mu) != 0) {
        free(d->spec_cfg);
        free(d);
        lf_agent_free_chains(cfg, specs);
        return 1;
    }
    for (size_t i = 0; i < cfg->n_inputs; i++)
        d->spec_cfg[i] = cfg;
    if (uv_mutex_init(&d->reload_mu) != 0) {
        uv_mutex_destroy(&d->dirs_mu);
        free(d->spec_cfg);
        free(d);
        lf_agent_free_chains(cfg, specs);
        return 1;
    }
    if (lf_agent_open_registry(cfg, &d->reg))
        goto out;
    if (lf_pipeline_new(cfg, &d->pipeline, &eb)) {
        lf_error("%s", eb.msg);
        goto out;
    }
    lf_pipeline_set_retry_budget(d->pipeline, 0); /* a daemon never drops: it retries */
    if (init_loop(d) != 0) {
        lf_error("cannot start the event loop");
        goto out;
    }
    d->hooks = (struct lf_tail_hooks){ .on_dirs = on_dirs, .on_end = on_end,
                                       .on_reloaded = lf_daemon__on_reloaded,
                                       .on_stdin_wait = on_stdin_wait,
                                       .on_journal_fds = lf_daemon__on_journal_fds,
                                       .on_journal_wait = lf_daemon__on_journal_wait,
                                       .arg = d };
    size_t known = lf_registry_count(d->reg); /* before the tail thread owns the registry */
    if (lf_agent_kube_start(&d->kube, cfg, &eb) ||
        lf_tail_new(cfg, d->specs, d->pipeline, d->reg, &d->hooks, LF_TAIL_FOLLOW, &d->tail,
                    &eb) ||
        start_metrics(d, &eb) || lf_tail_start(d->tail, &eb)) {
        lf_error("%s", eb.msg[0] ? eb.msg : "cannot start the tail engine");
        close_all(d);
        uv_run(&d->loop, UV_RUN_DEFAULT);
        goto out_loop;
    }
    uv_signal_start(&d->sigterm, on_signal, SIGTERM);
    uv_signal_start(&d->sigint, on_signal, SIGINT);
    uv_signal_start(&d->sighup, on_signal, SIGHUP);
    uv_timer_start(&d->status, on_status, LF_STATUS_MS, LF_STATUS_MS);
    start_stdin(d);
    lf_daemon__cfgwatch_apply(d);
    lf_info("following %zu inputs into %zu outputs; registry %s/registry holds %zu files; "
            "stop with Ctrl-C or SIGTERM; reload with SIGHUP", cfg->n_inputs, cfg->n_outputs,
            cfg->data_dir, known);
    lf_daemon__sd_notify("READY=1");
    d->view.ready = true;
    uv_run(&d->loop, UV_RUN_DEFAULT);
    rc = lf_tail_join(d->tail, &eb) && !d->stopping ? 1 : 0;
    lf_agent_kube_stop(&d->kube);
    /* A reload the tail thread applied as the loop ended is committed; one it never took
     * is dropped. */
    d->stopping = true; /* no READY=1, no reload after this one */
    if (d->reload_answered)
        lf_daemon__on_reload_async(&d->reload_async);
    lf_daemon__reload_discard(&d->next);
    {
        struct lf_tail_stats ts;
        struct lf_pipeline_stats ps;
        lf_tail_stats(d->tail, &ts);
        lf_pipeline_stats(d->pipeline, &ps);
        lf_info("stopped: %" PRIu64 " events read, %" PRIu64 " acknowledged; registry saved",
                ps.events_in, ps.events_acked);
    }
out_loop:
    lf_err_ignore(uv_loop_close(&d->loop) ? LF_EIO : LF_OK); /* every handle was closed */
out:
    if (d->aborted) {
        /* After a shutdown timeout the delivery thread may be blocked for good in an output
         * (a console nobody reads, a hung disk): joining it would hang the exit, and so
         * would exit(3) tearing down what it uses. The registry is saved: end here. */
        fflush(NULL);
        _exit(rc);
    }
    /* The pipeline goes first: its batches borrow the harvesters' sources. */
    lf_pipeline_free(d->pipeline);
    lf_tail_free(d->tail);
    lf_agent_kube_free(&d->kube); /* after the stages that hold its records */
    lf_registry_free(d->reg);
    for (size_t i = 0; i < d->n_dirs; i++)
        free(d->dirs[i]);
    free(d->dirs);
    free(d->watches);
    free(d->view.scratch_inputs);
    uv_mutex_destroy(&d->dirs_mu);
    uv_mutex_destroy(&d->reload_mu);
    lf_agent_free_chains(d->cfg, d->specs);
    free(d->spec_cfg);
    for (size_t k = 0; k < d->n_held; k++)
        lf_config_free(d->held[k]);
    free(d->held);
    free(d);
    return rc;
}
