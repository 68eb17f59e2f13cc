/* output.c - the output vtable dispatch and the one registration table.
 *
 * Callers go through lf_output_*(), never through the ops, so the optional slots get their
 * defaults here and nowhere else: flush defaults to a no-op. A new output type is one file
 * exporting its struct lf_output_ops plus one row in output_types[]. */
#include "config.h"

#include "logferry/output.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "netlib_int.h"
#include "output_int.h"

struct lf_output {
    const struct lf_output_ops *ops;
    const struct lf_output_conf *conf; /* borrowed: outlives the output */
    void *ctx;                         /* the type's private state */
    lf_output_done_fn *done;
    void *done_arg;
    bool opened; /* open succeeded, so close is due */
    lf_output_hold_fn *hold;             /* the owner's, or NULL */
    lf_output_done_held_fn *done_held;
    struct lf_output_stats stats;
    struct lf_output_answer answer; /* of the answer being made; zero between answers */
};

/* The YAML `type:` values this build knows, by enum lf_output_type. */
static const struct {
    enum lf_output_type type;
    const char *name;
} type_names[] = {
    { LF_OUTPUT_FILE, "file" },     { LF_OUTPUT_CONSOLE, "console" },
    { LF_OUTPUT_HTTP, "http" },     { LF_OUTPUT_ELASTICSEARCH, "elasticsearch" },
    { LF_OUTPUT_LOKI, "loki" },     { LF_OUTPUT_KAFKA, "kafka" },
    { LF_OUTPUT_SYSLOG, "syslog" },   { LF_OUTPUT_SPLUNK_HEC, "splunk_hec" },
    { LF_OUTPUT_OTLP, "otlp" },     { LF_OUTPUT_S3, "s3" },
};

/* The registration table: the output types built so far. */
static const struct lf_output_ops *const output_types[] = {
    &lf_output_console,
    &lf_output_file,
    &lf_output_http,
    &lf_output_elasticsearch,
    &lf_output_loki,
    &lf_output_kafka,
    &lf_output_syslog,
    &lf_output_splunk_hec,
    &lf_output_otlp,
    &lf_output_s3,
};

static const char *type_name(enum lf_output_type type)
{
    for (size_t i = 0; i < sizeof(type_names) / sizeof(type_names[0]); i++) {
        if (type_names[i].type == type)
            return type_names[i].name;
    }
    return "unknown";
}

void lf_output_preinit(void)
{
    lf_netlib_preinit();
}

enum lf_err lf_output_load_library(const struct lf_output_conf *conf, struct lf_errbuf *eb)
{
    char who[128]; /* what a message starts with */
    snprintf(who, sizeof(who), "output %s", conf->name);
    switch (conf->type) {
    case LF_OUTPUT_HTTP:
    case LF_OUTPUT_ELASTICSEARCH:
    case LF_OUTPUT_LOKI:
    case LF_OUTPUT_SPLUNK_HEC:
    case LF_OUTPUT_OTLP:
    case LF_OUTPUT_S3:
        return lf_netlib_load(LF_NETLIB_CURL, who, eb);
    case LF_OUTPUT_KAFKA:
        return lf_netlib_load(LF_NETLIB_KAFKA, who, eb);
    case LF_OUTPUT_SYSLOG:
        return conf->protocol == LF_SYSLOG_TLS ? lf_netlib_load(LF_NETLIB_SSL, who, eb) : LF_OK;
    default:
        return LF_OK;
    }
}

static const struct lf_output_ops *find_ops(const char *name)
{
    for (size_t i = 0; i < sizeof(output_types) / sizeof(output_types[0]); i++) {
        if (strcmp(output_types[i]->name, name) == 0)
            return output_types[i];
    }
    return NULL;
}

enum lf_err lf_output_new(const struct lf_output_conf *conf,
                          lf_output_done_fn *done,
                          void *arg,
                          struct lf_output **out,
                          struct lf_errbuf *eb)
{
    const char *type = type_name(conf->type);
    const struct lf_output_ops *ops = find_ops(type);
    if (ops == NULL) {
        return lf_fail(eb, LF_ECONFIG, "output %s: type %s is not yet supported", conf->name, type);
    }
    struct lf_output *o = calloc(1, sizeof(*o));
    if (o == NULL)
        return lf_fail(eb, LF_ENOMEM, "output %s: out of memory", conf->name);
    o->ops = ops;
    o->conf = conf;
    o->done = done;
    o->done_arg = arg;
    *out = o;
    return LF_OK;
}

void lf_output_check(const struct lf_output_conf *conf, struct lf_config_report *rep)
{
    /* A library missing is the host's problem, not the config's: the start and the reload
     * fail on it at open, --test-config loads them after this (exit 1 either way). Without
     * it, what only the library can judge is left unjudged. */
    struct lf_errbuf eb = { "" };
    if (lf_output_load_library(conf, &eb))
        return;
    const struct lf_output_ops *ops = find_ops(type_name(conf->type));
    if (ops != NULL && ops->check != NULL)
        ops->check(conf, rep);
}

void lf_output__check_tls_files(const struct lf_output_conf *conf, struct lf_config_report *rep)
{
    const struct {
        const char *key;
        const char *path;
    } files[] = { { "tls.ca_file", conf->tls_ca_file },
                  { "tls.cert_file", conf->tls_cert_file },
                  { "tls.key_file", conf->tls_key_file } };
    for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
        if (files[i].path != NULL && access(files[i].path, R_OK) != 0) {
            int e = errno;
            lf_config_report(rep, files[i].key, "cannot read %s: %s", files[i].path,
                             lf_strerror(e));
        }
    }
}

/* lf_config_report_fn for open: the first problem goes into the errbuf arg. */
static void first_problem(void *arg, const char *key, const char *msg)
{
    struct lf_errbuf *eb = arg;
    if (eb->msg[0] == '\0')
        lf_fail(eb, LF_ECONFIG, "%s%s%s", key != NULL ? key : "", key != NULL ? ": " : "", msg);
}

enum lf_err lf_output_open(struct lf_output *out, struct lf_errbuf *eb)
{
    if (out->opened)
        return LF_OK;
    /* What the config check refuses, open refuses too: one set of rules. */
    struct lf_errbuf why = { "" };
    struct lf_config_report rep = { first_problem, &why, 0 };
    lf_output_check(out->conf, &rep);
    enum lf_err err = LF_OK;
    if (rep.n > 0)
        err = lf_fail(eb, LF_ECONFIG, "output %s: %s", out->conf->name, why.msg);
    /* The type's library first, here for every type, so its open can call it. */
    if (!err)
        err = lf_output_load_library(out->conf, eb);
    if (!err)
        err = out->ops->open(out, eb);
    if (err) {
        if (eb != NULL) /* it may quote a library's text, and that a configured value */
            lf_config_scrub(&out->conf->env, eb->msg, sizeof(eb->msg));
        return err;
    }
    out->opened = true;
    return LF_OK;
}

enum lf_err lf_output_send(struct lf_output *out, struct lf_batch *b)
{
    if (!out->opened)
        return LF_EINVAL;
    return out->ops->send(out, b);
}

enum lf_err lf_output_flush(struct lf_output *out, struct lf_errbuf *eb)
{
    if (!out->opened || out->ops->flush == NULL)
        return LF_OK;
    return out->ops->flush(out, eb);
}

enum lf_err lf_output_prepare(const struct lf_output *out, struct lf_batch *b)
{
    if (!out->opened || out->ops->prepare == NULL)
        return LF_OK;
    return out->ops->prepare(out, b);
}

bool lf_output_needs_messages(const struct lf_output *out)
{
    return out->ops->needs_messages != NULL && out->ops->needs_messages(out);
}

void lf_output_free(struct lf_output *out)
{
    if (out == NULL)
        return;
    if (out->opened)
        out->ops->close(out);
    free(out);
}

void lf_output_done(struct lf_output *out, struct lf_batch *b, enum lf_err res)
{
    if (res == LF_OK) {
        out->stats.batches_acked++;
        out->stats.events_acked += lf_batch_count(b);
    }
    if (out->done != NULL)
        out->done(out->done_arg, out, b, res, 0);
}

void lf_output_done_dead(struct lf_output *out, struct lf_batch *b, size_t n_dead)
{
    size_t n = lf_batch_count(b);
    out->stats.batches_acked++;
    out->stats.events_acked += n > n_dead ? n - n_dead : 0;
    out->stats.events_dead += n_dead;
    if (out->done != NULL)
        out->done(out->done_arg, out, b, LF_OK, n_dead);
}

void lf_output_done_later(struct lf_output *out, struct lf_batch *b, uint64_t min_ms)
{
    out->answer.retry_after_ms = min_ms;
    lf_output_done(out, b, LF_EAGAIN);
    out->answer.retry_after_ms = 0;
}

void lf_output_done_rejected(struct lf_output *out, struct lf_batch *b, size_t n_rejected)
{
    size_t n = lf_batch_count(b);
    out->stats.batches_acked++;
    out->stats.events_acked += n > n_rejected ? n - n_rejected : 0;
    out->stats.events_rejected += n_rejected;
    out->answer.n_rejected = n_rejected;
    if (out->done != NULL)
        out->done(out->done_arg, out, b, LF_OK, 0);
    out->answer.n_rejected = 0;
}

void lf_output_set_holder(struct lf_output *out, lf_output_hold_fn *hold,
                          lf_output_done_held_fn *done_held)
{
    out->hold = hold;
    out->done_held = done_held;
}

void lf_output_hold(struct lf_output *out, struct lf_batch *b, struct lf_held *h)
{
    h->events = lf_batch_count(b) - lf_batch_dropped(b);
    h->token = out->hold != NULL ? out->hold(out->done_arg, out, b) : b;
}

void lf_output_done_held(struct lf_output *out, struct lf_held *h, enum lf_err res)
{
    if (res == LF_OK) {
        out->stats.batches_acked++;
        out->stats.events_acked += h->events;
    }
    void *token = h->token;
    h->token = NULL;
    if (out->hold != NULL)
        out->done_held(out->done_arg, out, token, res);
    else if (out->done != NULL)
        out->done(out->done_arg, out, token, res, 0); /* the token is the batch */
}

void lf_output_drain(struct lf_output *out, bool give_up)
{
    if (out->opened && out->ops->drain != NULL)
        out->ops->drain(out, give_up);
}

const struct lf_output_answer *lf_output_answer(const struct lf_output *out)
{
    return &out->answer;
}

const struct lf_output_conf *lf_output_conf(const struct lf_output *out)
{
    return out->conf;
}

void *lf_output_ctx(const struct lf_output *out)
{
    return out->ctx;
}

void lf_output_set_ctx(struct lf_output *out, void *ctx)
{
    out->ctx = ctx;
}

struct lf_output_stats *lf_output_stats(struct lf_output *out)
{
    return &out->stats;
}
