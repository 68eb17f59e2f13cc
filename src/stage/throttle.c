/* throttle.c - the throttle stage: a token bucket per key; events over the key's rate are
 * dropped (acknowledged, never sent, counted as throttled).
 *
 *   throttle: {rate: 1000/s, burst: 5000, key: "%{kubernetes.pod.name}", max_keys: 10000}
 *
 * Arithmetic, exact in integers: a rate of N events per P ms (P = 1000, 60000, 3600000)
 * gives a bucket N units per elapsed ms, an event costs P units, and a full bucket holds
 * burst * P. So over any stretch of T ms a key keeps at most burst + floor(T * N / P)
 * events, and a bucket refills only as the clock moves (now_ms, the monotonic time the
 * chain gives process()).
 *
 * State is per input, not per source: the buckets live in the spec, which every chain of
 * the input shares, so one pod's files (or the reader threads of --once) draw on one
 * bucket. A mutex guards the table; it is taken once per event and held for a lookup in a
 * hash table and a few additions (docs/benchmarks.md has what it costs). The table holds at
 * most max_keys buckets: past that the least recently used one is evicted and its key, if
 * it comes back, starts with a full bucket. Buckets, keys and the table grow while new keys
 * arrive and are reused after, so the steady state allocates nothing. A reload keeps an
 * unchanged input's spec, and so its buckets; a changed input gets a new spec, with fresh
 * (full) buckets. */
#include "config.h"

#include <stdlib.h>
#include <string.h>
#include <uv.h>

#include "stage_int.h"

#define NONE UINT32_MAX /* no bucket: the end of a hash chain or of the LRU list */

struct bucket {
    uint64_t hash;
    uint64_t units;  /* tokens, in 1/P of an event */
    int64_t last_ms; /* when units were last brought up to date */
    uint32_t next;   /* the next bucket in its hash chain */
    uint32_t newer;  /* LRU neighbours */
    uint32_t older;
    char *key; /* owned; key_cap bytes, key_len used (reused on eviction) */
    size_t key_len;
    size_t key_cap;
};

/* The input's buckets, shared by its chains. */
struct buckets {
    uv_mutex_t mu;
    struct bucket *v; /* owned; n in use, cap allocated, at most max_keys */
    size_t n;
    size_t cap;
    uint32_t *heads; /* owned; first bucket of each chain, n_heads (a power of two) */
    size_t n_heads;
    uint32_t newest; /* the LRU list's ends */
    uint32_t oldest;
};

struct throttle_spec {
    struct lf_stage_head head;
    size_t burst;    /* events a full bucket holds */
    size_t max_keys; /* buckets at most */
    enum lf_throttle_action action;
    uint64_t per_unit; /* N: units added per ms */
    uint64_t cost;     /* P: units an event takes */
    uint64_t full;     /* burst * P */
    struct lf_tmpl key;
    struct buckets *b; /* owned; mutable under b->mu though the spec is shared */
};

struct throttle_state {
    struct lf_stage_head head;
    struct lf_buf scratch; /* the rendered key */
};

static enum lf_err heads_resize(struct buckets *b, size_t n_heads)
{
    uint32_t *heads = malloc(n_heads * sizeof(*heads));
    if (heads == NULL)
        return LF_ENOMEM;
    for (size_t i = 0; i < n_heads; i++)
        heads[i] = NONE;
    for (size_t i = 0; i < b->n; i++) {
        size_t at = b->v[i].hash & (n_heads - 1);
        b->v[i].next = heads[at];
        heads[at] = (uint32_t)i;
    }
    free(b->heads);
    b->heads = heads;
    b->n_heads = n_heads;
    return LF_OK;
}

static void release(void *spec)
{
    struct throttle_spec *s = spec;
    lf_tmpl_release(&s->key);
    if (s->b == NULL)
        return;
    for (size_t i = 0; i < s->b->n; i++)
        free(s->b->v[i].key);
    free(s->b->v);
    free(s->b->heads);
    uv_mutex_destroy(&s->b->mu);
    free(s->b);
}

static enum lf_err build(void *spec, const struct lf_parser_conf *pc, struct lf_errbuf *eb)
{
    struct throttle_spec *s = spec;
    if (s->action == LF_THROTTLE_SAMPLE)
        return lf_fail(eb, LF_ECONFIG,
                       "throttle: action sample is not supported: drop is the one action (to "
                       "keep 1 in N of a chatty key, put a sample stage before the throttle)");
    uint64_t per_ms = 0;
    if (!lf_parse_rate(pc->u.throttle.rate, &s->per_unit, &per_ms))
        return lf_fail(eb, LF_ECONFIG, "throttle: rate \"%s\": expected N/s, N/m or N/h",
                       pc->u.throttle.rate);
    s->cost = per_ms;
    if (s->burst == 0) /* the rate per second, rounded up, at least 1 */
        s->burst = (size_t)((s->per_unit * 1000 + per_ms - 1) / per_ms);
    s->full = (uint64_t)s->burst * s->cost;
    enum lf_err err = lf_stage__key_compile(
        "throttle", pc->u.throttle.key != NULL ? pc->u.throttle.key : "", &s->key, eb);
    if (err)
        return err;
    s->b = calloc(1, sizeof(*s->b));
    if (s->b == NULL)
        return LF_ENOMEM;
    if (uv_mutex_init(&s->b->mu) != 0) {
        free(s->b);
        s->b = NULL;
        return LF_ENOMEM;
    }
    s->b->newest = NONE;
    s->b->oldest = NONE;
    return heads_resize(s->b, 16);
}

#define S struct throttle_spec
static const struct lf_stage_opt opts[] = {
    LF_STAGE_VALUE("burst", S, burst, u.throttle.burst),
    LF_STAGE_VALUE("max_keys", S, max_keys, u.throttle.max_keys),
    LF_STAGE_VALUE("action", S, action, u.throttle.action),
    LF_STAGE_OPT_END,
};
#undef S
static const struct lf_stage_slot slots[] = {
    LF_STAGE_BUF(struct throttle_state, scratch),
    LF_STAGE_SLOT_END,
};
static const struct lf_stage_table table = {
    .name = "throttle",
    .opts = opts,
    .spec_size = sizeof(struct throttle_spec),
    .build = build,
    .release = release,
    .state_size = sizeof(struct throttle_state),
    .slots = slots,
};

/* ---- the LRU list and the hash chains; all under b->mu ---- */

static void lru_unlink(struct buckets *b, uint32_t i)
{
    struct bucket *e = &b->v[i];
    if (e->newer != NONE)
        b->v[e->newer].older = e->older;
    else
        b->newest = e->older;
    if (e->older != NONE)
        b->v[e->older].newer = e->newer;
    else
        b->oldest = e->newer;
}

static void lru_push(struct buckets *b, uint32_t i)
{
    struct bucket *e = &b->v[i];
    e->newer = NONE;
    e->older = b->newest;
    if (b->newest != NONE)
        b->v[b->newest].newer = i;
    b->newest = i;
    if (b->oldest == NONE)
        b->oldest = i;
}

static void chain_unlink(struct buckets *b, uint32_t i)
{
    uint32_t *at = &b->heads[b->v[i].hash & (b->n_heads - 1)];
    while (*at != i)
        at = &b->v[*at].next;
    *at = b->v[i].next;
}

/* Makes room for len key bytes in e; false (e unchanged) on LF_ENOMEM. */
static bool key_room(struct bucket *e, size_t len)
{
    if (e->key_cap >= len)
        return true;
    size_t cap = len > 32 ? len : 32;
    char *p = realloc(e->key, cap);
    if (p == NULL)
        return false;
    e->key = p;
    e->key_cap = cap;
    return true;
}

/* A full bucket for key, not in the table yet: a new one while there are fewer than
 * max_keys, else the least recently used one, evicted. NONE on LF_ENOMEM (the table then
 * is as it was). */
static uint32_t take_bucket(const struct throttle_spec *s, uint64_t hash, struct lf_str key)
{
    struct buckets *b = s->b;
    bool grow = b->n < s->max_keys;
    if (grow && b->n == b->cap) {
        size_t cap = b->cap;
        if (lf_array_grow(&b->v, &cap, b->n, sizeof(*b->v), 64))
            return NONE;
        b->cap = cap;
    }
    if (grow && b->n + 1 > b->n_heads / 4 * 3 && heads_resize(b, b->n_heads * 2))
        return NONE;
    uint32_t i = grow ? (uint32_t)b->n : b->oldest;
    struct bucket *e = &b->v[i];
    if (grow)
        *e = (struct bucket){ .key = NULL };
    if (!key_room(e, key.len))
        return NONE;
    if (grow) {
        b->n++;
    } else {
        lru_unlink(b, i);
        chain_unlink(b, i);
    }
    if (key.len > 0)
        memcpy(e->key, key.ptr, key.len);
    e->key_len = key.len;
    e->hash = hash;
    e->units = s->full;
    e->next = b->heads[hash & (b->n_heads - 1)];
    b->heads[hash & (b->n_heads - 1)] = i;
    lru_push(b, i);
    return i;
}

static uint32_t find_bucket(const struct buckets *b, uint64_t hash, struct lf_str key)
{
    for (uint32_t i = b->heads[hash & (b->n_heads - 1)]; i != NONE; i = b->v[i].next) {
        const struct bucket *e = &b->v[i];
        if (e->hash == hash && e->key_len == key.len &&
            (key.len == 0 || memcmp(e->key, key.ptr, key.len) == 0))
            return i;
    }
    return NONE;
}

/* Whether the key's bucket gives a token at now_ms (takes it). Under b->mu. Without memory
 * for a new key's bucket, yes: a throttle never drops an event for want of memory. */
static bool take_token(const struct throttle_spec *s, struct lf_str key, int64_t now_ms)
{
    struct buckets *b = s->b;
    uint64_t hash = lf_stage__key_hash(key);
    uint32_t i = find_bucket(b, hash, key);
    if (i == NONE) {
        i = take_bucket(s, hash, key);
        if (i == NONE)
            return true;
        b->v[i].last_ms = now_ms;
    } else if (b->newest != i) {
        lru_unlink(b, i);
        lru_push(b, i);
    }
    struct bucket *e = &b->v[i];
    /* Readers on several threads pass times a little out of order: time never runs back. */
    if (now_ms > e->last_ms) {
        uint64_t ms = (uint64_t)(now_ms - e->last_ms);
        uint64_t room = s->full - e->units;
        e->units = ms > room / s->per_unit ? s->full : e->units + ms * s->per_unit;
        e->last_ms = now_ms;
    }
    if (e->units < s->cost)
        return false;
    e->units -= s->cost;
    return true;
}

static enum lf_err process(const void *spec,
                           void *state,
                           const struct lf_event *ev,
                           int64_t now_ms,
                           const struct lf_stage_out *out)
{
    const struct throttle_spec *s = spec;
    struct throttle_state *st = state;
    struct lf_str key;
    enum lf_err err = lf_stage__key_render(&s->key, ev, &st->scratch, &key);
    if (err)
        return err;
    uv_mutex_lock(&s->b->mu);
    bool keep = take_token(s, key, now_ms);
    uv_mutex_unlock(&s->b->mu);
    if (keep)
        return out->emit(out->arg, ev);
    return lf_stage__emit_dropped(ev, LF_EVENT_THROTTLED, out);
}

const struct lf_stage_ops lf_stage_throttle = {
    .kind = LF_PARSER_THROTTLE,
    LF_STAGE_TABLE_OPS(table),
    .process = process,
};
