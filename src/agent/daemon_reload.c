/* daemon_reload.c - the daemon's SIGHUP reload: load and validate the file as
 * --test-config does, compile the stages of new and changed inputs, hand both to the tail
 * thread (lf_tail_reload()), and commit or drop them when it answers.
 *
 *   SIGHUP ─► load + validate ─► lf_tail_reload ─► (tail thread) apply ─► reconfigure
 *          ◄── uv_async: reloaded (ok or not) ◄──────┘
 *
 * Loop thread, but lf_daemon__on_reloaded() (tail thread, under reload_mu). The configs a
 * reload loaded stay held while anything borrows them (kept inputs' specs, kept outputs). */
#include "config.h"

#define LF_LOG_COMPONENT "daemon"
#include "daemon_int.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "logferry/log.h"
#include "logferry/startup.h"

/* Frees what a reload made that nothing runs with: its config, the specs compiled for it. */
void lf_daemon__reload_discard(struct reload *r)
{
    if (r->cfg == NULL)
        return;
    for (size_t j = 0; j < r->cfg->n_inputs && r->specs != NULL; j++) {
        if (r->spec_cfg[j] == r->cfg)
            lf_chain_spec_free(r->specs[j]);
    }
    free(r->specs);
    free(r->spec_cfg);
    lf_config_free(r->cfg);
    *r = (struct reload){ 0 };
}

static bool differ(const char *a, const char *b)
{
    return (a == NULL) != (b == NULL) || (a != NULL && strcmp(a, b) != 0);
}

/* Says which changed settings a reload does not apply (see docs/configuration.md). */
static void warn_start_only(uint64_t n, const struct lf_config *old, const struct lf_config *cfg)
{
    const char *what = differ(old->metrics.listen, cfg->metrics.listen) ? "metrics.listen"
                       : differ(old->logging.level, cfg->logging.level) ? "logging.level"
                       : differ(old->logging.format, cfg->logging.format) ? "logging.format"
                       : old->queue.batch_max_events != cfg->queue.batch_max_events
                           ? "queue.batch.max_events"
                       : old->queue.batch_max_bytes != cfg->queue.batch_max_bytes
                           ? "queue.batch.max_bytes"
                       : old->queue.spool_enabled != cfg->queue.spool_enabled
                           ? "queue.spool.enabled"
                       : old->queue.spool_max_bytes != cfg->queue.spool_max_bytes
                           ? "queue.spool.max_bytes"
                           : NULL;
    if (what != NULL)
        lf_warn("reload %" PRIu64 ": %s (and any other start-only setting) changes at the next "
                "start only", n, what);
}

/* Whether cfg reads stdin as the running config does: the stream is read once, from the
 * start of the process to its end, so a reload cannot add, change or remove its input. */
static bool stdin_kept(struct daemon *d, const struct lf_config *cfg)
{
    const struct lf_input_conf *was = lf_daemon__stdin_input(d->cfg, 0);
    const struct lf_input_conf *now = lf_daemon__stdin_input(cfg, 0);
    if (was == NULL && now == NULL)
        return true;
    if (was != NULL && now != NULL && lf_config_input_same(was, now) &&
        lf_daemon__stdin_input(cfg, 1) == NULL)
        return true;
    const struct lf_input_conf *at = now != NULL ? now : &cfg->inputs[0];
    lf_error("reload %" PRIu64 ": %s:%u:%u: inputs[%zu]: a stdin input is read from the start "
             "of the process; a reload cannot add, change or remove it (restart instead)",
             d->reloads, cfg->path, at->pos.line, at->pos.col, (size_t)(at - cfg->inputs));
    return false;
}

/* Loads and validates the config file exactly as --test-config does; logs every problem.
 * Returns the new config, or NULL. */
static struct lf_config *reload_load(struct daemon *d)
{
    struct lf_buf errors;
    lf_buf_init(&errors, 1u << 20);
    struct lf_config *cfg = NULL;
    /* The registry stays where it is (and --data-dir still wins). */
    enum lf_err err = lf_agent_load_config(d->cfg->path, d->cfg->data_dir, &cfg, &errors);
    if (err) {
        const char *p = errors.ptr;
        size_t left = errors.len;
        while (left > 0) {
            const char *nl = memchr(p, '\n', left);
            size_t n = nl != NULL ? (size_t)(nl - p) : left;
            lf_error("reload %" PRIu64 ": %.*s", d->reloads, (int)n, p);
            left -= nl != NULL ? n + 1 : n;
            p += nl != NULL ? n + 1 : n;
        }
        if (errors.len == 0)
            lf_error("reload %" PRIu64 ": %s: %s", d->reloads, d->cfg->path, lf_err_str(err));
        lf_buf_release(&errors);
        return NULL;
    }
    lf_buf_release(&errors);
    if (!stdin_kept(d, cfg)) {
        lf_config_free(cfg);
        return NULL;
    }
    warn_start_only(d->reloads, d->cfg, cfg);
    return cfg;
}

/* Gives every input of r->cfg its spec: the running one for an input whose settings are the
 * same, a new one otherwise. False (logged) if one does not compile. */
static bool reload_specs(struct daemon *d, struct reload *r)
{
    const struct lf_config *cfg = r->cfg;
    bool ok = true;
    size_t n = cfg->n_inputs ? cfg->n_inputs : 1;
    r->specs = calloc(n, sizeof(*r->specs));
    r->spec_cfg = calloc(n, sizeof(*r->spec_cfg));
    if (r->specs == NULL || r->spec_cfg == NULL) {
        lf_error("out of memory");
        return false;
    }
    for (size_t j = 0; j < cfg->n_inputs; j++) {
        const struct lf_input_conf *in = &cfg->inputs[j];
        const struct lf_input_conf *was = lf_config_input(d->cfg, in->id);
        if (was != NULL && lf_config_input_same(was, in)) {
            size_t i = (size_t)(was - d->cfg->inputs);
            r->specs[j] = d->specs[i];
            r->spec_cfg[j] = d->spec_cfg[i];
            continue;
        }
        r->spec_cfg[j] = cfg;
        struct lf_errbuf eb = { "" };
        size_t failed = 0;
        if (lf_chain_spec_new(in, j, &r->specs[j], &failed, &eb)) {
            const struct lf_parser_conf *pc = in->n_parsers > failed ? &in->parsers[failed] : NULL;
            lf_error("reload %" PRIu64 ": %s:%u:%u: %s", d->reloads, cfg->path,
                     pc != NULL ? pc->pos.line : in->pos.line,
                     pc != NULL ? pc->pos.col : in->pos.col, eb.msg);
            ok = false; /* go on: every input's problem is logged, as --test-config prints */
        }
    }
    return ok;
}

/* CLOCK_MONOTONIC in microseconds, as systemd wants with RELOADING=1. */
static uint64_t monotonic_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

static void end_reload(struct daemon *d)
{
    d->reloading = false;
    if (!d->stopping)
        lf_daemon__sd_notify("READY=1");
    if (!d->stopping)
        lf_daemon__cfgwatch_apply(d); /* the config now running may have turned it on or off */
    if (d->reload_again && !d->stopping) {
        d->reload_again = false;
        lf_daemon__start_reload(d, d->again_cause != NULL ? d->again_cause : "SIGHUP");
    }
}

/* SIGHUP (or a changed file, with config_watch; cause says which, in the log): parses and
 * validates the file in full, then hands it to the tail thread, which applies it between two
 * turns and answers through reload_async. */
void lf_daemon__start_reload(struct daemon *d, const char *cause)
{
    d->reloading = true;
    char state[64];
    snprintf(state, sizeof(state), "RELOADING=1\nMONOTONIC_USEC=%" PRIu64, monotonic_us());
    lf_daemon__sd_notify(state);
    d->reloads++;
    lf_info("%s: reload %" PRIu64 " of %s", cause, d->reloads, d->cfg->path);
    lf_daemon__cfgwatch_loading(d);
    d->next = (struct reload){ .started_ns = uv_hrtime() };
    d->next.cfg = reload_load(d);
    if (d->next.cfg == NULL || !reload_specs(d, &d->next)) {
        lf_daemon__reload_discard(&d->next);
        lf_error("reload %" PRIu64 " of %s failed: the running configuration stays", d->reloads,
                 d->cfg->path);
        d->view.reloads_error++;
        lf_agent_note_reload(&d->view, false, "the new configuration did not load (see the log)");
        end_reload(d);
        return;
    }
    lf_tail_reload(d->tail, d->next.cfg, d->next.specs);
}

/* Tail thread: the reload was applied, or not. */
void lf_daemon__on_reloaded(void *arg, enum lf_err err, const struct lf_errbuf *eb)
{
    struct daemon *d = arg;
    uv_mutex_lock(&d->reload_mu);
    d->reload_answered = true;
    d->reload_err = err;
    snprintf(d->reload_why, sizeof(d->reload_why), "%s", eb->msg[0] ? eb->msg : lf_err_str(err));
    uv_mutex_unlock(&d->reload_mu);
    uv_async_send(&d->reload_async);
}

/* Frees every config loaded by a reload that nothing uses any more. */
static void release_configs(struct daemon *d)
{
    size_t kept = 0;
    for (size_t k = 0; k < d->n_held; k++) {
        struct lf_config *c = d->held[k];
        bool used = c == d->cfg || lf_pipeline_borrows(d->pipeline, c);
        for (size_t j = 0; j < d->cfg->n_inputs && !used; j++)
            used = d->spec_cfg[j] == c;
        if (used)
            d->held[kept++] = c;
        else
            lf_config_free(c);
    }
    d->n_held = kept;
}

/* The tail thread runs d->next now: it becomes the running config. */
static void reload_commit(struct daemon *d)
{
    struct reload *r = &d->next;
    struct lf_config **held = realloc(d->held, (d->n_held + 1) * sizeof(*held));
    if (held == NULL) {
        /* Never freed before the end then: running is what matters. */
        lf_error("out of memory keeping the old configuration; it is freed at exit");
    } else {
        d->held = held;
    }
    for (size_t i = 0; i < d->cfg->n_inputs; i++) {
        bool kept = false;
        for (size_t j = 0; j < r->cfg->n_inputs && !kept; j++)
            kept = r->specs[j] == d->specs[i];
        if (!kept)
            lf_chain_spec_free(d->specs[i]); /* its harvesters are gone */
    }
    free(d->specs);
    free(d->spec_cfg);
    d->specs = r->specs;
    d->spec_cfg = r->spec_cfg;
    d->cfg = r->cfg;
    lf_agent_kube_reload(&d->kube, d->cfg);
    d->view.kube = d->kube.cache;
    if (held != NULL)
        d->held[d->n_held++] = r->cfg;
    struct lf_tail_input_stats *scratch = NULL;
    if (d->metrics != NULL) {
        scratch = calloc(d->cfg->n_inputs ? d->cfg->n_inputs : 1, sizeof(*scratch));
        if (scratch != NULL) {
            free(d->view.scratch_inputs);
            d->view.scratch_inputs = scratch;
            d->view.cfg = d->cfg;
            d->view.specs = d->specs;
        }
    }
    *r = (struct reload){ 0 };
    release_configs(d);
}

/* Logs what a reload from old to cfg kept, started again and removed, before it commits. */
static void log_reload(uint64_t n, const struct lf_config *old, const struct lf_config *cfg,
                       double ms)
{
    size_t in_kept = 0;
    size_t out_kept = 0;
    for (size_t j = 0; j < cfg->n_inputs; j++) {
        const struct lf_input_conf *was = lf_config_input(old, cfg->inputs[j].id);
        in_kept += was != NULL && lf_config_input_same(was, &cfg->inputs[j]);
    }
    for (size_t j = 0; j < cfg->n_outputs; j++) {
        for (size_t i = 0; i < old->n_outputs; i++) {
            out_kept += strcmp(old->outputs[i].name, cfg->outputs[j].name) == 0 &&
                        lf_config_output_same(&old->outputs[i], &cfg->outputs[j]);
        }
    }
    size_t in_stay = 0;
    for (size_t i = 0; i < old->n_inputs; i++)
        in_stay += lf_config_input(cfg, old->inputs[i].id) != NULL;
    lf_info("reload %" PRIu64 ": %s applied in %.1f ms: inputs %zu kept, %zu started (new or "
            "changed), %zu removed; outputs %zu kept, %zu opened, %zu closed", n, cfg->path, ms,
            in_kept,
            cfg->n_inputs - in_kept, old->n_inputs - in_stay, out_kept,
            cfg->n_outputs - out_kept, old->n_outputs - out_kept);
}

/* The tail thread answered a reload. */
void lf_daemon__on_reload_async(uv_async_t *a)
{
    struct daemon *d = a->data;
    uv_mutex_lock(&d->reload_mu);
    bool answered = d->reload_answered;
    enum lf_err err = d->reload_err;
    char why[sizeof(d->reload_why)];
    memcpy(why, d->reload_why, sizeof(why));
    d->reload_answered = false;
    uv_mutex_unlock(&d->reload_mu);
    if (!answered || d->next.cfg == NULL)
        return;
    double ms = (double)(uv_hrtime() - d->next.started_ns) / 1e6;
    if (err) {
        lf_daemon__reload_discard(&d->next);
        lf_error("reload %" PRIu64 " of %s failed: %s; the running configuration stays",
                 d->reloads, d->cfg->path, why);
        d->view.reloads_error++;
        lf_agent_note_reload(&d->view, false, why);
    } else {
        log_reload(d->reloads, d->cfg, d->next.cfg, ms);
        reload_commit(d);
        d->view.reloads_ok++;
        lf_agent_note_reload(&d->view, true, "");
    }
    end_reload(d);
}
