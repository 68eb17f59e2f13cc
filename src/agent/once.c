/* once.c - the backfill (--once, see once.h): the tail engine in once mode, and what only
 * a backfill reports.
 *
 * The engine (src/input, LF_TAIL_ONCE) does the reading as the daemon does: one scan of the
 * globs, each file opened, checked against allowed_roots, identified and resumed where the
 * registry says this very content was acknowledged up to, its stream id saved before its
 * first event is read; then every file read to its end on the tail thread (in path order)
 * or, with LF_TAIL_ONCE_SPREAD_BYTES or more in several files, in read phases on one
 * thread per usable CPU; then stdin to its end; then the pipeline drained and the
 * acknowledged offsets written to the registry: a second run over the same files reads
 * only what was added since.
 *
 * This file adds what a backfill says: the progress line (drawn from the engine's hooks,
 * on whichever thread reads, under a mutex), the exit code, and the summary. Main
 * thread, but the hooks. */
#include "config.h"

#define LF_LOG_COMPONENT "once"
#include "logferry/once.h"

#include <inttypes.h>
#include <stdio.h>
#include <unistd.h>
#include <uv.h>

#include "logferry/event.h"
#include "logferry/log.h"
#include "logferry/pipeline.h"
#include "logferry/progress.h"
#include "logferry/registry.h"
#include "logferry/stage.h"
#include "logferry/startup.h"
#include "logferry/tail.h"
#include "agent_int.h"

struct once {
    const struct lf_config *cfg;  /* borrowed */
    struct lf_chain_spec **specs; /* owned; per input */
    struct lf_registry *reg;      /* owned; the tail thread's while it runs */
    struct lf_pipeline *pipeline; /* owned */
    struct lf_tail *tail;         /* owned */
    struct lf_tail_hooks hooks;
    struct lf_agent_kube kube;    /* pod metadata, from one LIST and its watch */
    uv_mutex_t mu;                /* guards progress: every reading thread adds to it */
    struct lf_progress progress;
};

/* Tail thread, after the scan. */
static void on_planned(void *arg, size_t files, uint64_t bytes)
{
    struct once *o = arg;
    (void)files;
    uv_mutex_lock(&o->mu);
    o->progress.total = bytes;
    uv_mutex_unlock(&o->mu);
}

/* Any reading thread. */
static void on_progress(void *arg, uint64_t n)
{
    struct once *o = arg;
    uv_mutex_lock(&o->mu);
    lf_progress_add(&o->progress, n);
    uv_mutex_unlock(&o->mu);
}

/* "; output NAME: N delivered, M dead-lettered" for every output into buf: an event an
 * output refused for good is acknowledged (kept in its dead letters), never delivered. */
static void output_counts(struct once *o, char *buf, size_t size)
{
    size_t len = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < o->cfg->n_outputs && len < size; i++) {
        struct lf_pipeline_output_stats os;
        lf_pipeline_output_stats(o->pipeline, o->cfg->outputs[i].name, &os);
        int n = snprintf(buf + len, size - len, "; output %s: %" PRIu64 " delivered, %" PRIu64
                         " dead-lettered", o->cfg->outputs[i].name, os.events_acked,
                         os.dead_letters);
        if (n < 0)
            break;
        len += (size_t)n;
    }
}

static void summary(struct once *o, int64_t start_ns)
{
    struct lf_pipeline_stats ps;
    struct lf_tail_stats ts;
    lf_pipeline_stats(o->pipeline, &ps);
    lf_tail_stats(o->tail, &ts);
    char outputs[1024];
    output_counts(o, outputs, sizeof(outputs));
    double secs = (double)(lf_now_ns() - start_ns) / 1e9;
    double mib = (double)ts.bytes / (1024.0 * 1024.0);
    char journals[48] = "";
    if (ts.journals > 0)
        snprintf(journals, sizeof(journals), " and %" PRIu64 " journal%s", ts.journals,
                 ts.journals == 1 ? "" : "s");
    char dropped[96] = ""; /* what of the filtered the throttle and sample stages dropped */
    if (ts.throttled > 0 || ts.sampled_out > 0)
        snprintf(dropped, sizeof(dropped), " (%" PRIu64 " throttled, %" PRIu64 " sampled out)",
                 ts.throttled, ts.sampled_out);
    lf_info("backfill done: %" PRIu64 " files (%" PRIu64 " unreadable)%s, %" PRIu64 " events "
            "read, %" PRIu64 " filtered out%s, %s%s; %.1f MiB in %.2f s (%.1f MiB/s); %" PRIu64
            " truncated, %" PRIu64 " dropped as too long, %" PRIu64 " invalid bytes",
            ts.files_known, ts.files_unreadable, journals, ts.events - ts.filtered, ts.filtered,
            dropped, ps.events_acked == ps.events_in ? "all acknowledged" : "NOT all acknowledged",
            outputs, mib, secs, secs > 0 ? mib / secs : 0.0, ts.truncated, ts.skipped_long,
            ts.invalid_bytes);
}

/* Reads everything through the engine and waits for it to end. Returns the exit code. */
static int run(struct once *o)
{
    struct lf_errbuf eb = { "" };
    o->hooks = (struct lf_tail_hooks){ .on_planned = on_planned, .on_progress = on_progress,
                                       .arg = o };
    lf_progress_init(&o->progress, STDERR_FILENO, 0);
    enum lf_err err = lf_agent_kube_start(&o->kube, o->cfg, &eb);
    if (!err)
        err = lf_tail_new(o->cfg, o->specs, o->pipeline, o->reg, &o->hooks, LF_TAIL_ONCE,
                          &o->tail, &eb);
    if (!err)
        err = lf_tail_start(o->tail, &eb);
    if (err) {
        lf_error("%s", eb.msg[0] ? eb.msg : "cannot start the tail engine");
        return err == LF_ECONFIG ? 2 : 1; /* an input this build cannot run */
    }
    err = lf_tail_join(o->tail, &eb);
    lf_agent_kube_stop(&o->kube);
    lf_progress_done(&o->progress);
    if (err && eb.msg[0] != '\0') {
        struct lf_pipeline_stats ps;
        lf_pipeline_stats(o->pipeline, &ps);
        lf_error("backfill incomplete: %" PRIu64 " events are waiting (not acknowledged; the "
                 "next run reads them again): %s", ps.events_in - ps.events_acked, eb.msg);
    }
    if (err)
        return 1; /* without a why: the registry could not be written (logged) */
    /* With the spool, what is in it counts as acknowledged for the registry (saved by the
     * engine); the run succeeds only once the outputs have it all, this run's and earlier
     * ones'. */
    if (lf_pipeline_drain_spool(o->pipeline, &eb)) {
        lf_error("backfill incomplete: %s", eb.msg);
        return 1;
    }
    return 0;
}

int lf_once_run(const struct lf_config *cfg)
{
    struct once o = { .cfg = cfg };
    int rc = lf_agent_compile_chains(cfg, &o.specs);
    if (rc)
        return rc;
    if (uv_mutex_init(&o.mu) != 0) {
        lf_agent_free_chains(cfg, o.specs);
        lf_error("cannot create a mutex");
        return 1;
    }
    int64_t start_ns = lf_now_ns();
    struct lf_errbuf eb = { "" };
    rc = 1;
    if (!lf_agent_data_dir_ok(cfg) || lf_agent_open_registry(cfg, &o.reg))
        goto out;
    if (lf_pipeline_new(cfg, &o.pipeline, &eb)) {
        lf_error("%s", eb.msg);
        goto out;
    }
    rc = run(&o);
    if (o.tail != NULL)
        summary(&o, start_ns);
out:
    lf_pipeline_free(o.pipeline); /* first: its batches borrow the engine's sources */
    lf_tail_free(o.tail);
    lf_agent_kube_free(&o.kube); /* after the stages that hold its records */
    lf_registry_free(o.reg);
    lf_agent_free_chains(cfg, o.specs);
    uv_mutex_destroy(&o.mu);
    return rc;
}
