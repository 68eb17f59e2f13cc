/* exporter.c - the daemon's numbers as Prometheus text (SPEC.md "Metrics").
 *
 * Every family of the contract is written on every scrape, at zero when nothing happened
 * yet, from snapshots the tail engine and the pipeline take under their own locks. */
#include "config.h"

#include "agent_int.h"

#include "logferry/kube.h"
#include "logferry/metrics.h"
#include "logferry/spool.h"

struct input_family {
    const char *name;
    const char *type;
    const char *help;
    size_t field; /* offsetof in struct lf_tail_input_stats */
};

static const struct input_family input_families[] = {
    { "logferry_events_read_total", "counter",
      "Events read from the input's files, filtered ones included.",
      offsetof(struct lf_tail_input_stats, events) },
    { "logferry_bytes_read_total", "counter", "Source bytes read.",
      offsetof(struct lf_tail_input_stats, bytes) },
    { "logferry_events_filtered_total", "counter",
      "Events dropped by a stage (include_lines, exclude_lines, throttle, sample, ...) or "
      "skip_empty_lines.",
      offsetof(struct lf_tail_input_stats, filtered) },
    { "logferry_events_throttled_total", "counter",
      "Of the filtered events, those dropped over a throttle stage's rate.",
      offsetof(struct lf_tail_input_stats, throttled) },
    { "logferry_events_sampled_out_total", "counter",
      "Of the filtered events, those a sample stage left out.",
      offsetof(struct lf_tail_input_stats, sampled_out) },
    { "logferry_lines_truncated_total", "counter", "Lines cut or dropped at max_line_bytes.",
      offsetof(struct lf_tail_input_stats, truncated) },
    { "logferry_encoding_errors_total", "counter",
      "Invalid bytes in the input's encoding, replaced by U+FFFD.",
      offsetof(struct lf_tail_input_stats, invalid_bytes) },
    { "logferry_files_open", "gauge", "Files the input holds open.",
      offsetof(struct lf_tail_input_stats, files_open) },
    { "logferry_harvester_lag_bytes", "gauge",
      "Bytes written to the input's files and not read yet (the agent falling behind).",
      offsetof(struct lf_tail_input_stats, lag_bytes) },
    { "logferry_journal_cursor_lost_total", "counter",
      "Saved journal positions no longer in the journal (vacuumed or rotated away): reading "
      "went on from the oldest entry after them.",
      offsetof(struct lf_tail_input_stats, cursors_lost) },
};

struct output_family {
    const char *name;
    const char *help;
    size_t field; /* offsetof in struct lf_pipeline_output_stats */
};

static const struct output_family output_families[] = {
    { "logferry_events_acked_total", "Events the output acknowledged.",
      offsetof(struct lf_pipeline_output_stats, events_acked) },
    { "logferry_output_errors_total", "Batches the output failed to deliver.",
      offsetof(struct lf_pipeline_output_stats, errors) },
    { "logferry_output_retries_total", "Batches sent to the output again after a failure.",
      offsetof(struct lf_pipeline_output_stats, retries) },
    { "logferry_dead_letter_events_total",
      "Events the output's peer refused for good, written to its dead-letter file.",
      offsetof(struct lf_pipeline_output_stats, dead_letters) },
    { "logferry_output_rejected_events_total",
      "Events the output's peer took in a batch yet said it refused, without saying which "
      "(OTLP partial success): not kept.",
      offsetof(struct lf_pipeline_output_stats, rejected) },
};

static uint64_t field_at(const void *stats, size_t offset)
{
    uint64_t v;
    memcpy(&v, (const char *)stats + offset, sizeof(v));
    return v;
}

static enum lf_err render_inputs(const struct lf_agent_view *v, struct lf_buf *out)
{
    const struct lf_config *cfg = v->cfg;
    struct lf_tail_input_stats *snap = v->scratch_inputs;
    for (size_t i = 0; i < cfg->n_inputs; i++)
        lf_tail_input_stats(v->tail, cfg->inputs[i].id, &snap[i]);
    enum lf_err err = LF_OK;
    for (size_t f = 0; f < sizeof(input_families) / sizeof(input_families[0]) && !err; f++) {
        const struct input_family *fam = &input_families[f];
        err = lf_prom_family(out, fam->name, fam->type, fam->help);
        for (size_t i = 0; i < cfg->n_inputs && !err; i++) {
            const char *labels[] = { "input", cfg->inputs[i].id, NULL };
            err = lf_prom_sample(out, fam->name, labels, field_at(&snap[i], fam->field));
        }
    }
    return err;
}

static enum lf_err render_outputs(const struct lf_agent_view *v, struct lf_buf *out)
{
    const struct lf_config *cfg = v->cfg;
    enum lf_err err = LF_OK;
    for (size_t f = 0; f < sizeof(output_families) / sizeof(output_families[0]) && !err; f++) {
        const struct output_family *fam = &output_families[f];
        err = lf_prom_family(out, fam->name, "counter", fam->help);
        for (size_t i = 0; i < cfg->n_outputs && !err; i++) {
            struct lf_pipeline_output_stats os;
            lf_pipeline_output_stats(v->pipeline, cfg->outputs[i].name, &os);
            const char *labels[] = { "output", cfg->outputs[i].name, NULL };
            err = lf_prom_sample(out, fam->name, labels, field_at(&os, fam->field));
        }
    }
    return err;
}

/* One sample of a family labelled by input and one more label (redactions by pattern,
 * routes by route), as the specs' counters hand them over. */
struct input_sample {
    struct lf_buf *out;
    const char *family;
    const char *input;
    const char *label; /* the second label's name */
};

static enum lf_err input_sample(void *arg, const char *value, uint64_t n)
{
    const struct input_sample *r = arg;
    const char *labels[] = { "input", r->input, r->label, value, NULL };
    return lf_prom_sample(r->out, r->family, labels, n);
}

/* Matches each redact stage masked, per input and pattern: every pattern configured is
 * there from the start, at zero. An input whose parsers a reload changed starts again at
 * zero (a counter reset, as Prometheus knows them). */
static enum lf_err render_redactions(const struct lf_agent_view *v, struct lf_buf *out)
{
    const struct lf_config *cfg = v->cfg;
    enum lf_err err = lf_prom_family(out, "logferry_redactions_total", "counter",
                                     "Matches the redact stage masked, by input and pattern.");
    for (size_t i = 0; i < cfg->n_inputs && !err && v->specs != NULL; i++) {
        struct input_sample r = { out, "logferry_redactions_total", cfg->inputs[i].id, "pattern" };
        if (v->specs[i] != NULL)
            err = lf_chain_spec_redactions(v->specs[i], input_sample, &r);
    }
    return err;
}

/* Events each route of an input took, and "default" for those no route matched; inputs
 * without routes have none. Reset as the redaction counts are, when a reload changes the
 * input. */
static enum lf_err render_routes(const struct lf_agent_view *v, struct lf_buf *out)
{
    const struct lf_config *cfg = v->cfg;
    enum lf_err err = lf_prom_family(
        out, "logferry_route_events_total", "counter",
        "Events each route of an input took (an event on two routes counts in both); "
        "\"default\": those no route matched, sent to the input's outputs.");
    for (size_t i = 0; i < cfg->n_inputs && !err && v->specs != NULL; i++) {
        struct input_sample r = { out, "logferry_route_events_total", cfg->inputs[i].id, "route" };
        if (v->specs[i] != NULL)
            err = lf_chain_spec_routes(v->specs[i], input_sample, &r);
    }
    return err;
}

/* The time from a batch's cut to each output's acknowledgement, as a histogram. */
static enum lf_err render_latency(const struct lf_agent_view *v, struct lf_buf *out)
{
    static const char name[] = "logferry_output_latency_seconds";
    const struct lf_config *cfg = v->cfg;
    enum lf_err err = lf_prom_family(out, name, "histogram",
                                     "Seconds from a batch's cut to the output's acknowledgement.");
    for (size_t i = 0; i < cfg->n_outputs && !err; i++) {
        struct lf_pipeline_output_stats os;
        lf_pipeline_output_stats(v->pipeline, cfg->outputs[i].name, &os);
        uint64_t cumulative = 0;
        for (size_t b = 0; b <= LF_LATENCY_BUCKETS && !err; b++) {
            char le[32] = "+Inf";
            if (b < LF_LATENCY_BUCKETS) {
                snprintf(le, sizeof(le), "%g", lf_pipeline_latency_bounds[b]);
                cumulative += os.latency_in[b];
            } else {
                cumulative = os.latency_count;
            }
            const char *labels[] = { "output", cfg->outputs[i].name, "le", le, NULL };
            err = lf_prom_sample(out, "logferry_output_latency_seconds_bucket", labels, cumulative);
        }
        const char *labels[] = { "output", cfg->outputs[i].name, NULL };
        if (!err)
            err = lf_prom_sample_double(out, "logferry_output_latency_seconds_sum", labels,
                                        (double)os.latency_sum_us / 1e6);
        if (!err)
            err = lf_prom_sample(out, "logferry_output_latency_seconds_count", labels,
                                 os.latency_count);
    }
    return err;
}

/* One family with a single, unlabelled sample. */
static enum lf_err
single(struct lf_buf *out, const char *name, const char *type, const char *help, uint64_t value)
{
    enum lf_err err = lf_prom_family(out, name, type, help);
    return err ? err : lf_prom_sample(out, name, NULL, value);
}

/* Pod metadata from the API server: only while the kubernetes section is on. */
static enum lf_err render_kube(const struct lf_agent_view *v, struct lf_buf *out)
{
    if (v->kube == NULL)
        return LF_OK;
    struct lf_kube_stats ks;
    lf_kube_cache_stats(v->kube, &ks);
    enum lf_err err = single(out, "logferry_kubernetes_metadata_misses_total", "counter",
                             "Container log files that shipped without their pod's metadata: "
                             "the pod was not known after kubernetes.wait.",
                             ks.misses);
    if (!err)
        err = single(out, "logferry_kubernetes_pods", "gauge",
                     "Pods whose metadata is held (deleted ones in their grace period too).",
                     ks.pods);
    if (!err)
        err = single(out, "logferry_kubernetes_cache_bytes", "gauge",
                     "Memory the held pod and namespace records take.", ks.bytes);
    if (!err)
        err = single(out, "logferry_kubernetes_lists_total", "counter",
                     "LISTs of this node's pods completed (the first one and each re-list).",
                     ks.lists);
    if (!err)
        err = single(out, "logferry_kubernetes_watch_events_total", "counter",
                     "Pod and namespace changes applied from the watch.", ks.watch_events);
    if (!err)
        err = single(out, "logferry_kubernetes_api_errors_total", "counter",
                     "Requests to the API server that failed (no answer, 401, 403, 5xx, a "
                     "body that is not JSON).",
                     ks.errors);
    if (!err)
        err = single(out, "logferry_kubernetes_synced", "gauge",
                     "1 while the pods are listed and watched; 0 while the API server is "
                     "away (files then ship without waiting for metadata).",
                     ks.synced);
    return err;
}

enum lf_err lf_agent_render_metrics(void *arg, struct lf_buf *out)
{
    const struct lf_agent_view *v = arg;
    struct lf_pipeline_stats ps;
    lf_pipeline_stats(v->pipeline, &ps);
    struct lf_spool_stats spool;
    lf_pipeline_spool_stats(v->pipeline, &spool);
    struct lf_tail_stats ts;
    lf_tail_stats(v->tail, &ts);
    const char *ok[] = { "result", "ok", NULL };
    const char *bad[] = { "result", "error", NULL };
    const char *version[] = { "version", PACKAGE_VERSION, NULL };
    enum lf_err err = lf_prom_family(out, "logferry_build_info", "gauge",
                                     "Always 1; the version of the running agent as a label.");
    if (!err)
        err = lf_prom_sample(out, "logferry_build_info", version, 1);
    if (!err)
        err = render_inputs(v, out);
    if (!err)
        err = render_outputs(v, out);
    if (!err)
        err = render_latency(v, out);
    if (!err)
        err = render_redactions(v, out);
    if (!err)
        err = render_routes(v, out);
    if (!err)
        err = render_kube(v, out);
    if (!err)
        err = single(out, "logferry_queue_bytes", "gauge",
                     "Message bytes of events not yet acknowledged.", ps.queue_bytes);
    if (!err)
        err = single(out, "logferry_spool_bytes", "gauge",
                     "Bytes of the disk spool's segment files.", spool.bytes);
    if (!err)
        err = single(out, "logferry_spool_corrupt_records_total", "counter",
                     "Spool records skipped because they did not check out (CRC mismatch, "
                     "torn write).",
                     spool.corrupt);
    if (!err)
        err = single(out, "logferry_spool_syncs_total", "counter",
                     "Spool group commits: each one fdatasync covering every record appended "
                     "since the one before.",
                     spool.commits);
    if (!err)
        err = single(out, "logferry_registry_flushes_total", "counter", "Registry writes to disk.",
                     ts.registry_flushes);
    if (!err)
        err = single(out, "logferry_registry_entries", "gauge",
                     "Files the registry holds, at its last flush.", ts.registry_entries);
    if (!err)
        err = lf_prom_family(out, "logferry_config_reloads_total", "counter",
                             "Config reloads (SIGHUP) by result: ok applied, error kept the "
                             "running config.");
    if (!err)
        err = lf_prom_sample(out, "logferry_config_reloads_total", ok, v->reloads_ok);
    if (!err)
        err = lf_prom_sample(out, "logferry_config_reloads_total", bad, v->reloads_error);
    return err;
}
