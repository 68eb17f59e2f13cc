/* batch.c - events in one arena, encoded to NDJSON once and compressed once.
 *
 *   lf_batch_add ──copy──► arena (message bytes) + events[] (fixed array of max_events)
 *   lf_batch_ndjson ──► ndjson (lf_buf, encoded on first call, cached until reset)
 *   (LF_BATCH_ENCODE_ON_ADD: lf_batch_add ──encode──► ndjson, and events[] without messages)
 *   lf_batch_zstd ──► zstd (lf_buf, one complete frame from ndjson, cached per level)
 *   lf_batch_gzip ──► gzip (lf_buf, one gzip member from ndjson, cached per level)
 *
 * Everything is sized on first use and kept across lf_batch_reset(), and the ZSTD_CCtx is
 * made once per batch object (as is the zlib deflate state), so a batch reused in steady state
 * allocates nothing. */
#include "config.h"

#include "logferry/batch.h"

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <zlib.h>

#include "logferry/arena.h"
#include "logferry/zframe.h"

#define OUT_MAX ((size_t)SIZE_MAX / 4) /* encodings are bounded by the batch limits */

/* A compressed form of the NDJSON, cached: buf is valid while ok, made at level. */
struct encoded {
    struct lf_buf buf;
    bool ok;
    int level;
};

struct lf_batch {
    struct lf_arena *arena;  /* message bytes */
    struct lf_event *events; /* owned; max_events slots */
    size_t n_events;
    size_t n_dropped; /* of n_events, those with LF_EVENT_DROPPED */
    size_t max_events;
    size_t bytes; /* message bytes held */
    size_t max_bytes;
    struct lf_buf ndjson; /* valid when ndjson_ok */
    bool ndjson_ok;
    struct encoded zstd; /* one frame */
    ZSTD_CCtx *cctx;     /* owned; created on first lf_batch_zstd() */
    struct encoded gzip; /* one gzip member */
    z_stream *zs;        /* owned; deflate state at zs_level, made on first lf_batch_gzip() */
    int zs_level;
    enum lf_batch_mode mode;
    struct lf_ts_cache ts; /* timestamp text shared by events of one millisecond */
};

struct lf_batch *lf_batch_new(size_t max_events, size_t max_bytes)
{
    if (max_events == 0)
        max_events = 1;
    struct lf_batch *b = calloc(1, sizeof(*b));
    if (b == NULL)
        return NULL;
    /* One block holds a full batch: the bytes plus up to 7 bytes of alignment per event. */
    size_t block;
    if (lf_size_mul(max_events, 8, &block) || lf_size_add(block, max_bytes, &block))
        block = max_bytes;
    b->arena = lf_arena_new(block);
    b->events = calloc(max_events, sizeof(*b->events));
    if (b->arena == NULL || b->events == NULL) {
        lf_batch_free(b);
        return NULL;
    }
    b->max_events = max_events;
    b->max_bytes = max_bytes;
    lf_buf_init(&b->ndjson, OUT_MAX);
    lf_buf_init(&b->zstd.buf, OUT_MAX);
    lf_buf_init(&b->gzip.buf, OUT_MAX);
    lf_ts_cache_init(&b->ts);
    return b;
}

void lf_batch_free(struct lf_batch *b)
{
    if (b == NULL)
        return;
    lf_arena_free(b->arena);
    free(b->events);
    lf_buf_release(&b->ndjson);
    lf_buf_release(&b->zstd.buf);
    ZSTD_freeCCtx(b->cctx);
    lf_buf_release(&b->gzip.buf);
    if (b->zs != NULL) {
        deflateEnd(b->zs);
        free(b->zs);
    }
    free(b);
}

void lf_batch_reset(struct lf_batch *b)
{
    lf_arena_reset(b->arena);
    b->n_events = 0;
    b->n_dropped = 0;
    b->bytes = 0;
    lf_buf_reset(&b->ndjson);
    lf_buf_reset(&b->zstd.buf);
    lf_buf_reset(&b->gzip.buf);
    b->ndjson_ok = b->mode == LF_BATCH_ENCODE_ON_ADD;
    b->zstd.ok = false;
    b->gzip.ok = false;
}

enum lf_err lf_batch_set_mode(struct lf_batch *b, enum lf_batch_mode mode)
{
    if (b->n_events > 0)
        return LF_EINVAL;
    b->mode = mode;
    lf_batch_reset(b);
    return LF_OK;
}

enum lf_batch_mode lf_batch_get_mode(const struct lf_batch *b)
{
    return b->mode;
}

enum lf_err lf_batch_restore(struct lf_batch *b,
                             enum lf_batch_mode mode,
                             const struct lf_event *evs,
                             size_t n,
                             struct lf_str ndjson)
{
    if (lf_batch_set_mode(b, mode))
        return LF_EINVAL;
    if (n > b->max_events) {
        struct lf_event *e = realloc(b->events, n * sizeof(*e));
        if (e == NULL)
            return LF_ENOMEM;
        b->events = e;
        b->max_events = n;
    }
    size_t bytes = 0;
    for (size_t i = 0; i < n; i++) {
        struct lf_event *slot = &b->events[i];
        *slot = evs[i];
        if (mode == LF_BATCH_ENCODE_ON_ADD) {
            slot->message = lf_str_make("", 0);
            slot->extra = lf_str_make("", 0);
        } else {
            const struct lf_str m = evs[i].message, x = evs[i].extra;
            char *copy = lf_arena_dup(b->arena, m.len > 0 ? m.ptr : "", m.len);
            char *extra = lf_arena_dup(b->arena, x.len > 0 ? x.ptr : "", x.len);
            if (copy == NULL || extra == NULL)
                return LF_ENOMEM;
            slot->message = lf_str_make(copy, evs[i].message.len);
            slot->extra = lf_str_make(extra, evs[i].extra.len);
        }
        bytes += evs[i].message.len;
        b->n_dropped += (evs[i].flags & LF_EVENT_DROPPED) != 0;
    }
    b->n_events = n;
    b->bytes = mode == LF_BATCH_ENCODE_ON_ADD ? ndjson.len : bytes;
    if (mode == LF_BATCH_ENCODE_ON_ADD) {
        lf_buf_reset(&b->ndjson);
        enum lf_err err = lf_buf_append_str(&b->ndjson, ndjson);
        if (err)
            return err;
        b->ndjson_ok = true;
    }
    return LF_OK;
}

/* ENCODE_ON_ADD: the event goes straight into the NDJSON; only its metadata is kept. */
static enum lf_err add_encoded(struct lf_batch *b, const struct lf_event *ev, size_t bytes)
{
    enum lf_err err = lf_event_encode_cached(&b->ndjson, ev, &b->ts);
    if (err)
        return err;
    struct lf_event *slot = &b->events[b->n_events];
    *slot = *ev;
    slot->message = lf_str_make("", 0);
    slot->extra = lf_str_make("", 0);
    b->n_events++;
    b->n_dropped += (ev->flags & LF_EVENT_DROPPED) != 0;
    b->bytes = bytes;
    b->zstd.ok = false;
    b->gzip.ok = false;
    return LF_OK;
}

bool lf_batch_has_room(const struct lf_batch *b, size_t message_len)
{
    size_t bytes;
    return b->n_events < b->max_events && !lf_size_add(b->bytes, message_len, &bytes) &&
           (b->n_events == 0 || bytes <= b->max_bytes);
}

enum lf_err lf_batch_add(struct lf_batch *b, const struct lf_event *ev)
{
    size_t bytes;
    if (b->n_events == b->max_events)
        return LF_ETOOBIG;
    if (lf_size_add(b->bytes, ev->message.len, &bytes))
        return LF_ETOOBIG;
    if (b->n_events > 0 && bytes > b->max_bytes)
        return LF_ETOOBIG;
    if (b->mode == LF_BATCH_ENCODE_ON_ADD)
        return add_encoded(b, ev, bytes);
    struct lf_event *slot = &b->events[b->n_events];
    *slot = *ev;
    /* The arena hands out 8-aligned memory even for 0 bytes, so ptr is never NULL. */
    char *copy = lf_arena_dup(b->arena, ev->message.ptr, ev->message.len);
    if (copy == NULL)
        return LF_ENOMEM;
    slot->message = lf_str_make(copy, ev->message.len);
    if (ev->extra.len > 0) {
        char *extra = lf_arena_dup(b->arena, ev->extra.ptr, ev->extra.len);
        if (extra == NULL)
            return LF_ENOMEM;
        slot->extra = lf_str_make(extra, ev->extra.len);
    }
    b->n_events++;
    b->n_dropped += (ev->flags & LF_EVENT_DROPPED) != 0;
    b->bytes = bytes;
    b->ndjson_ok = false;
    b->zstd.ok = false;
    b->gzip.ok = false;
    return LF_OK;
}

size_t lf_batch_count(const struct lf_batch *b)
{
    return b->n_events;
}

size_t lf_batch_dropped(const struct lf_batch *b)
{
    return b->n_dropped;
}

size_t lf_batch_bytes(const struct lf_batch *b)
{
    return b->bytes;
}

const struct lf_event *lf_batch_event(const struct lf_batch *b, size_t i)
{
    return &b->events[i];
}

enum lf_err lf_batch_ndjson(struct lf_batch *b, struct lf_str *out)
{
    if (!b->ndjson_ok) {
        lf_buf_reset(&b->ndjson);
        for (size_t i = 0; i < b->n_events; i++) {
            enum lf_err err = lf_event_encode_cached(&b->ndjson, &b->events[i], &b->ts);
            if (err) {
                lf_buf_reset(&b->ndjson);
                return err;
            }
        }
        b->ndjson_ok = true;
    }
    *out = lf_buf_str(&b->ndjson);
    return LF_OK;
}

typedef enum lf_err compress_fn(struct lf_batch *b, int level, struct lf_str src);

/* e's form of b's NDJSON at level, made by compress unless cached. */
static enum lf_err
encoded(struct lf_batch *b, struct encoded *e, compress_fn *compress, int level, struct lf_str *out)
{
    if (!e->ok || e->level != level) {
        struct lf_str nd;
        enum lf_err err = lf_batch_ndjson(b, &nd);
        if (!err)
            err = compress(b, level, nd);
        if (err) {
            e->ok = false;
            return err;
        }
        e->ok = true;
        e->level = level;
    }
    *out = lf_buf_str(&e->buf);
    return LF_OK;
}

static enum lf_err compress_zstd(struct lf_batch *b, int level, struct lf_str src)
{
    return lf_zstd_frame(&b->cctx, level, src, &b->zstd.buf);
}

enum lf_err lf_batch_zstd(struct lf_batch *b, int level, struct lf_str *out)
{
    return encoded(b, &b->zstd, compress_zstd, level, out);
}

/* Makes b->zs a deflate state writing gzip members at level, reusing the one made before. */
static enum lf_err gzip_state(struct lf_batch *b, int level)
{
    if (b->zs != NULL && b->zs_level == level)
        return deflateReset(b->zs) == Z_OK ? LF_OK : LF_EINVAL;
    if (b->zs != NULL) {
        deflateEnd(b->zs);
    } else {
        b->zs = calloc(1, sizeof(*b->zs));
        if (b->zs == NULL)
            return LF_ENOMEM;
    }
    /* windowBits 15 + 16: a gzip header and trailer around the deflate stream. */
    int r = deflateInit2(b->zs, level, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY);
    if (r != Z_OK) {
        free(b->zs);
        b->zs = NULL;
        return r == Z_MEM_ERROR ? LF_ENOMEM : LF_EINVAL;
    }
    b->zs_level = level;
    return LF_OK;
}

/* Compresses src into b->gzip.buf as one gzip member. */
static enum lf_err compress_gzip(struct lf_batch *b, int level, struct lf_str src)
{
    if (src.len > UINT_MAX)
        return LF_ETOOBIG; /* zlib counts in uInt; batches are far smaller */
    enum lf_err err = gzip_state(b, level);
    if (err)
        return err;
    uLong bound = deflateBound(b->zs, (uLong)src.len);
    lf_buf_reset(&b->gzip.buf);
    err = lf_buf_grow(&b->gzip.buf, bound);
    if (err)
        return err;
    b->zs->next_in = (Bytef *)(uintptr_t)src.ptr; /* zlib does not write through next_in */
    b->zs->avail_in = (uInt)src.len;
    b->zs->next_out = (Bytef *)b->gzip.buf.ptr;
    b->zs->avail_out = (uInt)bound;
    if (deflate(b->zs, Z_FINISH) != Z_STREAM_END)
        return LF_EINVAL;
    b->gzip.buf.len = bound - b->zs->avail_out;
    return LF_OK;
}

enum lf_err lf_batch_gzip(struct lf_batch *b, int level, struct lf_str *out)
{
    return encoded(b, &b->gzip, compress_gzip, level, out);
}
