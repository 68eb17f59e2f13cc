/* fuzz_http.c - the metrics server's request path: arbitrary bytes as a request.
 *
 * The first byte sets how the rest arrives: in reads of 1 to 256 bytes, as the server's
 * on_read() sees them, into a head buffer of LF_METRICS_MAX_HEAD bytes. Checked: the head
 * found piecewise is the one found in one pass, it ends in a newline, and the route agrees
 * with the request line (a route to /metrics or /healthz starts with GET or HEAD and that
 * path). Crashes and sanitizer reports are the rest. */
#include "config.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "logferry/metrics.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char head[LF_METRICS_MAX_HEAD];

static bool starts_with(const char *p, size_t len, const char *lit)
{
    size_t n = strlen(lit);
    return len >= n && memcmp(p, lit, n) == 0;
}

/* The route's path follows the method: "GET /metrics" or "HEAD /metrics", then a space or
 * a query string. */
static bool names_path(const char *p, size_t len, bool head_only, const char *path)
{
    size_t m = head_only ? 5 : 4;
    size_t n = strlen(path);
    if (!starts_with(p, len, head_only ? "HEAD " : "GET ") || len < m + n + 1)
        return false;
    return memcmp(p + m, path, n) == 0 && (p[m + n] == ' ' || p[m + n] == '?');
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0)
        return 0;
    size_t chunk = (size_t)data[0] + 1;
    data++;
    size--;
    size_t len = 0;
    size_t end = 0;
    while (len < size && len < sizeof(head) && end == 0) {
        size_t n = size - len < chunk ? size - len : chunk;
        if (n > sizeof(head) - len)
            n = sizeof(head) - len;
        memcpy(head + len, data + len, n);
        size_t from = len;
        len += n;
        end = lf_metrics_head_end(head, len, from);
    }
    if (end != lf_metrics_head_end(head, len, 0))
        abort();
    if (end == 0)
        return 0; /* 431 when the buffer is full, else waiting for more */
    if (end > len || head[end - 1] != '\n')
        abort();
    bool head_only = true;
    enum lf_metrics_route r = lf_metrics_route(head, end, &head_only);
    if (r == LF_METRICS_ROUTE_BAD_REQUEST && head_only)
        abort();
    if (r == LF_METRICS_ROUTE_METRICS && !names_path(head, end, head_only, "/metrics"))
        abort();
    if (r == LF_METRICS_ROUTE_HEALTHZ && !names_path(head, end, head_only, "/healthz"))
        abort();
    return 0;
}
