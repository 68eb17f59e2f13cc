/* agent_int.h - shared within src/agent/ only: what the metrics endpoint looks at. */
#ifndef LF_AGENT_INT_H
#define LF_AGENT_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "logferry/buf.h"
#include "logferry/config.h"
#include "logferry/log.h"
#include "logferry/metrics.h"
#include "logferry/pipeline.h"
#include "logferry/tail.h"

struct lf_kube_cache;
struct lf_kube_watch;

/* Pod metadata (kube_agent.c): NULLs while the kubernetes section is off. */
struct lf_agent_kube {
    struct lf_kube_cache *cache;      /* owned; from the first start to lf_agent_kube_free() */
    struct lf_kube_watch *watch;      /* owned; the running section's watcher */
    const struct lf_kube_conf *conf;  /* borrowed from the running config */
};

/* Starts the watcher when cfg's kubernetes section is enabled, and waits for its first
 * LIST (at most kubernetes.wait). LF_ECONFIG / LF_EIO with eb filled. */
LF_MUST_CHECK enum lf_err lf_agent_kube_start(struct lf_agent_kube *k, const struct lf_config *cfg,
                                              struct lf_errbuf *eb);
/* A committed reload: a changed section starts a new watcher (the cache stays). */
void lf_agent_kube_reload(struct lf_agent_kube *k, const struct lf_config *cfg);
/* Stops the watcher (after the tail thread ended); free releases the cache. */
void lf_agent_kube_stop(struct lf_agent_kube *k);
void lf_agent_kube_free(struct lf_agent_kube *k);

/* The running daemon's parts, as the exporter reads them (all borrowed). Loop thread. */
struct lf_agent_view {
    const struct lf_config *cfg;
    struct lf_chain_spec *const *specs; /* borrowed; per input of cfg (the redact counts) */
    struct lf_tail *tail;
    struct lf_pipeline *pipeline;
    struct lf_kube_cache *kube; /* NULL: no pod metadata */
    struct lf_tail_input_stats *scratch_inputs; /* owned by the daemon; n_inputs slots */
    uint64_t reloads_ok;
    uint64_t reloads_error;
    bool ready;    /* the config is loaded and every input started (/readyz) */
    bool stopping; /* SIGTERM or SIGINT came: /readyz is 503 until the exit */
    int64_t last_reload_ms;    /* Unix ms of the last reload's end, 0 before any */
    bool last_reload_ok;
    char last_reload_why[256]; /* why it failed */
};

/* Records a reload's end for /status (why: what failed, when !ok). status.c */
void lf_agent_note_reload(struct lf_agent_view *v, bool ok, const char *why);

/* lf_metrics_render_fn over a struct lf_agent_view: every family of SPEC.md "Metrics". */
enum lf_err lf_agent_render_metrics(void *arg, struct lf_buf *out);

/* lf_metrics_probe_fn over a struct lf_agent_view: /healthz (the watchdog), /readyz (the
 * lifecycle flags) and /status (lf_agent_status_json()). probes.c */
int lf_agent_probe(void *arg, enum lf_metrics_route route, struct lf_buf *out);

/* lf_log_hook_fn keeping each output's last logged warning or error. output_errors.c */
void lf_output_errors_hook(enum lf_log_level level, const char *component, const char *msg);

/* Output name's last logged warning or error, if logged at or after since_ms (Unix ms),
 * into out; false if none. Any thread. output_errors.c */
bool lf_output_last_error(const char *name, int64_t since_ms, char *out, size_t len);

/* Appends /status's JSON document. status.c */
enum lf_err lf_agent_status_json(const struct lf_agent_view *v, struct lf_buf *out);

#endif
