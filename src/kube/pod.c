/* pod.c - a pod (or namespace) object of the Kubernetes API into an immutable record.
 *
 * The record holds what enrichment needs already rendered: the members that go inside
 * "kubernetes":{...} (pod, namespace, node, labels, chosen annotations, the owner) and, per
 * container, its image as `"image":{"name":...}`. It is built once when the watcher sees
 * the pod, so an event pays for a copy, never for a render.
 *
 *   one malloc: [ struct lf_kube_pod | containers[n] | members | ns\0 name\0 uid\0 ... ]
 *
 * The strings are first laid out in a scratch lf_buf (offsets, since it may move while it
 * grows), then the record is allocated at its final size and the pointers set. Field names
 * follow ECS and Filebeat's add_kubernetes_metadata, so dashboards carry over.
 *
 * The owner: the controller among metadata.ownerReferences (else the first). A ReplicaSet's
 * Deployment is named by convention: the Deployment controller names each ReplicaSet
 * <deployment>-<pod-template-hash> and labels its pods with that hash. A Job's CronJob
 * likewise: the CronJob controller names each Job <cronjob>-<scheduled time in minutes>,
 * 8 digits or more; a Job someone named migrate-2024 is not taken for one.
 *
 * Pure: no state; the caller owns what it gets (refs = 1). Any thread. */
#include "config.h"

#include <fnmatch.h>
#include <jansson.h>
#include <stdalign.h>
#include <stdlib.h>
#include <string.h>

#include "logferry/event.h"
#include "logferry/kube.h"

/* What a record's strings may take: far above any pod the API server accepts (an object is
 * at most ~1.5 MiB in etcd), so only a broken object meets it. */
#define MAX_RECORD_BYTES (16u << 20)

/* CronJob-made Jobs end in "-" and the scheduled minute since the epoch: 8 digits or more. */
#define CRONJOB_MIN_DIGITS 8

/* A string of obj as an lf_str, or an empty one (ptr NULL) if absent or not a string. */
static struct lf_str get_str(const json_t *obj, const char *key)
{
    const json_t *v = json_object_get(obj, key);
    if (!json_is_string(v))
        return lf_str_make(NULL, 0);
    return lf_str_make(json_string_value(v), json_string_length(v));
}

static enum lf_err put(struct lf_buf *b, const char *s)
{
    return lf_buf_append_cstr(b, s);
}

/* Appends `"s"`, s escaped. */
static enum lf_err put_quoted(struct lf_buf *b, struct lf_str s)
{
    enum lf_err err = put(b, "\"");
    if (!err)
        err = lf_json_escape(b, s);
    if (!err)
        err = put(b, "\"");
    return err;
}

/* Appends a key, escaped, with '.' made '_' when dedot is on: escaping never writes a '.'
 * of its own, so replacing them in its output is the same as replacing them before. */
static enum lf_err put_key(struct lf_buf *b, struct lf_str key, bool dedot)
{
    size_t start = b->len;
    enum lf_err err = put_quoted(b, key);
    if (err || !dedot)
        return err;
    for (size_t i = start; i < b->len; i++) {
        if (b->ptr[i] == '.')
            b->ptr[i] = '_';
    }
    return LF_OK;
}

/* Appends `,"member":{"name":"value"}` (the comma always: the pod member comes first). */
static enum lf_err put_named(struct lf_buf *b, const char *member, struct lf_str value)
{
    enum lf_err err = put(b, ",\"");
    if (!err)
        err = put(b, member);
    if (!err)
        err = put(b, "\":{\"name\":");
    if (!err)
        err = put_quoted(b, value);
    if (!err)
        err = put(b, "}");
    return err;
}

static bool glob_any(const char *const *globs, size_t n, const char *key)
{
    for (size_t i = 0; i < n; i++) {
        if (fnmatch(globs[i], key, 0) == 0)
            return true;
    }
    return false;
}

/* Which keys of a map are kept. */
enum keep {
    KEEP_ALL,
    KEEP_GLOBS, /* the annotation include and exclude lists of opts */
};

/* Appends `,"member":{...}` with the string values of map whose keys are kept; nothing when
 * none is (a value that is not a string is skipped). lead is "," or "" (the first member). */
static enum lf_err put_map(struct lf_buf *b,
                           const char *lead,
                           const char *member,
                           const json_t *map,
                           enum keep keep,
                           const struct lf_kube_render_opts *opts)
{
    size_t start = b->len;
    const char *key;
    const json_t *v;
    bool first = true;
    enum lf_err err = LF_OK;
    json_object_foreach((json_t *)map, key, v)
    {
        if (!json_is_string(v))
            continue;
        if (keep == KEEP_GLOBS && (!glob_any(opts->ann_include, opts->n_ann_include, key) ||
                                   glob_any(opts->ann_exclude, opts->n_ann_exclude, key)))
            continue;
        if (first) {
            err = put(b, lead);
            if (!err)
                err = put_quoted(b, lf_str_make(member, strlen(member)));
            if (!err)
                err = put(b, ":{");
        } else {
            err = put(b, ",");
        }
        first = false;
        if (!err)
            err = put_key(b, lf_str_make(key, strlen(key)), opts->dedot);
        if (!err)
            err = put(b, ":");
        if (!err)
            err = put_quoted(b, lf_str_make(json_string_value(v), json_string_length(v)));
        if (err)
            break;
    }
    if (!err && !first)
        err = put(b, "}");
    if (err)
        b->len = start;
    return err;
}

/* The owner reference that counts: the one with controller: true, else the first. */
static const json_t *owner_of(const json_t *meta)
{
    const json_t *refs = json_object_get(meta, "ownerReferences");
    size_t i;
    const json_t *ref;
    json_array_foreach((json_t *)refs, i, ref)
    {
        if (json_is_true(json_object_get(ref, "controller")))
            return ref;
    }
    return json_array_get(refs, 0);
}

static bool ends_with_dash(struct lf_str s, struct lf_str tail)
{
    return tail.len > 0 && s.len > tail.len + 1 &&
           memcmp(s.ptr + s.len - tail.len, tail.ptr, tail.len) == 0 &&
           s.ptr[s.len - tail.len - 1] == '-';
}

/* The CronJob that named Job j, by convention: j = <cronjob>-<8 or more digits>. */
static struct lf_str cronjob_of(struct lf_str j)
{
    size_t digits = 0;
    while (digits < j.len && j.ptr[j.len - 1 - digits] >= '0' && j.ptr[j.len - 1 - digits] <= '9')
        digits++;
    if (digits < CRONJOB_MIN_DIGITS || j.len < digits + 2 || j.ptr[j.len - digits - 1] != '-')
        return lf_str_make(NULL, 0);
    return lf_str_make(j.ptr, j.len - digits - 1);
}

static bool kind_is(struct lf_str kind, const char *s)
{
    return kind.len == strlen(s) && memcmp(kind.ptr, s, kind.len) == 0;
}

/* Appends the owner's members: replicaset (+ deployment), statefulset, daemonset, job
 * (+ cronjob); nothing for other kinds or none. */
static enum lf_err put_owner(struct lf_buf *b, const json_t *meta)
{
    const json_t *ref = owner_of(meta);
    struct lf_str kind = get_str(ref, "kind");
    struct lf_str name = get_str(ref, "name");
    if (name.ptr == NULL || name.len == 0)
        return LF_OK;
    if (kind_is(kind, "ReplicaSet")) {
        enum lf_err err = put_named(b, "replicaset", name);
        struct lf_str hash = get_str(json_object_get(meta, "labels"), "pod-template-hash");
        if (!err && ends_with_dash(name, hash))
            err = put_named(b, "deployment", lf_str_make(name.ptr, name.len - hash.len - 1));
        return err;
    }
    if (kind_is(kind, "StatefulSet"))
        return put_named(b, "statefulset", name);
    if (kind_is(kind, "DaemonSet"))
        return put_named(b, "daemonset", name);
    if (kind_is(kind, "Job")) {
        enum lf_err err = put_named(b, "job", name);
        struct lf_str cron = cronjob_of(name);
        if (!err && cron.ptr != NULL)
            err = put_named(b, "cronjob", cron);
        return err;
    }
    return LF_OK;
}

/* An object's metadata.namespace (pods only), name and uid: borrowed from the json_t. */
struct ids {
    struct lf_str ns;
    struct lf_str name;
    struct lf_str uid;
};

/* The pod's members, into b (empty at the call). */
static enum lf_err render_pod(struct lf_buf *b,
                              const json_t *pod,
                              const struct ids *id,
                              const struct lf_kube_render_opts *opts)
{
    const json_t *meta = json_object_get(pod, "metadata");
    struct lf_str ip = get_str(json_object_get(pod, "status"), "podIP");
    struct lf_str node = get_str(json_object_get(pod, "spec"), "nodeName");
    enum lf_err err = put(b, "\"pod\":{\"name\":");
    if (!err)
        err = put_quoted(b, id->name);
    if (!err)
        err = put(b, ",\"uid\":");
    if (!err)
        err = put_quoted(b, id->uid);
    if (!err && ip.len > 0) {
        err = put(b, ",\"ip\":");
        if (!err)
            err = put_quoted(b, ip);
    }
    if (!err)
        err = put(b, "},\"namespace\":");
    if (!err)
        err = put_quoted(b, id->ns);
    if (!err && node.len > 0)
        err = put_named(b, "node", node);
    if (!err && opts->labels)
        err = put_map(b, ",", "labels", json_object_get(meta, "labels"), KEEP_ALL, opts);
    if (!err && opts->n_ann_include > 0)
        err =
            put_map(b, ",", "annotations", json_object_get(meta, "annotations"), KEEP_GLOBS, opts);
    if (!err)
        err = put_owner(b, meta);
    return err;
}

/* Appends s and its NUL to b; *off is where it starts. */
static enum lf_err put_cstr(struct lf_buf *b, struct lf_str s, size_t *off)
{
    *off = b->len;
    enum lf_err err = lf_buf_append_str(b, s);
    if (!err)
        err = lf_buf_append(b, "", 1);
    return err;
}

/* Where a container's strings are in the scratch buffer until the record exists. */
struct ctr_offs {
    size_t name;
    size_t image;
};

/* The containers of one list of spec (containers, initContainers, ephemeralContainers):
 * their names and image members appended to b, their offsets to *offs (*n of *cap used). */
static enum lf_err
put_containers(struct lf_buf *b, const json_t *list, struct ctr_offs **offs, size_t *n, size_t *cap)
{
    size_t i;
    const json_t *c;
    json_array_foreach((json_t *)list, i, c)
    {
        struct lf_str name = get_str(c, "name");
        struct lf_str image = get_str(c, "image");
        if (name.ptr == NULL)
            continue;
        enum lf_err err = lf_array_grow(offs, cap, *n, sizeof(**offs), 4);
        if (err)
            return err;
        struct ctr_offs *o = &(*offs)[*n];
        err = put_cstr(b, name, &o->name);
        /* put_named()'s leading comma is not part of the member */
        o->image = b->len + (image.len > 0 ? 1 : 0);
        if (!err && image.len > 0)
            err = put_named(b, "image", image);
        if (!err)
            err = lf_buf_append(b, "", 1);
        if (err)
            return err;
        (*n)++;
    }
    return LF_OK;
}

/* What the scratch buffer holds, by offset: members first (not NUL-terminated), then each
 * C string. */
struct layout {
    size_t members_len;
    size_t ns, name, uid;
    struct ctr_offs *ctrs; /* owned */
    size_t n_ctrs;
    size_t cap_ctrs;
};

static enum lf_err lay_out(struct lf_buf *b,
                           const json_t *pod,
                           const struct ids *id,
                           const struct lf_kube_render_opts *opts,
                           struct layout *l)
{
    enum lf_err err = render_pod(b, pod, id, opts);
    l->members_len = b->len;
    if (!err)
        err = put_cstr(b, id->ns, &l->ns);
    if (!err)
        err = put_cstr(b, id->name, &l->name);
    if (!err)
        err = put_cstr(b, id->uid, &l->uid);
    static const char *const lists[] = { "containers", "initContainers", "ephemeralContainers" };
    const json_t *spec = json_object_get(pod, "spec");
    for (size_t i = 0; !err && i < sizeof(lists) / sizeof(lists[0]); i++)
        err =
            put_containers(b, json_object_get(spec, lists[i]), &l->ctrs, &l->n_ctrs, &l->cap_ctrs);
    return err;
}

/* The record's size: the struct, the containers (aligned), the strings. */
static enum lf_err record_size(
    size_t head, size_t n_ctrs, size_t strings, size_t *ctr_at, size_t *str_at, size_t *total)
{
    size_t align = alignof(struct lf_kube_container);
    size_t arr;
    *ctr_at = (head + align - 1) / align * align;
    if (lf_size_mul(n_ctrs, sizeof(struct lf_kube_container), &arr) ||
        lf_size_add(*ctr_at, arr, str_at) || lf_size_add(*str_at, strings, total))
        return LF_ETOOBIG;
    return LF_OK;
}

/* metadata.name, metadata.namespace (when with_ns) and metadata.uid as strings, or
 * LF_EINVAL with the reason. */
static enum lf_err
identify(const json_t *obj, const char *what, bool with_ns, struct ids *id, struct lf_errbuf *eb)
{
    const json_t *meta = json_object_get(obj, "metadata");
    id->name = get_str(meta, "name");
    id->ns = get_str(meta, "namespace");
    id->uid = get_str(meta, "uid");
    int nlen = (int)id->name.len;
    if (id->name.len == 0)
        return lf_fail(eb, LF_EINVAL, "%s without metadata.name", what);
    if (with_ns && id->ns.len == 0)
        return lf_fail(eb, LF_EINVAL, "%s %.*s without metadata.namespace", what, nlen,
                       id->name.ptr);
    if (id->uid.len == 0)
        return lf_fail(eb, LF_EINVAL, "%s %.*s without metadata.uid", what, nlen, id->name.ptr);
    return LF_OK;
}

static enum lf_err
too_big(struct lf_errbuf *eb, const char *what, struct lf_str name, enum lf_err err)
{
    if (err == LF_ETOOBIG)
        return lf_fail(eb, LF_ETOOBIG, "%s %.*s: its metadata takes more than %u MiB", what,
                       (int)name.len, name.ptr, MAX_RECORD_BYTES >> 20);
    return lf_fail(eb, err, "%s %.*s: %s", what, (int)name.len, name.ptr, lf_err_str(err));
}

/* Moves the scratch layout into one allocation. */
static enum lf_err
pack_pod(const struct lf_buf *b, const struct layout *l, struct lf_kube_pod **out)
{
    size_t ctr_at;
    size_t str_at;
    size_t total;
    if (record_size(sizeof(struct lf_kube_pod), l->n_ctrs, b->len, &ctr_at, &str_at, &total))
        return LF_ETOOBIG;
    char *mem = malloc(total);
    if (mem == NULL)
        return LF_ENOMEM;
    struct lf_kube_pod *p = (struct lf_kube_pod *)(void *)mem;
    struct lf_kube_container *ctrs = (struct lf_kube_container *)(void *)(mem + ctr_at);
    char *s = mem + str_at;
    memcpy(s, b->ptr, b->len);
    for (size_t i = 0; i < l->n_ctrs; i++) {
        ctrs[i].name = s + l->ctrs[i].name;
        ctrs[i].image_json = s + l->ctrs[i].image;
    }
    p->ns = s + l->ns;
    p->name = s + l->name;
    p->uid = s + l->uid;
    p->members = lf_str_make(s, l->members_len);
    p->containers = ctrs;
    p->n_containers = l->n_ctrs;
    p->bytes = total;
    atomic_init(&p->refs, 1);
    p->deleted_ms = 0;
    *out = p;
    return LF_OK;
}

enum lf_err lf_kube_pod_from_json(const json_t *pod,
                                  const struct lf_kube_render_opts *opts,
                                  struct lf_kube_pod **out,
                                  struct lf_errbuf *eb)
{
    struct ids id;
    enum lf_err err = identify(pod, "pod", true, &id, eb);
    if (err)
        return err;
    struct lf_buf b;
    lf_buf_init(&b, MAX_RECORD_BYTES);
    struct layout l = { 0 };
    err = lay_out(&b, pod, &id, opts, &l);
    if (!err)
        err = pack_pod(&b, &l, out);
    free(l.ctrs);
    lf_buf_release(&b);
    return err ? too_big(eb, "pod", id.name, err) : LF_OK;
}

enum lf_err lf_kube_ns_from_json(const json_t *nsobj,
                                 const struct lf_kube_render_opts *opts,
                                 struct lf_kube_ns **out,
                                 struct lf_errbuf *eb)
{
    struct ids id;
    enum lf_err err = identify(nsobj, "namespace", false, &id, eb);
    if (err)
        return err;
    const json_t *labels = json_object_get(json_object_get(nsobj, "metadata"), "labels");
    struct lf_buf b;
    lf_buf_init(&b, MAX_RECORD_BYTES);
    size_t name_at;
    size_t uid_at;
    err = put_map(&b, "", "namespace_labels", labels, KEEP_ALL, opts);
    size_t members_len = b.len;
    if (!err)
        err = put_cstr(&b, id.name, &name_at);
    if (!err)
        err = put_cstr(&b, id.uid, &uid_at);
    size_t total;
    if (!err)
        err = lf_size_add(sizeof(struct lf_kube_ns), b.len, &total);
    char *mem = err ? NULL : malloc(total);
    if (!err && mem == NULL)
        err = LF_ENOMEM;
    if (err) {
        lf_buf_release(&b);
        return too_big(eb, "namespace", id.name, err);
    }
    struct lf_kube_ns *n = (struct lf_kube_ns *)(void *)mem;
    char *s = mem + sizeof(*n);
    memcpy(s, b.ptr, b.len);
    lf_buf_release(&b);
    n->name = s + name_at;
    n->uid = s + uid_at;
    n->members = lf_str_make(s, members_len);
    n->bytes = total;
    atomic_init(&n->refs, 1);
    *out = n;
    return LF_OK;
}

void lf_kube_pod_free(struct lf_kube_pod *p)
{
    free(p);
}

void lf_kube_ns_free(struct lf_kube_ns *ns)
{
    free(ns);
}

const struct lf_kube_container *lf_kube_pod_container(const struct lf_kube_pod *p,
                                                      struct lf_str name)
{
    for (size_t i = 0; i < p->n_containers; i++) {
        const char *c = p->containers[i].name;
        if (strlen(c) == name.len && memcmp(c, name.ptr, name.len) == 0)
            return &p->containers[i];
    }
    return NULL;
}
