/* check_metrics.c - the /metrics HTTP server and the Prometheus text writer.
 *
 * Server tests run the loop in a second thread (uv_thread) and act as the client with plain
 * blocking sockets: connect, send raw bytes, read to EOF, compare the exact answer. Every
 * socket read has a 5 s SO_RCVTIMEO, so a hung server fails the test instead of stalling
 * it. The loop thread is stopped through a uv_async_t (the server is loop-thread only), and
 * each test ends by asserting uv_loop_close() returns 0. */
#include "config.h"

#include <arpa/inet.h>
#include <check.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include <uv.h>

#include "logferry/metrics.h"
#include "logferry/watchdog.h"

#define BODY                                                    \
    "# HELP logferry_queue_bytes Bytes waiting in the queue.\n" \
    "# TYPE logferry_queue_bytes gauge\n"                       \
    "logferry_queue_bytes 42\n"

#define PROM_HEAD                                                                   \
    "HTTP/1.1 200 OK\r\nContent-Type: text/plain; version=0.0.4; charset=utf-8\r\n" \
    "Content-Length: 114\r\nConnection: close\r\n\r\n"

static uv_loop_t loop;
static uv_async_t stop_async;
static uv_thread_t loop_thread;
static struct lf_metrics_server *srv;
static int port;
static atomic_bool healthy = true;
static atomic_bool render_fails = false;
static atomic_bool render_blocks = false; /* render() waits while set */
static atomic_int renders;

static enum lf_err render(void *arg, struct lf_buf *out)
{
    ck_assert_ptr_eq(arg, &loop);
    atomic_fetch_add(&renders, 1);
    while (atomic_load(&render_blocks))
        usleep(1000);
    if (atomic_load(&render_fails))
        return LF_ENOMEM;
    return lf_buf_append(out, BODY, strlen(BODY));
}

static int is_healthy(void *arg, enum lf_metrics_route route, struct lf_buf *out)
{
    ck_assert_ptr_eq(arg, &loop);
    ck_assert_int_eq(route, LF_METRICS_ROUTE_HEALTHZ);
    bool ok = atomic_load(&healthy);
    ck_assert_int_eq(lf_buf_append_cstr(out, ok ? "ok\n" : "unhealthy\n"), LF_OK);
    return ok ? 200 : 503;
}

static void on_stop(uv_async_t *a)
{
    lf_metrics_server_stop(srv);
    uv_close((uv_handle_t *)a, NULL);
}

static void run_loop(void *arg)
{
    (void)arg;
    ck_assert_int_eq(uv_run(&loop, UV_RUN_DEFAULT), 0);
}

/* Starts a server on listen with the given timeout and runs the loop in a thread. */
static void start_on(const char *listen, uint64_t idle_ms)
{
    struct lf_errbuf eb = { { 0 } };
    atomic_store(&renders, 0);
    ck_assert_int_eq(uv_loop_init(&loop), 0);
    ck_assert_int_eq(lf_metrics_server_start(&loop, listen, render, is_healthy, &loop, &srv, &eb),
                     LF_OK);
    lf_metrics_server_set_idle_ms(srv, idle_ms);
    port = lf_metrics_server_port(srv);
    ck_assert_int_gt(port, 0);
    ck_assert_int_eq(uv_async_init(&loop, &stop_async, on_stop), 0);
    ck_assert_int_eq(uv_thread_create(&loop_thread, run_loop, NULL), 0);
}

static void start(uint64_t idle_ms)
{
    start_on("127.0.0.1:0", idle_ms);
}

/* Stops the server from the loop thread, waits for the loop to end, closes it. */
static void finish(void)
{
    ck_assert_int_eq(uv_async_send(&stop_async), 0);
    ck_assert_int_eq(uv_thread_join(&loop_thread), 0);
    ck_assert_int_eq(uv_loop_close(&loop), 0);
}

static int client_connect_to(int family, int to_port)
{
    int fd = socket(family, SOCK_STREAM, 0);
    ck_assert_int_ge(fd, 0);
    struct timeval tv = { .tv_sec = 5, .tv_usec = 0 };
    ck_assert_int_eq(setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)), 0);
    struct sockaddr_storage sa;
    memset(&sa, 0, sizeof(sa));
    socklen_t len;
    if (family == AF_INET6) {
        struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&sa;
        s6->sin6_family = AF_INET6;
        s6->sin6_port = htons((uint16_t)to_port);
        s6->sin6_addr = in6addr_loopback;
        len = sizeof(*s6);
    } else {
        struct sockaddr_in *s4 = (struct sockaddr_in *)&sa;
        s4->sin_family = AF_INET;
        s4->sin_port = htons((uint16_t)to_port);
        s4->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        len = sizeof(*s4);
    }
    ck_assert_int_eq(connect(fd, (struct sockaddr *)&sa, len), 0);
    return fd;
}

static int client_connect(void)
{
    return client_connect_to(AF_INET, port);
}

static void send_all(int fd, const char *p, size_t n)
{
    while (n > 0) {
        ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
        ck_assert_int_gt(w, 0);
        p += w;
        n -= (size_t)w;
    }
}

/* Reads until the server closes; fails on the 5 s receive timeout. Returns the length. */
static size_t read_to_eof(int fd, char *buf, size_t cap)
{
    size_t len = 0;
    for (;;) {
        ck_assert_uint_lt(len, cap);
        ssize_t r = recv(fd, buf + len, cap - 1 - len, 0);
        if (r < 0 && errno == ECONNRESET)
            break;
        ck_assert_msg(r >= 0, "recv: %s", strerror(errno));
        if (r == 0)
            break;
        len += (size_t)r;
    }
    buf[len] = '\0';
    return len;
}

static char resp[64 * 1024];

/* Sends raw on a new connection and returns the whole answer in resp. */
static size_t request(const char *raw)
{
    int fd = client_connect();
    send_all(fd, raw, strlen(raw));
    size_t n = read_to_eof(fd, resp, sizeof(resp));
    close(fd);
    return n;
}

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

START_TEST(get_metrics_answers_200_with_prometheus_type_and_exact_length)
{
    start(LF_METRICS_IDLE_MS);
    size_t n = request("GET /metrics HTTP/1.1\r\nHost: localhost\r\nAccept: */*\r\n\r\n");
    ck_assert_str_eq(resp, PROM_HEAD BODY);
    ck_assert_uint_eq(n, strlen(PROM_HEAD) + 114);
    ck_assert_uint_eq(strlen(BODY), 114);
    ck_assert_int_eq(atomic_load(&renders), 1);
    finish();
}
END_TEST

START_TEST(head_metrics_answers_the_same_headers_without_a_body)
{
    start(LF_METRICS_IDLE_MS);
    request("HEAD /metrics HTTP/1.1\r\nHost: x\r\n\r\n");
    ck_assert_str_eq(resp, PROM_HEAD);
    finish();
}
END_TEST

START_TEST(query_string_is_ignored)
{
    start(LF_METRICS_IDLE_MS);
    request("GET /metrics?x=1&name[]=2 HTTP/1.1\r\n\r\n");
    ck_assert_str_eq(resp, PROM_HEAD BODY);
    finish();
}
END_TEST

START_TEST(http_1_0_request_with_bare_newlines_is_answered)
{
    start(LF_METRICS_IDLE_MS);
    request("GET /healthz HTTP/1.0\nUser-Agent: t\n\n");
    ck_assert_str_eq(resp, "HTTP/1.1 200 OK\r\nContent-Type: text/plain; charset=utf-8\r\n"
                           "Content-Length: 3\r\nConnection: close\r\n\r\nok\n");
    finish();
}
END_TEST

START_TEST(healthz_answers_200_ok_when_healthy)
{
    start(LF_METRICS_IDLE_MS);
    request("GET /healthz HTTP/1.1\r\n\r\n");
    ck_assert_str_eq(resp, "HTTP/1.1 200 OK\r\nContent-Type: text/plain; charset=utf-8\r\n"
                           "Content-Length: 3\r\nConnection: close\r\n\r\nok\n");
    finish();
}
END_TEST

START_TEST(healthz_answers_503_unhealthy_when_not_healthy)
{
    atomic_store(&healthy, false);
    start(LF_METRICS_IDLE_MS);
    request("GET /healthz HTTP/1.1\r\n\r\n");
    ck_assert_str_eq(resp, "HTTP/1.1 503 Service Unavailable\r\n"
                           "Content-Type: text/plain; charset=utf-8\r\n"
                           "Content-Length: 10\r\nConnection: close\r\n\r\nunhealthy\n");
    atomic_store(&healthy, true);
    request("GET /healthz HTTP/1.1\r\n\r\n");
    ck_assert_str_eq(resp + strlen(resp) - 3, "ok\n");
    finish();
}
END_TEST

START_TEST(unknown_path_answers_404)
{
    start(LF_METRICS_IDLE_MS);
    request("GET /metricsx HTTP/1.1\r\n\r\n");
    ck_assert_str_eq(resp, "HTTP/1.1 404 Not Found\r\nContent-Type: text/plain; charset=utf-8\r\n"
                           "Content-Length: 10\r\nConnection: close\r\n\r\nnot found\n");
    ck_assert_int_eq(atomic_load(&renders), 0);
    finish();
}
END_TEST

START_TEST(other_methods_answer_405_with_allow)
{
    start(LF_METRICS_IDLE_MS);
    request("POST /metrics HTTP/1.1\r\nContent-Length: 0\r\n\r\n");
    ck_assert_str_eq(resp, "HTTP/1.1 405 Method Not Allowed\r\n"
                           "Content-Type: text/plain; charset=utf-8\r\nContent-Length: 19\r\n"
                           "Allow: GET, HEAD\r\nConnection: close\r\n\r\nmethod not allowed\n");
    request("DELETE /healthz HTTP/1.0\r\n\r\n");
    ck_assert_int_eq(strncmp(resp, "HTTP/1.1 405 ", 13), 0);
    ck_assert_int_eq(atomic_load(&renders), 0);
    finish();
}
END_TEST

START_TEST(malformed_requests_answer_400)
{
    static const char *const bad[] = {
        "GET /metrics HTTP/2.0\r\n\r\n",
        "GET /metrics\r\n\r\n",
        "GET  /metrics HTTP/1.1\r\n\r\n",
        "GET http://h/metrics HTTP/1.1\r\n\r\n",
        "GET /metrics HTTP/1.1\r\nNoColon\r\n\r\n",
        "GET /metrics HTTP/1.1 \r\n\r\n",
        "G(T /metrics HTTP/1.1\r\n\r\n",
        "\r\n\r\n",
    };
    start(LF_METRICS_IDLE_MS);
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        request(bad[i]);
        ck_assert_str_eq(resp, "HTTP/1.1 400 Bad Request\r\n"
                               "Content-Type: text/plain; charset=utf-8\r\n"
                               "Content-Length: 12\r\nConnection: close\r\n\r\nbad request\n");
    }
    ck_assert_int_eq(atomic_load(&renders), 0);
    finish();
}
END_TEST

START_TEST(request_head_over_8_kib_answers_431_and_closes)
{
    static char big[LF_METRICS_MAX_HEAD + 1024];
    int n = snprintf(big, sizeof(big), "GET /metrics HTTP/1.1\r\nX-Pad: ");
    memset(big + n, 'a', sizeof(big) - (size_t)n - 5);
    memcpy(big + sizeof(big) - 5, "\r\n\r\n", 5);
    start(LF_METRICS_IDLE_MS);
    request(big);
    ck_assert_str_eq(resp, "HTTP/1.1 431 Request Header Fields Too Large\r\n"
                           "Content-Type: text/plain; charset=utf-8\r\n"
                           "Content-Length: 32\r\nConnection: close\r\n\r\n"
                           "request header fields too large\n");
    ck_assert_int_eq(atomic_load(&renders), 0);
    finish();
}
END_TEST

START_TEST(request_head_of_exactly_8_kib_is_answered)
{
    static char big[LF_METRICS_MAX_HEAD + 1];
    int n = snprintf(big, sizeof(big), "GET /healthz HTTP/1.1\r\nX-Pad: ");
    memset(big + n, 'a', sizeof(big) - (size_t)n - 5);
    memcpy(big + sizeof(big) - 5, "\r\n\r\n", 5);
    ck_assert_uint_eq(strlen(big), LF_METRICS_MAX_HEAD);
    start(LF_METRICS_IDLE_MS);
    request(big);
    ck_assert_int_eq(strncmp(resp, "HTTP/1.1 200 OK\r\n", 17), 0);
    finish();
}
END_TEST

START_TEST(request_split_across_writes_is_answered_once_complete)
{
    start(LF_METRICS_IDLE_MS);
    int fd = client_connect();
    send_all(fd, "GET /met", 8);
    send_all(fd, "rics HTTP/1.1\r\n", 15);
    send_all(fd, "Host: x\r", 8);
    send_all(fd, "\n\r\n", 3);
    read_to_eof(fd, resp, sizeof(resp));
    close(fd);
    ck_assert_str_eq(resp, PROM_HEAD BODY);
    finish();
}
END_TEST

START_TEST(client_that_half_closes_after_its_request_still_gets_the_answer)
{
    start(LF_METRICS_IDLE_MS);
    int fd = client_connect();
    send_all(fd, "GET /metrics HTTP/1.0\r\n\r\n", 25);
    ck_assert_int_eq(shutdown(fd, SHUT_WR), 0);
    read_to_eof(fd, resp, sizeof(resp));
    close(fd);
    ck_assert_str_eq(resp, PROM_HEAD BODY);
    finish();
}
END_TEST

START_TEST(render_failure_answers_500)
{
    atomic_store(&render_fails, true);
    start(LF_METRICS_IDLE_MS);
    request("GET /metrics HTTP/1.1\r\n\r\n");
    ck_assert_str_eq(resp,
                     "HTTP/1.1 500 Internal Server Error\r\n"
                     "Content-Type: text/plain; charset=utf-8\r\n"
                     "Content-Length: 22\r\nConnection: close\r\n\r\ninternal server error\n");
    atomic_store(&render_fails, false);
    finish();
}
END_TEST

START_TEST(silent_client_is_closed_after_the_idle_timeout)
{
    start(200);
    int fd = client_connect();
    double t0 = now_ms();
    char b[16];
    ssize_t r = recv(fd, b, sizeof(b), 0);
    double waited = now_ms() - t0;
    ck_assert_int_eq(r, 0);
    ck_assert_double_ge(waited, 150);
    ck_assert_double_lt(waited, 3000);
    close(fd);
    finish();
}
END_TEST

START_TEST(slow_client_is_closed_when_its_head_is_not_complete_in_time)
{
    start(300);
    int fd = client_connect();
    double t0 = now_ms();
    send_all(fd, "GET /metrics HTTP/1.1\r\n", 23);
    ssize_t r = recv(fd, resp, sizeof(resp), 0);
    ck_assert_int_eq(r, 0);
    ck_assert_double_ge(now_ms() - t0, 250);
    close(fd);
    ck_assert_int_eq(atomic_load(&renders), 0);
    finish();
}
END_TEST

/* Issue 7: 64 idle connections took every slot and /healthz probes were reset. */
START_TEST(newcomer_over_64_closes_the_oldest_idle_connection_and_is_served)
{
    int fds[LF_METRICS_MAX_CONNS];
    start(20000);
    for (int i = 0; i < LF_METRICS_MAX_CONNS; i++)
        fds[i] = client_connect();
    /* the 65th: every slot was taken */
    ck_assert_uint_gt(request("GET /healthz HTTP/1.1\r\n\r\n"), 3);
    ck_assert_str_eq(resp + strlen(resp) - 3, "ok\n");
    char b[16];
    ck_assert_int_le(recv(fds[0], b, sizeof(b), 0), 0); /* the oldest idle one made room */
    send_all(fds[1], "GET /metrics HTTP/1.1\r\n\r\n", 25);
    read_to_eof(fds[1], resp, sizeof(resp));
    ck_assert_str_eq(resp, PROM_HEAD BODY);
    for (int i = 0; i < LF_METRICS_MAX_CONNS; i++)
        close(fds[i]);
    finish();
}
END_TEST

START_TEST(connection_with_a_request_waiting_is_not_closed_to_make_room)
{
    int fds[LF_METRICS_MAX_CONNS - 1];
    start(20000);
    for (int i = 0; i < LF_METRICS_MAX_CONNS - 1; i++)
        fds[i] = client_connect();
    /* The 64th connection's scrape holds the loop in render(): every earlier connection is
     * accepted by then, and bytes sent meanwhile wait in the kernel, unread. */
    atomic_store(&render_blocks, true);
    int scrape = client_connect();
    send_all(scrape, "GET /metrics HTTP/1.1\r\n\r\n", 25);
    double t0 = now_ms();
    while (atomic_load(&renders) == 0 && now_ms() - t0 < 5000)
        usleep(1000);
    ck_assert_int_eq(atomic_load(&renders), 1);
    int newcomer = client_connect(); /* in this order, epoll reports the listener first */
    send_all(fds[0], "GET /healthz HTTP/1.1\r\n\r\n", 25);
    atomic_store(&render_blocks, false);
    read_to_eof(scrape, resp, sizeof(resp));
    ck_assert_str_eq(resp, PROM_HEAD BODY);
    /* the oldest, but its request was waiting */
    ck_assert_uint_gt(read_to_eof(fds[0], resp, sizeof(resp)), 3);
    ck_assert_str_eq(resp + strlen(resp) - 3, "ok\n");
    char b[16];
    ck_assert_int_le(recv(fds[1], b, sizeof(b), 0), 0); /* the next oldest made room */
    send_all(newcomer, "GET /healthz HTTP/1.1\r\n\r\n", 25);
    ck_assert_uint_gt(read_to_eof(newcomer, resp, sizeof(resp)), 3);
    ck_assert_str_eq(resp + strlen(resp) - 3, "ok\n");
    close(newcomer);
    close(scrape);
    for (int i = 0; i < LF_METRICS_MAX_CONNS - 1; i++)
        close(fds[i]);
    finish();
}
END_TEST

START_TEST(stop_closes_open_connections_and_the_loop_closes_cleanly)
{
    start(20000);
    int silent = client_connect();
    int partial = client_connect();
    send_all(partial, "GET /metr", 9);
    request("GET /healthz HTTP/1.1\r\n\r\n"); /* both are accepted before this answer */
    double t0 = now_ms();
    finish();
    char b[16];
    ck_assert_int_le(recv(silent, b, sizeof(b), 0), 0);
    ck_assert_int_le(recv(partial, b, sizeof(b), 0), 0);
    ck_assert_double_lt(now_ms() - t0, 3000);
    close(silent);
    close(partial);
}
END_TEST

START_TEST(second_server_on_the_same_port_fails_with_address_in_use)
{
    struct lf_errbuf eb = { { 0 } };
    struct lf_metrics_server *second = (struct lf_metrics_server *)&eb;
    char listen[64];
    char want[128];
    start(LF_METRICS_IDLE_MS);
    snprintf(listen, sizeof(listen), "127.0.0.1:%d", port);
    snprintf(want, sizeof(want), "metrics.listen 127.0.0.1:%d: address already in use", port);
    ck_assert_int_eq(lf_metrics_server_start(&loop, listen, render, NULL, &loop, &second, &eb),
                     LF_EIO);
    ck_assert_ptr_null(second);
    ck_assert_str_eq(eb.msg, want);
    request("GET /healthz HTTP/1.1\r\n\r\n"); /* the first still serves */
    ck_assert_str_eq(resp + strlen(resp) - 3, "ok\n");
    finish();
}
END_TEST

/* Issue 7: "localhost:5067" passed --test-config but the server refused it. */
START_TEST(listen_on_a_host_name_serves_on_its_ipv4_address)
{
    start_on("localhost:0", LF_METRICS_IDLE_MS);
    request("GET /healthz HTTP/1.1\r\n\r\n"); /* client_connect() dials 127.0.0.1 */
    ck_assert_str_eq(resp + strlen(resp) - 3, "ok\n");
    finish();
}
END_TEST

START_TEST(listen_on_a_name_that_does_not_resolve_fails_saying_so)
{
    struct lf_errbuf eb = { { 0 } };
    struct lf_metrics_server *s = (struct lf_metrics_server *)&eb;
    uv_loop_t l;
    ck_assert_int_eq(uv_loop_init(&l), 0);
    ck_assert_int_eq(
        lf_metrics_server_start(&l, "no-such-host.invalid:5066", NULL, NULL, NULL, &s, &eb),
        LF_EIO);
    ck_assert_ptr_null(s);
    static const char want[] =
        "metrics.listen no-such-host.invalid:5066: cannot resolve no-such-host.invalid: ";
    ck_assert_msg(strncmp(eb.msg, want, strlen(want)) == 0, "%s", eb.msg);
    ck_assert_int_eq(uv_loop_close(&l), 0);
}
END_TEST

START_TEST(listen_that_is_not_host_and_port_is_rejected)
{
    static const char *const bad[] = {
        "127.0.0.1", "127.0.0.1:", "127.0.0.1:70000", "127.0.0.1:5x",     ":5066", "::1:5066",
        "[::1]",     "[::1:5066",  "[]:5066",         "127.0.0.1:123456", "",
    };
    uv_loop_t l;
    ck_assert_int_eq(uv_loop_init(&l), 0);
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        struct lf_errbuf eb = { { 0 } };
        struct lf_metrics_server *s = (struct lf_metrics_server *)&eb;
        char want[160];
        snprintf(want, sizeof(want),
                 "metrics.listen %s: expected HOST:PORT (a name, an IPv4 address or [IPv6 "
                 "address])",
                 bad[i]);
        ck_assert_int_eq(lf_metrics_server_start(&l, bad[i], NULL, NULL, NULL, &s, &eb), LF_EINVAL);
        ck_assert_ptr_null(s);
        ck_assert_str_eq(eb.msg, want);
    }
    ck_assert_int_eq(uv_loop_close(&l), 0);
}
END_TEST

#ifdef LF_CHECK_IPV6
/* True when this host has an IPv6 loopback to bind to. */
static bool have_ipv6_loopback(void)
{
    int probe = socket(AF_INET6, SOCK_STREAM, 0);
    struct sockaddr_in6 sa = { .sin6_family = AF_INET6, .sin6_addr = IN6ADDR_LOOPBACK_INIT };
    bool ok = probe >= 0 && bind(probe, (struct sockaddr *)&sa, sizeof(sa)) == 0;
    if (probe >= 0)
        close(probe);
    return ok;
}
#endif

START_TEST(ipv6_listen_serves_on_the_bound_port)
{
    uv_loop_t l;
    struct lf_errbuf eb = { { 0 } };
    struct lf_metrics_server *s = NULL;
    ck_assert_int_eq(uv_loop_init(&l), 0);
    ck_assert_int_eq(lf_metrics_server_start(&l, "[::1]:0", NULL, NULL, NULL, &s, &eb), LF_OK);
    int p = lf_metrics_server_port(s);
    ck_assert_int_gt(p, 0);
    int fd = client_connect_to(AF_INET6, p); /* lands in the backlog; the loop is not running */
    send_all(fd, "GET /healthz HTTP/1.1\r\n\r\n", 25);
    while (strstr(resp, "ok\n") == NULL) {
        ck_assert_int_eq(uv_run(&l, UV_RUN_NOWAIT), 1);
        ssize_t r = recv(fd, resp, sizeof(resp) - 1, MSG_DONTWAIT);
        if (r > 0)
            resp[r] = '\0';
    }
    ck_assert_int_eq(strncmp(resp, "HTTP/1.1 200 OK\r\n", 17), 0);
    close(fd);
    lf_metrics_server_stop(s);
    lf_metrics_server_stop(NULL);
    ck_assert_int_eq(uv_run(&l, UV_RUN_DEFAULT), 0);
    ck_assert_int_eq(uv_loop_close(&l), 0);
}
END_TEST

/* Prometheus text writer */

static struct lf_buf out;

static void prom_setup(void)
{
    lf_buf_init(&out, 4096);
}

static void prom_teardown(void)
{
    lf_buf_release(&out);
}

static void assert_out(const char *want)
{
    ck_assert_uint_eq(out.len, strlen(want));
    ck_assert_mem_eq(out.ptr, want, out.len);
}

START_TEST(family_writes_help_then_type)
{
    ck_assert_int_eq(
        lf_prom_family(&out, "logferry_events_read_total", "counter", "Events read from files."),
        LF_OK);
    ck_assert_int_eq(lf_prom_family(&out, "logferry_queue_bytes", "gauge", "Queued bytes."), LF_OK);
    assert_out("# HELP logferry_events_read_total Events read from files.\n"
               "# TYPE logferry_events_read_total counter\n"
               "# HELP logferry_queue_bytes Queued bytes.\n"
               "# TYPE logferry_queue_bytes gauge\n");
}
END_TEST

START_TEST(help_escapes_backslash_and_newline_but_not_quotes)
{
    ck_assert_int_eq(lf_prom_family(&out, "m", "gauge", "a\\b\n\"c\""), LF_OK);
    assert_out("# HELP m a\\\\b\\n\"c\"\n# TYPE m gauge\n");
}
END_TEST

START_TEST(sample_without_labels_is_name_space_value)
{
    ck_assert_int_eq(lf_prom_sample(&out, "logferry_queue_bytes", NULL, 0), LF_OK);
    static const char *const none[] = { NULL };
    ck_assert_int_eq(lf_prom_sample(&out, "logferry_spool_bytes", none, 7), LF_OK);
    assert_out("logferry_queue_bytes 0\nlogferry_spool_bytes 7\n");
}
END_TEST

START_TEST(sample_labels_are_quoted_and_values_escaped)
{
    static const char *const labels[] = { "input", "a\"b\\c\nd", "output", "", NULL };
    ck_assert_int_eq(lf_prom_sample(&out, "logferry_x_total", labels, 12345), LF_OK);
    assert_out("logferry_x_total{input=\"a\\\"b\\\\c\\nd\",output=\"\"} 12345\n");
}
END_TEST

START_TEST(sample_prints_the_largest_counter_exactly)
{
    static const char *const labels[] = { "result", "ok", NULL };
    ck_assert_int_eq(lf_prom_sample(&out, "logferry_config_reloads_total", labels, UINT64_MAX),
                     LF_OK);
    assert_out("logferry_config_reloads_total{result=\"ok\"} 18446744073709551615\n");
}
END_TEST

START_TEST(histogram_samples_take_two_labels_and_fractional_values)
{
    static const char *const le[] = { "output", "es", "le", "0.25", NULL };
    static const char *const one[] = { "output", "es", NULL };
    ck_assert_int_eq(lf_prom_family(&out, "lat_seconds", "histogram", "h"), LF_OK);
    ck_assert_int_eq(lf_prom_sample(&out, "lat_seconds_bucket", le, 3), LF_OK);
    ck_assert_int_eq(lf_prom_sample_double(&out, "lat_seconds_sum", one, 0.1234), LF_OK);
    assert_out("# HELP lat_seconds h\n# TYPE lat_seconds histogram\n"
               "lat_seconds_bucket{output=\"es\",le=\"0.25\"} 3\n"
               "lat_seconds_sum{output=\"es\"} 0.1234\n");
}
END_TEST

START_TEST(bad_names_types_and_labels_are_einval)
{
    static const char *const bad_key[] = { "a:b", "v", NULL };
    static const char *const odd[] = { "k", NULL };
    ck_assert_int_eq(lf_prom_family(&out, "9lives", "gauge", "h"), LF_EINVAL);
    ck_assert_int_eq(lf_prom_family(&out, "a-b", "gauge", "h"), LF_EINVAL);
    ck_assert_int_eq(lf_prom_family(&out, "", "gauge", "h"), LF_EINVAL);
    ck_assert_int_eq(lf_prom_family(&out, "ok", "summary", "h"), LF_EINVAL);
    ck_assert_int_eq(lf_prom_family(&out, "ok", NULL, "h"), LF_EINVAL);
    ck_assert_int_eq(lf_prom_sample(&out, "a b", NULL, 1), LF_EINVAL);
    ck_assert_uint_eq(out.len, 0);
    ck_assert_int_eq(lf_prom_sample(&out, "m", bad_key, 1), LF_EINVAL);
    lf_buf_reset(&out);
    ck_assert_int_eq(lf_prom_sample(&out, "m", odd, 1), LF_EINVAL);
    lf_buf_reset(&out);
    ck_assert_int_eq(lf_prom_family(&out, "ns:sub_total", "counter", "colons are fine"), LF_OK);
}
END_TEST

START_TEST(output_past_the_buffer_cap_is_etoobig)
{
    struct lf_buf small;
    lf_buf_init(&small, 20);
    ck_assert_int_eq(lf_prom_sample(&small, "logferry_queue_bytes", NULL, 1), LF_ETOOBIG);
    ck_assert_uint_le(small.len, 20);
    lf_buf_release(&small);
}
END_TEST

/* The watchdog: a thread silent past the deadline is named, an idle one never. */
START_TEST(watchdog_names_a_silent_thread_and_never_an_idle_one)
{
    char why[128] = "";
    ck_assert(!lf_watchdog_stuck(10, why, sizeof(why)));
    ck_assert(lf_watchdog_enter("output es"));
    ck_assert(!lf_watchdog_stuck(10, why, sizeof(why))); /* stamped just now */
    usleep(1100 * 1000);
    ck_assert(lf_watchdog_stuck(1000, why, sizeof(why)));
    ck_assert_msg(strncmp(why, "output es thread stuck for ", 27) == 0 && why[27] >= '1' &&
                      strcmp(why + strlen(why) - 2, " s") == 0, "%s", why);
    ck_assert(!lf_watchdog_stuck(5000, why, sizeof(why)));
    lf_watchdog_stamp();
    ck_assert(!lf_watchdog_stuck(1000, why, sizeof(why)));
    lf_watchdog_idle();
    usleep(30 * 1000);
    ck_assert(!lf_watchdog_stuck(10, why, sizeof(why))); /* idle: waiting is not stuck */
    lf_watchdog_stamp();
    usleep(30 * 1000);
    ck_assert(lf_watchdog_stuck(10, why, sizeof(why)));
    lf_watchdog_leave();
    ck_assert(!lf_watchdog_stuck(10, why, sizeof(why))); /* gone: not watched */
}
END_TEST

static Suite *metrics_suite(void)
{
    Suite *s = suite_create("metrics");
    TCase *tc = tcase_create("http");
    tcase_add_test(tc, get_metrics_answers_200_with_prometheus_type_and_exact_length);
    tcase_add_test(tc, head_metrics_answers_the_same_headers_without_a_body);
    tcase_add_test(tc, query_string_is_ignored);
    tcase_add_test(tc, http_1_0_request_with_bare_newlines_is_answered);
    tcase_add_test(tc, healthz_answers_200_ok_when_healthy);
    tcase_add_test(tc, healthz_answers_503_unhealthy_when_not_healthy);
    tcase_add_test(tc, unknown_path_answers_404);
    tcase_add_test(tc, other_methods_answer_405_with_allow);
    tcase_add_test(tc, malformed_requests_answer_400);
    tcase_add_test(tc, request_head_over_8_kib_answers_431_and_closes);
    tcase_add_test(tc, request_head_of_exactly_8_kib_is_answered);
    tcase_add_test(tc, request_split_across_writes_is_answered_once_complete);
    tcase_add_test(tc, client_that_half_closes_after_its_request_still_gets_the_answer);
    tcase_add_test(tc, render_failure_answers_500);
    tcase_add_test(tc, watchdog_names_a_silent_thread_and_never_an_idle_one);
    suite_add_tcase(s, tc);

    tc = tcase_create("connections");
    tcase_add_test(tc, silent_client_is_closed_after_the_idle_timeout);
    tcase_add_test(tc, slow_client_is_closed_when_its_head_is_not_complete_in_time);
    tcase_add_test(tc, newcomer_over_64_closes_the_oldest_idle_connection_and_is_served);
    tcase_add_test(tc, connection_with_a_request_waiting_is_not_closed_to_make_room);
    tcase_add_test(tc, stop_closes_open_connections_and_the_loop_closes_cleanly);
    suite_add_tcase(s, tc);

    tc = tcase_create("listen");
    tcase_add_test(tc, second_server_on_the_same_port_fails_with_address_in_use);
    tcase_add_test(tc, listen_that_is_not_host_and_port_is_rejected);
    tcase_add_test(tc, listen_on_a_host_name_serves_on_its_ipv4_address);
    tcase_add_test(tc, listen_on_a_name_that_does_not_resolve_fails_saying_so);
    suite_add_tcase(s, tc);

    /* Run by t/unit/check_metrics_ipv6 only (see main). */
    tc = tcase_create("ipv6");
    tcase_set_tags(tc, "ipv6");
    tcase_add_test(tc, ipv6_listen_serves_on_the_bound_port);
    suite_add_tcase(s, tc);

    tc = tcase_create("prom");
    tcase_add_checked_fixture(tc, prom_setup, prom_teardown);
    tcase_add_test(tc, family_writes_help_then_type);
    tcase_add_test(tc, help_escapes_backslash_and_newline_but_not_quotes);
    tcase_add_test(tc, sample_without_labels_is_name_space_value);
    tcase_add_test(tc, sample_labels_are_quoted_and_values_escaped);
    tcase_add_test(tc, sample_prints_the_largest_counter_exactly);
    tcase_add_test(tc, bad_names_types_and_labels_are_einval);
    tcase_add_test(tc, histogram_samples_take_two_labels_and_fractional_values);
    tcase_add_test(tc, output_past_the_buffer_cap_is_etoobig);
    suite_add_tcase(s, tc);
    return s;
}

/* Built twice. t/unit/check_metrics runs every case but the one tagged ipv6;
 * t/unit/check_metrics_ipv6 (LF_CHECK_IPV6) runs that one alone and, where the host has no
 * IPv6 loopback, exits 77 so that the suite counts it as skipped rather than passed. */
int main(void)
{
#ifdef LF_CHECK_IPV6
    if (!have_ipv6_loopback()) {
        printf("SKIP: no IPv6 loopback here: ipv6_listen_serves_on_the_bound_port not run\n");
        return 77;
    }
    const char *include = "ipv6", *exclude = NULL;
#else
    const char *include = NULL, *exclude = "ipv6";
#endif
    SRunner *sr = srunner_create(metrics_suite());
    srunner_run_tagged(sr, NULL, NULL, include, exclude, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
