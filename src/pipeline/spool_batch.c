/* spool_batch.c - a batch as a spool record's payload, and back (see spool.h).
 *
 *   u8 version (2) | u8 mode | u8 zstd level | u8 0 | u32 routes | u32 sources | u32 events
 *   | str input id | str route × routes
 *   | (u8 has path | str path | str input id | str log_head | str tail | u32 tail_at × 4
 *      | u64 stream id) × sources
 *   | (i64 timestamp | u64 offset | u64 end offset | u32 flags | u32 source | u32 message length
 *      | u32 extra length) × events
 *   | str body: a zstd frame of the NDJSON (mode 1) or of every message and extra (mode 0)
 *
 * Integers are little-endian; str is a u32 length and the bytes. Version 1 records (written
 * before sources had stream ids) have no stream id and still decode, with stream id 0. */
#include "config.h"

#include "logferry/spool.h"

#include <stdlib.h>
#include <string.h>
#include <zstd.h>

#include "logferry/batch.h"
#include "logferry/event.h"

#define FORMAT_VERSION 2
#define MAX_ITEMS (1u << 24) /* sources, routes, events: far above any batch */
#define MAX_BODY  ((size_t)1 << 30)

void lf_spool_codec_release(struct lf_spool_codec *c)
{
    lf_buf_release(&c->out);
    lf_buf_release(&c->text);
    lf_buf_release(&c->body);
    ZSTD_freeCCtx(c->cctx);
    free(c->src);
    free(c->ev);
    *c = (struct lf_spool_codec){ 0 };
}

static enum lf_err put_u(struct lf_buf *o, uint64_t v, size_t n)
{
    unsigned char b[8];
    for (size_t i = 0; i < n; i++)
        b[i] = (unsigned char)(v >> (8 * i));
    return lf_buf_append(o, b, n);
}

static enum lf_err put_str(struct lf_buf *o, const char *p, size_t n)
{
    if (n > UINT32_MAX)
        return LF_ETOOBIG;
    enum lf_err err = put_u(o, n, 4);
    return err ? err : lf_buf_append(o, n > 0 ? p : "", n);
}

/* The index of src in c->src, added if new. */
static enum lf_err source_index(struct lf_spool_codec *c, struct lf_source *src, uint32_t *idx)
{
    for (size_t i = c->n_src; i > 0; i--) { /* the last one is the likeliest */
        if (c->src[i - 1] == src) {
            *idx = (uint32_t)(i - 1);
            return LF_OK;
        }
    }
    if (lf_array_grow(&c->src, &c->cap_src, c->n_src, sizeof(*c->src), 8))
        return LF_ENOMEM;
    c->src[c->n_src] = src;
    *idx = (uint32_t)c->n_src++;
    return LF_OK;
}

static enum lf_err init_buffers(struct lf_spool_codec *c)
{
    if (c->out.max == 0) {
        lf_buf_init(&c->out, LF_SPOOL_MAX_RECORD);
        lf_buf_init(&c->text, MAX_BODY);
        lf_buf_init(&c->body, MAX_BODY);
    }
    if (c->cctx == NULL && (c->cctx = ZSTD_createCCtx()) == NULL)
        return LF_ENOMEM;
    return LF_OK;
}

/* The body of a batch that keeps its events, compressed into c->body. */
static enum lf_err compress_text(struct lf_spool_codec *c, struct lf_batch *b, int level,
                                 struct lf_str *out)
{
    lf_buf_reset(&c->text);
    enum lf_err err = LF_OK;
    for (size_t i = 0; i < lf_batch_count(b) && !err; i++) {
        const struct lf_event *ev = lf_batch_event(b, i);
        err = lf_buf_append_str(&c->text, ev->message);
        if (!err)
            err = lf_buf_append_str(&c->text, ev->extra);
    }
    size_t bound = ZSTD_compressBound(c->text.len);
    lf_buf_reset(&c->body);
    if (!err)
        err = lf_buf_grow(&c->body, bound);
    if (err)
        return err;
    size_t r = ZSTD_CCtx_setParameter(c->cctx, ZSTD_c_compressionLevel, level);
    if (!ZSTD_isError(r))
        r = ZSTD_compress2(c->cctx, c->body.ptr, bound, c->text.ptr, c->text.len);
    if (ZSTD_isError(r))
        return LF_ENOMEM;
    *out = lf_str_make(c->body.ptr, r);
    return LF_OK;
}

enum lf_err lf_spool_encode(struct lf_spool_codec *c, struct lf_batch *b, const char *input_id,
                            const char *const *routes, size_t n_routes, int zstd_level)
{
    enum lf_err err = init_buffers(c);
    if (err)
        return err;
    size_t n = lf_batch_count(b);
    enum lf_batch_mode mode = lf_batch_get_mode(b);
    struct lf_buf *o = &c->out;
    lf_buf_reset(o);
    c->n_src = 0;
    uint32_t idx = 0;
    for (size_t i = 0; i < n && !err; i++)
        err = source_index(c, lf_batch_event(b, i)->source, &idx);
    unsigned char head[4] = { FORMAT_VERSION, mode == LF_BATCH_ENCODE_ON_ADD, (unsigned char)zstd_level,
                              0 };
    if (!err)
        err = lf_buf_append(o, head, sizeof(head));
    if (!err)
        err = put_u(o, n_routes, 4);
    if (!err)
        err = put_u(o, c->n_src, 4);
    if (!err)
        err = put_u(o, n, 4);
    if (!err)
        err = put_str(o, input_id, strlen(input_id));
    for (size_t i = 0; i < n_routes && !err; i++)
        err = put_str(o, routes[i], strlen(routes[i]));
    for (size_t i = 0; i < c->n_src && !err; i++) {
        const struct lf_source *s = c->src[i];
        err = put_u(o, s->path != NULL, 1);
        if (!err)
            err = put_str(o, s->path, s->path != NULL ? strlen(s->path) : 0);
        if (!err)
            err = put_str(o, s->input_id, strlen(s->input_id));
        if (!err)
            err = put_str(o, s->log_head.ptr, s->log_head.len);
        if (!err)
            err = put_str(o, s->tail.ptr, s->tail.len);
        for (size_t k = 0; k < 4 && !err; k++)
            err = put_u(o, s->tail_at[k], 4);
        if (!err)
            err = put_u(o, s->stream_id, 8);
    }
    for (size_t i = 0; i < n && !err; i++) {
        const struct lf_event *ev = lf_batch_event(b, i);
        err = source_index(c, ev->source, &idx);
        if (!err)
            err = put_u(o, (uint64_t)ev->timestamp_ns, 8);
        if (!err)
            err = put_u(o, ev->offset, 8);
        if (!err)
            err = put_u(o, ev->end_offset, 8);
        if (!err)
            err = put_u(o, ev->flags, 4);
        if (!err)
            err = put_u(o, idx, 4);
        if (!err)
            err = put_u(o, ev->message.len, 4);
        if (!err)
            err = put_u(o, ev->extra.len, 4);
    }
    struct lf_str body = { 0 };
    if (!err)
        err = mode == LF_BATCH_ENCODE_ON_ADD ? lf_batch_zstd(b, zstd_level, &body)
                                             : compress_text(c, b, zstd_level, &body);
    if (!err)
        err = put_str(o, body.ptr, body.len);
    return err;
}

/* ---- decoding ---- */

struct reader {
    const unsigned char *p;
    size_t left;
    bool bad;
};

static uint64_t get_u(struct reader *r, size_t n)
{
    if (r->bad || r->left < n) {
        r->bad = true;
        return 0;
    }
    uint64_t v = 0;
    for (size_t i = 0; i < n; i++)
        v |= (uint64_t)r->p[i] << (8 * i);
    r->p += n;
    r->left -= n;
    return v;
}

static struct lf_str get_str(struct reader *r)
{
    uint64_t n = get_u(r, 4);
    if (r->bad || r->left < n) {
        r->bad = true;
        return lf_str_make("", 0);
    }
    struct lf_str s = lf_str_make((const char *)r->p, (size_t)n);
    r->p += n;
    r->left -= (size_t)n;
    return s;
}

void lf_spool_meta_release(struct lf_spool_meta *m)
{
    for (size_t i = 0; i < m->n_sources; i++)
        lf_source_free(m->sources[i]);
    free(m->sources);
    *m = (struct lf_spool_meta){ 0 };
}

static char *cstr(struct lf_str s)
{
    char *c = malloc(s.len + 1);
    if (c != NULL) {
        memcpy(c, s.ptr, s.len);
        c[s.len] = '\0';
    }
    return c;
}

/* A source from its stored parts, as record format version wrote them. */
static enum lf_err read_source(struct reader *r, uint64_t version, struct lf_source **out)
{
    bool has_path = get_u(r, 1) != 0;
    struct lf_str path = get_str(r);
    struct lf_str id = get_str(r);
    struct lf_str head = get_str(r);
    struct lf_str tail = get_str(r);
    size_t at[4];
    for (size_t k = 0; k < 4; k++)
        at[k] = (size_t)get_u(r, 4);
    uint64_t stream_id = version >= 2 ? get_u(r, 8) : 0;
    if (r->bad || at[3] > tail.len)
        return LF_EINVAL;
    char *p = has_path ? cstr(path) : NULL;
    char *i = cstr(id);
    enum lf_err err = (i == NULL || (has_path && p == NULL)) ? LF_ENOMEM
                                                               : lf_source_new(p, i, NULL, NULL,
                                                                               false, out);
    free(p);
    free(i);
    if (err)
        return err;
    struct lf_source *s = *out;
    lf_buf_reset(&s->log_head);
    lf_buf_reset(&s->tail);
    err = lf_buf_append_str(&s->log_head, head);
    if (!err)
        err = lf_buf_append_str(&s->tail, tail);
    memcpy(s->tail_at, at, sizeof(at));
    s->stream_id = stream_id;
    if (err) {
        lf_source_free(s);
        *out = NULL;
    }
    return err;
}

static enum lf_err decompress(struct lf_spool_codec *c, struct lf_str frame)
{
    unsigned long long size = ZSTD_getFrameContentSize(frame.ptr, frame.len);
    if (size == ZSTD_CONTENTSIZE_ERROR || size == ZSTD_CONTENTSIZE_UNKNOWN || size > MAX_BODY)
        return LF_EINVAL;
    lf_buf_reset(&c->body);
    enum lf_err err = lf_buf_grow(&c->body, (size_t)size);
    if (err)
        return err;
    size_t r = ZSTD_decompress(c->body.ptr, (size_t)size, frame.ptr, frame.len);
    if (ZSTD_isError(r) || r != size)
        return LF_EINVAL;
    c->body.len = r;
    return LF_OK;
}

enum lf_err lf_spool_decode(struct lf_spool_codec *c, struct lf_str payload, struct lf_batch *b,
                            struct lf_spool_meta *m)
{
    lf_spool_meta_release(m);
    enum lf_err err = init_buffers(c);
    if (err)
        return err;
    struct reader r = { (const unsigned char *)payload.ptr, payload.len, false };
    uint64_t version = get_u(&r, 1);
    bool encoded = get_u(&r, 1) != 0;
    get_u(&r, 2);
    uint64_t n_routes = get_u(&r, 4);
    uint64_t n_src = get_u(&r, 4);
    uint64_t n = get_u(&r, 4);
    if (r.bad || version < 1 || version > FORMAT_VERSION || n_routes > MAX_ITEMS ||
        n_src > MAX_ITEMS || n > MAX_ITEMS)
        return LF_EINVAL;
    m->input_id = get_str(&r);
    for (uint64_t i = 0; i < n_routes; i++) {
        struct lf_str name = get_str(&r);
        if (m->n_routes < sizeof(m->routes) / sizeof(m->routes[0]))
            m->routes[m->n_routes++] = name;
    }
    if (r.bad)
        return LF_EINVAL;
    m->sources = calloc(n_src ? n_src : 1, sizeof(*m->sources));
    if (m->sources == NULL)
        return LF_ENOMEM;
    for (uint64_t i = 0; i < n_src && !err; i++) {
        err = read_source(&r, version, &m->sources[i]);
        if (!err)
            m->n_sources++;
    }
    if (!err && n > c->cap_ev) {
        struct lf_event *e = realloc(c->ev, n * sizeof(*e));
        if (e == NULL)
            err = LF_ENOMEM;
        else {
            c->ev = e;
            c->cap_ev = n;
        }
    }
    for (uint64_t i = 0; i < n && !err; i++) {
        struct lf_event *ev = &c->ev[i];
        ev->timestamp_ns = (int64_t)get_u(&r, 8);
        ev->offset = get_u(&r, 8);
        ev->end_offset = get_u(&r, 8);
        ev->flags = (unsigned)get_u(&r, 4);
        uint64_t s = get_u(&r, 4);
        ev->message.len = (size_t)get_u(&r, 4);
        ev->extra.len = (size_t)get_u(&r, 4);
        if (r.bad || s >= m->n_sources)
            err = LF_EINVAL;
        else
            ev->source = m->sources[s];
    }
    struct lf_str body = get_str(&r);
    if (!err && (r.bad || r.left != 0))
        err = LF_EINVAL;
    if (!err)
        err = decompress(c, body);
    if (!err && !encoded) { /* the messages and extras, one after the other */
        size_t at = 0;
        for (uint64_t i = 0; i < n && !err; i++) {
            struct lf_event *ev = &c->ev[i];
            if (c->body.len - at < ev->message.len ||
                c->body.len - at - ev->message.len < ev->extra.len) {
                err = LF_EINVAL;
                break;
            }
            ev->message.ptr = c->body.ptr + at;
            at += ev->message.len;
            ev->extra.ptr = c->body.ptr + at;
            at += ev->extra.len;
        }
        if (!err && at != c->body.len)
            err = LF_EINVAL;
    }
    if (!err)
        err = lf_batch_restore(b, encoded ? LF_BATCH_ENCODE_ON_ADD : LF_BATCH_KEEP_EVENTS, c->ev,
                               (size_t)n, lf_buf_str(&c->body));
    if (err)
        lf_spool_meta_release(m);
    return err;
}
