/* http.c - the http output: each batch's NDJSON (zstd, gzip or plain) in one request.
 *
 *   http_send ──► lf_httpc_submit(b, b's cached form) ──► the shared HTTP client's loop
 *   (lane thread)                                         (httpc.c: keep-alive, TLS, auth)
 *   on_reply (loop thread) ◄─────────────────────────────── the answer:
 *      2xx: LF_OK;  no answer, 408, 429, 5xx: LF_EAGAIN (the lane retries the same bytes)
 *      anything else: the batch goes to the dead letters, then counts as done
 *
 * The form is computed once per batch (by prepare, ahead of the lane) and cached in the
 * batch, so a retry sends the very same bytes and allocates nothing. */
#include "config.h"

#define LF_LOG_COMPONENT "output"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "httpc_int.h"
#include "logferry/deadletter.h"
#include "logferry/log.h"
#include "output_int.h"

#define LF_HTTP_ZSTD_LEVEL 1 /* fast: batches are small and many */
#define LF_HTTP_GZIP_LEVEL 1

struct http_out {
    struct lf_output *out;
    const struct lf_output_conf *conf; /* borrowed */
    struct lf_httpc *client;           /* owned */
    struct lf_deadletter *dl;          /* owned; used on the client's loop thread only */
};

/* The body of b as this output sends it, computed once and cached in b. */
static enum lf_err
http_form(const struct lf_output_conf *conf, struct lf_batch *b, struct lf_str *body)
{
    switch (conf->compression) {
    case LF_COMPRESS_ZSTD:
        return lf_batch_zstd(b, LF_HTTP_ZSTD_LEVEL, body);
    case LF_COMPRESS_GZIP:
        return lf_batch_gzip(b, LF_HTTP_GZIP_LEVEL, body);
    case LF_COMPRESS_NONE:
        break;
    }
    return lf_batch_ndjson(b, body);
}

/* Answers b from the client's reply. Loop thread. */
static void on_reply(void *arg, struct lf_batch *b, const struct lf_httpc_reply *r)
{
    struct http_out *h = arg;
    lf_httpc_answer(h->client, h->out, h->dl, b, r);
}

static void http_free(struct http_out *h)
{
    lf_httpc_free(h->client);
    lf_deadletter_free(h->dl);
    free(h);
}

static enum lf_err http_open(struct lf_output *out, struct lf_errbuf *eb)
{
    const struct lf_output_conf *conf = lf_output_conf(out);
    if (conf->url == NULL || conf->method == NULL || conf->content_type == NULL)
        return lf_fail(eb, LF_ECONFIG, "output %s: url, method and content_type are required",
                       conf->name);
    struct http_out *h = calloc(1, sizeof(*h));
    char *ct = NULL;
    if (h == NULL || lf_httpc_line("Content-Type: ", conf->content_type, &ct)) {
        free(h);
        return lf_fail(eb, LF_ENOMEM, "output %s: out of memory", conf->name);
    }
    const char *headers[4];
    lf_httpc_headers(headers, ct, conf->compression, NULL);
    h->out = out;
    h->conf = conf;
    const struct lf_httpc_spec spec = {
        .url = conf->url,
        .method = conf->method,
        .headers = headers,
        .max_body = LF_HTTPC_REASON_MAX,
        .done = on_reply,
        .arg = h,
    };
    enum lf_err err = lf_httpc_open(conf, &spec, &h->dl, &h->client, eb);
    lf_httpc_line_free(ct);
    if (err) {
        http_free(h);
        return err;
    }
    lf_output_set_ctx(out, h);
    return LF_OK;
}

static enum lf_err http_prepare(const struct lf_output *out, struct lf_batch *b)
{
    struct lf_str body;
    return http_form(lf_output_conf(out), b, &body);
}

static enum lf_err http_send(struct lf_output *out, struct lf_batch *b)
{
    struct http_out *h = lf_output_ctx(out);
    struct lf_str body;
    enum lf_err err = http_form(h->conf, b, &body);
    if (err) {
        lf_output_stats(out)->errors++;
        return err;
    }
    lf_output_stats(out)->bytes_written += body.len;
    lf_httpc_submit(h->client, b, body);
    return LF_OK;
}

static void http_close(struct lf_output *out)
{
    http_free(lf_output_ctx(out));
    lf_output_set_ctx(out, NULL);
}

const struct lf_output_ops lf_output_http = {
    .name = "http",
    .open = http_open,
    .send = http_send,
    .prepare = http_prepare,
    .close = http_close,
    .check = lf_httpc_check,
};
