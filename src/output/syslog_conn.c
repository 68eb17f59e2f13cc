/* syslog_conn.c - the syslog output's transport: one TCP, TLS or UDP connection.
 *
 * Every call takes a deadline budget: a connect, a handshake, a write or a drain that makes
 * no progress for timeout_ms fails, so a peer that stops reading holds up only this
 * output's lane, and only for that long. Sockets are non-blocking and waited on with
 * poll(2); OpenSSL runs over the same socket and is driven by its WANT_READ/WANT_WRITE
 * answers. Failures fill eb with what failed and why ("connect 10.0.0.1:514: Connection
 * refused"); the caller decides whether to retry and logs. Lane thread only. */
#include "config.h"

#include "netlib_int.h"

#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>
#include <uv.h>

#include <linux/sockios.h>

#include "syslog_int.h"

/* How often a drain looks at the send queue again while the peer acknowledges. */
#define DRAIN_STEP_MS 2

static int64_t now_ms(void)
{
    return (int64_t)(uv_hrtime() / 1000000u);
}

/* Waits until fd is ready for events or its deadline passes. 0, ETIMEDOUT or an errno. */
static int wait_fd(int fd, short events, int64_t deadline_ms)
{
    for (;;) {
        int64_t left = deadline_ms - now_ms();
        if (left <= 0)
            return ETIMEDOUT;
        struct pollfd pfd = { .fd = fd, .events = events };
        int n = poll(&pfd, 1, left > 60000 ? 60000 : (int)left);
        if (n > 0)
            return 0; /* POLLERR and POLLHUP too: the next call on fd tells what happened */
        if (n < 0 && errno != EINTR)
            return errno;
    }
}

const char *lf_syslog__ssl_reason(char *buf, size_t len, const char *fallback)
{
    unsigned long e = ERR_get_error();
    const char *r = NULL;
    if (e != 0 && ERR_GET_LIB(e) == ERR_LIB_SYS)
        r = lf_strerror(ERR_GET_REASON(e)); /* a system call failed: the reason is errno */
    else if (e != 0)
        r = ERR_reason_error_string(e);
    snprintf(buf, len, "%s", r != NULL ? r : fallback);
    ERR_clear_error();
    return buf;
}

void lf_syslog__conn_init(struct lf_syslog_conn *c, SSL_CTX *ctx)
{
    *c = (struct lf_syslog_conn){ .fd = -1, .ctx = ctx };
}

void lf_syslog__conn_close(struct lf_syslog_conn *c)
{
    if (c->ssl != NULL) {
        SSL_shutdown(c->ssl); /* one close_notify, not waited for: the peer may be gone */
        SSL_free(c->ssl);
        c->ssl = NULL;
        ERR_clear_error();
    }
    if (c->fd >= 0)
        close(c->fd);
    c->fd = -1;
}

/* Connects a non-blocking socket of type to one address of host:port. */
static enum lf_err dial(struct lf_syslog_conn *c,
                        const char *host,
                        const char *port,
                        int type,
                        uint64_t timeout_ms,
                        struct lf_errbuf *eb)
{
    struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = type };
    struct addrinfo *res = NULL;
    int g = getaddrinfo(host, port, &hints, &res);
    if (g != 0) {
        return lf_fail(eb, LF_EIO, "resolve %s: %s", host,
                       g == EAI_SYSTEM ? lf_strerror(errno) : gai_strerror(g));
    }
    int e = EHOSTUNREACH;
    for (struct addrinfo *ai = res; ai != NULL; ai = ai->ai_next) {
        int fd = socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        if (fd < 0) {
            e = errno;
            continue;
        }
        int r = connect(fd, ai->ai_addr, ai->ai_addrlen);
        e = r == 0 ? 0 : errno;
        if (e == EINPROGRESS) {
            e = wait_fd(fd, POLLOUT, now_ms() + (int64_t)timeout_ms);
            socklen_t len = sizeof(r);
            if (e == 0 && getsockopt(fd, SOL_SOCKET, SO_ERROR, &r, &len) != 0)
                e = errno;
            else if (e == 0)
                e = r;
        }
        if (e == 0) {
            int on = 1;
            if (type == SOCK_STREAM) /* on failure, writes still find a dead peer */
                setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &on, sizeof(on));
            c->fd = fd;
            break;
        }
        close(fd);
    }
    freeaddrinfo(res);
    if (c->fd < 0)
        return lf_fail(eb, LF_EIO, "connect %s:%s: %s", host, port, lf_strerror(e));
    return LF_OK;
}

/* Runs the TLS handshake on c->fd, checking the peer's certificate and name when the
 * context verifies (SSL_VERIFY_PEER): an IP address against the certificate's IP entries,
 * a name against its DNS entries, and the name is sent as SNI. */
static enum lf_err
handshake(struct lf_syslog_conn *c, const char *host, uint64_t timeout_ms, struct lf_errbuf *eb)
{
    char why[256];
    ERR_clear_error();
    c->ssl = SSL_new(c->ctx);
    if (c->ssl == NULL || SSL_set_fd(c->ssl, c->fd) != 1)
        return lf_fail(eb, LF_ENOMEM, "TLS with %s: %s", host,
                       lf_syslog__ssl_reason(why, sizeof(why), "?"));
    unsigned char ip[16];
    bool is_ip = inet_pton(AF_INET, host, ip) == 1 || inet_pton(AF_INET6, host, ip) == 1;
    bool ok = is_ip
                  ? X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(c->ssl), host) == 1
                  : SSL_set_tlsext_host_name(c->ssl, host) == 1 && SSL_set1_host(c->ssl, host) == 1;
    if (!ok)
        return lf_fail(eb, LF_EIO, "TLS with %s: %s", host,
                       lf_syslog__ssl_reason(why, sizeof(why), "?"));
    int64_t deadline = now_ms() + (int64_t)timeout_ms;
    for (;;) {
        int r = SSL_connect(c->ssl);
        if (r == 1)
            return LF_OK;
        int se = SSL_get_error(c->ssl, r);
        int e = errno;
        if (se == SSL_ERROR_WANT_READ || se == SSL_ERROR_WANT_WRITE) {
            e = wait_fd(c->fd, se == SSL_ERROR_WANT_READ ? POLLIN : POLLOUT, deadline);
            if (e == 0)
                continue;
            return lf_fail(eb, LF_EIO, "TLS handshake with %s: %s", host, lf_strerror(e));
        }
        long v = SSL_get_verify_result(c->ssl);
        if (v != X509_V_OK) {
            ERR_clear_error();
            return lf_fail(eb, LF_EIO, "TLS handshake with %s: certificate verify failed: %s", host,
                           X509_verify_cert_error_string(v));
        }
        const char *fallback =
            se == SSL_ERROR_SYSCALL && e != 0 ? lf_strerror(e) : "connection closed by peer";
        return lf_fail(eb, LF_EIO, "TLS handshake with %s: %s", host,
                       lf_syslog__ssl_reason(why, sizeof(why), fallback));
    }
}

enum lf_err lf_syslog__conn_open(struct lf_syslog_conn *c,
                                 const char *host,
                                 const char *port,
                                 enum lf_syslog_protocol proto,
                                 uint64_t timeout_ms,
                                 struct lf_errbuf *eb)
{
    enum lf_err err =
        dial(c, host, port, proto == LF_SYSLOG_UDP ? SOCK_DGRAM : SOCK_STREAM, timeout_ms, eb);
    if (!err && proto == LF_SYSLOG_TLS)
        err = handshake(c, host, timeout_ms, eb);
    if (err)
        lf_syslog__conn_close(c);
    return err;
}

/* One write attempt: bytes written in *n, or why not. 0, EAGAIN (wait for what *wait
 * says), or an errno; for TLS errors without an errno, EPROTO with why filled. */
static int write_some(struct lf_syslog_conn *c,
                      const char *p,
                      size_t len,
                      size_t *n,
                      short *wait,
                      char *why,
                      size_t why_len)
{
    *wait = POLLOUT;
    if (c->ssl == NULL) {
        ssize_t w = send(c->fd, p, len, MSG_NOSIGNAL);
        if (w >= 0) {
            *n = (size_t)w;
            return 0;
        }
        int e = errno;
        return e == EWOULDBLOCK ? EAGAIN : e;
    }
    ERR_clear_error();
    if (SSL_write_ex(c->ssl, p, len, n) == 1)
        return 0;
    int e = errno;
    switch (SSL_get_error(c->ssl, 0)) {
    case SSL_ERROR_WANT_READ:
        *wait = POLLIN;
        return EAGAIN;
    case SSL_ERROR_WANT_WRITE:
        return EAGAIN;
    case SSL_ERROR_SYSCALL:
        if (e != 0 && ERR_peek_error() == 0)
            return e;
        break;
    default:
        break;
    }
    lf_syslog__ssl_reason(why, why_len, "TLS connection closed");
    return EPROTO;
}

enum lf_err lf_syslog__conn_write(struct lf_syslog_conn *c,
                                  struct lf_str data,
                                  uint64_t timeout_ms,
                                  struct lf_errbuf *eb)
{
    int64_t deadline = now_ms() + (int64_t)timeout_ms;
    size_t done = 0;
    while (done < data.len) {
        size_t n = 0;
        short wait;
        char why[256] = "";
        int e = write_some(c, data.ptr + done, data.len - done, &n, &wait, why, sizeof(why));
        if (e == 0) {
            done += n;
            deadline = now_ms() + (int64_t)timeout_ms; /* progress: the clock starts again */
            continue;
        }
        if (e == EAGAIN)
            e = wait_fd(c->fd, wait, deadline);
        if (e == EINTR || e == 0)
            continue;
        if (e == EPROTO && why[0] != '\0')
            return lf_fail(eb, LF_EIO, "write: %s", why);
        return lf_fail(eb, LF_EIO, "write: %s", lf_strerror(e));
    }
    return LF_OK;
}

enum peer_state {
    PEER_OPEN,   /* nothing but data (dropped) from the peer */
    PEER_CLOSED, /* the peer closed in order (FIN, TLS close_notify) */
    PEER_RESET,  /* reset or failed: what it had not read is gone */
};

/* Reads and throws away what the peer sent (syslog receivers send nothing but TLS
 * records such as session tickets) and says whether it closed or reset the connection.
 * Never waits. */
static enum peer_state peer_state(struct lf_syslog_conn *c)
{
    char scratch[512];
    for (;;) {
        struct pollfd pfd = { .fd = c->fd, .events = POLLIN };
        if (poll(&pfd, 1, 0) <= 0)
            return PEER_OPEN;
        if (c->ssl == NULL) {
            ssize_t r = recv(c->fd, scratch, sizeof(scratch), MSG_DONTWAIT);
            int e = errno;
            if (r == 0)
                return PEER_CLOSED;
            if (r < 0)
                return e == EAGAIN || e == EWOULDBLOCK || e == EINTR ? PEER_OPEN : PEER_RESET;
            continue;
        }
        size_t n;
        ERR_clear_error();
        if (SSL_read_ex(c->ssl, scratch, sizeof(scratch), &n) == 1)
            continue;
        int se = SSL_get_error(c->ssl, 0);
        int e = errno;
        ERR_clear_error();
        if (se == SSL_ERROR_WANT_READ || se == SSL_ERROR_WANT_WRITE)
            return PEER_OPEN;
        if (se == SSL_ERROR_ZERO_RETURN || (se == SSL_ERROR_SYSCALL && e == 0))
            return PEER_CLOSED; /* close_notify, or a bare EOF */
        return PEER_RESET;
    }
}

bool lf_syslog__conn_alive(struct lf_syslog_conn *c)
{
    return c->fd >= 0 && peer_state(c) == PEER_OPEN;
}

enum lf_err
lf_syslog__conn_drain(struct lf_syslog_conn *c, uint64_t timeout_ms, struct lf_errbuf *eb)
{
    int64_t deadline = now_ms() + (int64_t)timeout_ms;
    int last = -1;
    for (;;) {
        /* A reset empties the send queue too: look for it first. */
        int soerr = 0;
        socklen_t len = sizeof(soerr);
        if (getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &soerr, &len) != 0)
            soerr = errno;
        if (soerr != 0)
            return lf_fail(eb, LF_EIO, "connection lost: %s", lf_strerror(soerr));
        int queued = 0;
        if (ioctl(c->fd, SIOCOUTQ, &queued) != 0) {
            int e = errno;
            return lf_fail(eb, LF_EIO, "read the send queue: %s", lf_strerror(e));
        }
        if (queued == 0)
            return LF_OK;
        if (peer_state(c) != PEER_OPEN)
            return lf_fail(eb, LF_EIO, "connection closed by peer with %d bytes unacknowledged",
                           queued);
        if (queued != last) {
            last = queued;
            deadline = now_ms() + (int64_t)timeout_ms;
        } else if (now_ms() >= deadline) {
            return lf_fail(eb, LF_EIO,
                           "peer acknowledged nothing for %" PRIu64 " ms (%d bytes "
                           "waiting)",
                           timeout_ms, queued);
        }
        struct pollfd pfd = { .fd = c->fd, .events = 0 }; /* wakes on an error or hang-up */
        poll(&pfd, 1, DRAIN_STEP_MS);                     /* only a pause: EINTR changes nothing */
    }
}

enum lf_err
lf_syslog__conn_settle(struct lf_syslog_conn *c, uint64_t settle_ms, struct lf_errbuf *eb)
{
    int64_t deadline = now_ms() + (int64_t)settle_ms;
    for (;;) {
        switch (peer_state(c)) {
        case PEER_RESET:
            return lf_fail(eb, LF_EIO,
                           "connection reset within %" PRIu64 " ms of the last "
                           "acknowledgement: the receiver may not have read it all",
                           settle_ms);
        case PEER_CLOSED:
            return LF_OK; /* in order: the receiver read all it acknowledged */
        case PEER_OPEN:
            break;
        }
        int64_t left = deadline - now_ms();
        if (left <= 0)
            return LF_OK;
        struct pollfd pfd = { .fd = c->fd, .events = POLLIN | POLLRDHUP };
        poll(&pfd, 1, left > 60000 ? 60000 : (int)left); /* peer_state() reads what woke it */
    }
}
