/* request.c - what the metrics server answers, decided from the request head alone.
 *
 * Pure functions over bytes, apart from the socket code in server.c so that the unit suite
 * and t/fuzz/fuzz_http.c can feed them anything. The rules are docs/metrics.md's: a request
 * line "METHOD SP /target SP HTTP/1.0|1.1", header lines "name: value" without control
 * bytes, lines ending in CRLF or a bare LF, a query string ignored. */
#include "config.h"

#include <string.h>

#include "logferry/metrics.h"

static bool is_tchar(char ch)
{
    return (ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') ||
           (ch != '\0' && strchr("!#$%&'*+-.^_`|~", ch) != NULL);
}

/* Checks the header lines after the request line: each "name: value", no control bytes. */
static bool headers_ok(const char *p, const char *end)
{
    while (p < end) {
        const char *eol = memchr(p, '\n', (size_t)(end - p));
        if (eol == NULL)
            return false; /* no blank line: not a whole head */
        const char *stop = eol > p && eol[-1] == '\r' ? eol - 1 : eol;
        if (stop == p)
            return true; /* the blank line */
        const char *q = p;
        while (q < stop && is_tchar(*q))
            q++;
        if (q == p || q == stop || *q != ':')
            return false;
        for (; q < stop; q++)
            if ((unsigned char)*q < 0x20 && *q != '\t')
                return false;
        p = eol + 1;
    }
    return false; /* no blank line */
}

struct request {
    struct lf_str method;
    struct lf_str path; /* target without its query string */
};

/* Parses "METHOD SP /target SP HTTP/1.x" and checks the headers; false on anything else.
 * Any bytes: a head without its blank line is refused. */
static bool parse_head(const char *head, size_t len, struct request *req)
{
    const char *end = head + len;
    const char *eol = memchr(head, '\n', len);
    if (eol == NULL)
        return false;
    const char *stop = eol > head && eol[-1] == '\r' ? eol - 1 : eol;
    const char *p = head;
    while (p < stop && is_tchar(*p))
        p++;
    if (p == head || p == stop || *p != ' ')
        return false;
    req->method = lf_str_make(head, (size_t)(p - head));
    const char *target = ++p;
    while (p < stop && (unsigned char)*p > 0x20 && *p != 0x7f)
        p++;
    if (p == target || *target != '/' || p == stop || *p != ' ')
        return false;
    const char *q = memchr(target, '?', (size_t)(p - target));
    req->path = lf_str_make(target, (size_t)((q != NULL ? q : p) - target));
    p++;
    if (stop - p != 8 || (memcmp(p, "HTTP/1.0", 8) != 0 && memcmp(p, "HTTP/1.1", 8) != 0))
        return false;
    return headers_ok(eol + 1, end);
}

static bool str_is(struct lf_str s, const char *lit)
{
    return s.len == strlen(lit) && memcmp(s.ptr, lit, s.len) == 0;
}

/* The length of the head up to and including its blank line (CRLF CRLF, or bare LFs), or 0
 * if it has not arrived yet. from: where the new bytes start. */
size_t lf_metrics_head_end(const char *head, size_t len, size_t from)
{
    size_t i = from > 2 ? from - 2 : 0;
    for (; i + 1 < len; i++) {
        if (head[i] != '\n')
            continue;
        if (head[i + 1] == '\n')
            return i + 2;
        if (head[i + 1] == '\r' && i + 2 < len && head[i + 2] == '\n')
            return i + 3;
    }
    return 0;
}

enum lf_metrics_route lf_metrics_route(const char *head, size_t len, bool *head_only)
{
    struct request req;
    *head_only = false;
    if (!parse_head(head, len, &req))
        return LF_METRICS_ROUTE_BAD_REQUEST;
    *head_only = str_is(req.method, "HEAD");
    if (!*head_only && !str_is(req.method, "GET"))
        return LF_METRICS_ROUTE_BAD_METHOD;
    if (str_is(req.path, "/metrics"))
        return LF_METRICS_ROUTE_METRICS;
    if (str_is(req.path, "/healthz"))
        return LF_METRICS_ROUTE_HEALTHZ;
    if (str_is(req.path, "/readyz"))
        return LF_METRICS_ROUTE_READYZ;
    if (str_is(req.path, "/status"))
        return LF_METRICS_ROUTE_STATUS;
    return LF_METRICS_ROUTE_NOT_FOUND;
}
