/* status.c - the daemon's /status document: how each input and output is doing.
 *
 *   { "config": { "path", "generation", "last_reload": { "result", "at", "error" } },
 *     "ready", "stopping",
 *     "inputs": [ { "id", "files_open", "lag_bytes", "events", "bytes",
 *                   "files": [ { "path", "size", "read", "acknowledged", "lag_bytes" }
 *                              or, journald, { "cursor", "acknowledged_entries" } ] } ],
 *     "outputs": [ { "name", "state": "delivering"|"retrying", "since", "failed_attempts",
 *                    "last_error", "backoff_ms", "events_acked", "errors", "retries",
 *                    "dead_letters" } ],
 *     "queue_bytes", "spool_bytes", "spool_undelivered_bytes",
 *     "kubernetes": { "synced", "pods", "misses", "api_errors" } (with the section on) }
 *
 * Built with jansson from the snapshots the tail engine and the pipeline take under their
 * own locks (the same ones /metrics reads). docs/metrics.md describes every field. The
 * reload record lives in the view, written by the loop thread. Loop thread. */
#include "config.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "agent_int.h"

#include "logferry/kube.h"
#include "logferry/spool.h"

/* RFC 3339 UTC with milliseconds, or null for 0. */
static json_t *when(int64_t unix_ms)
{
    if (unix_ms <= 0)
        return json_null();
    time_t s = (time_t)(unix_ms / 1000);
    struct tm tm;
    gmtime_r(&s, &tm);
    char buf[64];
    snprintf(buf, sizeof(buf), "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900,
             tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
             (int)(unix_ms % 1000));
    return json_string(buf);
}

void lf_agent_note_reload(struct lf_agent_view *v, bool ok, const char *why)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    v->last_reload_ms = (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
    v->last_reload_ok = ok;
    snprintf(v->last_reload_why, sizeof(v->last_reload_why), "%s", ok ? "" : why);
}

static json_t *config_json(const struct lf_agent_view *v)
{
    json_t *last = json_null();
    if (v->last_reload_ms > 0)
        last = json_pack("{s:s, s:o, s:s?}", "result", v->last_reload_ok ? "ok" : "error", "at",
                         when(v->last_reload_ms), "error",
                         v->last_reload_ok ? NULL : v->last_reload_why);
    return json_pack("{s:s, s:I, s:I, s:I, s:o}", "path", v->cfg->path ? v->cfg->path : "",
                     "generation", (json_int_t)v->reloads_ok + 1, "reloads_ok",
                     (json_int_t)v->reloads_ok, "reloads_error", (json_int_t)v->reloads_error,
                     "last_reload", last);
}

/* One file of an input: its size, how far it was read and acknowledged, and the bytes not
 * acknowledged yet; a journal: its cursor and the entries acknowledged. */
static void add_file(void *arg, const struct lf_tail_file *f)
{
    json_t *files = arg;
    json_t *o;
    if (f->journal)
        o = json_pack("{s:s, s:I}", "cursor", f->path, "acknowledged_entries",
                      (json_int_t)f->acked);
    else
        o = json_pack("{s:s, s:I, s:I, s:I, s:I}", "path", f->path, "size", (json_int_t)f->size,
                      "read", (json_int_t)f->read, "acknowledged", (json_int_t)f->acked,
                      "lag_bytes", (json_int_t)(f->size > f->acked ? f->size - f->acked : 0));
    json_array_append_new(files, o);
}

static json_t *inputs_json(const struct lf_agent_view *v)
{
    json_t *arr = json_array();
    for (size_t i = 0; arr != NULL && i < v->cfg->n_inputs; i++) {
        const char *id = v->cfg->inputs[i].id;
        struct lf_tail_input_stats st;
        lf_tail_input_stats(v->tail, id, &st);
        json_t *files = json_array();
        if (files != NULL)
            lf_tail_files(v->tail, id, add_file, files);
        json_array_append_new(arr, json_pack("{s:s, s:I, s:I, s:I, s:I, s:o*}", "id", id,
                                             "files_open", (json_int_t)st.files_open,
                                             "lag_bytes", (json_int_t)st.lag_bytes, "events",
                                             (json_int_t)st.events, "bytes",
                                             (json_int_t)st.bytes, "files", files));
    }
    return arr;
}

static json_t *output_json(const struct lf_agent_view *v, const char *name)
{
    struct lf_pipeline_output_stats st;
    lf_pipeline_output_stats(v->pipeline, name, &st);
    const char *state = st.failing > 0 ? "retrying" : "delivering";
    /* The output's own words if it logged them during this run of failures (a second of
     * slack: the log record comes just before the lane counts the failure). */
    char said[512];
    const char *last_error = st.failing > 0 ? st.last_error : NULL;
    if (st.failing > 0 && lf_output_last_error(name, st.failing_since_ms - 1000, said,
                                                sizeof(said)))
        last_error = said;
    return json_pack("{s:s, s:s, s:o, s:I, s:s?, s:I, s:I, s:I, s:I, s:I}", "name", name,
                     "state", state, "since", when(st.failing > 0 ? st.failing_since_ms : 0),
                     "failed_attempts", (json_int_t)st.failing, "last_error",
                     last_error, "backoff_ms",
                     (json_int_t)st.backoff_ms, "events_acked", (json_int_t)st.events_acked,
                     "errors", (json_int_t)st.errors, "retries", (json_int_t)st.retries,
                     "dead_letters", (json_int_t)st.dead_letters);
}

enum lf_err lf_agent_status_json(const struct lf_agent_view *v, struct lf_buf *out)
{
    json_t *outputs = json_array();
    for (size_t i = 0; outputs != NULL && i < v->cfg->n_outputs; i++)
        json_array_append_new(outputs, output_json(v, v->cfg->outputs[i].name));
    struct lf_pipeline_stats ps;
    lf_pipeline_stats(v->pipeline, &ps);
    struct lf_spool_stats spool;
    bool spooled = lf_pipeline_spool_stats(v->pipeline, &spool);
    json_t *doc = json_pack("{s:o, s:b, s:b, s:o, s:o, s:I, s:I, s:I}", "config",
                            config_json(v), "ready", v->ready, "stopping", v->stopping,
                            "inputs", inputs_json(v), "outputs", outputs, "queue_bytes",
                            (json_int_t)ps.queue_bytes, "spool_bytes",
                            (json_int_t)(spooled ? spool.bytes : 0), "spool_undelivered_bytes",
                            (json_int_t)(spooled ? spool.undelivered : 0));
    if (doc == NULL)
        return LF_ENOMEM;
    if (v->kube != NULL) {
        struct lf_kube_stats ks;
        lf_kube_cache_stats(v->kube, &ks);
        json_object_set_new(doc, "kubernetes",
                            json_pack("{s:b, s:I, s:I, s:I}", "synced", ks.synced, "pods",
                                      (json_int_t)ks.pods, "misses", (json_int_t)ks.misses,
                                      "api_errors", (json_int_t)ks.errors));
    }
    char *text = json_dumps(doc, JSON_COMPACT);
    json_decref(doc);
    if (text == NULL)
        return LF_ENOMEM;
    enum lf_err err = lf_buf_append_cstr(out, text);
    if (!err)
        err = lf_buf_append_cstr(out, "\n");
    free(text);
    return err;
}
