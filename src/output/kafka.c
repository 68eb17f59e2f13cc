/* kafka.c - the kafka output: one message per event through a librdkafka producer.
 *
 *   lane thread: send(b) ──► per line of b's NDJSON: render topic and key, rd_kafka_produce()
 *                │           (payload: the line itself, without '\n', not copied: b stays
 *                │           unchanged until done, which comes after the last report)
 *                └─ slot of b: messages not yet reported
 *   poll thread: rd_kafka_poll() ──► delivery report per message ──► slot: one fewer;
 *                                    the last one ──► lf_output_done(b, result)
 *
 * A batch is answered once every message of it was reported: LF_EAGAIN when any failed
 * in a way a resend may fix: librdkafka already retried it for message.timeout.ms (the
 * output's `timeout`), so the lane backs off and sends the whole batch again (at least
 * once); else LF_OK, where the messages refused for good (too large, topic authorization,
 * invalid topic: retrying cannot help) were first written to the output's dead letters
 * (deadletter.h; status: the Kafka error code, reason: its text and the topic) and count
 * as acknowledged. If the dead letters cannot be written, LF_EAGAIN. librdkafka's own retries are deduplicated by the broker
 * (idempotence); a resend by the lane is not. Flush waits, with a bound, for what is
 * outstanding, with linger.ms ignored meanwhile. The poll thread is the output's own;
 * rd_kafka_flush() also serves reports, on the lane's thread: both take the output's mutex.
 * An error fatal to the producer (idempotence out of step) fails its messages LF_EAGAIN;
 * once they are all answered, the next send makes a new producer.
 *
 * Topic and key are templates: literal text and %{field} references, a field being a
 * dotted path into the event's JSON (input.id, log.file.path, kubernetes.namespace): a
 * string renders unescaped, a number or boolean as written, anything absent as nothing. */
#include "config.h"

#define LF_LOG_COMPONENT "output"

#include "netlib_int.h"

#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <uv.h>

#include <jansson.h>

#include "logferry/deadletter.h"
#include "fields_int.h"
#include "logferry/log.h"
#include "output_int.h"

#define LF_KAFKA_FLUSH_MS    1000  /* a flush waits this long at most for outstanding reports */
#define LF_KAFKA_CLOSE_MS    5000  /* close waits this long for outstanding reports */
#define LF_KAFKA_POLL_MS     100   /* the poll thread's wait, so it sees a stop request */
#define LF_KAFKA_FULL_MS     100   /* a send waits this long at a time when the queue is full */
#define LF_KAFKA_FULL_MAX_MS 10000 /* and this long in all for one event, then gives up */
#define LF_KAFKA_TOPICS_MAX  256   /* topic handles kept; past it, one is made per message */
#define LF_KAFKA_NAME_MAX    1024  /* bytes of a rendered topic or key */

/* A message refused for good, kept for the dead letters until its batch is answered. */
struct refusal {
    struct lf_str line;      /* borrowed from the batch */
    rd_kafka_resp_err_t err;
    char topic[128];
};

/* A batch sent and not yet answered. */
struct slot {
    struct lf_batch *b;      /* borrowed, until done; NULL: free */
    int64_t left;            /* messages produced and not reported; below 0 while producing */
    bool producing;          /* send is still producing its messages */
    bool retry;              /* a message failed in a way a resend may fix */
    size_t rejected;         /* messages refused for good */
    struct refusal *refused; /* owned, kept across batches; rejected of them */
    size_t cap_refused;
};

struct topic_ent {
    char *name; /* owned */
    rd_kafka_topic_t *rkt;
};

struct kafka_out {
    const char *name; /* borrowed: the output's name */
    const struct lf_env_values *env; /* borrowed from the output's conf: scrubbed from
                                        librdkafka's text */
    struct lf_output *out;
    struct lf_deadletter *dl; /* owned; used with mu held */
    rd_kafka_t *rk;
    struct lf_tmpl topic;
    struct lf_tmpl key;
    bool has_key;
    struct topic_ent *topics; /* owned; the handles made so far */
    size_t n_topics;
    size_t last_topic; /* the last one used: consecutive events share a topic */
    char render[LF_KAFKA_NAME_MAX];
    uv_mutex_t mu;      /* guards slots, stop, last_err* */
    struct slot *slots; /* owned; max_in_flight of them */
    size_t n_slots;
    bool stop;
    uv_thread_t poller;
    bool poller_started;
    rd_kafka_resp_err_t last_err; /* the error callback's last one, to log repeats once */
    uint64_t last_err_ms;
};

/* ---- delivery reports ---- */

/* Errors no resend can fix: the batch is refused for good. */
static bool is_permanent(rd_kafka_resp_err_t err)
{
    switch (err) {
    case RD_KAFKA_RESP_ERR_MSG_SIZE_TOO_LARGE:
    case RD_KAFKA_RESP_ERR_RECORD_LIST_TOO_LARGE:
    case RD_KAFKA_RESP_ERR_INVALID_RECORD:
    case RD_KAFKA_RESP_ERR_TOPIC_EXCEPTION:
    case RD_KAFKA_RESP_ERR_TOPIC_AUTHORIZATION_FAILED:
    case RD_KAFKA_RESP_ERR_CLUSTER_AUTHORIZATION_FAILED:
    case RD_KAFKA_RESP_ERR__INVALID_ARG:
        return true;
    default:
        return false;
    }
}

/* Records one message's failure in s: a refusal for good keeps the line for the dead
 * letters. With k->mu held. */
static void note_failure(struct slot *s, rd_kafka_resp_err_t err, const char *topic, struct lf_str line)
{
    if (!is_permanent(err)) {
        s->retry = true;
        return;
    }
    if (lf_array_grow(&s->refused, &s->cap_refused, s->rejected, sizeof(*s->refused), 16)) {
        s->retry = true; /* cannot keep it: sent again, refused again */
        return;
    }
    struct refusal *r = &s->refused[s->rejected++];
    r->line = line;
    r->err = err;
    snprintf(r->topic, sizeof(r->topic), "%s", topic);
}

/* Writes s's refused messages to the dead letters. true when they are durably there.
 * With k->mu held (the dead letters are shared by every slot). */
static bool dead_letter(struct kafka_out *k, struct slot *s)
{
    struct lf_errbuf eb = { "" };
    const struct refusal *first = &s->refused[0];
    size_t n = 0;
    enum lf_err err = LF_OK;
    for (size_t i = 0; i < s->rejected && !err; i++) {
        const struct refusal *r = &s->refused[i];
        char reason[256];
        snprintf(reason, sizeof(reason), "%s: %s (topic %s)", rd_kafka_err2name(r->err),
                 rd_kafka_err2str(r->err), r->topic);
        err = lf_deadletter_add(k->dl, r->line, (int)r->err, reason);
    }
    if (err)
        err = lf_fail(&eb, err, "dead letters %s: %s", lf_deadletter_path(k->dl), lf_err_str(err));
    else
        err = lf_deadletter_commit(k->dl, &n, &eb);
    if (err) {
        lf_error("output %s: %zu events refused for good (first: %zu bytes to topic %s: %s); "
                 "cannot keep them: %s; the batch will be retried",
                 k->name, s->rejected, first->line.len, first->topic, rd_kafka_err2str(first->err),
                 eb.msg);
        return false;
    }
    lf_error("output %s: %zu events refused for good (first: %zu bytes to topic %s: %s); "
             "written to dead letters %s",
             k->name, n, first->line.len, first->topic, rd_kafka_err2str(first->err),
             lf_deadletter_path(k->dl));
    return true;
}

/* Answers s's batch once every message of it was reported and send is done with it. With
 * k->mu held on entry; released on return. */
static void finish_unlock(struct kafka_out *k, struct slot *s)
{
    if (s->producing || s->left != 0) {
        uv_mutex_unlock(&k->mu);
        return;
    }
    struct lf_batch *b = s->b;
    size_t n_dead = 0;
    bool retry = s->retry;
    /* Refusals wait while a resend is due: it would be refused again, and kept twice. */
    if (!retry && s->rejected > 0) {
        if (dead_letter(k, s))
            n_dead = s->rejected;
        else
            retry = true;
    }
    s->b = NULL; /* free for the next send: done may send again from this thread */
    uv_mutex_unlock(&k->mu);
    if (retry)
        lf_output_done(k->out, b, LF_EAGAIN);
    else if (n_dead > 0)
        lf_output_done_dead(k->out, b, n_dead);
    else
        lf_output_done(k->out, b, LF_OK);
}

static void on_delivery(rd_kafka_t *rk, const rd_kafka_message_t *m, void *opaque)
{
    (void)rk;
    struct kafka_out *k = opaque;
    struct slot *s = m->_private;
    uv_mutex_lock(&k->mu);
    if (m->err)
        note_failure(s, m->err, rd_kafka_topic_name(m->rkt), lf_str_make(m->payload, m->len));
    s->left--;
    finish_unlock(k, s);
}

static void on_error(rd_kafka_t *rk, int err, const char *reason, void *opaque)
{
    struct kafka_out *k = opaque;
    if (err == RD_KAFKA_RESP_ERR__FATAL) {
        char why[512];
        rd_kafka_resp_err_t fe = rd_kafka_fatal_error(rk, why, sizeof(why));
        lf_config_scrub(k->env, why, sizeof(why));
        lf_error("output %s: the producer failed: %s: %s; a new one is made once its batches "
                 "are answered",
                 k->name, rd_kafka_err2name(fe), why);
        return;
    }
    /* Brokers going away repeat the same error: say it once per 30 s. The poll thread and
     * a flush on the lane's thread both serve this callback. */
    uint64_t now_ms = uv_hrtime() / 1000000;
    uv_mutex_lock(&k->mu);
    bool repeat = err == (int)k->last_err && now_ms - k->last_err_ms < 30000;
    if (!repeat) {
        k->last_err = (rd_kafka_resp_err_t)err;
        k->last_err_ms = now_ms;
    }
    uv_mutex_unlock(&k->mu);
    if (repeat)
        return;
    char text[1024];
    snprintf(text, sizeof(text), "%s", reason);
    lf_config_scrub(k->env, text, sizeof(text));
    lf_warn("output %s: %s; librdkafka keeps retrying", k->name, text);
}

static void on_log(const rd_kafka_t *rk, int level, const char *fac, const char *buf)
{
    const struct kafka_out *k = rd_kafka_opaque(rk);
    char text[1024];
    snprintf(text, sizeof(text), "%s", buf);
    if (k != NULL)
        lf_config_scrub(k->env, text, sizeof(text));
    buf = text;
    /* syslog levels. Connection failures (FAIL) also reach on_error, which says them
     * once: here they are details. Configuration warnings matter. */
    if (level <= 4 && strcmp(fac, "FAIL") != 0)
        lf_warn("librdkafka %s: %s", fac, buf);
    else if (level == 5 && strcmp(fac, "FAIL") != 0)
        lf_info("librdkafka %s: %s", fac, buf);
    else
        lf_debug("librdkafka %s: %s", fac, buf);
}

static void poller_main(void *arg)
{
    struct kafka_out *k = arg;
    for (;;) {
        uv_mutex_lock(&k->mu);
        bool stop = k->stop;
        uv_mutex_unlock(&k->mu);
        if (stop)
            break;
        rd_kafka_poll(k->rk, LF_KAFKA_POLL_MS);
    }
}

/* ---- open, close ---- */

/* Sets one librdkafka property. The value may hold a secret (${ENV}): it never appears in
 * eb, nor does librdkafka's message when that quotes it. */
static enum lf_err set_prop(rd_kafka_conf_t *rc,
                            const struct lf_env_values *env,
                            const char *prop,
                            const char *value,
                            struct lf_errbuf *eb)
{
    char why[512];
    if (rd_kafka_conf_set(rc, prop, value, why, sizeof(why)) == RD_KAFKA_CONF_OK)
        return LF_OK;
    if (value[0] != '\0' && strstr(why, value) != NULL)
        snprintf(why, sizeof(why), "invalid value");
    lf_config_scrub(env, why, sizeof(why));
    return lf_fail(eb, LF_ECONFIG, "librdkafka: %s: %s", prop, why);
}

/* Passes the `librdkafka:` map through: strings as they are, numbers and booleans as
 * written. */
static enum lf_err
set_passthrough(rd_kafka_conf_t *rc, const struct lf_output_conf *conf, struct lf_errbuf *eb)
{
    if (conf->librdkafka_json == NULL)
        return LF_OK;
    json_error_t jerr;
    json_t *obj = json_loads(conf->librdkafka_json, 0, &jerr);
    if (!json_is_object(obj)) {
        json_decref(obj);
        return lf_fail(eb, LF_ECONFIG, "librdkafka: expected a mapping");
    }
    enum lf_err err = LF_OK;
    const char *prop;
    json_t *v;
    json_object_foreach(obj, prop, v)
    {
        char num[64];
        const char *s = NULL;
        if (json_is_string(v))
            s = json_string_value(v);
        else if (json_is_true(v) || json_is_false(v))
            s = json_is_true(v) ? "true" : "false";
        else if (json_is_integer(v))
            snprintf(num, sizeof(num), "%" JSON_INTEGER_FORMAT, json_integer_value(v)), s = num;
        else if (json_is_real(v))
            snprintf(num, sizeof(num), "%.17g", json_real_value(v)), s = num;
        if (s == NULL) {
            err = lf_fail(eb, LF_ECONFIG, "librdkafka: %s: expected a scalar value", prop);
            break;
        }
        err = set_prop(rc, &conf->env, prop, s, eb);
        if (err)
            break;
    }
    json_decref(obj);
    return err;
}

/* Sets every option of conf on rc: ours, then the `librdkafka:` map. LF_ECONFIG with eb
 * saying which option and why (without the output's name). */
static enum lf_err
set_options(const struct lf_output_conf *conf, rd_kafka_conf_t *rc, struct lf_errbuf *eb)
{
    char brokers[4096];
    size_t n = 0;
    for (size_t i = 0; i < conf->n_brokers; i++) {
        int w = snprintf(brokers + n, sizeof(brokers) - n, "%s%s", i ? "," : "", conf->brokers[i]);
        if (w < 0 || (size_t)w >= sizeof(brokers) - n)
            return lf_fail(eb, LF_ECONFIG, "brokers: list too long");
        n += (size_t)w;
    }
    char timeout[32];
    snprintf(timeout, sizeof(timeout), "%" PRIu64, conf->timeout_ms);
    const char *codec = conf->compression == LF_COMPRESS_ZSTD   ? "zstd"
                        : conf->compression == LF_COMPRESS_GZIP ? "gzip"
                                                                : "none";
    bool all = conf->acks == NULL || strcmp(conf->acks, "all") == 0;
    const char *const props[][2] = {
        { "bootstrap.servers", brokers }, { "client.id", "logferry" },
        { "acks", all ? "all" : "1" },    { "enable.idempotence", all ? "true" : "false" },
        { "compression.codec", codec },   { "message.timeout.ms", timeout },
    };
    for (size_t i = 0; i < sizeof(props) / sizeof(props[0]); i++) {
        enum lf_err err = set_prop(rc, &conf->env, props[i][0], props[i][1], eb);
        if (err)
            return err;
    }
    return set_passthrough(rc, conf, eb);
}

static enum lf_err make_conf(struct kafka_out *k,
                             const struct lf_output_conf *conf,
                             rd_kafka_conf_t *rc,
                             struct lf_errbuf *eb)
{
    struct lf_errbuf why = { "" };
    if (set_options(conf, rc, &why))
        return lf_fail(eb, LF_ECONFIG, "output %s: %s", conf->name, why.msg);
    rd_kafka_conf_set_opaque(rc, k);
    rd_kafka_conf_set_dr_msg_cb(rc, on_delivery);
    rd_kafka_conf_set_error_cb(rc, on_error);
    rd_kafka_conf_set_log_cb(rc, on_log);
    return LF_OK;
}

/* Stops the poll thread and frees the producer and its topic handles, if any. */
static void stop_producer(struct kafka_out *k)
{
    if (k->poller_started) {
        uv_mutex_lock(&k->mu);
        k->stop = true;
        uv_mutex_unlock(&k->mu);
        uv_thread_join(&k->poller);
        k->poller_started = false;
        k->stop = false;
    }
    for (size_t i = 0; i < k->n_topics; i++) {
        rd_kafka_topic_destroy(k->topics[i].rkt);
        free(k->topics[i].name);
    }
    free(k->topics);
    k->topics = NULL;
    k->n_topics = 0;
    k->last_topic = 0;
    if (k->rk != NULL)
        rd_kafka_destroy(k->rk);
    k->rk = NULL;
}

/* Makes the producer and starts its poll thread. LF_ECONFIG, LF_ENOMEM or LF_EIO with eb
 * filled; then nothing is left running. */
static enum lf_err
start_producer(struct kafka_out *k, const struct lf_output_conf *conf, struct lf_errbuf *eb)
{
    rd_kafka_conf_t *rc = rd_kafka_conf_new();
    if (rc == NULL)
        return lf_fail(eb, LF_ENOMEM, "output %s: out of memory", conf->name);
    enum lf_err err = make_conf(k, conf, rc, eb);
    if (!err) {
        char why[512];
        k->rk = rd_kafka_new(RD_KAFKA_PRODUCER, rc, why, sizeof(why));
        lf_config_scrub(&conf->env, why, sizeof(why)); /* "Unsupported SASL mechanism: X" */
        if (k->rk == NULL)
            err = lf_fail(eb, LF_ECONFIG, "output %s: librdkafka: %s", conf->name, why);
        else
            rc = NULL; /* taken by rd_kafka_new(); still ours when it failed */
    }
    if (rc != NULL)
        rd_kafka_conf_destroy(rc);
    if (!err && uv_thread_create(&k->poller, poller_main, k) != 0)
        err = lf_fail(eb, LF_EIO, "output %s: cannot start the delivery report thread", conf->name);
    if (err) {
        stop_producer(k);
        return err;
    }
    k->poller_started = true;
    return LF_OK;
}

static void kafka_free(struct kafka_out *k)
{
    stop_producer(k);
    lf_tmpl_release(&k->topic);
    lf_tmpl_release(&k->key);
    for (size_t i = 0; k->slots != NULL && i < k->n_slots; i++)
        free(k->slots[i].refused);
    free(k->slots);
    lf_deadletter_free(k->dl);
    uv_mutex_destroy(&k->mu);
    free(k);
}

static enum lf_err kafka_open(struct lf_output *out, struct lf_errbuf *eb)
{
    const struct lf_output_conf *conf = lf_output_conf(out);
    struct kafka_out *k = calloc(1, sizeof(*k));
    if (k == NULL)
        return lf_fail(eb, LF_ENOMEM, "output %s: out of memory", conf->name);
    if (uv_mutex_init(&k->mu) != 0) {
        free(k);
        return lf_fail(eb, LF_EIO, "output %s: cannot create a mutex", conf->name);
    }
    k->name = conf->name;
    k->env = &conf->env;
    k->out = out;
    k->n_slots = conf->max_in_flight > 0 ? (size_t)conf->max_in_flight : 1;
    k->slots = calloc(k->n_slots, sizeof(*k->slots));
    enum lf_err err =
        k->slots == NULL ? lf_fail(eb, LF_ENOMEM, "output %s: out of memory", conf->name) : LF_OK;
    if (!err)
        err = lf_deadletter_new(conf->data_dir != NULL ? conf->data_dir : ".", conf->name, &k->dl,
                                eb);
    if (!err)
        err = lf_tmpl_compile(&k->topic, conf->topic, conf->name, "topic", eb);
    k->has_key = conf->key != NULL && conf->key[0] != '\0';
    if (!err && k->has_key)
        err = lf_tmpl_compile(&k->key, conf->key, conf->name, "key", eb);
    if (!err)
        err = start_producer(k, conf, eb);
    if (err) {
        kafka_free(k);
        return err;
    }
    lf_output_set_ctx(out, k);
    return LF_OK;
}

/* A fatal error (the idempotent producer lost step with a broker's sequence numbers, say)
 * leaves the producer unusable: each message fails at once, for ever. Once every batch it
 * failed has been answered, a new producer is made (a new producer id and sequences).
 * false: no usable producer yet, send the batch later. Lane thread. */
static bool renew_if_fatal(struct lf_output *out, struct kafka_out *k)
{
    if (k->rk != NULL && rd_kafka_fatal_error(k->rk, NULL, 0) == RD_KAFKA_RESP_ERR_NO_ERROR)
        return true;
    bool busy = false;
    uv_mutex_lock(&k->mu);
    for (size_t i = 0; i < k->n_slots; i++)
        busy |= k->slots[i].b != NULL;
    uv_mutex_unlock(&k->mu);
    if (busy)
        return false;
    stop_producer(k);
    struct lf_errbuf eb = { "" };
    if (start_producer(k, lf_output_conf(out), &eb)) {
        lf_error("%s; the batch will be retried", eb.msg);
        return false;
    }
    lf_warn("output %s: made a new producer after its fatal error", k->name);
    return true;
}

/* ---- send ---- */

/* The handle of topic name (len bytes), made on first use; NULL if out of memory. When the
 * cache is full the handle is new and *temp says the caller must destroy it. Lane thread. */
static rd_kafka_topic_t *topic_handle(struct kafka_out *k, const char *name, size_t len, bool *temp)
{
    *temp = false;
    if (k->last_topic < k->n_topics && strlen(k->topics[k->last_topic].name) == len &&
        memcmp(k->topics[k->last_topic].name, name, len) == 0)
        return k->topics[k->last_topic].rkt;
    for (size_t i = 0; i < k->n_topics; i++) {
        if (strlen(k->topics[i].name) == len && memcmp(k->topics[i].name, name, len) == 0) {
            k->last_topic = i;
            return k->topics[i].rkt;
        }
    }
    char *copy = strndup(name, len);
    if (copy == NULL)
        return NULL;
    rd_kafka_topic_t *rkt = rd_kafka_topic_new(k->rk, copy, NULL);
    if (rkt == NULL || k->n_topics == LF_KAFKA_TOPICS_MAX) {
        free(copy);
        *temp = rkt != NULL;
        return rkt;
    }
    struct topic_ent *t = realloc(k->topics, (k->n_topics + 1) * sizeof(*t));
    if (t == NULL) {
        free(copy);
        *temp = true;
        return rkt;
    }
    k->topics = t;
    k->topics[k->n_topics] = (struct topic_ent){ .name = copy, .rkt = rkt };
    k->last_topic = k->n_topics++;
    return rkt;
}

/* Produces one event's line. Returns 0 or the error that kept it from being queued. */
static rd_kafka_resp_err_t
produce_one(struct kafka_out *k, struct slot *s, struct lf_str line, const char **topic_out)
{
    size_t tlen;
    if (!lf_tmpl_render(&k->topic, line, k->render, sizeof(k->render) - 1, &tlen) || tlen == 0) {
        *topic_out = "(rendered empty or too long)";
        return RD_KAFKA_RESP_ERR_TOPIC_EXCEPTION;
    }
    k->render[tlen] = '\0';
    *topic_out = k->render; /* valid until the next event */
    bool temp;
    rd_kafka_topic_t *rkt = topic_handle(k, k->render, tlen, &temp);
    if (rkt == NULL)
        return RD_KAFKA_RESP_ERR__FAIL;
    char key[LF_KAFKA_NAME_MAX];
    size_t klen = 0;
    if (k->has_key && !lf_tmpl_render(&k->key, line, key, sizeof(key), &klen))
        klen = 0; /* longer than LF_KAFKA_NAME_MAX: sent without a key */
    rd_kafka_resp_err_t err = RD_KAFKA_RESP_ERR_NO_ERROR;
    uint64_t waited_ms = 0;
    /* No copy: the payload lives in the batch, which stays unchanged until done. */
    while (rd_kafka_produce(rkt, RD_KAFKA_PARTITION_UA, 0, (void *)line.ptr, line.len,
                            klen > 0 ? key : NULL, klen, s) != 0) {
        err = rd_kafka_last_error();
        if (err != RD_KAFKA_RESP_ERR__QUEUE_FULL || waited_ms >= LF_KAFKA_FULL_MAX_MS)
            break;
        rd_kafka_poll(k->rk, LF_KAFKA_FULL_MS); /* serves reports, which frees room */
        waited_ms += LF_KAFKA_FULL_MS;
        err = RD_KAFKA_RESP_ERR_NO_ERROR;
    }
    if (temp)
        rd_kafka_topic_destroy(rkt);
    return err;
}

static struct slot *take_slot(struct kafka_out *k, struct lf_batch *b)
{
    struct slot *s = NULL;
    uv_mutex_lock(&k->mu);
    for (size_t i = 0; i < k->n_slots && s == NULL; i++) {
        if (k->slots[i].b == NULL)
            s = &k->slots[i];
    }
    if (s != NULL) {
        *s = (struct slot){
            .b = b, .producing = true, .refused = s->refused, .cap_refused = s->cap_refused
        };
    }
    uv_mutex_unlock(&k->mu);
    return s;
}

static enum lf_err kafka_send(struct lf_output *out, struct lf_batch *b)
{
    struct kafka_out *k = lf_output_ctx(out);
    struct lf_str nd;
    enum lf_err err = lf_batch_ndjson(b, &nd);
    if (err) {
        lf_output_stats(out)->errors++;
        return err;
    }
    struct slot *s = renew_if_fatal(out, k) ? take_slot(k, b) : NULL;
    if (s == NULL) {
        /* No usable producer yet, or more batches than max_in_flight (the lane never sends
         * more): later. */
        lf_output_done(out, b, LF_EAGAIN);
        return LF_OK;
    }
    int64_t produced = 0;
    uint64_t bytes = 0;
    const char *p = nd.ptr;
    const char *end = nd.ptr + nd.len;
    while (p < end) {
        const char *eol = memchr(p, '\n', (size_t)(end - p));
        struct lf_str line = lf_str_make(p, (size_t)((eol != NULL ? eol : end) - p));
        p = eol != NULL ? eol + 1 : end;
        const char *topic;
        rd_kafka_resp_err_t perr = produce_one(k, s, line, &topic);
        if (perr) {
            uv_mutex_lock(&k->mu);
            note_failure(s, perr, topic, line);
            uv_mutex_unlock(&k->mu);
            continue;
        }
        produced++;
        bytes += line.len;
    }
    lf_output_stats(out)->bytes_written += bytes;
    uv_mutex_lock(&k->mu);
    s->left += produced;
    s->producing = false;
    finish_unlock(k, s);
    return LF_OK;
}

static enum lf_err kafka_prepare(const struct lf_output *out, struct lf_batch *b)
{
    (void)out;
    struct lf_str nd;
    return lf_batch_ndjson(b, &nd);
}

/* Waits, with a bound, for the reports of everything sent; linger.ms does not apply
 * meanwhile. What is still outstanding is answered later, by the poll thread. */
static enum lf_err kafka_flush(struct lf_output *out, struct lf_errbuf *eb)
{
    (void)eb; /* brokers away: the batches stay with librdkafka, which keeps retrying */
    struct kafka_out *k = lf_output_ctx(out);
    if (k->rk != NULL)
        lf_err_ignore(rd_kafka_flush(k->rk, LF_KAFKA_FLUSH_MS) ? LF_EAGAIN : LF_OK);
    return LF_OK;
}

static void kafka_close(struct lf_output *out)
{
    struct kafka_out *k = lf_output_ctx(out);
    /* The pipeline drains first, so this is normally immediate. Whatever is still queued
     * after the bound is purged: its reports answer the batches LF_EAGAIN. */
    if (k->rk != NULL && rd_kafka_flush(k->rk, LF_KAFKA_CLOSE_MS) != RD_KAFKA_RESP_ERR_NO_ERROR) {
        lf_err_ignore(rd_kafka_purge(k->rk, RD_KAFKA_PURGE_F_QUEUE | RD_KAFKA_PURGE_F_INFLIGHT)
                          ? LF_EIO
                          : LF_OK);
        lf_err_ignore(rd_kafka_flush(k->rk, LF_KAFKA_CLOSE_MS) ? LF_EAGAIN : LF_OK);
    }
    kafka_free(k);
    lf_output_set_ctx(out, NULL);
}

/* The check's throwaway producer says nothing: what matters comes back from rd_kafka_new(). */
static void quiet_log(const rd_kafka_t *rk, int level, const char *fac, const char *buf)
{
    (void)rk;
    (void)level;
    (void)fac;
    (void)buf;
}

/* Builds the producer's configuration with every option, then a producer from it
 * (librdkafka checks some options only then, such as sasl.mechanism), and throws both away:
 * what librdkafka refuses, the load reports. The producer gets no brokers (the list was
 * checked by then), so a check connects nowhere and logs nothing. */
static void kafka_check(const struct lf_output_conf *conf, struct lf_config_report *rep)
{
    rd_kafka_conf_t *rc = rd_kafka_conf_new();
    if (rc == NULL)
        return; /* out of memory: open says so */
    struct lf_errbuf eb = { "" };
    if (set_options(conf, rc, &eb)) {
        lf_config_scrub(&conf->env, eb.msg, sizeof(eb.msg));
        lf_config_report(rep, conf->librdkafka_json != NULL ? "librdkafka" : "type", "%s", eb.msg);
        rd_kafka_conf_destroy(rc);
        return;
    }
    char why[512] = "";
    rd_kafka_conf_set_log_cb(rc, quiet_log);
    lf_err_ignore(set_prop(rc, &conf->env, "bootstrap.servers", "", &eb)); /* a known key */
    rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_PRODUCER, rc, why, sizeof(why));
    if (rk == NULL) {
        rd_kafka_conf_destroy(rc); /* still ours when rd_kafka_new() failed */
        lf_config_scrub(&conf->env, why, sizeof(why));
        lf_config_report(rep, conf->librdkafka_json != NULL ? "librdkafka" : "type",
                         "librdkafka: %s", why);
        return;
    }
    rd_kafka_destroy(rk);
}

const struct lf_output_ops lf_output_kafka = {
    .name = "kafka",
    .open = kafka_open,
    .send = kafka_send,
    .flush = kafka_flush,
    .prepare = kafka_prepare,
    .close = kafka_close,
    .check = kafka_check,
};
