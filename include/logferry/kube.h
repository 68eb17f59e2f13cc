/* kube.h - pod metadata from the Kubernetes API server, for events of container log files.
 *
 *   watcher thread (watch.c)                 readers (tail thread, reader threads)
 *   LIST pods on this node ──► lf_kube_cache ◄── lf_kube_cache_lookup(ns, pod) per source,
 *   WATCH ADDED/MODIFIED/        (cache.c)        again only when lf_kube_cache_gen() moved
 *   DELETED/BOOKMARK ────────►  records by uid
 *                               and ns/name
 *
 * One watcher per agent: a LIST then a WATCH of the pods whose spec.nodeName is this node
 * (and of namespaces when their labels are wanted), through libcurl on a thread of its own,
 * so requests to the API server are O(1) per node, never per event or per file. Each pod
 * becomes an immutable record (pod.c) holding its members already rendered as JSON; a
 * record is shared by reference count, so a reader keeps what it looked up while the
 * watcher replaces or drops it. The container stage renders a file's members once per
 * (source, record) and pastes them into every event, as it does the names taken from the
 * path.
 *
 * Threads: the cache is written by the watcher thread only and read by any thread; one
 * mutex guards its maps, and a generation number (an atomic) lets a reader see in one load
 * that nothing changed since its last lookup. */
#ifndef LF_KUBE_H
#define LF_KUBE_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "logferry/buf.h"
#include "logferry/config.h"
#include "logferry/err.h"

/* ---- records (pod.c) ---- */

/* One container of a pod: its name and its image, as spec.containers (and init and
 * ephemeral containers) name them. */
struct lf_kube_container {
    const char *name;
    const char *image_json; /* `"image":{"name":"nginx:1.25"}` (escaped), or "" if none */
};

/* A pod as enrichment needs it; every string lives in the record's own allocation.
 * Immutable once given to the cache. */
struct lf_kube_pod {
    const char *ns;
    const char *name;
    const char *uid;
    /* The members that go inside "kubernetes":{...} before the container's own, rendered
     * once, without braces or a leading comma:
     * `"pod":{"name":"web-1","uid":"...","ip":"10.1.2.3"},"namespace":"shop",
     *  "node":{"name":"n1"},"labels":{...},"annotations":{...},
     *  "replicaset":{"name":"web-7d4b9"},"deployment":{"name":"web"}` */
    struct lf_str members;
    const struct lf_kube_container *containers;
    size_t n_containers;
    size_t bytes;           /* the record's whole allocation, for the cache's size gauge */
    atomic_uint refs;       /* the cache's reference and each reader's (cache.c only) */
    int64_t deleted_ms;     /* cache.c only: monotonic time of its DELETED, 0 while alive */
};

/* A namespace's labels, for `namespace_labels: true`. */
struct lf_kube_ns {
    const char *name;
    struct lf_str members;  /* `"namespace_labels":{...}` (no leading comma), or empty */
    const char *uid;
    size_t bytes;
    atomic_uint refs;       /* cache.c only */
};

/* What of a pod is kept and how (from the config's kubernetes section). */
struct lf_kube_render_opts {
    bool labels;                    /* kubernetes.labels.* */
    bool dedot;                     /* '.' in label and annotation keys becomes '_' */
    const char *const *ann_include; /* globs of annotation keys; none: no annotations */
    size_t n_ann_include;
    const char *const *ann_exclude; /* globs taken out of what include let in */
    size_t n_ann_exclude;
};

/* A pod object of the API (a LIST item or a watch event's "object"), a json_t, into a new
 * record in *out (refs = 1). LF_EINVAL with eb filled when it lacks metadata.name,
 * metadata.namespace or metadata.uid; LF_ENOMEM. */
struct json_t;
LF_MUST_CHECK enum lf_err lf_kube_pod_from_json(const struct json_t *pod,
                                                const struct lf_kube_render_opts *opts,
                                                struct lf_kube_pod **out,
                                                struct lf_errbuf *eb);
LF_MUST_CHECK enum lf_err lf_kube_ns_from_json(const struct json_t *ns,
                                               const struct lf_kube_render_opts *opts,
                                               struct lf_kube_ns **out,
                                               struct lf_errbuf *eb);
/* Frees a record at once, whatever its refs (cache.c calls it when the last goes). */
void lf_kube_pod_free(struct lf_kube_pod *p);
void lf_kube_ns_free(struct lf_kube_ns *ns);

/* The container of p named name, or NULL. */
const struct lf_kube_container *lf_kube_pod_container(const struct lf_kube_pod *p,
                                                      struct lf_str name);

/* ---- the cache (cache.c) ---- */

struct lf_kube_cache;

struct lf_kube_stats {
    uint64_t pods;            /* records held, deleted ones in their grace period included */
    uint64_t namespaces;
    uint64_t bytes;           /* what the records take */
    uint64_t misses;          /* files shipped without metadata: pod unknown after the wait */
    uint64_t lists;           /* LISTs completed (the first, and each re-list) */
    uint64_t watch_events;    /* ADDED, MODIFIED, DELETED applied */
    uint64_t errors;          /* requests that failed: no answer, 401, 403, 5xx, bad JSON */
    bool synced;              /* the last LIST completed and its WATCH is open (of the
                                 namespaces too, with namespace_labels) */
};

/* grace_ms: how long a deleted pod's record stays (its last lines still find it). */
LF_MUST_CHECK enum lf_err lf_kube_cache_new(uint64_t grace_ms, struct lf_kube_cache **out);
void lf_kube_cache_free(struct lf_kube_cache *c);
void lf_kube_cache_set_grace(struct lf_kube_cache *c, uint64_t grace_ms);

/* The process's cache, for the stages: set by the agent before its inputs start (NULL:
 * no kubernetes section, the sidecar case: nothing is looked up). Any thread. */
void lf_kube_cache_set_current(struct lf_kube_cache *c);
struct lf_kube_cache *lf_kube_cache_current(void);

/* Moves whenever a record is added, replaced or dropped: a reader whose last lookup saw the
 * same value may keep what it found. One atomic load. */
uint64_t lf_kube_cache_gen(const struct lf_kube_cache *c);

/* A reader's view of one pod: references it holds until lf_kube_view_release(). */
struct lf_kube_view {
    struct lf_kube_pod *pod; /* NULL: not (or no longer) known */
    struct lf_kube_ns *ns;   /* NULL: namespace labels off or namespace unknown */
};

/* The record of pod name in namespace ns, references taken (release the previous view
 * first). A pod deleted less than grace ago is still found. */
void lf_kube_cache_lookup(struct lf_kube_cache *c, struct lf_str ns, struct lf_str name,
                          struct lf_kube_view *out);
void lf_kube_view_release(struct lf_kube_view *v);

/* Whether a new file of pod ns/name should wait before it is read: the watch is synced
 * and the pod is not known yet (its ADDED is probably on its way). False when the cache
 * is not synced (the API server is down: nothing waits for it). */
bool lf_kube_cache_awaits(struct lf_kube_cache *c, struct lf_str ns, struct lf_str name);

/* Waits up to timeout_ms for the first LIST to complete: true when synced. The agent calls
 * it once before its inputs start, so the files found at start find their pods. */
bool lf_kube_cache_wait_synced(struct lf_kube_cache *c, uint64_t timeout_ms);

/* Counts a file shipped without metadata (lf_kube_stats.misses). Any thread. */
void lf_kube_cache_count_miss(struct lf_kube_cache *c);

/* Writer side, the watcher thread only. Each takes ownership of the record it is given. */
void lf_kube_cache_list_begin(struct lf_kube_cache *c);        /* a LIST's items follow */
void lf_kube_cache_put_pod(struct lf_kube_cache *c, struct lf_kube_pod *p); /* by uid */
void lf_kube_cache_delete_pod(struct lf_kube_cache *c, const char *uid, int64_t now_ms);
/* Ends a LIST: pods it did not name are deleted (kept for grace) as of now_ms. */
void lf_kube_cache_list_end(struct lf_kube_cache *c, int64_t now_ms);
void lf_kube_cache_ns_list_begin(struct lf_kube_cache *c);
void lf_kube_cache_put_ns(struct lf_kube_cache *c, struct lf_kube_ns *ns);
void lf_kube_cache_delete_ns(struct lf_kube_cache *c, const char *name);
void lf_kube_cache_ns_list_end(struct lf_kube_cache *c);
/* Drops deleted pods past their grace. */
void lf_kube_cache_sweep(struct lf_kube_cache *c, int64_t now_ms);
void lf_kube_cache_set_synced(struct lf_kube_cache *c, bool synced);
/* Counters the watcher keeps (lists, watch_events, errors): added to the stats. */
void lf_kube_cache_count(struct lf_kube_cache *c, uint64_t lists, uint64_t watch_events,
                         uint64_t errors);
void lf_kube_cache_stats(struct lf_kube_cache *c, struct lf_kube_stats *out);

/* ---- a file's pod, from its path (path.c) ---- */

/* <anything>/var/log/containers/<pod>_<namespace>_<container>-<id>.log (the suffix match
 * lets a host's /var/log mounted elsewhere work too): the four names, borrowed from path. */
struct lf_kube_names {
    struct lf_str pod;
    struct lf_str ns;
    struct lf_str container;
    struct lf_str id;
};
bool lf_kube_names_from_path(const char *path, struct lf_kube_names *out);

/* ---- the watcher (watch.c) ---- */

struct lf_kube_watch;

/* Starts the watcher thread for conf (copied), filling c. Fails only on what no retry can
 * mend: no API server address (not in a cluster and no api_server), libcurl that cannot be
 * loaded; LF_ECONFIG / LF_EIO with eb filled. An API server that does not answer, a token
 * or CA file missing for now: warned, retried with backoff. */
LF_MUST_CHECK enum lf_err lf_kube_watch_start(const struct lf_kube_conf *conf,
                                              struct lf_kube_cache *c,
                                              struct lf_kube_watch **out,
                                              struct lf_errbuf *eb);
/* Ends the thread (within a second, whatever the API server does) and frees.
 * lf_kube_watch_stop(NULL) is a no-op. */
void lf_kube_watch_stop(struct lf_kube_watch *w);

#endif
