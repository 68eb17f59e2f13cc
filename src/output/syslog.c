/* syslog.c - the syslog output: RFC 5424 messages over TCP, TLS or UDP.
 *
 *   <PRI>1 TIMESTAMP HOSTNAME APP-NAME - - - MSG
 *
 * PRI is facility * 8 + severity (fixed, or mapped from an event field); TIMESTAMP is the
 * event's @timestamp in RFC 3339 UTC with milliseconds; PROCID, MSGID and STRUCTURED-DATA
 * are nil; MSG is the message, or the whole event JSON with format json, without a BOM.
 *
 * tcp, tls: octet counting (RFC 6587: "LEN SP MESSAGE"; RFC 5425 for TLS) on one
 * connection, opened at the first batch and kept. A batch's frames are formatted into one
 * reused buffer and written in one loop. Syslog has no acknowledgement above TCP, so a
 * written batch is held, and counted delivered only when a drain has seen the peer's TCP
 * acknowledge every byte (the socket's send queue empty) and the connection then stayed up
 * for `settle`: a receiver that stops with acknowledged bytes unread resets the connection
 * (Linux sends RST on a close with unread data), usually within that time. Held batches
 * are settled on flush (the lane flushes when it has nothing more to send, or holds
 * max_in_flight batches) and when the peer ended the connection. A failed write, a reset,
 * or timeout_ms without progress closes the connection and answers every held batch and
 * the current one LF_EAGAIN, in order: the lane sends them again after its backoff on a
 * new connection, so events may arrive twice. What stays uncovered (a receiver that dies
 * without a reset after the settle) is in docs/outputs.md, with what it means for
 * at-least-once.
 *
 * udp: one datagram per event, cut to max_message_bytes at a UTF-8 boundary (counted and
 * logged at most once a minute). A batch is acknowledged once its datagrams are sent;
 * what the network or a stopped receiver drops is lost.
 *
 * Field values (severity_field, app_name_field) are looked up by dotted path among the
 * members stages added to the event (extra) and then the source's (input, host, fields),
 * scanning their JSON text in place: nothing is allocated per event. Lane thread only. */
#include "config.h"

#define LF_LOG_COMPONENT "output"

#include "netlib_int.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>
#include <uv.h>

#include "fields_int.h"
#include "logferry/log.h"
#include "output_int.h"
#include "syslog_int.h"

#define LF_SYSLOG_MAX_HELD  64 /* written, not yet acknowledged: max_in_flight's bound */
#define LF_SYSLOG_APP_MAX   48 /* RFC 5424 APP-NAME */
#define LF_SYSLOG_HOST_MAX  255
#define LF_SYSLOG_HEAD_MAX  400 /* "<191>1 " + timestamp + host + app + " - - - " */
#define LF_SYSLOG_FRAME_MAX ((size_t)SIZE_MAX / 4)
#define TRUNC_LOG_NS        (60 * 1000000000ull) /* truncation warnings: once a minute */

struct syslog_out {
    const struct lf_output_conf *conf; /* borrowed */
    char host[256];                    /* of address, without brackets */
    char port[8];
    char where[300];  /* "host:port" for messages */
    SSL_CTX *ssl_ctx; /* owned; protocol tls only */
    struct lf_syslog_conn conn;
    bool down;                             /* the last connect failed: say when one works */
    char hostname[LF_SYSLOG_HOST_MAX + 1]; /* HOSTNAME of every message */
    struct lf_buf frames;                  /* tcp/tls: a batch's frames; udp: one datagram */
    struct lf_buf json;                    /* format json: one event's JSON */
    struct lf_ts_cache json_ts;            /* timestamps of the JSON encoder */
    int64_t ts_ms;                         /* the millisecond ts_text holds */
    bool ts_set;
    char ts_text[25];
    struct lf_batch *held[LF_SYSLOG_MAX_HELD]; /* borrowed: written, not acknowledged */
    size_t n_held;
    uint64_t truncated;        /* udp messages cut at max_message_bytes, ever */
    uint64_t truncated_warned; /* of which a warning already told */
    uint64_t truncated_log_ns; /* monotonic time of that warning */
};

/* ---- fields ---- */

/* The raw JSON value of field path in ev: stages' members first, then the source's. */
static bool event_field(const struct lf_event *ev, const char *path, struct lf_str *val)
{
    size_t plen = strlen(path);
    if (ev->extra.len > 0 && lf_fields_find(ev->extra, path, plen, val))
        return true;
    if (ev->source == NULL)
        return false;
    struct lf_str tail = lf_buf_str(&ev->source->tail); /* "}" closing "log", then members */
    size_t at = ev->source->tail_at[0];
    return lf_fields_find((struct lf_str){ tail.ptr + at, tail.len - at }, path, plen, val);
}

/* Copies a field value as header text into dst[cap]: a string's content or a scalar's
 * text, printable ASCII only (other bytes and escapes become '_'), cut at cap - 1. Returns
 * the length; 0 for an empty value or an object or array. */
static size_t token_of(struct lf_str v, char *dst, size_t cap)
{
    const char *p = v.ptr;
    const char *end = v.ptr + v.len;
    if (p < end && (*p == '{' || *p == '['))
        return 0;
    if (p < end && *p == '"') {
        p++;
        end--; /* the closing quote */
    }
    size_t n = 0;
    for (; p < end && n + 1 < cap; p++) {
        unsigned char ch = (unsigned char)*p;
        if (ch == '\\' && p + 1 < end) {
            p++;
            ch = (unsigned char)*p;
            if (ch == 'u')
                p += p + 4 < end ? 4 : (size_t)(end - p - 1);
            if (ch != '"' && ch != '\\' && ch != '/')
                ch = '_';
        }
        dst[n++] = (char)(ch > 32 && ch < 127 ? ch : '_');
    }
    dst[n] = '\0';
    return n;
}

/* Maps the names logging libraries use for levels (any case) and the numbers 0-7 to a
 * severity; fallback for anything else. */
static int severity_of(struct lf_str v, int fallback)
{
    static const struct {
        const char *name;
        int severity;
    } names[] = {
        { "emerg", 0 }, { "emergency", 0 },   { "panic", 0 },         { "alert", 1 },
        { "crit", 2 },  { "critical", 2 },    { "fatal", 2 },         { "err", 3 },
        { "error", 3 }, { "warn", 4 },        { "warning", 4 },       { "notice", 5 },
        { "info", 6 },  { "information", 6 }, { "informational", 6 }, { "debug", 7 },
        { "trace", 7 },
    };
    char t[16];
    size_t n = token_of(v, t, sizeof(t));
    if (n == 1 && t[0] >= '0' && t[0] <= '7')
        return t[0] - '0';
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        if (strcasecmp(t, names[i].name) == 0)
            return names[i].severity;
    }
    return fallback;
}

/* ---- formatting ---- */

/* Writes the header of ev's message ("<PRI>1 TIMESTAMP HOST APP - - - ") into head. */
static size_t
format_head(struct syslog_out *s, const struct lf_event *ev, char head[LF_SYSLOG_HEAD_MAX])
{
    const struct lf_output_conf *conf = s->conf;
    int severity = conf->syslog_severity;
    struct lf_str v;
    if (conf->syslog_severity_field != NULL && event_field(ev, conf->syslog_severity_field, &v))
        severity = severity_of(v, severity);
    char app[LF_SYSLOG_APP_MAX + 1];
    if (conf->syslog_app_name_field == NULL || !event_field(ev, conf->syslog_app_name_field, &v) ||
        token_of(v, app, sizeof(app)) == 0)
        snprintf(app, sizeof(app), "%s", conf->syslog_app_name);
    int64_t ms = ev->timestamp_ns / 1000000 - (ev->timestamp_ns % 1000000 < 0);
    if (!s->ts_set || ms != s->ts_ms) {
        lf_format_timestamp(ev->timestamp_ns, s->ts_text);
        s->ts_ms = ms;
        s->ts_set = true;
    }
    int n = snprintf(head, LF_SYSLOG_HEAD_MAX, "<%d>1 %s %s %s - - - ",
                     conf->syslog_facility * 8 + severity, s->ts_text, s->hostname, app);
    return n > 0 && n < LF_SYSLOG_HEAD_MAX ? (size_t)n : 0;
}

/* The MSG of ev: its message, or its JSON (in s->json, without the newline). */
static enum lf_err message_of(struct syslog_out *s, const struct lf_event *ev, struct lf_str *msg)
{
    if (s->conf->syslog_format == LF_SYSLOG_MESSAGE) {
        *msg = ev->message;
        return LF_OK;
    }
    lf_buf_reset(&s->json);
    enum lf_err err = lf_event_encode_cached(&s->json, ev, &s->json_ts);
    if (err)
        return err;
    *msg = lf_buf_str(&s->json);
    if (msg->len > 0 && msg->ptr[msg->len - 1] == '\n')
        msg->len--;
    return LF_OK;
}

/* Appends every event of b as an octet-counted frame to s->frames. */
static enum lf_err format_frames(struct syslog_out *s, const struct lf_batch *b)
{
    lf_buf_reset(&s->frames);
    for (size_t i = 0; i < lf_batch_count(b); i++) {
        const struct lf_event *ev = lf_batch_event(b, i);
        if (ev->flags & LF_EVENT_DROPPED)
            continue; /* filtered: acknowledged with the batch, never sent */
        char head[LF_SYSLOG_HEAD_MAX];
        size_t head_len = format_head(s, ev, head);
        struct lf_str msg;
        enum lf_err err = message_of(s, ev, &msg);
        size_t total;
        if (!err)
            err = lf_size_add(head_len, msg.len, &total);
        if (err)
            return err;
        char count[24];
        int n = snprintf(count, sizeof(count), "%zu ", total);
        err = lf_buf_append(&s->frames, count, (size_t)n);
        if (!err)
            err = lf_buf_append(&s->frames, head, head_len);
        if (!err)
            err = lf_buf_append_str(&s->frames, msg);
        if (err)
            return err;
    }
    return LF_OK;
}

/* Cuts msg so that head_len + msg fits max bytes, never inside a UTF-8 character. */
static bool cut_to_fit(struct lf_str *msg, size_t head_len, size_t max)
{
    if (head_len + msg->len <= max)
        return false;
    size_t n = max > head_len ? max - head_len : 0;
    while (n > 0 && ((unsigned char)msg->ptr[n] & 0xC0) == 0x80)
        n--; /* msg->ptr[n] continues the character that starts before it */
    msg->len = n;
    return true;
}

/* ---- delivery ---- */

/* Answers the held batches res, in the order they were sent. */
static void answer_held(struct lf_output *out, struct syslog_out *s, enum lf_err res)
{
    size_t n = s->n_held;
    s->n_held = 0; /* done() may send again, re-entering this output */
    for (size_t i = 0; i < n; i++)
        lf_output_done(out, s->held[i], res);
}

/* Closes the connection after a failure (logged with why) and hands every held batch,
 * then b (if not NULL), back for a retry. */
static void
lose_connection(struct lf_output *out, struct syslog_out *s, const char *why, struct lf_batch *b)
{
    char text[sizeof(((struct lf_errbuf *)NULL)->msg)];
    snprintf(text, sizeof(text), "%s", why);
    lf_config_scrub(&s->conf->env, text, sizeof(text)); /* OpenSSL's text */
    lf_warn("output %s: %s: %s; closing the connection, %zu batches will be retried", s->conf->name,
            s->where, text, s->n_held + (b != NULL));
    lf_output_stats(out)->errors++;
    lf_syslog__conn_close(&s->conn);
    answer_held(out, s, LF_EAGAIN);
    if (b != NULL)
        lf_output_done(out, b, LF_EAGAIN);
}

/* Acknowledges the held batches once the peer's TCP has every byte of them and the
 * connection stayed up for settle_ms more; else hands them back for a retry. */
static void settle_held(struct lf_output *out, struct syslog_out *s)
{
    if (s->n_held == 0)
        return;
    struct lf_errbuf eb = { "" };
    if (lf_syslog__conn_drain(&s->conn, s->conf->timeout_ms, &eb) ||
        lf_syslog__conn_settle(&s->conn, s->conf->syslog_settle_ms, &eb)) {
        lose_connection(out, s, eb.msg, NULL);
        return;
    }
    answer_held(out, s, LF_OK);
}

/* Connects if not connected. On failure logs why, answers b LF_EAGAIN and returns false. */
static bool ensure_connected(struct lf_output *out, struct syslog_out *s, struct lf_batch *b)
{
    if (s->conn.fd >= 0 && !lf_syslog__conn_alive(&s->conn)) {
        lf_info("output %s: %s ended the connection; reconnecting", s->conf->name, s->where);
        settle_held(out, s); /* after an orderly close, what it acknowledged was read */
        lf_syslog__conn_close(&s->conn);
    }
    if (s->conn.fd >= 0)
        return true;
    struct lf_errbuf eb = { "" };
    if (lf_syslog__conn_open(&s->conn, s->host, s->port, s->conf->protocol, s->conf->timeout_ms,
                             &eb)) {
        lf_config_scrub(&s->conf->env, eb.msg, sizeof(eb.msg));
        lf_warn("output %s: %s; batch of %zu events will be retried", s->conf->name, eb.msg,
                lf_batch_count(b));
        lf_output_stats(out)->errors++;
        s->down = true;
        lf_output_done(out, b, LF_EAGAIN);
        return false;
    }
    if (s->down)
        lf_info("output %s: connected to %s again", s->conf->name, s->where);
    else
        lf_debug("output %s: connected to %s", s->conf->name, s->where);
    s->down = false;
    return true;
}

/* Writes s->frames. On failure closes the connection, hands the held batches and b back
 * for a retry and returns false. */
static bool write_frames(struct lf_output *out, struct syslog_out *s, struct lf_batch *b)
{
    struct lf_errbuf eb = { "" };
    struct lf_str data = lf_buf_str(&s->frames);
    if (lf_syslog__conn_write(&s->conn, data, s->conf->timeout_ms, &eb)) {
        lose_connection(out, s, eb.msg, b);
        return false;
    }
    lf_output_stats(out)->bytes_written += data.len;
    return true;
}

static enum lf_err stream_send(struct lf_output *out, struct syslog_out *s, struct lf_batch *b)
{
    enum lf_err err = format_frames(s, b);
    if (err) {
        lf_output_stats(out)->errors++;
        return err;
    }
    if (!ensure_connected(out, s, b) || !write_frames(out, s, b))
        return LF_OK; /* b was answered LF_EAGAIN */
    s->held[s->n_held++] = b;
    if (s->n_held == LF_SYSLOG_MAX_HELD)
        settle_held(out, s);
    return LF_OK;
}

/* Counts a cut message; warns at most once a minute, with the count since the last. */
static void note_truncated(struct syslog_out *s)
{
    s->truncated++;
    uint64_t now = uv_hrtime();
    if (s->truncated_log_ns != 0 && now - s->truncated_log_ns < TRUNC_LOG_NS)
        return;
    lf_warn("output %s: %" PRIu64 " messages longer than max_message_bytes (%zu) cut to fit a "
            "datagram (%" PRIu64 " in all)",
            s->conf->name, s->truncated - s->truncated_warned, s->conf->syslog_max_message_bytes,
            s->truncated);
    s->truncated_warned = s->truncated;
    s->truncated_log_ns = now;
}

static enum lf_err udp_send(struct lf_output *out, struct syslog_out *s, struct lf_batch *b)
{
    if (!ensure_connected(out, s, b))
        return LF_OK;
    for (size_t i = 0; i < lf_batch_count(b); i++) {
        const struct lf_event *ev = lf_batch_event(b, i);
        if (ev->flags & LF_EVENT_DROPPED)
            continue;
        char head[LF_SYSLOG_HEAD_MAX];
        size_t head_len = format_head(s, ev, head);
        struct lf_str msg;
        enum lf_err err = message_of(s, ev, &msg);
        if (err) {
            lf_output_stats(out)->errors++;
            return err;
        }
        if (cut_to_fit(&msg, head_len, s->conf->syslog_max_message_bytes))
            note_truncated(s);
        lf_buf_reset(&s->frames);
        err = lf_buf_append(&s->frames, head, head_len);
        if (!err)
            err = lf_buf_append_str(&s->frames, msg);
        if (err) {
            lf_output_stats(out)->errors++;
            return err;
        }
        if (!write_frames(out, s, b))
            return LF_OK; /* b was answered LF_EAGAIN */
    }
    lf_output_done(out, b, LF_OK); /* UDP: sent is all we can know */
    return LF_OK;
}

static enum lf_err syslog_send(struct lf_output *out, struct lf_batch *b)
{
    struct syslog_out *s = lf_output_ctx(out);
    if (s->conf->protocol == LF_SYSLOG_UDP)
        return udp_send(out, s, b);
    return stream_send(out, s, b);
}

static enum lf_err syslog_flush(struct lf_output *out, struct lf_errbuf *eb)
{
    (void)eb; /* a failed drain hands the batches back for a retry: not an error here */
    settle_held(out, lf_output_ctx(out));
    return LF_OK;
}

/* ---- open and close ---- */

/* Splits conf->address (validated at load: HOST:PORT, [IPv6]:PORT) into s->host, s->port. */
static enum lf_err split_address(struct syslog_out *s, struct lf_errbuf *eb)
{
    const char *a = s->conf->address;
    const char *colon = a != NULL ? strrchr(a, ':') : NULL;
    if (colon == NULL || colon == a)
        return lf_fail(eb, LF_ECONFIG, "output %s: address must be HOST:PORT", s->conf->name);
    const char *h = a;
    size_t hlen = (size_t)(colon - a);
    if (h[0] == '[' && hlen >= 2) {
        h++;
        hlen -= 2;
    }
    if (hlen >= sizeof(s->host) || strlen(colon + 1) >= sizeof(s->port))
        return lf_fail(eb, LF_ECONFIG, "output %s: address too long", s->conf->name);
    memcpy(s->host, h, hlen);
    s->host[hlen] = '\0';
    snprintf(s->port, sizeof(s->port), "%s", colon + 1);
    snprintf(s->where, sizeof(s->where), "%s", a);
    return LF_OK;
}

/* The agent's host name as a HOSTNAME: printable ASCII, or "-" (nil) if unknown. */
static void default_hostname(char dst[LF_SYSLOG_HOST_MAX + 1])
{
    char name[LF_SYSLOG_HOST_MAX + 1] = "";
    if (gethostname(name, sizeof(name)) != 0 || name[0] == '\0')
        snprintf(name, sizeof(name), "-");
    name[LF_SYSLOG_HOST_MAX] = '\0';
    size_t i = 0;
    for (; name[i] != '\0'; i++) {
        unsigned char ch = (unsigned char)name[i];
        dst[i] = (char)(ch > 32 && ch < 127 ? ch : '_');
    }
    dst[i] = '\0';
}

/* The TLS context every connection of the output shares: protocol TLS 1.2 or later; the
 * peer verified against ca_file (or the system's CAs) unless verify is off; an optional
 * client certificate. */
static enum lf_err make_tls(struct syslog_out *s, struct lf_errbuf *eb)
{
    const struct lf_output_conf *conf = s->conf;
    const char *what = "create a TLS context";
    const char *file = "";
    ERR_clear_error();
    SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
    if (ctx == NULL)
        goto fail;
    SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
    SSL_CTX_set_mode(ctx, SSL_MODE_ENABLE_PARTIAL_WRITE);
    SSL_CTX_set_verify(ctx, conf->tls_verify ? SSL_VERIFY_PEER : SSL_VERIFY_NONE, NULL);
    if (!conf->tls_verify)
        lf_warn("output %s: tls.verify is false: the receiver's certificate and name are not "
                "checked",
                conf->name);
    what = "load CA certificates";
    if (conf->tls_ca_file != NULL) {
        file = conf->tls_ca_file;
        if (SSL_CTX_load_verify_locations(ctx, conf->tls_ca_file, NULL) != 1)
            goto fail;
    } else if (SSL_CTX_set_default_verify_paths(ctx) != 1) {
        goto fail;
    }
    if ((conf->tls_cert_file == NULL) != (conf->tls_key_file == NULL)) {
        SSL_CTX_free(ctx);
        return lf_fail(eb, LF_ECONFIG, "output %s: tls.cert_file and tls.key_file go together",
                       conf->name);
    }
    if (conf->tls_cert_file != NULL) {
        what = "load the client certificate";
        file = conf->tls_cert_file;
        if (SSL_CTX_use_certificate_chain_file(ctx, conf->tls_cert_file) != 1)
            goto fail;
        what = "load the client key";
        file = conf->tls_key_file;
        if (SSL_CTX_use_PrivateKey_file(ctx, conf->tls_key_file, SSL_FILETYPE_PEM) != 1 ||
            SSL_CTX_check_private_key(ctx) != 1)
            goto fail;
    }
    s->ssl_ctx = ctx;
    return LF_OK;
fail:;
    char why[256];
    lf_syslog__ssl_reason(why, sizeof(why), "unknown error");
    SSL_CTX_free(ctx);
    return lf_fail(eb, ctx == NULL ? LF_ENOMEM : LF_ECONFIG, "output %s: %s%s%s: %s", conf->name,
                   what, file[0] != '\0' ? " from " : "", file, why);
}

static enum lf_err syslog_open(struct lf_output *out, struct lf_errbuf *eb)
{
    const struct lf_output_conf *conf = lf_output_conf(out);
    struct syslog_out *s = calloc(1, sizeof(*s));
    if (s == NULL)
        return lf_fail(eb, LF_ENOMEM, "output %s: out of memory", conf->name);
    s->conf = conf;
    enum lf_err err = split_address(s, eb);
    if (!err && conf->protocol == LF_SYSLOG_TLS)
        err = make_tls(s, eb);
    if (err) {
        free(s);
        return err;
    }
    if (conf->syslog_hostname != NULL)
        snprintf(s->hostname, sizeof(s->hostname), "%s", conf->syslog_hostname);
    else
        default_hostname(s->hostname);
    lf_syslog__conn_init(&s->conn, s->ssl_ctx);
    lf_buf_init(&s->frames, LF_SYSLOG_FRAME_MAX);
    lf_buf_init(&s->json, LF_SYSLOG_FRAME_MAX);
    lf_ts_cache_init(&s->json_ts);
    lf_output_set_ctx(out, s);
    return LF_OK;
}

static void syslog_close(struct lf_output *out)
{
    struct syslog_out *s = lf_output_ctx(out);
    settle_held(out, s); /* the pipeline drains first; this only guards other callers */
    lf_syslog__conn_close(&s->conn);
    if (s->ssl_ctx != NULL) /* else libssl may not even be loaded */
        SSL_CTX_free(s->ssl_ctx);
    lf_buf_release(&s->frames);
    lf_buf_release(&s->json);
    free(s);
    lf_output_set_ctx(out, NULL);
}

/* Every form needs the events themselves: their messages, fields and timestamps. */
static bool syslog_needs_messages(const struct lf_output *out)
{
    (void)out;
    return true;
}

/* protocol tls: the files it loads exist, the client certificate and key go together. */
static void syslog_check(const struct lf_output_conf *conf, struct lf_config_report *rep)
{
    if (conf->protocol != LF_SYSLOG_TLS)
        return;
    lf_output__check_tls_files(conf, rep);
    if ((conf->tls_cert_file == NULL) != (conf->tls_key_file == NULL))
        lf_config_report(rep, "tls", "tls.cert_file and tls.key_file go together");
}

const struct lf_output_ops lf_output_syslog = {
    .name = "syslog",
    .open = syslog_open,
    .send = syslog_send,
    .flush = syslog_flush,
    .needs_messages = syslog_needs_messages,
    .close = syslog_close,
    .check = syslog_check,
};
