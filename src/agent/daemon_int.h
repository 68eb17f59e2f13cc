/* daemon_int.h - the daemon's state, shared by daemon.c (loop, watchers, signals, stdin,
 * start and stop) and daemon_reload.c (SIGHUP reloads) only.
 *
 * struct daemon belongs to the loop thread (the main thread running the libuv loop); the
 * tail thread reaches it only through the hooks, which touch the fields their comments
 * name under dirs_mu or reload_mu and wake the loop with a uv_async_t. */
#ifndef LF_DAEMON_INT_H
#define LF_DAEMON_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "agent_int.h"
#include "logferry/config.h"
#include "logferry/pipeline.h"
#include "logferry/registry.h"
#include "logferry/stage.h"
#include "logferry/tail.h"

struct watch {
    uv_fs_event_t handle;
    char *dir; /* owned */
    struct daemon *d;
    bool keep; /* still wanted after the latest scan */
    bool failed; /* reported an error: its files are polled every second */
};

/* A reload in progress, from SIGHUP until the tail thread answered. */
struct reload {
    struct lf_config *cfg;                /* owned until committed */
    struct lf_chain_spec **specs;         /* owned; per input of cfg (kept inputs: the
                                             running spec, not owned by this) */
    const struct lf_config **spec_cfg;    /* owned; per input: what its spec was made from */
    uint64_t started_ns;
};

struct daemon {
    const struct lf_config *cfg; /* the running config: the caller's, or one of held */
    struct lf_config **held;     /* owned; configs loaded by reloads that are running or still
                                    borrowed (kept inputs' specs, kept outputs) */
    size_t n_held;
    const struct lf_config **spec_cfg; /* owned; per input: the config its spec and its
                                          discoverer were made from */
    struct reload next;          /* loop thread */
    uint64_t reloads;            /* reloads started; numbers their log records, so that the
                                    same problem in two reloads is logged both times */
    bool reloading;              /* a reload is running: the next SIGHUP waits for it */
    bool reload_again;           /* a SIGHUP came during it: reload once more afterwards */
    const char *again_cause;     /* static; what asked for that reload: "SIGHUP", ... */
    struct lf_cfgwatch *cfgwatch; /* owned; NULL unless config_watch (config_watch.c) */
    uv_async_t reload_async;     /* the tail thread answered a reload */
    uv_poll_t stdin_poll;        /* fd 0, for a stdin input (when stdin_polled) */
    bool stdin_polled;           /* fd 0 can be polled (not a regular file) */
    uv_async_t stdin_async;      /* the tail thread read what fd 0 had: poll again */
    uv_mutex_t reload_mu;        /* guards the three below */
    bool reload_answered;
    enum lf_err reload_err;
    char reload_why[1024];
    uv_loop_t loop;
    struct lf_registry *reg;
    struct lf_pipeline *pipeline;
    struct lf_tail *tail;
    struct lf_chain_spec **specs; /* owned; per input */
    struct lf_metrics_server *metrics; /* NULL when metrics.listen is "" */
    struct lf_agent_kube kube;         /* pod metadata (kube_agent.c) */
    struct lf_agent_view view;         /* what the metrics endpoint reads */
    uv_signal_t sigterm;
    uv_signal_t sigint;
    uv_signal_t sighup;
    uv_timer_t status;
    uv_async_t end_async; /* the tail thread ended */
    struct lf_tail_hooks hooks;
    uv_timer_t shutdown;
    uv_async_t dirs_async;
    uv_mutex_t dirs_mu;
    char **dirs; /* owned; the latest set from the tail thread, guarded by dirs_mu */
    size_t n_dirs;
    bool dirs_new;
    int *journal_fds;      /* owned; journal descriptors handed over by the tail thread and
                              not taken yet (guarded by dirs_mu, as the two below) */
    size_t n_journal_fds;
    bool journal_fds_new;
    bool journal_rearm;    /* the tail thread read the journals: poll them again */
    uv_async_t journal_async;
    struct jpoll **jpolls; /* owned; the journal descriptors polled (loop thread) */
    size_t n_jpolls;
    struct watch **watches; /* owned; loop thread */
    size_t n_watches;
    bool watch_failed_logged;
    bool stopping;
    bool aborted; /* shutdown_timeout ran out: an output thread may be stuck in a write */
    struct lf_pipeline_stats last;
};

/* daemon.c */
/* Tells systemd (Type=notify) state, when NOTIFY_SOCKET is set. Loop thread. */
void lf_daemon__sd_notify(const char *state);
/* The k-th input (from 0) of type stdin, or NULL. */
const struct lf_input_conf *lf_daemon__stdin_input(const struct lf_config *cfg, size_t k);

/* daemon_journal.c */
/* struct lf_tail_hooks.on_journal_fds and .on_journal_wait (tail thread). */
void lf_daemon__on_journal_fds(void *arg, const int *fds, size_t n);
void lf_daemon__on_journal_wait(void *arg);
/* The journal async handle, at loop start; everything closed and freed, at the end. Loop
 * thread. */
void lf_daemon__journal_init(struct daemon *d);
void lf_daemon__journal_close(struct daemon *d);

/* config_watch.c (loop thread) */
/* Starts or stops watching the config file as the running config's config_watch says. */
void lf_daemon__cfgwatch_apply(struct daemon *d);
/* A reload is about to read the file: its bytes are the running ones from now on. */
void lf_daemon__cfgwatch_loading(struct daemon *d);
/* Stops watching; the handles close with the loop's others. */
void lf_daemon__cfgwatch_close(struct daemon *d);

/* daemon_reload.c (loop thread, but lf_daemon__on_reloaded) */
/* SIGHUP (or cause, logged): loads and validates the file, then hands it to the tail
 * thread. */
void lf_daemon__start_reload(struct daemon *d, const char *cause);
/* Tail thread: the reload was applied, or not (struct lf_tail_hooks.on_reloaded). */
void lf_daemon__on_reloaded(void *arg, enum lf_err err, const struct lf_errbuf *eb);
/* The tail thread answered a reload: commit it, or drop it. */
void lf_daemon__on_reload_async(uv_async_t *a);
/* Frees what a reload made that nothing runs with. */
void lf_daemon__reload_discard(struct reload *r);

#endif
