/* syslog_int.h - the syslog output's transport, shared by syslog.c and syslog_conn.c only.
 *
 * One connection to the receiver: a TCP or UDP socket, with a TLS session over TCP. The
 * socket is non-blocking; every call waits at most timeout_ms without progress. Calls
 * that fail fill eb ("connect 127.0.0.1:514: Connection refused") and leave the caller to
 * close the connection, retry and log. Lane thread only. */
#ifndef LF_SYSLOG_INT_H
#define LF_SYSLOG_INT_H

#include <stdbool.h>
#include <stdint.h>

#include <openssl/ssl.h>

#include "logferry/buf.h"
#include "logferry/config.h"
#include "logferry/err.h"

/* A value type embedded in the output's state. Fields private: use lf_syslog__conn_*(). */
struct lf_syslog_conn {
    int fd;       /* -1: not connected */
    SSL_CTX *ctx; /* borrowed: protocol tls only, else NULL */
    SSL *ssl;     /* owned: this connection's TLS session, or NULL */
};

/* Starts c unconnected; ctx (borrowed, may be NULL) must outlive c. */
void lf_syslog__conn_init(struct lf_syslog_conn *c, SSL_CTX *ctx);

/* Resolves host, connects (TCP or UDP) and, for tls, runs the handshake: the certificate
 * and the host's name (or IP address) are checked when ctx verifies. LF_EIO, eb filled,
 * and c unconnected on failure. */
LF_MUST_CHECK enum lf_err lf_syslog__conn_open(struct lf_syslog_conn *c,
                                               const char *host,
                                               const char *port,
                                               enum lf_syslog_protocol proto,
                                               uint64_t timeout_ms,
                                               struct lf_errbuf *eb);

/* Sends all of data (for UDP: as one datagram). LF_EIO with eb filled on an error or when
 * timeout_ms pass without progress; what was sent of data is then unknown. */
LF_MUST_CHECK enum lf_err lf_syslog__conn_write(struct lf_syslog_conn *c,
                                                struct lf_str data,
                                                uint64_t timeout_ms,
                                                struct lf_errbuf *eb);

/* TCP and TLS: waits until the peer's TCP has acknowledged every byte written (the send
 * queue is empty). LF_EIO with eb filled if the connection was reset or closed first, or
 * the peer acknowledged nothing for timeout_ms. */
LF_MUST_CHECK enum lf_err
lf_syslog__conn_drain(struct lf_syslog_conn *c, uint64_t timeout_ms, struct lf_errbuf *eb);

/* TCP and TLS, after a drain: waits settle_ms for the connection to stay up. A receiver
 * that stops with bytes it acknowledged but never read resets the connection (Linux sends
 * RST on a close with unread data); LF_EIO with eb filled if that happens. An orderly
 * close (FIN, close_notify) means it read everything: LF_OK. */
LF_MUST_CHECK enum lf_err
lf_syslog__conn_settle(struct lf_syslog_conn *c, uint64_t settle_ms, struct lf_errbuf *eb);

/* True if c is connected and the peer has not closed or reset it (what it sent is read
 * and dropped). Never waits. */
bool lf_syslog__conn_alive(struct lf_syslog_conn *c);

/* The first entry of this thread's OpenSSL error queue as text in buf (fallback if it is
 * empty), then empties the queue. Returns buf. */
const char *lf_syslog__ssl_reason(char *buf, size_t len, const char *fallback);

/* Closes the connection (TLS: one close_notify, not waited for); c stays usable. */
void lf_syslog__conn_close(struct lf_syslog_conn *c);

#endif
