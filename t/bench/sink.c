/* sink.c - the receiver the output benchmarks send into: it stands in for each network
 * destination (an HTTP collector, Elasticsearch's _bulk, Loki's push, OTLP/HTTP, S3 and a
 * syslog relay), answers as the real server does, and counts what it was sent.
 *
 *   t/bench/sink [--host 127.0.0.1] [--keys message,log,msg,MESSAGE] [--syslog]
 *                [--fail-every N]
 *   t/bench/sink --hash FILE...
 *
 * Every message received (the log line's text as the agent read it) adds to three figures:
 * lines, sum (the wrapping 64-bit sum of each message's sink_hash(), so that the order of
 * arrival does not matter) and bytes. `--hash` prints the same three over the lines of
 * files, so a harness compares them without hashing the lines itself. `GET /__stats` answers
 * them (with the requests and errors) and `GET /__reset` zeroes them. A body is counted
 * only when all of it was understood: one that was not counts in errors, is answered 400
 * and is shown on stderr (its first 200 bytes, for the first few such bodies).
 *
 * What a message is depends on the request: a JSON object's first member named in --keys
 * whose value is a string, JSON-unescaped (an NDJSON line, a _bulk document, an element of
 * a JSON array, a Loki line or an S3 object's line that is a JSON object), a plain text
 * line as it is, an OTLP LogRecord's string body, or a syslog frame's MSG.
 *
 * Costs: one thread (the libuv loop). Each connection keeps its input and output buffers
 * across requests; bodies are decompressed into one buffer the sink reuses, with one zlib
 * stream and one ZSTD_DCtx made at start; nothing is allocated per line. Only multipart
 * uploads hold memory of their own (their parts, until completed or aborted).
 *
 * It ends with exit status 0 on SIGTERM, SIGINT, or end of file on stdin when stdin is a
 * pipe or a terminal (a harness that dies closes the pipe; /dev/null is not watched).
 *
 * This file is the server (connections, HTTP framing, routes, S3 uploads, syslog framing);
 * sink_msg.c finds the messages in bodies and frames. */
#include "config.h"

#include "sink_int.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <uv.h>

#define MAX_HEAD_BYTES (64 * 1024) /* a request head longer than this is refused */
#define MAX_SHOWN      10          /* bad bodies shown on stderr, then only counted */
#define SHOW_BYTES     200         /* of each */
#define READ_BYTES     (64 * 1024) /* room offered to each read */

struct upload {
    struct upload *next;
    char id[32];
    struct buf *parts; /* owned; by part number - 1, up to S3's 10,000 */
    size_t cap_parts;
    size_t n_parts; /* highest part number seen */
};

#define S3_MAX_PARTS 10000

struct sink {
    uv_loop_t *loop;
    uv_tcp_t http;
    uv_tcp_t syslog;
    uv_signal_t sigterm;
    uv_signal_t sigint;
    union {
        uv_pipe_t pipe;
        uv_tty_t tty;
    } in;
    bool stdin_watched;
    bool stopping;
    uint64_t fail_every; /* 0: never */
    struct tally total;
    uint64_t requests;
    uint64_t errors;
    uint64_t shown;
    struct sink_msgs m;     /* finding messages */
    struct buf joined;      /* a multipart object's parts, in order */
    struct upload *uploads; /* open multipart uploads */
};

/* One accepted connection, HTTP or syslog. */
struct conn {
    uv_tcp_t tcp;
    struct sink *s;
    bool syslog;
    struct buf in;    /* bytes read and not yet consumed */
    size_t scan;      /* where the search for the head's end resumes */
    bool have_head;   /* the head is parsed; waiting for the body */
    size_t head_len;  /* bytes of the head, the blank line included */
    uint64_t clen;    /* Content-Length */
    bool chunked;     /* Transfer-Encoding: chunked */
    size_t chunk_at;  /* offset in in of the next chunk's size line */
    struct buf body;  /* a chunked body, joined */
    bool close_after; /* Connection: close, or HTTP/1.0 */
    char method[8];   /* GET, POST... */
    size_t path_at;   /* the target's offset in in, and its length */
    size_t path_len;
    char encoding[16]; /* Content-Encoding, lower case ("" for none) */
    bool ctype_json;   /* Content-Type: application/json */
    struct buf out[2]; /* responses: one being written, one gathering */
    int gathering;     /* which of out gathers */
    bool writing;
    bool closing;
    uv_write_t wr;
};

/* A request, borrowed from its connection while it is handled. */
struct req {
    const char *method;
    const char *path; /* up to '?' */
    size_t path_len;
    const char *query; /* after '?', or "" */
    size_t query_len;
    const char *body;
    size_t len;
};

static void on_close(uv_handle_t *h);
static bool path_is(const struct req *r, const char *path)
{
    return strlen(path) == r->path_len && memcmp(r->path, path, r->path_len) == 0;
}

/* ---- answers ------------------------------------------------------------------------ */

static void conn_flush(struct conn *c);

static const char *reason(int status)
{
    switch (status) {
    case 100:
        return "Continue";
    case 200:
        return "OK";
    case 204:
        return "No Content";
    case 400:
        return "Bad Request";
    case 404:
        return "Not Found";
    case 431:
        return "Request Header Fields Too Large";
    case 500:
        return "Internal Server Error";
    default:
        return "Service Unavailable";
    }
}

/* An answer queued on c: status, Content-Type (NULL: none), extra header lines (each
 * ending in CRLF, or ""), the body. HEAD answers get the length and no body. */
static void answer(
    struct conn *c, int status, const char *ctype, const char *extra, const char *body, size_t len)
{
    struct buf *o = &c->out[c->gathering];
    bool head = !strcmp(c->method, "HEAD");
    int rc = sink_buf_printf(o, "HTTP/1.1 %d %s\r\n%s%s%s%sContent-Length: %zu\r\n%s\r\n", status,
                             reason(status), ctype ? "Content-Type: " : "", ctype ? ctype : "",
                             ctype ? "\r\n" : "", extra, status == 204 ? 0 : len,
                             c->close_after ? "Connection: close\r\n" : "");
    if (!rc && !head && status != 204)
        rc = sink_buf_add(o, body, len);
    if (rc) {
        fprintf(stderr, "sink: out of memory for an answer; closing the connection\n");
        c->close_after = true;
    }
    conn_flush(c);
}

static void answer_json(struct conn *c, int status, const char *body)
{
    answer(c, status, "application/json", "", body, strlen(body));
}

/* A body not understood: counted, shown (the first few), answered 400. */
static void bad_body(struct conn *c, const char *what, const char *p, size_t n)
{
    struct sink *s = c->s;
    s->errors++;
    if (s->shown < MAX_SHOWN) {
        s->shown++;
        fprintf(stderr, "sink: %s %.*s: %s (%zu bytes); it starts: ", c->method, (int)c->path_len,
                c->in.ptr + c->path_at, what, n);
        for (size_t i = 0; i < n && i < SHOW_BYTES; i++) {
            unsigned char ch = (unsigned char)p[i];
            if (ch >= 0x20 && ch < 0x7f && ch != '\\')
                fputc(ch, stderr);
            else
                fprintf(stderr, "\\x%02x", ch);
        }
        fprintf(stderr, "%s\n",
                s->shown == MAX_SHOWN ? "\nsink: further bad bodies only counted" : "");
    }
    answer_json(c, 400, "{\"error\":\"sink: body not understood\"}");
}

static void add_total(struct sink *s, struct tally *t)
{
    sink_tally_flush(t);
    s->total.lines += t->lines;
    s->total.sum += t->sum;
    s->total.bytes += t->bytes;
}

/* ---- S3 --------------------------------------------------------------------------- */

/* The value of param name in the query, or NULL; *len its length. */
static const char *query_param(const struct req *r, const char *name, size_t *len)
{
    size_t nlen = strlen(name);
    const char *p = r->query;
    const char *e = r->query + r->query_len;
    while (p < e) {
        const char *amp = memchr(p, '&', (size_t)(e - p));
        const char *end = amp ? amp : e;
        if ((size_t)(end - p) >= nlen && !memcmp(p, name, nlen) &&
            (p + nlen == end || p[nlen] == '=')) {
            const char *v = p + nlen < end ? p + nlen + 1 : end;
            *len = (size_t)(end - v);
            return v;
        }
        p = amp ? amp + 1 : e;
    }
    return NULL;
}

/* PUT /BUCKET/KEY...: two segments or more, none an Elasticsearch API's (_template...). */
static bool s3_object_path(const struct req *r)
{
    const char *p = r->path;
    const char *e = r->path + r->path_len;
    size_t segs = 0;
    while (p < e) {
        while (p < e && *p == '/')
            p++;
        if (p == e)
            break;
        if (*p == '_')
            return false;
        segs++;
        while (p < e && *p != '/')
            p++;
    }
    return segs >= 2;
}

static bool ends_with(const char *p, size_t n, const char *suffix)
{
    size_t k = strlen(suffix);
    return n >= k && !memcmp(p + n - k, suffix, k);
}

/* An object's bytes counted: decoded by the key's suffix, or else by Content-Encoding. */
static int s3_count(struct conn *c, const struct req *r, const char *p, size_t n, struct tally *t)
{
    const char *enc = c->encoding;
    if (ends_with(r->path, r->path_len, ".zst"))
        enc = "zstd";
    else if (ends_with(r->path, r->path_len, ".gz"))
        enc = "gzip";
    const char *text;
    size_t len;
    if (sink_decode(&c->s->m, enc, p, n, &text, &len))
        return -1;
    return sink_text_lines(&c->s->m, text, len, t);
}

static struct upload **upload_find(struct sink *s, const char *id, size_t len)
{
    struct upload **u = &s->uploads;
    while (*u && !(strlen((*u)->id) == len && !memcmp((*u)->id, id, len)))
        u = &(*u)->next;
    return u;
}

static void upload_free(struct upload *u)
{
    for (size_t i = 0; i < u->cap_parts; i++)
        sink_buf_release(&u->parts[i]);
    free(u->parts);
    free(u);
}

static void answer_xml(struct conn *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* A 200 answer of S3's: the XML declaration, then fmt. */
static void answer_xml(struct conn *c, const char *fmt, ...)
{
    struct buf *b = &c->s->m.resp;
    va_list ap;
    va_start(ap, fmt);
    b->len = 0;
    int rc = sink_buf_add(b, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n", 39);
    rc = rc ? rc : sink_buf_vprintf(b, fmt, ap);
    va_end(ap);
    if (rc)
        answer_json(c, 500, "{}");
    else
        answer(c, 200, "application/xml", "", b->ptr, b->len);
}

static void s3_request(struct conn *c, const struct req *r)
{
    struct sink *s = c->s;
    struct tally t = { 0 };
    size_t idlen = 0;
    size_t numlen = 0;
    const char *id = query_param(r, "uploadId", &idlen);
    const char *num = query_param(r, "partNumber", &numlen);
    const char *xml = "application/xml";
    if (!strcmp(r->method, "POST") && query_param(r, "uploads", &numlen)) {
        struct upload *u = calloc(1, sizeof(*u));
        if (!u) {
            answer_json(c, 500, "{}");
            return;
        }
        snprintf(u->id, sizeof(u->id), "sink-upload-%" PRIu64, ++s->m.next_id);
        u->next = s->uploads;
        s->uploads = u;
        answer_xml(c,
                   "<InitiateMultipartUploadResult><Bucket>b</Bucket><Key>%.*s</Key>"
                   "<UploadId>%s</UploadId></InitiateMultipartUploadResult>",
                   (int)r->path_len, r->path, u->id);
        return;
    }
    if (!id) { /* a single PUT */
        if (s3_count(c, r, r->body, r->len, &t)) {
            bad_body(c, "an S3 object not understood", r->body, r->len);
            return;
        }
        add_total(s, &t);
        answer(c, 200, NULL, "ETag: \"00000000000000000000000000000000\"\r\n", "", 0);
        return;
    }
    struct upload **slot = upload_find(s, id, idlen);
    struct upload *u = *slot;
    if (!u) {
        static const char none[] = "<Error><Code>NoSuchUpload</Code></Error>";
        answer(c, 404, xml, "", none, sizeof(none) - 1);
        return;
    }
    if (!strcmp(r->method, "PUT") && num) {
        unsigned long n = strtoul(num, NULL, 10);
        if (n < 1 || n > S3_MAX_PARTS) {
            bad_body(c, "a part number out of S3's range 1-10000", r->body, r->len);
            return;
        }
        if (n > u->cap_parts) {
            size_t cap = n < 2 * u->cap_parts ? 2 * u->cap_parts : n;
            struct buf *parts = realloc(u->parts, cap * sizeof(*parts));
            if (!parts) {
                answer_json(c, 500, "{}");
                return;
            }
            memset(parts + u->cap_parts, 0, (cap - u->cap_parts) * sizeof(*parts));
            u->parts = parts;
            u->cap_parts = cap;
        }
        u->parts[n - 1].len = 0;
        if (sink_buf_add(&u->parts[n - 1], r->body, r->len)) {
            answer_json(c, 500, "{}");
            return;
        }
        if (n > u->n_parts)
            u->n_parts = n;
        char etag[64];
        snprintf(etag, sizeof(etag), "ETag: \"part%lu\"\r\n", n);
        answer(c, 200, NULL, etag, "", 0);
        return;
    }
    *slot = u->next;
    if (!strcmp(r->method, "POST")) { /* complete */
        s->joined.len = 0;
        int rc = 0;
        for (size_t i = 0; i < u->n_parts && !rc; i++)
            rc = sink_buf_add(&s->joined, u->parts[i].ptr, u->parts[i].len);
        if (rc || s3_count(c, r, s->joined.ptr ? s->joined.ptr : "", s->joined.len, &t)) {
            upload_free(u);
            bad_body(c, "a multipart object not understood", s->joined.ptr, s->joined.len);
            return;
        }
        add_total(s, &t);
        answer_xml(c,
                   "<CompleteMultipartUploadResult><Bucket>b</Bucket><Key>%.*s</Key>"
                   "<ETag>\"00000000000000000000000000000000-%zu\"</ETag>"
                   "</CompleteMultipartUploadResult>",
                   (int)r->path_len, r->path, u->n_parts);
    } else { /* DELETE: abort */
        answer(c, 204, NULL, "", "", 0);
    }
    upload_free(u);
}

/* ---- requests ----------------------------------------------------------------------- */

static void stats_answer(struct conn *c)
{
    struct sink *s = c->s;
    char text[256];
    int n = snprintf(text, sizeof(text),
                     "lines %" PRIu64 " sum %016" PRIx64 " bytes %" PRIu64 " requests %" PRIu64
                     " errors %" PRIu64 "\n",
                     s->total.lines, s->total.sum, s->total.bytes, s->requests, s->errors);
    answer(c, 200, "text/plain", "", text, (size_t)n);
}

static void post_body(struct conn *c, const struct req *r)
{
    struct sink *s = c->s;
    struct tally t = { 0 };
    const char *p;
    size_t n;
    if (sink_decode(&s->m, c->encoding, r->body, r->len, &p, &n)) {
        bad_body(c, "a body that does not decode as its Content-Encoding says", r->body, r->len);
        return;
    }
    if (ends_with(r->path, r->path_len, "_bulk")) {
        if (sink_bulk_body(&s->m, p, n, &t)) {
            bad_body(c, "a _bulk body not understood", p, n);
            return;
        }
        add_total(s, &t);
        struct buf *o = &s->m.inner; /* the whole answer, around the items in resp */
        o->len = 0;
        if (sink_buf_printf(o, "{\"took\":1,\"errors\":false,\"items\":%.*s}", (int)s->m.resp.len,
                            s->m.resp.ptr)) {
            answer_json(c, 500, "{}");
            return;
        }
        answer(c, 200, "application/json", "X-Elastic-Product: Elasticsearch\r\n", o->ptr, o->len);
    } else if (path_is(r, "/loki/api/v1/push")) {
        if (sink_loki_body(&s->m, p, n, &t)) {
            bad_body(c, "a Loki push not understood", p, n);
            return;
        }
        add_total(s, &t);
        answer(c, 204, NULL, "", "", 0);
    } else if (ends_with(r->path, r->path_len, "/v1/logs")) {
        int rc = c->ctype_json ? sink_otlp_json(&s->m, p, n, &t) : sink_otlp_pb(p, n, &t);
        if (rc) {
            bad_body(c, "an OTLP request not understood", p, n);
            return;
        }
        add_total(s, &t);
        if (c->ctype_json)
            answer_json(c, 200, "{}");
        else
            answer(c, 200, "application/x-protobuf", "", "", 0);
    } else {
        if (sink_generic_body(&s->m, p, n, &t)) {
            bad_body(c, "a body neither NDJSON, a JSON array nor lines", p, n);
            return;
        }
        add_total(s, &t);
        answer_json(c, 200, "{}");
    }
}

static void handle(struct conn *c, struct req *r)
{
    struct sink *s = c->s;
    if (path_is(r, "/__stats")) {
        stats_answer(c);
        return;
    }
    if (path_is(r, "/__reset")) {
        memset(&s->total, 0, sizeof(s->total));
        s->requests = 0;
        s->errors = 0;
        answer(c, 200, "text/plain", "", "reset\n", 6);
        return;
    }
    s->requests++;
    if (s->fail_every && s->requests % s->fail_every == 0) {
        answer_json(c, 503, "{\"error\":\"sink: --fail-every\"}");
        return;
    }
    size_t len;
    bool s3 = query_param(r, "uploads", &len) || query_param(r, "uploadId", &len) ||
              (!strcmp(r->method, "PUT") && s3_object_path(r));
    if (s3) {
        s3_request(c, r);
    } else if (!strcmp(r->method, "POST")) {
        post_body(c, r);
    } else if ((!strcmp(r->method, "GET") || !strcmp(r->method, "HEAD")) && path_is(r, "/")) {
        static const char version[] =
            "{\"name\":\"sink\",\"cluster_name\":\"sink\",\"version\":{\"number\":\"8.11.0\","
            "\"build_flavor\":\"default\",\"lucene_version\":\"9.8.0\"},"
            "\"tagline\":\"You Know, for Search\"}";
        answer(c, 200, "application/json", "X-Elastic-Product: Elasticsearch\r\n", version,
               sizeof(version) - 1);
    } else {
        answer(c, 200, "application/json", "X-Elastic-Product: Elasticsearch\r\n", "{}", 2);
    }
}

static bool name_is(const char *p, size_t n, const char *name)
{
    return strlen(name) == n && !strncasecmp(p, name, n);
}

/* The head in c->in[0, head_len): request line and the headers the sink reads. */
static int parse_head(struct conn *c)
{
    const char *p = c->in.ptr;
    const char *e = p + c->head_len - 2;
    const char *eol = memchr(p, '\r', (size_t)(e - p));
    const char *sp1 = memchr(p, ' ', (size_t)(eol - p));
    const char *sp2 = sp1 ? memchr(sp1 + 1, ' ', (size_t)(eol - sp1 - 1)) : NULL;
    if (!sp2 || (size_t)(sp1 - p) >= sizeof(c->method))
        return -1;
    memcpy(c->method, p, (size_t)(sp1 - p));
    c->method[sp1 - p] = '\0';
    c->path_at = (size_t)(sp1 + 1 - c->in.ptr);
    c->path_len = (size_t)(sp2 - sp1 - 1);
    c->close_after = !strncmp(sp2 + 1, "HTTP/1.0", 8);
    c->clen = 0;
    c->chunked = false;
    c->encoding[0] = '\0';
    c->ctype_json = false;
    for (p = eol + 2; p < e; p = eol + 2) {
        eol = memchr(p, '\r', (size_t)(e - p + 2));
        const char *colon = memchr(p, ':', (size_t)(eol - p));
        if (!colon)
            return -1;
        size_t nlen = (size_t)(colon - p);
        const char *v = colon + 1;
        while (v < eol && (*v == ' ' || *v == '\t'))
            v++;
        size_t vlen = (size_t)(eol - v);
        while (vlen > 0 && (v[vlen - 1] == ' ' || v[vlen - 1] == '\t'))
            vlen--;
        if (name_is(p, nlen, "content-length")) {
            c->clen = strtoull(v, NULL, 10);
        } else if (name_is(p, nlen, "transfer-encoding")) {
            c->chunked = vlen >= 7 && !strncasecmp(v + vlen - 7, "chunked", 7);
        } else if (name_is(p, nlen, "content-encoding")) {
            size_t i;
            for (i = 0; i < vlen && i + 1 < sizeof(c->encoding); i++)
                c->encoding[i] = (char)tolower((unsigned char)v[i]);
            c->encoding[i] = '\0';
        } else if (name_is(p, nlen, "content-type")) {
            c->ctype_json = vlen >= 16 && !strncasecmp(v, "application/json", 16);
        } else if (name_is(p, nlen, "connection")) {
            if (vlen == 5 && !strncasecmp(v, "close", 5))
                c->close_after = true;
            else if (vlen == 10 && !strncasecmp(v, "keep-alive", 10))
                c->close_after = false;
        } else if (name_is(p, nlen, "expect") && vlen == 12 &&
                   !strncasecmp(v, "100-continue", 12)) {
            if (sink_buf_add(&c->out[c->gathering], "HTTP/1.1 100 Continue\r\n\r\n", 25))
                return -1;
            conn_flush(c);
        }
    }
    return c->clen > SINK_MAX_BODY_BYTES ? -1 : 0;
}

/* Joins the chunks that have arrived into c->body. 1: the last chunk came (c->chunk_at is
 * the request's end); 0: more to come; -1: bad framing. */
static int take_chunks(struct conn *c)
{
    for (;;) {
        const char *p = c->in.ptr + c->chunk_at;
        size_t avail = c->in.len - c->chunk_at;
        const char *nl = memchr(p, '\n', avail);
        if (!nl)
            return avail > 1024 ? -1 : 0;
        char *end;
        unsigned long long size = strtoull(p, &end, 16);
        if (end == p || size > SINK_MAX_BODY_BYTES)
            return -1;
        size_t line = (size_t)(nl + 1 - p);
        if (size == 0) { /* trailers, if any, then an empty line */
            const char *q = nl + 1;
            for (;;) {
                const char *tnl = memchr(q, '\n', (size_t)(c->in.ptr + c->in.len - q));
                if (!tnl)
                    return 0;
                bool empty = tnl == q || (tnl == q + 1 && *q == '\r');
                q = tnl + 1;
                if (empty) {
                    c->chunk_at = (size_t)(q - c->in.ptr);
                    return 1;
                }
            }
        }
        if (avail < line + size + 2)
            return 0;
        if (sink_buf_add(&c->body, nl + 1, size))
            return -1;
        c->chunk_at += line + size + 2;
    }
}

/* Handles every whole request in c->in. -1: the connection must close. */
static int http_parse(struct conn *c)
{
    while (!c->closing) {
        if (!c->have_head) {
            size_t from = c->scan > 3 ? c->scan - 3 : 0;
            const char *h =
                c->in.len > from ? memmem(c->in.ptr + from, c->in.len - from, "\r\n\r\n", 4) : NULL;
            if (!h) {
                c->scan = c->in.len;
                if (c->in.len > MAX_HEAD_BYTES) {
                    answer_json(c, 431, "{}");
                    return -1;
                }
                return 0;
            }
            c->head_len = (size_t)(h + 4 - c->in.ptr);
            if (parse_head(c)) {
                memcpy(c->method, "?", 2);
                c->path_at = 0;
                c->path_len = 0;
                c->close_after = true;
                answer_json(c, 400, "{\"error\":\"sink: bad request head\"}");
                return -1;
            }
            c->have_head = true;
            c->chunk_at = c->head_len;
            c->body.len = 0;
        }
        size_t used;
        struct req r;
        if (c->chunked) {
            int rc = take_chunks(c);
            if (rc <= 0) {
                if (rc < 0) {
                    c->close_after = true;
                    answer_json(c, 400, "{\"error\":\"sink: bad chunked body\"}");
                }
                return rc;
            }
            used = c->chunk_at;
            r.body = c->body.ptr ? c->body.ptr : "";
            r.len = c->body.len;
        } else {
            if (c->in.len - c->head_len < c->clen) {
                /* room for the whole body at once: one reallocation, not a doubling per read */
                return sink_buf_reserve(&c->in, c->head_len + c->clen - c->in.len + READ_BYTES);
            }
            used = c->head_len + c->clen;
            r.body = c->in.ptr + c->head_len;
            r.len = c->clen;
        }
        r.method = c->method;
        r.path = c->in.ptr + c->path_at;
        const char *q = memchr(r.path, '?', c->path_len);
        r.path_len = q ? (size_t)(q - r.path) : c->path_len;
        r.query = q ? q + 1 : "";
        r.query_len = q ? c->path_len - r.path_len - 1 : 0;
        handle(c, &r);
        memmove(c->in.ptr, c->in.ptr + used, c->in.len - used);
        c->in.len -= used;
        c->scan = 0;
        c->have_head = false;
        if (c->close_after)
            return -1;
    }
    return 0;
}

/* ---- syslog --------------------------------------------------------------------------- */

/* Frames in c->in: octet-counted (LEN SP MSG) or LF-ended. -1: a bad frame length. */
static int syslog_parse(struct conn *c)
{
    struct sink *s = c->s;
    const char *p = c->in.ptr;
    const char *e = p + c->in.len;
    size_t want = 0;
    struct tally t = { 0 }; /* one per read: its messages hashed together */
    while (p < e) {
        const char *msg;
        const char *end;
        const char *next;
        if (isdigit((unsigned char)*p)) {
            const char *sp = memchr(p, ' ', (size_t)(e - p) < 12 ? (size_t)(e - p) : 12);
            if (!sp)
                break;
            char *num_end;
            unsigned long long n = strtoull(p, &num_end, 10);
            if (num_end != sp || n > SINK_MAX_BODY_BYTES) {
                fprintf(stderr, "sink: syslog: a frame length that is not one; closing\n");
                s->errors++;
                add_total(s, &t);
                return -1;
            }
            if ((uint64_t)(e - sp - 1) < n) {
                want = (size_t)(sp + 1 - p) + n; /* the frame's bytes, reserved below */
                break;
            }
            msg = sp + 1;
            end = msg + n;
            next = end;
        } else {
            const char *nl = memchr(p, '\n', (size_t)(e - p));
            if (!nl)
                break;
            msg = p;
            end = nl;
            next = nl + 1;
        }
        if (end > msg) {
            if (sink_syslog_msg(msg, end, &t)) {
                s->errors++;
                if (s->shown < MAX_SHOWN) {
                    s->shown++;
                    fprintf(stderr, "sink: syslog: a message neither RFC 5424 nor 3164: %.*s\n",
                            (int)((size_t)(end - msg) < SHOW_BYTES ? end - msg : SHOW_BYTES), msg);
                }
            }
        }
        p = next;
    }
    add_total(s, &t); /* before the frames' bytes move */
    size_t used = (size_t)(p - c->in.ptr);
    memmove(c->in.ptr, p, c->in.len - used);
    c->in.len -= used;
    /* room for a long frame at once, not a doubling per read */
    return want > c->in.len ? sink_buf_reserve(&c->in, want - c->in.len + READ_BYTES) : 0;
}

/* ---- connections ---------------------------------------------------------------------- */

static void conn_close(struct conn *c)
{
    if (c->closing)
        return;
    c->closing = true;
    uv_close((uv_handle_t *)&c->tcp, on_close);
}

static void on_written(uv_write_t *w, int status)
{
    struct conn *c = w->data;
    c->writing = false;
    c->out[c->gathering ^ 1].len = 0;
    if (status < 0) {
        conn_close(c);
        return;
    }
    if (c->out[c->gathering].len > 0)
        conn_flush(c);
    else if (c->close_after)
        conn_close(c);
}

/* Starts writing what gathered, unless a write is under way (its end starts the next). */
static void conn_flush(struct conn *c)
{
    if (c->writing || c->closing || c->out[c->gathering].len == 0)
        return;
    struct buf *o = &c->out[c->gathering];
    uv_buf_t b = uv_buf_init(o->ptr, (unsigned int)o->len);
    c->wr.data = c;
    if (uv_write(&c->wr, (uv_stream_t *)&c->tcp, &b, 1, on_written) < 0) {
        conn_close(c);
        return;
    }
    c->writing = true;
    c->gathering ^= 1;
}

static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *b)
{
    struct conn *c = h->data;
    (void)suggested;
    if (sink_buf_reserve(&c->in, READ_BYTES)) {
        *b = uv_buf_init(NULL, 0);
        return;
    }
    size_t room = c->in.cap - c->in.len;
    *b = uv_buf_init(c->in.ptr + c->in.len, room > UINT32_MAX ? UINT32_MAX : (unsigned)room);
}

static void on_read(uv_stream_t *st, ssize_t n, const uv_buf_t *b)
{
    struct conn *c = st->data;
    (void)b;
    if (n < 0) {
        if (n == UV_ENOBUFS)
            fprintf(stderr, "sink: out of memory for a request; closing the connection\n");
        if (c->writing) {
            c->close_after = true; /* the answers under way go first */
            uv_read_stop(st);
        } else {
            conn_close(c);
        }
        return;
    }
    c->in.len += (size_t)n;
    int rc = c->syslog ? syslog_parse(c) : http_parse(c);
    if (rc) {
        uv_read_stop(st);
        c->close_after = true;
        if (!c->writing && c->out[c->gathering].len == 0)
            conn_close(c);
    }
}

static void on_connection(uv_stream_t *server, int status)
{
    struct sink *s = server->data;
    if (status < 0)
        return;
    struct conn *c = calloc(1, sizeof(*c));
    if (!c)
        return;
    c->s = s;
    c->syslog = server == (uv_stream_t *)&s->syslog;
    uv_tcp_init(s->loop, &c->tcp);
    c->tcp.data = c;
    if (uv_accept(server, (uv_stream_t *)&c->tcp) < 0 ||
        uv_read_start((uv_stream_t *)&c->tcp, on_alloc, on_read) < 0) {
        conn_close(c);
        return;
    }
    uv_tcp_nodelay(&c->tcp, 1);
}

/* A connection's handle: a TCP one that is not a listener (whose data is the sink). */
static bool is_conn(uv_handle_t *h)
{
    struct sink *s = h->loop->data;
    return h->type == UV_TCP && h != (uv_handle_t *)&s->http && h != (uv_handle_t *)&s->syslog;
}

static void on_close(uv_handle_t *h)
{
    if (!is_conn(h))
        return;
    struct conn *c = h->data;
    sink_buf_release(&c->in);
    sink_buf_release(&c->body);
    sink_buf_release(&c->out[0]);
    sink_buf_release(&c->out[1]);
    free(c);
}

static void close_one(uv_handle_t *h, void *arg)
{
    (void)arg;
    if (uv_is_closing(h))
        return;
    if (is_conn(h))
        conn_close(h->data);
    else
        uv_close(h, NULL);
}

static void sink_stop(struct sink *s)
{
    if (s->stopping)
        return;
    s->stopping = true;
    uv_walk(s->loop, close_one, NULL);
}

static void on_signal(uv_signal_t *sig, int signum)
{
    (void)signum;
    sink_stop(sig->data);
}

static void on_stdin_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *b)
{
    static char scratch[4096]; /* what stdin holds is dropped: only its end matters */
    (void)h;
    (void)suggested;
    *b = uv_buf_init(scratch, sizeof(scratch));
}

static void on_stdin(uv_stream_t *st, ssize_t n, const uv_buf_t *b)
{
    (void)b;
    if (n < 0)
        sink_stop(st->data);
}

/* ---- start ---------------------------------------------------------------------------- */

static int listen_on(struct sink *s, uv_tcp_t *t, const char *host, const char *name)
{
    struct sockaddr_in addr;
    struct sockaddr_storage bound;
    int len = sizeof(bound);
    int rc = uv_ip4_addr(host, 0, &addr);
    if (!rc)
        rc = uv_tcp_init(s->loop, t);
    t->data = s;
    if (!rc)
        rc = uv_tcp_bind(t, (const struct sockaddr *)&addr, 0);
    if (!rc)
        rc = uv_listen((uv_stream_t *)t, 128, on_connection);
    if (!rc)
        rc = uv_tcp_getsockname(t, (struct sockaddr *)&bound, &len);
    if (rc) {
        fprintf(stderr, "sink: listen on %s: %s\n", host, uv_strerror(rc));
        return -1;
    }
    printf("%s %d\n", name, ntohs(((struct sockaddr_in *)&bound)->sin_port));
    return 0;
}

static void watch_stdin(struct sink *s)
{
    uv_handle_type type = uv_guess_handle(0);
    int rc = -1;
    if (type == UV_NAMED_PIPE) {
        rc = uv_pipe_init(s->loop, &s->in.pipe, 0);
        if (!rc)
            rc = uv_pipe_open(&s->in.pipe, 0);
    } else if (type == UV_TTY) {
        rc = uv_tty_init(s->loop, &s->in.tty, 0, 1);
    }
    if (rc)
        return; /* a file, /dev/null, a socket: not watched */
    ((uv_handle_t *)&s->in)->data = s;
    if (uv_read_start((uv_stream_t *)&s->in.pipe, on_stdin_alloc, on_stdin) == 0)
        s->stdin_watched = true;
}

/* The figures of --hash over the files' lines (a last line without LF counts). A line that
 * a read cuts is gathered in `carry`, as the hash wants a message whole. */
static int hash_files(int argc, char **argv)
{
    static char chunk[1 << 20];
    struct tally t = { 0 };
    struct buf carry = { 0 };
    int rc = 0;
    for (int i = 0; i < argc && rc == 0; i++) {
        int fd = open(argv[i], O_RDONLY | O_CLOEXEC);
        if (fd < 0) {
            fprintf(stderr, "sink: open %s: %s\n", argv[i], strerror(errno));
            rc = 1;
            break;
        }
        carry.len = 0;
        ssize_t n;
        while ((n = read(fd, chunk, sizeof(chunk))) > 0) {
            const char *p = chunk;
            const char *e = chunk + n;
            const char *nl;
            while ((nl = memchr(p, '\n', (size_t)(e - p)))) {
                if (carry.len > 0) {
                    if (sink_buf_add(&carry, p, (size_t)(nl - p)) != 0) {
                        rc = 1;
                        break;
                    }
                    sink_tally_add_now(&t, carry.ptr, carry.len);
                    carry.len = 0;
                } else {
                    sink_tally_add_now(&t, p, (size_t)(nl - p));
                }
                p = nl + 1;
            }
            if (rc == 0 && p < e && sink_buf_add(&carry, p, (size_t)(e - p)) != 0)
                rc = 1;
            if (rc)
                break;
        }
        int err = errno;
        close(fd);
        if (n < 0) {
            fprintf(stderr, "sink: read %s: %s\n", argv[i], strerror(err));
            rc = 1;
        } else if (rc) {
            fprintf(stderr, "sink: %s: a line too long to hold\n", argv[i]);
        } else if (carry.len > 0) {
            sink_tally_add_now(&t, carry.ptr, carry.len);
        }
    }
    sink_buf_release(&carry);
    if (rc == 0)
        printf("lines %" PRIu64 " sum %016" PRIx64 " bytes %" PRIu64 "\n", t.lines, t.sum, t.bytes);
    return rc;
}

static int usage(void)
{
    fprintf(stderr, "usage: sink [--host 127.0.0.1] [--keys message,log,msg,MESSAGE] [--syslog] "
                    "[--fail-every N]\n       sink --hash FILE...\n");
    return 2;
}

static void sink_release(struct sink *s)
{
    sink_msgs_release(&s->m);
    sink_buf_release(&s->joined);
    while (s->uploads) {
        struct upload *u = s->uploads;
        s->uploads = u->next;
        upload_free(u);
    }
}

int main(int argc, char **argv)
{
    static char default_keys[] = "message,log,msg,MESSAGE";
    static struct sink s;
    const char *host = "127.0.0.1";
    bool syslog = false;
    if (argc >= 2 && !strcmp(argv[1], "--hash"))
        return argc < 3 ? usage() : hash_files(argc - 2, argv + 2);
    if (sink_msgs_init(&s.m)) {
        fprintf(stderr, "sink: cannot set up zlib or zstd\n");
        return 1;
    }
    if (sink_msgs_set_keys(&s.m, default_keys))
        return usage();
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--syslog")) {
            syslog = true;
        } else if (i + 1 < argc && !strcmp(a, "--host")) {
            host = argv[++i];
        } else if (i + 1 < argc && !strcmp(a, "--keys")) {
            if (sink_msgs_set_keys(&s.m, argv[++i]))
                return usage();
        } else if (i + 1 < argc && !strcmp(a, "--fail-every")) {
            s.fail_every = strtoull(argv[++i], NULL, 10);
        } else {
            return usage();
        }
    }
    signal(SIGPIPE, SIG_IGN);
    s.loop = uv_default_loop();
    s.loop->data = &s;
    if (listen_on(&s, &s.http, host, "http") ||
        (syslog && listen_on(&s, &s.syslog, host, "syslog")))
        return 1;
    fflush(stdout);
    uv_signal_init(s.loop, &s.sigterm);
    uv_signal_init(s.loop, &s.sigint);
    s.sigterm.data = &s;
    s.sigint.data = &s;
    uv_signal_start(&s.sigterm, on_signal, SIGTERM);
    uv_signal_start(&s.sigint, on_signal, SIGINT);
    watch_stdin(&s);
    uv_run(s.loop, UV_RUN_DEFAULT);
    int rc = uv_loop_close(s.loop);
    sink_release(&s);
    if (rc) {
        fprintf(stderr, "sink: the loop did not close: %s\n", uv_strerror(rc));
        return 1;
    }
    return 0;
}
