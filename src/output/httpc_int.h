/* httpc_int.h - the HTTP client the HTTP-based outputs share, within src/output/ only.
 *
 *   lane thread                      the client's loop thread (libuv + libcurl multi)
 *   lf_httpc_submit(b, body) ──► pending ring ──async──► a free slot: its easy handle
 *                                                        sends body; uv_poll/uv_timer drive
 *                                                        curl_multi_socket_action
 *                                 done(arg, b, reply) ◄── transfer ended (answer or not)
 *
 * One request slot per max_in_flight, each with an easy handle made once; the connection
 * pool (keep-alive), a share of TLS sessions and DNS answers, and the header list (with
 * auth) live as long as the client. Applies from the output's conf: timeout, proxy,
 * tls.*, auth.*, bearer_token, headers. Messages name the URL as "METHOD
 * scheme://host:port/path" (lf_httpc_where()): no user info, query or secret. */
#ifndef LF_HTTPC_INT_H
#define LF_HTTPC_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "logferry/batch.h"
#include "logferry/buf.h"
#include "logferry/config.h"
#include "logferry/err.h"

struct lf_httpc;
struct lf_output;
struct lf_deadletter;

/* How a request ended. */
struct lf_httpc_reply {
    const char *error;  /* no HTTP answer (connection, TLS, timeout): why; else NULL */
    long status;        /* the HTTP status when error is NULL */
    struct lf_str body; /* the response body's start, up to max_body bytes; borrowed: valid
                           during the done call */
    uint64_t retry_after_ms; /* the answer's Retry-After (seconds or a date), up to the
                                output's backoff.max; 0: none */
};

/* Called on the loop thread once per submitted batch; the slot is free again by then. */
typedef void lf_httpc_done_fn(void *arg, struct lf_batch *b, const struct lf_httpc_reply *r);

struct lf_httpc_spec {
    const char *url;            /* borrowed during lf_httpc_new() */
    const char *method;         /* "POST", "PUT"... */
    const char *const *headers; /* NULL-terminated "Name: value" lines for every request
                                   (Content-Type, Content-Encoding...); copied */
    size_t max_body;            /* response bytes kept for done */
    lf_httpc_done_fn *done;
    void *arg;
    /* Optional: a request of the output's own beside the batches (a status poll), to
     * side_url with the same headers but Content-Encoding (its body is plain), started by
     * lf_httpc_side() and answered to side_done;
     * and tick, called every tick_ms. Both on the loop thread, with arg. */
    const char *side_url; /* borrowed during lf_httpc_new(); NULL: no side request */
    void (*side_done)(void *arg, const struct lf_httpc_reply *r);
    void (*tick)(void *arg);
    uint64_t tick_ms;
};

/* Starts the side request with body (borrowed: unchanged until side_done is called). false
 * if one is out already. Loop thread only (from tick or an answer). */
bool lf_httpc_side(struct lf_httpc *c, struct lf_str body);

/* Returns a new client in *out, its thread running; free with lf_httpc_free(). conf is
 * borrowed: it must outlive the client. LF_ECONFIG (bad url, headers, auth) or LF_EIO with
 * eb filled, naming conf->name. */
LF_MUST_CHECK enum lf_err lf_httpc_new(const struct lf_output_conf *conf,
                                       const struct lf_httpc_spec *spec,
                                       struct lf_httpc **out,
                                       struct lf_errbuf *eb);

/* Queues b for sending with body (borrowed: unchanged until done is called for b). At most
 * max_in_flight batches may be submitted and not yet done. Any thread but the loop's. */
void lf_httpc_submit(struct lf_httpc *c, struct lf_batch *b, struct lf_str body);

/* The check (struct lf_output_ops) of the HTTP-based outputs: url, headers,
 * auth, tls files. libcurl is loaded. */
void lf_httpc_check(const struct lf_output_conf *conf, struct lf_config_report *rep);

/* "METHOD scheme://host:port/path", for messages. Borrowed: valid until free. */
const char *lf_httpc_where(const struct lf_httpc *c);

/* Stops the thread and frees; every submitted batch must have been answered.
 * lf_httpc_free(NULL) is a no-op. */
void lf_httpc_free(struct lf_httpc *c);

/* Sets on the easy handle easy (a CURL *) what every request of an output takes from conf:
 * http(s) only, no signals, timeout, TCP keep-alive, proxy and tls.*. LF_ENOMEM, LF_EINVAL
 * (an option libcurl refuses). */
LF_MUST_CHECK enum lf_err lf_httpc_easy_conf(void *easy, const struct lf_output_conf *conf);

/* True for an HTTP status that means "later": 408, 429, 5xx. */
bool lf_httpc_status_retryable(long status);

/* "HTTP 400: <start of body>" into dst, the body's bytes shown as printable ASCII and
 * scrubbed of c's values from the environment (a peer may echo a header or the URL). */
void lf_httpc_reason(const struct lf_httpc *c,
                     const struct lf_httpc_reply *r,
                     char *dst,
                     size_t len);

/* A gzip writer for request bodies, reused across requests. NULL if out of memory. */
struct z_stream_s *lf_httpc_gzip_new(void);
void lf_httpc_gzip_free(struct z_stream_s *zs);

/* Compresses src into dst (reset first) as one gzip member, with zs. */
LF_MUST_CHECK enum lf_err
lf_httpc_gzip(struct z_stream_s *zs, struct lf_str src, struct lf_buf *dst);

/* base without its trailing slashes, then path: a new string (free() it), or NULL. */
char *lf_httpc_url(const char *base, const char *path);

#define LF_HTTPC_REASON_MAX 200 /* response bytes worth keeping for a message */


/* A header line, head then value ("Content-Type: " and "text/plain"), in a new string in *out
 * (free it with lf_httpc_line_free()), or NULL when value is NULL. LF_ENOMEM. */
LF_MUST_CHECK enum lf_err lf_httpc_line(const char *head, const char *value, char **out);

/* Wipes line (it may hold a secret) and frees it; NULL is a no-op. */
void lf_httpc_line_free(char *line);

/* The request headers of an HTTP-based output into lines (room for 4), NULL-terminated:
 * content_type (a "Content-Type: ..." line), the Content-Encoding of compression (none: no
 * line), then extra when not NULL. */
void lf_httpc_headers(const char **lines,
                      const char *content_type,
                      enum lf_compression compression,
                      const char *extra);

/* Opens what every HTTP-based output holds: its dead letters in conf's data_dir (or the
 * working directory) in *dl, its client made from spec in *client; warns when tls.verify is
 * off. Errors as lf_deadletter_new() and lf_httpc_new(), with eb filled. */
LF_MUST_CHECK enum lf_err lf_httpc_open(const struct lf_output_conf *conf,
                                        const struct lf_httpc_spec *spec,
                                        struct lf_deadletter **dl,
                                        struct lf_httpc **client,
                                        struct lf_errbuf *eb);

/* For outputs that send a batch in one request and take the answer for the batch as a
 * whole: answers b to out from r. 2xx: LF_OK; no answer, 408, 429, 5xx: LF_EAGAIN (logged
 * with the reason; a Retry-After is the least delay before the retry); anything else: b's events go to dl, then done (LF_EAGAIN if dl cannot
 * be written). Loop thread. */
void lf_httpc_answer(struct lf_httpc *c,
                     struct lf_output *out,
                     struct lf_deadletter *dl,
                     struct lf_batch *b,
                     const struct lf_httpc_reply *r);

#endif
