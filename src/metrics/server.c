/* server.c - the /metrics, /healthz, /readyz and /status HTTP server on the libuv loop.
 *
 * One request per connection, each connection walks one way:
 *
 *   accept ──► HEAD ──(blank line)──► WRITING ──(written)──► LINGER ──(peer EOF)──► closed
 *               │  8 KiB, no blank line: 431            │ shutdown(SHUT_WR) sent
 *               └── timer, EOF, error ──────────────────┴──── timer, error ──────► closed
 *
 * The timer bounds each phase by idle_ms: the whole request head must arrive within it (a
 * total, not restarted per read, so a byte every few seconds cannot hold a slot), and the
 * answer must be taken and the peer must close within it again. After the answer we send
 * FIN and keep reading until the peer closes: closing a socket with unread bytes (a 431
 * head) sends RST, which can destroy the answer before the client reads it.
 *
 * Slots are few (LF_METRICS_MAX_CONNS), so a newcomer that finds them all taken closes the
 * oldest connection that has nothing waiting to be read (FIONREAD 0) and is not writing an
 * answer: a silent or trickling client, or one that has its answer and will not close. A
 * probe that sends its request at once thus always gets a slot, however many idle
 * connections share its address; if every slot is busy with a request, the newcomer is
 * closed instead. docs/architecture.md says why this is not libmicrohttpd.
 *
 * The listener is a socket bound and listening before any uv handle exists, so a failed
 * start leaves nothing on the loop. Each connection owns two handles (tcp, timer) and is
 * freed when both have closed; the server counts every open handle and frees itself when
 * stopped and the count reaches zero. Memory per request: the connection (with its fixed
 * head buffer) and its body buffer for /metrics, freed once the answer is written. */
#include "config.h"

#define LF_LOG_COMPONENT "metrics"

#include <errno.h>
#include <inttypes.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "logferry/log.h"
#include "logferry/metrics.h"

#define LISTEN_BACKLOG    128
#define PROM_CONTENT_TYPE "text/plain; version=0.0.4; charset=utf-8"
#define TEXT_CONTENT_TYPE "text/plain; charset=utf-8"
#define JSON_CONTENT_TYPE "application/json"

enum conn_state {
    CONN_HEAD,    /* reading the request head into head[] */
    CONN_WRITING, /* answer queued; reads are discarded */
    CONN_LINGER,  /* answer written and FIN sent; waiting for the peer's EOF */
    CONN_CLOSING, /* uv_close() called on both handles */
};

struct conn {
    struct lf_metrics_server *srv; /* borrowed: the server outlives its connections */
    struct conn *prev;             /* in srv->conns */
    struct conn *next;
    uv_tcp_t tcp;
    uv_timer_t timer; /* phase deadline, idle_ms */
    uv_write_t write_req;
    uv_shutdown_t shutdown_req;
    enum conn_state state;
    int open_handles;               /* 2 until tcp and timer have both closed */
    bool eof;                       /* the peer shut down its side while we were writing */
    size_t head_len;                /* bytes in head[] */
    char head[LF_METRICS_MAX_HEAD]; /* request head; later a sink for discarded reads */
    char reply[512];                /* status line, headers and any short text body */
    struct lf_buf body;             /* rendered body, owned; released once written */
};

struct lf_metrics_server {
    uv_loop_t *loop; /* borrowed */
    uv_tcp_t listener;
    lf_metrics_render_fn *render; /* borrowed */
    lf_metrics_probe_fn *probe;   /* borrowed */
    void *arg;
    struct conn *conns; /* open connections, newest first */
    size_t n_conns;     /* entries in conns */
    size_t n_handles;   /* handles not yet closed: listener, 2 per conn, rejected sockets */
    uint64_t idle_ms;   /* per-phase connection deadline */
    int port;           /* bound port */
    bool stopping;
};

static void server_handle_closed(struct lf_metrics_server *srv)
{
    srv->n_handles--;
    if (srv->stopping && srv->n_handles == 0)
        free(srv);
}

static void on_conn_closed(uv_handle_t *h)
{
    struct conn *c = h->data;
    struct lf_metrics_server *srv = c->srv;
    c->open_handles--;
    if (c->open_handles == 0) {
        lf_buf_release(&c->body);
        free(c);
    }
    server_handle_closed(srv);
}

static void conn_close(struct conn *c)
{
    if (c->state == CONN_CLOSING)
        return;
    c->state = CONN_CLOSING;
    if (c->prev != NULL)
        c->prev->next = c->next;
    else
        c->srv->conns = c->next;
    if (c->next != NULL)
        c->next->prev = c->prev;
    c->srv->n_conns--;
    uv_close((uv_handle_t *)&c->tcp, on_conn_closed);
    uv_close((uv_handle_t *)&c->timer, on_conn_closed);
}

static void on_timeout(uv_timer_t *t)
{
    struct conn *c = t->data;
    lf_debug("closing a connection not done within %" PRIu64 " ms", c->srv->idle_ms);
    conn_close(c);
}

static void on_shutdown(uv_shutdown_t *req, int status)
{
    struct conn *c = req->data;
    if (c->state != CONN_CLOSING && status < 0)
        conn_close(c);
}

static void on_write(uv_write_t *req, int status)
{
    struct conn *c = req->data;
    if (c->state == CONN_CLOSING)
        return;
    lf_buf_release(&c->body);
    if (status < 0 || c->eof) {
        conn_close(c);
        return;
    }
    c->state = CONN_LINGER;
    c->shutdown_req.data = c;
    if (uv_shutdown(&c->shutdown_req, (uv_stream_t *)&c->tcp, on_shutdown) < 0)
        conn_close(c);
}

/* Queues the answer: the status line and headers, then text (a short body) if not NULL,
 * else c->body. HEAD gets the same headers and no body. */
static void send_reply(struct conn *c,
                       int status,
                       const char *reason,
                       const char *ctype,
                       const char *extra,
                       const char *text,
                       bool head_only)
{
    size_t body_len = text != NULL ? strlen(text) : c->body.len;
    int n =
        snprintf(c->reply, sizeof(c->reply),
                 "HTTP/1.1 %d %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\n%s"
                 "Connection: close\r\n\r\n%s",
                 status, reason, ctype, body_len, extra, text != NULL && !head_only ? text : "");
    uv_buf_t bufs[2];
    unsigned nbufs = 1;
    bufs[0] = uv_buf_init(c->reply, (unsigned)n);
    if (text == NULL && !head_only && c->body.len > 0)
        bufs[nbufs++] = uv_buf_init(c->body.ptr, (unsigned)c->body.len);
    c->state = CONN_WRITING;
    c->write_req.data = c;
    if (uv_timer_start(&c->timer, on_timeout, c->srv->idle_ms, 0) < 0 ||
        uv_write(&c->write_req, (uv_stream_t *)&c->tcp, bufs, nbufs, on_write) < 0)
        conn_close(c);
}

static void
send_error(struct conn *c, int status, const char *reason, const char *extra, const char *text)
{
    send_reply(c, status, reason, TEXT_CONTENT_TYPE, extra, text, false);
}

static void serve_metrics(struct conn *c, bool head_only)
{
    struct lf_metrics_server *srv = c->srv;
    enum lf_err err = srv->render != NULL ? srv->render(srv->arg, &c->body) : LF_OK;
    if (err) {
        lf_warn("GET /metrics: rendering failed: %s; answered 500", lf_err_str(err));
        lf_buf_release(&c->body);
        send_error(c, 500, "Internal Server Error", "", "internal server error\n");
        return;
    }
    send_reply(c, 200, "OK", PROM_CONTENT_TYPE, "", NULL, head_only);
}

/* /healthz, /readyz and /status: the probe's status and body. */
static void serve_probe(struct conn *c, enum lf_metrics_route route, bool head_only)
{
    struct lf_metrics_server *srv = c->srv;
    const char *ctype = route == LF_METRICS_ROUTE_STATUS ? JSON_CONTENT_TYPE : TEXT_CONTENT_TYPE;
    if (srv->probe == NULL) {
        send_reply(c, 200, "OK", ctype, "", route == LF_METRICS_ROUTE_STATUS ? "{}\n" : "ok\n",
                   head_only);
        return;
    }
    int status = srv->probe(srv->arg, route, &c->body);
    if (status == 200) {
        send_reply(c, 200, "OK", ctype, "", NULL, head_only);
    } else if (status == 503) {
        send_reply(c, 503, "Service Unavailable", ctype, "", NULL, head_only);
    } else {
        lf_buf_release(&c->body);
        send_error(c, 500, "Internal Server Error", "", "internal server error\n");
    }
}

static void handle_request(struct conn *c, size_t head_len)
{
    bool head_only = false;
    enum lf_metrics_route route = lf_metrics_route(c->head, head_len, &head_only);
    switch (route) {
    case LF_METRICS_ROUTE_METRICS:
        serve_metrics(c, head_only);
        break;
    case LF_METRICS_ROUTE_HEALTHZ:
    case LF_METRICS_ROUTE_READYZ:
    case LF_METRICS_ROUTE_STATUS:
        serve_probe(c, route, head_only);
        break;
    case LF_METRICS_ROUTE_NOT_FOUND:
        send_reply(c, 404, "Not Found", TEXT_CONTENT_TYPE, "", "not found\n", head_only);
        break;
    case LF_METRICS_ROUTE_BAD_METHOD:
        send_error(c, 405, "Method Not Allowed", "Allow: GET, HEAD\r\n", "method not allowed\n");
        break;
    case LF_METRICS_ROUTE_BAD_REQUEST:
        send_error(c, 400, "Bad Request", "", "bad request\n");
        break;
    }
}

static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
    struct conn *c = h->data;
    (void)suggested;
    if (c->state == CONN_HEAD)
        *buf = uv_buf_init(c->head + c->head_len, (unsigned)(sizeof(c->head) - c->head_len));
    else
        *buf = uv_buf_init(c->head, (unsigned)sizeof(c->head));
}

static void on_read(uv_stream_t *stream, ssize_t nread, const uv_buf_t *buf)
{
    struct conn *c = stream->data;
    (void)buf;
    if (nread == 0 || c->state == CONN_CLOSING)
        return;
    if (nread < 0) {
        if (nread == UV_EOF && c->state == CONN_WRITING) {
            c->eof = true; /* half-closed after its request: finish the answer first */
            uv_read_stop(stream);
            return;
        }
        conn_close(c);
        return;
    }
    if (c->state != CONN_HEAD)
        return; /* pipelined or excess bytes: one request per connection */
    size_t from = c->head_len;
    c->head_len += (size_t)nread;
    size_t end = lf_metrics_head_end(c->head, c->head_len, from);
    if (end > 0)
        handle_request(c, end);
    else if (c->head_len == sizeof(c->head))
        send_error(c, 431, "Request Header Fields Too Large", "",
                   "request header fields too large\n");
}

/* Accepts and drops a connection over the limit; the handle frees itself once closed. */
static void on_reject_closed(uv_handle_t *h)
{
    struct lf_metrics_server *srv = h->data;
    free(h);
    server_handle_closed(srv);
}

static void reject(struct lf_metrics_server *srv)
{
    uv_tcp_t *t = malloc(sizeof(*t));
    if (t == NULL || uv_tcp_init(srv->loop, t) < 0) {
        free(t);
        lf_error("cannot accept a connection: out of memory; the listener stalls");
        return;
    }
    t->data = srv;
    srv->n_handles++;
    lf_err_ignore(uv_accept((uv_stream_t *)&srv->listener, (uv_stream_t *)t) < 0 ? LF_EIO : LF_OK);
    uv_close((uv_handle_t *)t, on_reject_closed);
}

/* True if c may be closed to make room: it is not writing an answer and the kernel holds
 * no bytes from it that we have not read yet (a request about to be served). */
static bool conn_evictable(struct conn *c)
{
    uv_os_fd_t fd;
    int pending = 0;
    if (c->state == CONN_WRITING)
        return false;
    if (uv_fileno((uv_handle_t *)&c->tcp, &fd) < 0 || ioctl(fd, FIONREAD, &pending) < 0)
        return true; /* not a working socket: nothing to lose */
    return pending == 0;
}

/* Closes the oldest evictable connection; false if there is none. */
static bool evict_oldest(struct lf_metrics_server *srv)
{
    struct conn *victim = NULL;
    for (struct conn *c = srv->conns; c != NULL; c = c->next)
        if (conn_evictable(c))
            victim = c; /* the list is newest first: the last match is the oldest */
    if (victim == NULL)
        return false;
    lf_debug("all %d connections taken; closing the oldest idle one", LF_METRICS_MAX_CONNS);
    conn_close(victim);
    return true;
}

static void on_connection(uv_stream_t *listener, int status)
{
    struct lf_metrics_server *srv = listener->data;
    if (status < 0) {
        lf_warn("metrics listener: %s; still listening", uv_strerror(status));
        return;
    }
    if (srv->n_conns >= LF_METRICS_MAX_CONNS && !evict_oldest(srv)) {
        reject(srv);
        return;
    }
    struct conn *c = calloc(1, sizeof(*c));
    if (c == NULL) {
        reject(srv);
        return;
    }
    c->srv = srv;
    lf_buf_init(&c->body, LF_METRICS_MAX_BODY);
    if (uv_tcp_init(srv->loop, &c->tcp) < 0) {
        free(c);
        reject(srv);
        return;
    }
    lf_err_ignore(uv_timer_init(srv->loop, &c->timer) < 0 ? LF_EIO : LF_OK); /* cannot fail */
    c->tcp.data = c;
    c->timer.data = c;
    c->open_handles = 2;
    srv->n_handles += 2;
    c->next = srv->conns;
    if (srv->conns != NULL)
        srv->conns->prev = c;
    srv->conns = c;
    srv->n_conns++;
    if (uv_accept(listener, (uv_stream_t *)&c->tcp) < 0 ||
        uv_timer_start(&c->timer, on_timeout, srv->idle_ms, 0) < 0 ||
        uv_read_start((uv_stream_t *)&c->tcp, on_alloc, on_read) < 0)
        conn_close(c);
}

/* Splits "HOST:PORT" or "[V6]:PORT" into host (NUL-terminated, brackets dropped) and port
 * (at most 5 digits and a NUL); false if it is neither. */
static bool split_listen(const char *addr, char *host, size_t host_cap, char port[6])
{
    const char *colon = strrchr(addr, ':');
    if (colon == NULL || colon[1] == '\0' || strlen(colon + 1) > 5)
        return false;
    unsigned long n = 0;
    for (const char *p = colon + 1; *p != '\0'; p++) {
        if (*p < '0' || *p > '9')
            return false;
        n = n * 10 + (unsigned long)(*p - '0');
    }
    if (n > 65535)
        return false;
    bool v6 = addr[0] == '[';
    const char *h = v6 ? addr + 1 : addr;
    size_t hlen = (size_t)(colon - h);
    if (v6 && (hlen == 0 || h[hlen - 1] != ']'))
        return false;
    if (v6)
        hlen--;
    if (hlen == 0 || hlen >= host_cap || (!v6 && memchr(h, ':', hlen) != NULL))
        return false; /* a bare IPv6 address: the port is ambiguous */
    memcpy(host, h, hlen);
    host[hlen] = '\0';
    memcpy(port, colon + 1, strlen(colon + 1) + 1);
    return true;
}

/* Resolves listen into *sa: an address is taken as it is, a name is looked up (once, now;
 * this blocks) and its first IPv4 address used, or its first IPv6 one if it has none. */
static enum lf_err
resolve_listen(const char *addr, struct sockaddr_storage *sa, struct lf_errbuf *eb)
{
    char host[256];
    char port[6];
    if (!split_listen(addr, host, sizeof(host), port))
        return lf_fail(eb, LF_EINVAL,
                       "metrics.listen %s: expected HOST:PORT (a name, an IPv4 address or "
                       "[IPv6 address])",
                       addr);
    struct addrinfo hints = { .ai_socktype = SOCK_STREAM, .ai_flags = AI_NUMERICSERV };
    struct addrinfo *res = NULL;
    int r = getaddrinfo(host, port, &hints, &res);
    if (r != 0) {
        int e = errno;
        return lf_fail(eb, LF_EIO, "metrics.listen %s: cannot resolve %s: %s", addr, host,
                       r == EAI_SYSTEM ? lf_strerror(e) : gai_strerror(r));
    }
    const struct addrinfo *pick = res;
    for (const struct addrinfo *ai = res; ai != NULL; ai = ai->ai_next) {
        if (ai->ai_family == AF_INET) {
            pick = ai;
            break;
        }
    }
    memset(sa, 0, sizeof(*sa));
    memcpy(sa, pick->ai_addr, pick->ai_addrlen);
    freeaddrinfo(res);
    return LF_OK;
}

/* Opens a listening socket on listen; *fd and *port on success. */
static enum lf_err open_listener(const char *addr, int *fd_out, int *port, struct lf_errbuf *eb)
{
    struct sockaddr_storage sa;
    enum lf_err err = resolve_listen(addr, &sa, eb);
    if (err)
        return err;
    const char *step = "socket";
    int fd = socket(sa.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0)
        goto fail;
    int one = 1;
    step = "setsockopt";
    if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0)
        goto fail;
    socklen_t len =
        sa.ss_family == AF_INET6 ? sizeof(struct sockaddr_in6) : sizeof(struct sockaddr_in);
    step = "bind";
    if (bind(fd, (struct sockaddr *)&sa, len) < 0 || listen(fd, LISTEN_BACKLOG) < 0)
        goto fail;
    step = "getsockname";
    len = sizeof(sa);
    if (getsockname(fd, (struct sockaddr *)&sa, &len) < 0)
        goto fail;
    *port = ntohs(sa.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&sa)->sin6_port
                                           : ((struct sockaddr_in *)&sa)->sin_port);
    *fd_out = fd;
    return LF_OK;
fail:;
    int e = errno;
    if (fd >= 0)
        close(fd);
    if (e == EADDRINUSE || e == EADDRNOTAVAIL || e == EACCES)
        step = NULL; /* the reason says it all */
    return lf_fail(eb, lf_err_from_errno(e), "metrics.listen %s: %s%s%s", addr,
                   step != NULL ? step : "", step != NULL ? ": " : "",
                   uv_strerror(uv_translate_sys_error(e)));
}

static void on_listener_closed(uv_handle_t *h)
{
    server_handle_closed(h->data);
}

enum lf_err lf_metrics_server_start(uv_loop_t *loop,
                                    const char *listen,
                                    lf_metrics_render_fn *render,
                                    lf_metrics_probe_fn *probe,
                                    void *arg,
                                    struct lf_metrics_server **out,
                                    struct lf_errbuf *eb)
{
    *out = NULL;
    int fd = -1;
    int port = 0;
    enum lf_err err = open_listener(listen, &fd, &port, eb);
    if (err)
        return err;
    struct lf_metrics_server *srv = calloc(1, sizeof(*srv));
    if (srv == NULL) {
        close(fd);
        return lf_fail(eb, LF_ENOMEM, "metrics.listen %s: out of memory", listen);
    }
    srv->loop = loop;
    srv->render = render;
    srv->probe = probe;
    srv->arg = arg;
    srv->idle_ms = LF_METRICS_IDLE_MS;
    srv->port = port;
    int r = uv_tcp_init(loop, &srv->listener);
    if (r < 0) {
        close(fd);
        free(srv);
        return lf_fail(eb, LF_EIO, "metrics.listen %s: %s", listen, uv_strerror(r));
    }
    srv->listener.data = srv;
    srv->n_handles = 1;
    r = uv_tcp_open(&srv->listener, fd);
    if (r < 0)
        close(fd); /* not adopted by the handle */
    else
        r = uv_listen((uv_stream_t *)&srv->listener, LISTEN_BACKLOG, on_connection);
    if (r < 0) {
        srv->stopping = true; /* freed once the loop runs the close */
        uv_close((uv_handle_t *)&srv->listener, on_listener_closed);
        return lf_fail(eb, LF_EIO, "metrics.listen %s: %s", listen, uv_strerror(r));
    }
    *out = srv;
    return LF_OK;
}

int lf_metrics_server_port(const struct lf_metrics_server *s)
{
    return s->port;
}

void lf_metrics_server_set_idle_ms(struct lf_metrics_server *s, uint64_t idle_ms)
{
    s->idle_ms = idle_ms;
}

void lf_metrics_server_stop(struct lf_metrics_server *s)
{
    if (s == NULL || s->stopping)
        return;
    s->stopping = true;
    uv_close((uv_handle_t *)&s->listener, on_listener_closed);
    while (s->conns != NULL)
        conn_close(s->conns);
}
