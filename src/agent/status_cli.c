/* status_cli.c - `logferry --status`: /status of the running agent as a table, or the
 * registry alone when no agent answers.
 *
 * A blocking HTTP/1.0 GET on 127.0.0.1 (or the host of metrics.listen; a wildcard host is
 * asked on its loopback), bounded by STATUS_TIMEOUT_MS for the connect and for the whole
 * answer; the JSON is parsed with jansson. Without an answer the registry file is opened
 * read-only (lf_registry_open() writes nothing) and each entry is shown with the file's size
 * now when the file at its path is still the same device and inode. Everything here is
 * owned by lf_status_run()'s frame. Main thread. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <jansson.h>
#include <netdb.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "logferry/buf.h"
#include "logferry/registry.h"
#include "logferry/status.h"

#define STATUS_TIMEOUT_MS 3000
#define STATUS_MAX_BODY (16u << 20)

static int64_t mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Splits metrics.listen into the host to ask and the port; a wildcard asks the loopback. */
static void target_of(const char *listen, char *host, size_t hlen, char *port, size_t plen)
{
    const char *colon = strrchr(listen, ':');
    size_t n = colon != NULL ? (size_t)(colon - listen) : strlen(listen);
    const char *h = listen;
    if (n >= 2 && h[0] == '[' && h[n - 1] == ']') {
        h++;
        n -= 2;
    }
    snprintf(host, hlen, "%.*s", (int)n, h);
    snprintf(port, plen, "%s", colon != NULL ? colon + 1 : "5066");
    if (strcmp(host, "0.0.0.0") == 0)
        snprintf(host, hlen, "127.0.0.1");
    else if (strcmp(host, "::") == 0)
        snprintf(host, hlen, "::1");
}

/* Waits until fd is ready for events or the deadline passes; false on timeout. */
static bool wait_fd(int fd, short events, int64_t deadline)
{
    int64_t left = deadline - mono_ms();
    struct pollfd pfd = { .fd = fd, .events = events };
    return left > 0 && poll(&pfd, 1, (int)left) == 1;
}

/* Connects to host:port within the deadline; returns the socket or -1 with why set. */
static int dial(const char *host, const char *port, int64_t deadline, char *why, size_t wlen)
{
    struct addrinfo hints = { .ai_socktype = SOCK_STREAM }, *ai = NULL;
    int rc = getaddrinfo(host, port, &hints, &ai);
    if (rc != 0) {
        snprintf(why, wlen, "cannot resolve %.200s: %s", host, gai_strerror(rc));
        return -1;
    }
    int fd = socket(ai->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    int err = fd < 0 ? errno : 0;
    if (fd >= 0 && connect(fd, ai->ai_addr, ai->ai_addrlen) != 0) {
        err = errno;
        if (err == EINPROGRESS) {
            socklen_t len = sizeof(err);
            err = ETIMEDOUT;
            if (wait_fd(fd, POLLOUT, deadline))
                getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len);
        }
    }
    freeaddrinfo(ai);
    if (err != 0) {
        snprintf(why, wlen, "%s", strerror(err));
        if (fd >= 0)
            close(fd);
        return -1;
    }
    return fd;
}

/* GET /status; the JSON document, or NULL with why set. */
static json_t *fetch(const char *listen, char *why, size_t wlen)
{
    char host[256], port[32];
    target_of(listen, host, sizeof(host), port, sizeof(port));
    int64_t deadline = mono_ms() + STATUS_TIMEOUT_MS;
    int fd = dial(host, port, deadline, why, wlen);
    if (fd < 0)
        return NULL;
    char req[512];
    int n = snprintf(req, sizeof(req), "GET /status HTTP/1.0\r\nHost: %s\r\n\r\n", host);
    struct lf_buf ans;
    lf_buf_init(&ans, STATUS_MAX_BODY);
    json_t *doc = NULL;
    snprintf(why, wlen, "no answer within %d ms", STATUS_TIMEOUT_MS);
    if (send(fd, req, (size_t)n, MSG_NOSIGNAL) == n) {
        for (;;) {
            if (!wait_fd(fd, POLLIN, deadline) || lf_buf_grow(&ans, 65536))
                goto out;
            ssize_t got = recv(fd, ans.ptr + ans.len, lf_buf_avail(&ans), 0);
            if (got < 0 && errno == EINTR)
                continue;
            if (got < 0)
                goto out;
            if (got == 0)
                break;
            ans.len += (size_t)got;
        }
        const char *body = ans.len > 0 ? memmem(ans.ptr, ans.len, "\r\n\r\n", 4) : NULL;
        json_error_t jerr;
        if (ans.len < 12 || memcmp(ans.ptr + 8, " 200", 4) != 0 || body == NULL)
            snprintf(why, wlen, "GET /status did not answer 200");
        else if ((doc = json_loadb(body + 4, ans.len - (size_t)(body + 4 - ans.ptr), 0,
                                   &jerr)) == NULL)
            snprintf(why, wlen, "GET /status: not JSON: %s", jerr.text);
    }
out:
    close(fd);
    lf_buf_release(&ans);
    return doc;
}

static const char *str_or(const json_t *o, const char *key, const char *dflt)
{
    const char *s = json_string_value(json_object_get(o, key));
    return s != NULL ? s : dflt;
}

static json_int_t num(const json_t *o, const char *key)
{
    return json_integer_value(json_object_get(o, key));
}

static void print_config(const char *listen, const json_t *doc)
{
    const json_t *cfg = json_object_get(doc, "config");
    const json_t *last = json_object_get(cfg, "last_reload");
    printf("agent at %s: %s, config %s generation %" JSON_INTEGER_FORMAT, listen,
           json_is_true(json_object_get(doc, "stopping")) ? "stopping"
           : json_is_true(json_object_get(doc, "ready")) ? "ready"
                                                           : "starting",
           str_or(cfg, "path", "?"), num(cfg, "generation"));
    if (json_is_object(last))
        printf(", last reload %s at %s%s%s", str_or(last, "result", "?"), str_or(last, "at", "?"),
               json_is_string(json_object_get(last, "error")) ? ": " : "",
               str_or(last, "error", ""));
    printf("\nqueue %" JSON_INTEGER_FORMAT " bytes, spool %" JSON_INTEGER_FORMAT
           " bytes (%" JSON_INTEGER_FORMAT " undelivered)\n\n",
           num(doc, "queue_bytes"), num(doc, "spool_bytes"), num(doc, "spool_undelivered_bytes"));
}

static void print_agent(const char *listen, const json_t *doc)
{
    print_config(listen, doc);
    printf("%-16s %-44s %12s %12s %12s %12s\n", "INPUT", "FILE", "SIZE", "READ", "ACKED", "LAG");
    size_t i, k;
    const json_t *in, *f;
    json_array_foreach(json_object_get(doc, "inputs"), i, in) {
        const char *id = str_or(in, "id", "?");
        if (json_array_size(json_object_get(in, "files")) == 0)
            printf("%-16s %-44s\n", id, "(no file)");
        json_array_foreach(json_object_get(in, "files"), k, f) {
            if (json_object_get(f, "cursor") != NULL)
                printf("%-16s journal cursor %s, %" JSON_INTEGER_FORMAT " entries acked\n", id,
                       str_or(f, "cursor", ""), num(f, "acknowledged_entries"));
            else
                printf("%-16s %-44s %12" JSON_INTEGER_FORMAT " %12" JSON_INTEGER_FORMAT
                       " %12" JSON_INTEGER_FORMAT " %12" JSON_INTEGER_FORMAT "\n",
                       id, str_or(f, "path", "?"), num(f, "size"), num(f, "read"),
                       num(f, "acknowledged"), num(f, "lag_bytes"));
        }
    }
    printf("\n%-16s %-44s %12s %12s %12s\n", "OUTPUT", "STATE", "ACKED", "ERRORS", "RETRIES");
    const json_t *o;
    json_array_foreach(json_object_get(doc, "outputs"), i, o) {
        char state[512];
        if (strcmp(str_or(o, "state", ""), "retrying") == 0)
            snprintf(state, sizeof(state), "retrying since %s (%s)", str_or(o, "since", "?"),
                     str_or(o, "last_error", "?"));
        else
            snprintf(state, sizeof(state), "%s", str_or(o, "state", "?"));
        printf("%-16s %-44s %12" JSON_INTEGER_FORMAT " %12" JSON_INTEGER_FORMAT
               " %12" JSON_INTEGER_FORMAT "\n",
               str_or(o, "name", "?"), state, num(o, "events_acked"), num(o, "errors"),
               num(o, "retries"));
    }
}

/* One registry entry: the file's size now if it is still the same file at its path. */
static bool print_entry(void *arg, const struct lf_registry_entry *e)
{
    (void)arg;
    if (e->id.dev == 0 && e->id.ino == 0) {
        printf("%-16s journal cursor %s, %" PRIu64 " entries acked\n", e->input_id,
               e->path[0] ? e->path : "(none yet)", e->offset);
        return false;
    }
    struct stat st;
    if (stat(e->path, &st) == 0 && (uint64_t)st.st_dev == e->id.dev &&
        (uint64_t)st.st_ino == e->id.ino) {
        uint64_t size = (uint64_t)st.st_size;
        printf("%-16s %-44s %12" PRIu64 " %12" PRIu64 " %12" PRIu64 "\n", e->input_id, e->path,
               size, e->offset, size > e->offset ? size - e->offset : 0);
    } else {
        printf("%-16s %-44s %12s %12" PRIu64 " %12s\n", e->input_id, e->path, "(moved)",
               e->offset, "-");
    }
    return false;
}

static int print_registry(const struct lf_config *cfg)
{
    struct lf_registry *reg = NULL;
    struct lf_errbuf eb = { "" };
    if (lf_registry_open(cfg->data_dir, &reg, &eb)) {
        fprintf(stderr, "logferry: %s\n", eb.msg);
        return 1;
    }
    printf("registry %s/registry: %zu files (offsets as last saved)\n\n", cfg->data_dir,
           lf_registry_count(reg));
    printf("%-16s %-44s %12s %12s %12s\n", "INPUT", "FILE", "SIZE", "ACKED", "LAG");
    lf_registry_sweep(reg, print_entry, NULL);
    lf_registry_free(reg);
    return 0;
}

int lf_status_run(const struct lf_config *cfg)
{
    const char *listen = cfg->metrics.listen;
    if (listen != NULL && listen[0] != '\0') {
        char why[512] = "";
        json_t *doc = fetch(listen, why, sizeof(why));
        if (doc != NULL) {
            print_agent(listen, doc);
            json_decref(doc);
            return 0;
        }
        fprintf(stderr, "logferry: no agent answers at %s (%s); showing the registry alone\n",
                listen, why);
    } else {
        fprintf(stderr, "logferry: metrics.listen is \"\": showing the registry alone\n");
    }
    return print_registry(cfg);
}
