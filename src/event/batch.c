/* batch.c - events in one arena, encoded to NDJSON once and compressed once.
 *
 *   lf_batch_add ──copy──► text (messages, each and '\n') + events[] (max_events slots)
 *                   (a dropped event's message and stages' extras: the arena)
 *                └──────► runs[] (one per run of events of one source: what answers need)
 *   lf_batch_ndjson ──► ndjson (lf_buf, encoded on first call, cached until reset)
 *   (LF_BATCH_ENCODE_ON_ADD: lf_batch_add ──encode──► ndjson, and events[] without messages)
 *   lf_batch_zstd ──► zstd (lf_buf, one complete frame from ndjson, cached per level)
 *   lf_batch_gzip ──► gzip (lf_buf, one gzip member from ndjson, cached per level)
 *
 * The text is laid out as the text format sends it, so file and console outputs write it as
 * is (lf_batch_text()): the thread that sends a batch another thread filled reads its bytes
 * once, in the kernel's copy, and never the event slots (nor, with lf_batch_runs(), for the
 * answers). It is one block of max_bytes + max_events, the most a full batch holds, so it
 * never moves while events point into it; only an oversize first event makes it larger,
 * until the next reset.
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
#include <string.h>
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
    struct lf_arena *arena; /* dropped events' messages, extras */
    char *text;             /* owned; KEEP_EVENTS: text_len bytes used of text_cap */
    size_t text_len;
    size_t text_cap;
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
    struct lf_ts_cache ts;     /* timestamp text shared by events of one millisecond */
    struct lf_batch_run *runs; /* owned; n_runs used of cap_runs, kept across resets */
    size_t n_runs;
    size_t cap_runs;
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
    free(b->text);
    free(b->events);
    free(b->runs);
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

/* The text of a full batch: max_bytes of messages and a '\n' each. */
static size_t text_size(const struct lf_batch *b)
{
    size_t n;
    return lf_size_add(b->max_bytes, b->max_events, &n) ? b->max_bytes : n;
}

void lf_batch_reset(struct lf_batch *b)
{
    lf_arena_reset(b->arena);
    b->text_len = 0;
    if (b->text_cap > text_size(b)) { /* an oversize event's: not kept */
        free(b->text);
        b->text = NULL;
        b->text_cap = 0;
    }
    b->n_events = 0;
    b->n_dropped = 0;
    b->n_runs = 0;
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

/* Makes room for n more bytes of text. The block moves only while no event points into it
 * (an empty text); past the first event a batch's limits keep the text within its block,
 * so LF_ETOOBIG there is a full batch. */
static enum lf_err text_grow(struct lf_batch *b, size_t n)
{
    if (b->text_len > 0)
        return LF_ETOOBIG;
    size_t cap = text_size(b);
    if (cap < n)
        cap = n;
    char *t = malloc(cap);
    if (t == NULL)
        return LF_ENOMEM;
    free(b->text);
    b->text = t;
    b->text_cap = cap;
    return LF_OK;
}

/* Inlined: the per-event check; text_grow() only for an empty text. */
static inline __attribute__((always_inline)) enum lf_err text_room(struct lf_batch *b, size_t n)
{
    return b->text_cap - b->text_len >= n ? LF_OK : text_grow(b, n);
}

/* Copies m and a '\n' to the text (text_room() made room); returns the copy of m. */
static inline __attribute__((always_inline)) struct lf_str text_put(struct lf_batch *b,
                                                                    struct lf_str m)
{
    char *at = b->text + b->text_len;
    if (m.len > 0)
        memcpy(at, m.ptr, m.len);
    at[m.len] = '\n';
    b->text_len += m.len + 1;
    return lf_str_make(at, m.len);
}

/* The copy of ev's message a slot keeps: in the text, or (dropped: never sent) the arena. */
static inline __attribute__((always_inline)) enum lf_err
keep_message(struct lf_batch *b, const struct lf_event *ev, struct lf_str *out)
{
    const struct lf_str m = ev->message;
    if (!(ev->flags & LF_EVENT_DROPPED)) {
        *out = text_put(b, m);
        return LF_OK;
    }
    /* The arena hands out 8-aligned memory even for 0 bytes, so ptr is never NULL. */
    char *copy = lf_arena_dup(b->arena, m.len > 0 ? m.ptr : "", m.len);
    if (copy == NULL)
        return LF_ENOMEM;
    *out = lf_str_make(copy, m.len);
    return LF_OK;
}

enum lf_err lf_batch_text(const struct lf_batch *b, struct lf_str *out)
{
    if (b->mode != LF_BATCH_KEEP_EVENTS)
        return LF_EINVAL;
    *out = lf_str_make(b->text_len > 0 ? b->text : "", b->text_len);
    return LF_OK;
}

/* The run ev goes into: the last, or (ev of another source) a new one past it, counted by
 * run_note(); NULL when out of memory. Taken before anything that may fail, so a failed add
 * leaves no run behind. */
static inline __attribute__((always_inline)) struct lf_batch_run *run_for(struct lf_batch *b,
                                                                          const struct lf_event *ev)
{
    if (b->n_runs > 0 && b->runs[b->n_runs - 1].source == ev->source)
        return &b->runs[b->n_runs - 1];
    if (lf_array_grow(&b->runs, &b->cap_runs, b->n_runs, sizeof(*b->runs), 16))
        return NULL;
    return &b->runs[b->n_runs];
}

/* Counts ev, just added, in r (run_for()'s). */
static inline __attribute__((always_inline)) void
run_note(struct lf_batch *b, struct lf_batch_run *r, const struct lf_event *ev)
{
    if (r == &b->runs[b->n_runs]) { /* a new run */
        b->n_runs++;
        *r = (struct lf_batch_run){ .source = ev->source,
                                    .first = ev->offset,
                                    .end = ev->end_offset };
    }
    r->events++;
    if (ev->offset < r->first)
        r->first = ev->offset;
    if (ev->end_offset > r->end)
        r->end = ev->end_offset;
}

const struct lf_batch_run *lf_batch_runs(const struct lf_batch *b, size_t *n)
{
    *n = b->n_runs;
    return b->runs;
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
    size_t text = 0;
    for (size_t i = 0; i < n && mode == LF_BATCH_KEEP_EVENTS; i++) {
        if ((evs[i].flags & LF_EVENT_DROPPED) == 0 &&
            lf_size_add(text, evs[i].message.len + 1, &text))
            return LF_ENOMEM;
    }
    if (text_room(b, text))
        return LF_ENOMEM;
    for (size_t i = 0; i < n; i++) {
        struct lf_batch_run *run = run_for(b, &evs[i]);
        if (run == NULL)
            return LF_ENOMEM;
        run_note(b, run, &evs[i]);
        struct lf_event *slot = &b->events[i];
        *slot = evs[i];
        if (mode == LF_BATCH_ENCODE_ON_ADD) {
            slot->message = lf_str_make("", 0);
            slot->extra = lf_str_make("", 0);
        } else {
            const struct lf_str x = evs[i].extra;
            char *extra = lf_arena_dup(b->arena, x.len > 0 ? x.ptr : "", x.len);
            if (extra == NULL || keep_message(b, &evs[i], &slot->message))
                return LF_ENOMEM;
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
    struct lf_batch_run *run = run_for(b, ev);
    if (run == NULL)
        return LF_ENOMEM;
    enum lf_err err = lf_event_encode_cached(&b->ndjson, ev, &b->ts);
    if (err)
        return err;
    run_note(b, run, ev);
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
    bool dropped = (ev->flags & LF_EVENT_DROPPED) != 0;
    enum lf_err err = dropped ? LF_OK : text_room(b, ev->message.len + 1);
    if (err)
        return err;
    struct lf_batch_run *run = run_for(b, ev);
    if (run == NULL)
        return LF_ENOMEM;
    struct lf_str extra = ev->extra;
    if (extra.len > 0) {
        char *copy = lf_arena_dup(b->arena, extra.ptr, extra.len);
        if (copy == NULL)
            return LF_ENOMEM;
        extra = lf_str_make(copy, extra.len);
    }
    struct lf_str message;
    if (keep_message(b, ev, &message)) /* last: nothing after it fails, so no text is left */
        return LF_ENOMEM;              /* for an event not added */
    struct lf_event *slot = &b->events[b->n_events];
    *slot = *ev;
    slot->message = message;
    slot->extra = extra;
    run_note(b, run, ev);
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
