/* cache.c - the pods (and namespaces) of this node, as the watcher last saw them.
 *
 * Written by the watcher thread only (lf_kube_cache_put_pod() and the rest of the writer
 * side), read by whichever thread runs a container stage (lf_kube_cache_lookup()). One
 * mutex guards the two tables; a reader takes a reference to the record it found, so the
 * watcher may replace or drop it at any time: the record is freed by the last reference.
 * gen moves whenever what a lookup would find changes, so a reader checks with one atomic
 * load, per event, that the members it rendered still hold.
 *
 * A node runs at most a few hundred pods (110 by default): the tables are arrays searched
 * in order. A lookup happens once per file and again only when gen moves; a watch event
 * costs one pass. An update that changes nothing an event carries (most MODIFIED events:
 * status, conditions, resourceVersion) keeps the old record and leaves gen alone. */
#include "config.h"

#include <stdlib.h>
#include <string.h>
#include <uv.h>

#include "logferry/kube.h"

struct pod_slot {
    struct lf_kube_pod *p; /* a reference the cache holds */
    bool listed;           /* named by the LIST in progress */
};

struct ns_slot {
    struct lf_kube_ns *ns;
    bool listed;
};

struct lf_kube_cache {
    uv_mutex_t mu;
    uv_cond_t synced_cond;   /* signalled when synced becomes true */
    atomic_uint_fast64_t gen;
    uint64_t grace_ms;       /* under mu */
    struct pod_slot *pods;   /* under mu */
    size_t n_pods, cap_pods;
    struct ns_slot *nss;     /* under mu */
    size_t n_nss, cap_nss;
    uint64_t bytes;          /* under mu: the records' sizes */
    bool synced;             /* under mu */
    atomic_uint_fast64_t misses;
    atomic_uint_fast64_t lists;
    atomic_uint_fast64_t watch_events;
    atomic_uint_fast64_t errors;
};

static _Atomic(struct lf_kube_cache *) current_cache;

enum lf_err lf_kube_cache_new(uint64_t grace_ms, struct lf_kube_cache **out)
{
    struct lf_kube_cache *c = calloc(1, sizeof(*c));
    if (c == NULL)
        return LF_ENOMEM;
    if (uv_mutex_init(&c->mu) != 0) {
        free(c);
        return LF_ENOMEM;
    }
    if (uv_cond_init(&c->synced_cond) != 0) {
        uv_mutex_destroy(&c->mu);
        free(c);
        return LF_ENOMEM;
    }
    atomic_init(&c->gen, 1);
    c->grace_ms = grace_ms;
    *out = c;
    return LF_OK;
}

static void pod_unref(struct lf_kube_pod *p)
{
    if (p != NULL && atomic_fetch_sub(&p->refs, 1) == 1)
        lf_kube_pod_free(p);
}

static void ns_unref(struct lf_kube_ns *ns)
{
    if (ns != NULL && atomic_fetch_sub(&ns->refs, 1) == 1)
        lf_kube_ns_free(ns);
}

void lf_kube_cache_free(struct lf_kube_cache *c)
{
    if (c == NULL)
        return;
    struct lf_kube_cache *expected = c;
    atomic_compare_exchange_strong(&current_cache, &expected, NULL);
    for (size_t i = 0; i < c->n_pods; i++)
        pod_unref(c->pods[i].p);
    for (size_t i = 0; i < c->n_nss; i++)
        ns_unref(c->nss[i].ns);
    free(c->pods);
    free(c->nss);
    uv_cond_destroy(&c->synced_cond);
    uv_mutex_destroy(&c->mu);
    free(c);
}

void lf_kube_cache_set_grace(struct lf_kube_cache *c, uint64_t grace_ms)
{
    uv_mutex_lock(&c->mu);
    c->grace_ms = grace_ms;
    uv_mutex_unlock(&c->mu);
}

void lf_kube_cache_set_current(struct lf_kube_cache *c)
{
    atomic_store_explicit(&current_cache, c, memory_order_release);
}

struct lf_kube_cache *lf_kube_cache_current(void)
{
    return atomic_load_explicit(&current_cache, memory_order_acquire);
}

uint64_t lf_kube_cache_gen(const struct lf_kube_cache *c)
{
    return atomic_load_explicit(&c->gen, memory_order_acquire);
}

static void bump(struct lf_kube_cache *c)
{
    atomic_fetch_add_explicit(&c->gen, 1, memory_order_release);
}

static bool str_is(const char *s, struct lf_str want)
{
    return strlen(s) == want.len && memcmp(s, want.ptr, want.len) == 0;
}

/* The slot of ns/name: a live pod before a deleted one (a StatefulSet's pod comes back
 * under its name with a new uid), the most recently deleted among those. Under mu. */
static struct pod_slot *find_by_name(struct lf_kube_cache *c, struct lf_str ns, struct lf_str name)
{
    struct pod_slot *best = NULL;
    for (size_t i = 0; i < c->n_pods; i++) {
        struct lf_kube_pod *p = c->pods[i].p;
        if (!str_is(p->name, name) || !str_is(p->ns, ns))
            continue;
        if (p->deleted_ms == 0)
            return &c->pods[i];
        if (best == NULL || p->deleted_ms > best->p->deleted_ms)
            best = &c->pods[i];
    }
    return best;
}

static struct pod_slot *find_by_uid(struct lf_kube_cache *c, const char *uid)
{
    for (size_t i = 0; i < c->n_pods; i++) {
        if (strcmp(c->pods[i].p->uid, uid) == 0)
            return &c->pods[i];
    }
    return NULL;
}

static struct ns_slot *find_ns(struct lf_kube_cache *c, struct lf_str name)
{
    for (size_t i = 0; i < c->n_nss; i++) {
        if (str_is(c->nss[i].ns->name, name))
            return &c->nss[i];
    }
    return NULL;
}

void lf_kube_cache_lookup(struct lf_kube_cache *c, struct lf_str ns, struct lf_str name,
                          struct lf_kube_view *out)
{
    uv_mutex_lock(&c->mu);
    struct pod_slot *ps = find_by_name(c, ns, name);
    struct ns_slot *nss = find_ns(c, ns);
    out->pod = ps != NULL ? ps->p : NULL;
    out->ns = nss != NULL ? nss->ns : NULL;
    if (out->pod != NULL)
        atomic_fetch_add(&out->pod->refs, 1);
    if (out->ns != NULL)
        atomic_fetch_add(&out->ns->refs, 1);
    uv_mutex_unlock(&c->mu);
}

void lf_kube_view_release(struct lf_kube_view *v)
{
    pod_unref(v->pod);
    ns_unref(v->ns);
    v->pod = NULL;
    v->ns = NULL;
}

bool lf_kube_cache_awaits(struct lf_kube_cache *c, struct lf_str ns, struct lf_str name)
{
    uv_mutex_lock(&c->mu);
    bool awaits = c->synced && find_by_name(c, ns, name) == NULL;
    uv_mutex_unlock(&c->mu);
    return awaits;
}

bool lf_kube_cache_wait_synced(struct lf_kube_cache *c, uint64_t timeout_ms)
{
    uint64_t deadline = uv_hrtime() + timeout_ms * 1000000u;
    uv_mutex_lock(&c->mu);
    while (!c->synced) {
        uint64_t now = uv_hrtime();
        if (now >= deadline ||
            uv_cond_timedwait(&c->synced_cond, &c->mu, deadline - now) == UV_ETIMEDOUT)
            break;
    }
    bool synced = c->synced;
    uv_mutex_unlock(&c->mu);
    return synced;
}

void lf_kube_cache_count_miss(struct lf_kube_cache *c)
{
    atomic_fetch_add(&c->misses, 1);
}

/* ---- the writer side (the watcher thread) ---- */

void lf_kube_cache_list_begin(struct lf_kube_cache *c)
{
    uv_mutex_lock(&c->mu);
    for (size_t i = 0; i < c->n_pods; i++)
        c->pods[i].listed = false;
    uv_mutex_unlock(&c->mu);
}

static bool same_pod(const struct lf_kube_pod *a, const struct lf_kube_pod *b)
{
    if (a->members.len != b->members.len ||
        memcmp(a->members.ptr, b->members.ptr, a->members.len) != 0 ||
        a->n_containers != b->n_containers)
        return false;
    for (size_t i = 0; i < a->n_containers; i++) {
        if (strcmp(a->containers[i].name, b->containers[i].name) != 0 ||
            strcmp(a->containers[i].image_json, b->containers[i].image_json) != 0)
            return false;
    }
    return true;
}

void lf_kube_cache_put_pod(struct lf_kube_cache *c, struct lf_kube_pod *p)
{
    p->deleted_ms = 0;
    uv_mutex_lock(&c->mu);
    struct pod_slot *s = find_by_uid(c, p->uid);
    if (s != NULL) {
        s->listed = true;
        if (s->p->deleted_ms == 0 && same_pod(s->p, p)) {
            uv_mutex_unlock(&c->mu);
            pod_unref(p); /* nothing an event carries changed */
            return;
        }
        struct lf_kube_pod *old = s->p;
        c->bytes = c->bytes - old->bytes + p->bytes;
        s->p = p;
        bump(c);
        uv_mutex_unlock(&c->mu);
        pod_unref(old);
        return;
    }
    if (lf_array_grow(&c->pods, &c->cap_pods, c->n_pods, sizeof(*c->pods), 16)) {
        uv_mutex_unlock(&c->mu);
        pod_unref(p); /* out of memory: its files ship without metadata */
        return;
    }
    c->pods[c->n_pods++] = (struct pod_slot){ p, true };
    c->bytes += p->bytes;
    bump(c);
    uv_mutex_unlock(&c->mu);
}

void lf_kube_cache_delete_pod(struct lf_kube_cache *c, const char *uid, int64_t now_ms)
{
    uv_mutex_lock(&c->mu);
    struct pod_slot *s = find_by_uid(c, uid);
    if (s != NULL && s->p->deleted_ms == 0)
        s->p->deleted_ms = now_ms > 0 ? now_ms : 1; /* still found until the sweep */
    uv_mutex_unlock(&c->mu);
}

void lf_kube_cache_list_end(struct lf_kube_cache *c, int64_t now_ms)
{
    uv_mutex_lock(&c->mu);
    for (size_t i = 0; i < c->n_pods; i++) {
        struct lf_kube_pod *p = c->pods[i].p;
        if (!c->pods[i].listed && p->deleted_ms == 0)
            p->deleted_ms = now_ms > 0 ? now_ms : 1; /* gone while the watch was down */
    }
    uv_mutex_unlock(&c->mu);
}

void lf_kube_cache_sweep(struct lf_kube_cache *c, int64_t now_ms)
{
    struct lf_kube_pod *gone[32];
    size_t n_gone = 0;
    uv_mutex_lock(&c->mu);
    size_t k = 0;
    for (size_t i = 0; i < c->n_pods; i++) {
        struct lf_kube_pod *p = c->pods[i].p;
        if (p->deleted_ms != 0 && now_ms - p->deleted_ms >= (int64_t)c->grace_ms &&
            n_gone < sizeof(gone) / sizeof(gone[0])) {
            gone[n_gone++] = p; /* the rest go at the next sweep */
            c->bytes -= p->bytes;
            continue;
        }
        c->pods[k++] = c->pods[i];
    }
    c->n_pods = k;
    if (n_gone > 0)
        bump(c);
    uv_mutex_unlock(&c->mu);
    for (size_t i = 0; i < n_gone; i++)
        pod_unref(gone[i]);
}

void lf_kube_cache_ns_list_begin(struct lf_kube_cache *c)
{
    uv_mutex_lock(&c->mu);
    for (size_t i = 0; i < c->n_nss; i++)
        c->nss[i].listed = false;
    uv_mutex_unlock(&c->mu);
}

void lf_kube_cache_put_ns(struct lf_kube_cache *c, struct lf_kube_ns *ns)
{
    uv_mutex_lock(&c->mu);
    struct ns_slot *s = find_ns(c, lf_str_make(ns->name, strlen(ns->name)));
    if (s != NULL) {
        s->listed = true;
        struct lf_kube_ns *old = s->ns;
        if (old->members.len == ns->members.len &&
            memcmp(old->members.ptr, ns->members.ptr, ns->members.len) == 0) {
            uv_mutex_unlock(&c->mu);
            ns_unref(ns);
            return;
        }
        c->bytes = c->bytes - old->bytes + ns->bytes;
        s->ns = ns;
        bump(c);
        uv_mutex_unlock(&c->mu);
        ns_unref(old);
        return;
    }
    if (lf_array_grow(&c->nss, &c->cap_nss, c->n_nss, sizeof(*c->nss), 8)) {
        uv_mutex_unlock(&c->mu);
        ns_unref(ns);
        return;
    }
    c->nss[c->n_nss++] = (struct ns_slot){ ns, true };
    c->bytes += ns->bytes;
    bump(c);
    uv_mutex_unlock(&c->mu);
}

/* Drops the namespace named name, or (name NULL) those the LIST just ended did not name;
 * called under mu, returns with it unlocked. */
static void drop_ns_where(struct lf_kube_cache *c, const char *name)
{
    struct lf_kube_ns *gone[32];
    size_t n_gone = 0;
    size_t k = 0;
    for (size_t i = 0; i < c->n_nss; i++) {
        struct ns_slot *s = &c->nss[i];
        bool drop = name != NULL ? strcmp(s->ns->name, name) == 0 : !s->listed;
        if (drop && n_gone < sizeof(gone) / sizeof(gone[0])) {
            gone[n_gone++] = s->ns;
            c->bytes -= s->ns->bytes;
            continue;
        }
        c->nss[k++] = *s;
    }
    c->n_nss = k;
    if (n_gone > 0)
        bump(c);
    uv_mutex_unlock(&c->mu);
    for (size_t i = 0; i < n_gone; i++)
        ns_unref(gone[i]);
}

void lf_kube_cache_delete_ns(struct lf_kube_cache *c, const char *name)
{
    uv_mutex_lock(&c->mu);
    drop_ns_where(c, name); /* unlocks */
}

void lf_kube_cache_ns_list_end(struct lf_kube_cache *c)
{
    uv_mutex_lock(&c->mu);
    drop_ns_where(c, NULL); /* unlocks */
}

void lf_kube_cache_set_synced(struct lf_kube_cache *c, bool synced)
{
    uv_mutex_lock(&c->mu);
    c->synced = synced;
    if (synced)
        uv_cond_broadcast(&c->synced_cond);
    uv_mutex_unlock(&c->mu);
}

void lf_kube_cache_count(struct lf_kube_cache *c, uint64_t lists, uint64_t watch_events,
                         uint64_t errors)
{
    atomic_fetch_add(&c->lists, lists);
    atomic_fetch_add(&c->watch_events, watch_events);
    atomic_fetch_add(&c->errors, errors);
}

void lf_kube_cache_stats(struct lf_kube_cache *c, struct lf_kube_stats *out)
{
    uv_mutex_lock(&c->mu);
    out->pods = c->n_pods;
    out->namespaces = c->n_nss;
    out->bytes = c->bytes;
    out->synced = c->synced;
    uv_mutex_unlock(&c->mu);
    out->misses = atomic_load(&c->misses);
    out->lists = atomic_load(&c->lists);
    out->watch_events = atomic_load(&c->watch_events);
    out->errors = atomic_load(&c->errors);
}
