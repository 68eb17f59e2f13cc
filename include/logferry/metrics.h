/* metrics.h - the /metrics, /healthz, /readyz and /status HTTP server and the Prometheus
 * text writer.
 *
 * The server is a small, strict HTTP/1.0 and 1.1 server on the libuv loop: one request per
 * connection, answered with Content-Length and Connection: close. It knows no metric itself:
 * the caller renders the whole /metrics body (with lf_prom_family() and lf_prom_sample())
 * and answers the probes and /status. See docs/metrics.md for the endpoints. */
#ifndef LF_METRICS_H
#define LF_METRICS_H

#include <stdbool.h>
#include <stdint.h>
#include <uv.h>

#include "logferry/buf.h"
#include "logferry/err.h"

struct lf_metrics_server;

/* Renders the whole /metrics body into out (append). An error answers 500. Loop thread. */
typedef enum lf_err lf_metrics_render_fn(void *arg, struct lf_buf *out);
/* What a request asks for; server.c turns it into the answer. */
enum lf_metrics_route {
    LF_METRICS_ROUTE_METRICS,     /* GET or HEAD /metrics: 200 with the rendered body */
    LF_METRICS_ROUTE_HEALTHZ,     /* GET or HEAD /healthz: the probe's answer (liveness) */
    LF_METRICS_ROUTE_READYZ,      /* GET or HEAD /readyz: the probe's answer (readiness) */
    LF_METRICS_ROUTE_STATUS,      /* GET or HEAD /status: the probe's JSON */
    LF_METRICS_ROUTE_NOT_FOUND,   /* GET or HEAD of another path: 404 */
    LF_METRICS_ROUTE_BAD_METHOD,  /* a well-formed request with another method: 405 */
    LF_METRICS_ROUTE_BAD_REQUEST, /* not a well-formed HTTP/1.0 or 1.1 request head: 400 */
};

/* Answers /healthz, /readyz or /status (route): appends the body to out (text ending in
 * '\n' that names what is wrong on 503; JSON for /status) and returns the HTTP status: 200,
 * 503, or 500 when it could not render. Loop thread. */
typedef int lf_metrics_probe_fn(void *arg, enum lf_metrics_route route, struct lf_buf *out);

/* How long a connection may take to send its whole request head (a total, however the
 * bytes trickle in), and then to take its answer and close. */
#define LF_METRICS_IDLE_MS 3000
/* At most this many connections at once. A newcomer over the limit closes the oldest one with
 * nothing to read that is not writing an answer; if there is none, it is closed itself. */
#define LF_METRICS_MAX_CONNS 64
/* A request head (request line and headers) larger than this is answered 431 and closed. */
#define LF_METRICS_MAX_HEAD 8192
/* A /metrics body larger than this is answered 500. */
#define LF_METRICS_MAX_BODY (64u << 20)

/* Listens on listen ("HOST:PORT": a name, an IPv4 address or [IPv6]; port 0 = any free
 * port) on loop. A name is resolved here, blocking, to its first IPv4 address (else its
 * first IPv6 one). Returns a new server in *out; stop with lf_metrics_server_stop(). LF_EIO
 * with eb ("metrics.listen 127.0.0.1:5066: address already in use") if it cannot resolve
 * or listen, LF_EINVAL if listen is not HOST:PORT. On failure *out is NULL and, unless libuv
 * refused an already listening socket (then the loop must run once more), nothing is left on the
 * loop. render, probe and arg are borrowed: valid until the server is freed; NULL render serves
 * an empty body, NULL probe answers 200 "ok" (and "{}" for /status). Loop thread. */
LF_MUST_CHECK enum lf_err lf_metrics_server_start(uv_loop_t *loop,
                                                  const char *listen,
                                                  lf_metrics_render_fn *render,
                                                  lf_metrics_probe_fn *probe,
                                                  void *arg,
                                                  struct lf_metrics_server **out,
                                                  struct lf_errbuf *eb);

/* The port actually bound (useful with port 0). Any thread. */
int lf_metrics_server_port(const struct lf_metrics_server *s);

/* Sets the per-connection timeout (default LF_METRICS_IDLE_MS) for connections accepted
 * from now on; tests shorten it. Loop thread. */
void lf_metrics_server_set_idle_ms(struct lf_metrics_server *s, uint64_t idle_ms);

/* Closes the listener and every connection; the server is freed once all handles are
 * closed (the loop must run on until then). NULL is a no-op. Loop thread. */
void lf_metrics_server_stop(struct lf_metrics_server *s);


/* The length of the request head in head[0, len) up to and including its blank line (CRLF
 * CRLF or bare LFs), or 0 if it has not all arrived. from: how many bytes an earlier call
 * that returned 0 was given (0 the first time), so each byte is scanned about once. Any
 * thread. */
size_t lf_metrics_head_end(const char *head, size_t len, size_t from);

/* Decides the answer to the request head head[0, len), as lf_metrics_head_end() measured it
 * (any bytes are safe). *head_only is set for HEAD requests. Any thread. */
enum lf_metrics_route lf_metrics_route(const char *head, size_t len, bool *head_only);

/* Prometheus text writer (exposition format 0.0.4). On error out may end in part of a line:
 * discard the whole render. LF_EINVAL for a name that is not [a-zA-Z_:][a-zA-Z0-9_:]* or a
 * type other than counter, gauge or histogram; LF_ETOOBIG or LF_ENOMEM from out. */

/* Appends a family's `# HELP` and `# TYPE` lines; help is escaped (\\, \n). */
LF_MUST_CHECK enum lf_err lf_prom_family(struct lf_buf *out,
                                         const char *name,
                                         const char *type /* counter|gauge|histogram */,
                                         const char *help);

/* Appends one sample `name{label="value",...} value\n`; labels is NULL-terminated pairs
 * (k1, v1, k2, v2, NULL) or NULL; label values are escaped (\\, \", \n). labels borrowed
 * for the call only. */
LF_MUST_CHECK enum lf_err
lf_prom_sample(struct lf_buf *out, const char *name, const char *const *labels, uint64_t value);

/* As lf_prom_sample() with a floating-point value (a histogram's _sum, an `le` bound). */
LF_MUST_CHECK enum lf_err lf_prom_sample_double(struct lf_buf *out, const char *name,
                                                const char *const *labels, double value);

#endif
