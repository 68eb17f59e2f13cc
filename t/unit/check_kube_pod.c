/* check_kube_pod.c - pod and namespace objects of the API server into records: the members
 * rendered for each kind of owner, labels and annotations, escaping, containers, and the
 * objects refused. Fixtures: t/data/kube_pod/, objects as the API server writes them.
 * Then the watcher's start and stop against a server that never answers (the LIST, WATCH
 * and faults run end to end against t/integration/kube_apiserver.py). */
#include "config.h"

#include <arpa/inet.h>
#include <check.h>
#include <jansson.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "logferry/clock.h"
#include "logferry/kube.h"

static json_t *load(const char *name)
{
    char path[1024];
    const char *dir = getenv("LF_TEST_DATA");
    snprintf(path, sizeof(path), "%s/kube_pod/%s", dir != NULL ? dir : "t/data", name);
    json_error_t jerr;
    json_t *j = json_load_file(path, 0, &jerr);
    if (j == NULL)
        fprintf(stderr, "%s:%d: %s\n", path, jerr.line, jerr.text);
    ck_assert_ptr_nonnull(j);
    return j;
}

static const struct lf_kube_render_opts defaults = { .labels = true, .dedot = true };

/* The record of fixture name (or of j when name is NULL) under opts; asserts it is made. */
static struct lf_kube_pod *
record(const char *name, json_t *j, const struct lf_kube_render_opts *opts)
{
    json_t *obj = j != NULL ? j : load(name);
    struct lf_kube_pod *p = NULL;
    struct lf_errbuf eb = { "" };
    enum lf_err err = lf_kube_pod_from_json(obj, opts, &p, &eb);
    if (err)
        fprintf(stderr, "%s\n", eb.msg);
    ck_assert_int_eq(err, LF_OK);
    ck_assert_ptr_nonnull(p);
    json_decref(obj);
    return p;
}

static void assert_members(const struct lf_kube_pod *p, const char *want)
{
    ck_assert_uint_eq(p->members.len, strlen(want));
    ck_assert_mem_eq(p->members.ptr, want, p->members.len);
    /* the members are a valid JSON object's inside */
    char *obj = malloc(p->members.len + 3);
    snprintf(obj, p->members.len + 3, "{%.*s}", (int)p->members.len, p->members.ptr);
    json_t *back = json_loads(obj, 0, NULL);
    ck_assert_ptr_nonnull(back);
    json_decref(back);
    free(obj);
}

START_TEST(deployment_pod_gets_replicaset_deployment_and_dedotted_labels)
{
    struct lf_kube_pod *p = record("deployment.json", NULL, &defaults);
    ck_assert_str_eq(p->ns, "shop");
    ck_assert_str_eq(p->name, "web-7d4b9c8f6-x2x8k");
    ck_assert_str_eq(p->uid, "3f2b1c4e-9a7d-4e2b-8c1a-5d6e7f8a9b0c");
    ck_assert_uint_eq(atomic_load(&p->refs), 1);
    ck_assert_int_eq(p->deleted_ms, 0);
    assert_members(p, "\"pod\":{\"name\":\"web-7d4b9c8f6-x2x8k\","
                      "\"uid\":\"3f2b1c4e-9a7d-4e2b-8c1a-5d6e7f8a9b0c\",\"ip\":\"10.244.3.21\"},"
                      "\"namespace\":\"shop\",\"node\":{\"name\":\"node-a1\"},"
                      "\"labels\":{\"app_kubernetes_io/name\":\"web\","
                      "\"app_kubernetes_io/part-of\":\"shop\","
                      "\"pod-template-hash\":\"7d4b9c8f6\",\"tier\":\"frontend\"},"
                      "\"replicaset\":{\"name\":\"web-7d4b9c8f6\"},"
                      "\"deployment\":{\"name\":\"web\"}");
    ck_assert_uint_eq(p->n_containers, 2);
    ck_assert_str_eq(p->containers[0].name, "web");
    ck_assert_str_eq(p->containers[0].image_json,
                     "\"image\":{\"name\":\"registry.example.com/shop/web:2.14.1\"}");
    ck_assert_str_eq(p->containers[1].name, "envoy");
    ck_assert_str_eq(p->containers[1].image_json,
                     "\"image\":{\"name\":\"envoyproxy/envoy:v1.31.2\"}");
    /* one allocation: everything the record points at lies inside its bytes */
    const char *lo = (const char *)p;
    const char *hi = lo + p->bytes;
    ck_assert(p->members.ptr >= lo && p->members.ptr + p->members.len <= hi);
    ck_assert(p->containers[1].image_json >= lo && p->containers[1].image_json < hi);
    ck_assert(p->uid + strlen(p->uid) < hi);
    ck_assert_uint_gt(p->bytes, sizeof(*p) + p->members.len);
    lf_kube_pod_free(p);
}
END_TEST

START_TEST(labels_keep_their_dots_without_dedot_and_are_left_out_when_off)
{
    struct lf_kube_render_opts o = { .labels = true, .dedot = false };
    struct lf_kube_pod *p = record("statefulset.json", NULL, &o);
    assert_members(p,
                   "\"pod\":{\"name\":\"pg-1\",\"uid\":\"0b9a8c7d-6e5f-4a3b-2c1d-0e9f8a7b6c5d\","
                   "\"ip\":\"10.244.3.40\"},\"namespace\":\"db\",\"node\":{\"name\":\"node-a1\"},"
                   "\"labels\":{\"app\":\"pg\",\"apps.kubernetes.io/pod-index\":\"1\","
                   "\"controller-revision-hash\":\"pg-5c9d7b8f44\","
                   "\"statefulset.kubernetes.io/pod-name\":\"pg-1\"},"
                   "\"statefulset\":{\"name\":\"pg\"}");
    lf_kube_pod_free(p);
    o.labels = false;
    p = record("statefulset.json", NULL, &o);
    assert_members(p,
                   "\"pod\":{\"name\":\"pg-1\",\"uid\":\"0b9a8c7d-6e5f-4a3b-2c1d-0e9f8a7b6c5d\","
                   "\"ip\":\"10.244.3.40\"},\"namespace\":\"db\",\"node\":{\"name\":\"node-a1\"},"
                   "\"statefulset\":{\"name\":\"pg\"}");
    lf_kube_pod_free(p);
}
END_TEST

START_TEST(daemonset_pod_names_its_daemonset)
{
    struct lf_kube_pod *p = record("daemonset.json", NULL, &defaults);
    assert_members(p, "\"pod\":{\"name\":\"kube-proxy-8xq2m\","
                      "\"uid\":\"5a6b7c8d-9e0f-4a1b-8c2d-3e4f5a6b7c8d\",\"ip\":\"10.0.4.17\"},"
                      "\"namespace\":\"kube-system\",\"node\":{\"name\":\"node-a1\"},"
                      "\"labels\":{\"controller-revision-hash\":\"6f8b7d9c5d\","
                      "\"k8s-app\":\"kube-proxy\",\"pod-template-generation\":\"1\"},"
                      "\"daemonset\":{\"name\":\"kube-proxy\"}");
    lf_kube_pod_free(p);
}
END_TEST

START_TEST(cronjob_job_pod_names_its_job_and_cronjob)
{
    struct lf_kube_render_opts o = { .labels = false, .dedot = true };
    struct lf_kube_pod *p = record("cronjob.json", NULL, &o);
    assert_members(p, "\"pod\":{\"name\":\"report-29403720-7qk5v\","
                      "\"uid\":\"c4d5e6f7-a8b9-4c0d-9e1f-2a3b4c5d6e7f\",\"ip\":\"10.244.3.77\"},"
                      "\"namespace\":\"batch\",\"node\":{\"name\":\"node-a1\"},"
                      "\"job\":{\"name\":\"report-29403720\"},\"cronjob\":{\"name\":\"report\"}");
    lf_kube_pod_free(p);
}
END_TEST

START_TEST(job_ending_in_four_digits_is_not_taken_for_a_cronjob)
{
    struct lf_kube_render_opts o = { .labels = false, .dedot = true };
    struct lf_kube_pod *p = record("job.json", NULL, &o);
    assert_members(p, "\"pod\":{\"name\":\"migrate-2024-s8d7f\","
                      "\"uid\":\"d1e2f3a4-b5c6-4d7e-8f9a-0b1c2d3e4f5a\",\"ip\":\"10.244.3.80\"},"
                      "\"namespace\":\"shop\",\"node\":{\"name\":\"node-a1\"},"
                      "\"job\":{\"name\":\"migrate-2024\"}");
    lf_kube_pod_free(p);
}
END_TEST

START_TEST(bare_pod_has_no_owner_no_labels_and_no_ip_while_pending)
{
    struct lf_kube_pod *p = record("bare.json", NULL, &defaults);
    assert_members(p,
                   "\"pod\":{\"name\":\"debug\",\"uid\":\"f0e1d2c3-b4a5-4968-8776-5a4b3c2d1e0f\"},"
                   "\"namespace\":\"default\",\"node\":{\"name\":\"node-a1\"}");
    ck_assert_uint_eq(p->n_containers, 1);
    ck_assert_str_eq(p->containers[0].image_json, "\"image\":{\"name\":\"busybox:1.36\"}");
    lf_kube_pod_free(p);
}
END_TEST

START_TEST(replicaset_whose_name_lacks_the_hash_names_no_deployment)
{
    json_t *j = load("deployment.json");
    json_t *labels = json_object_get(json_object_get(j, "metadata"), "labels");
    ck_assert_int_eq(json_object_set_new(labels, "pod-template-hash", json_string("0000000")), 0);
    struct lf_kube_render_opts o = { .labels = false, .dedot = true };
    struct lf_kube_pod *p = record(NULL, j, &o);
    const char *tail = "\"replicaset\":{\"name\":\"web-7d4b9c8f6\"}";
    ck_assert_uint_ge(p->members.len, strlen(tail));
    ck_assert_mem_eq(p->members.ptr + p->members.len - strlen(tail), tail, strlen(tail));
    lf_kube_pod_free(p);
}
END_TEST

START_TEST(annotations_kept_are_those_included_and_not_excluded)
{
    const char *inc[] = { "prometheus.io/*", "kubectl.kubernetes.io/*" };
    const char *exc[] = { "*/port" };
    struct lf_kube_render_opts o = { .labels = false,
                                     .dedot = true,
                                     .ann_include = inc,
                                     .n_ann_include = 2,
                                     .ann_exclude = exc,
                                     .n_ann_exclude = 1 };
    struct lf_kube_pod *p = record("deployment.json", NULL, &o);
    assert_members(p, "\"pod\":{\"name\":\"web-7d4b9c8f6-x2x8k\","
                      "\"uid\":\"3f2b1c4e-9a7d-4e2b-8c1a-5d6e7f8a9b0c\",\"ip\":\"10.244.3.21\"},"
                      "\"namespace\":\"shop\",\"node\":{\"name\":\"node-a1\"},"
                      "\"annotations\":{\"kubectl_kubernetes_io/restartedAt\":"
                      "\"2026-11-30T09:12:40Z\",\"prometheus_io/scrape\":\"true\"},"
                      "\"replicaset\":{\"name\":\"web-7d4b9c8f6\"},"
                      "\"deployment\":{\"name\":\"web\"}");
    lf_kube_pod_free(p);
    /* no include: no annotations at all; an include nothing matches: no empty member */
    const char *none[] = { "example.com/*" };
    o.ann_include = none;
    o.n_ann_include = 1;
    o.n_ann_exclude = 0;
    p = record("deployment.json", NULL, &o);
    ck_assert_ptr_null(memmem(p->members.ptr, p->members.len, "annotations", 11));
    lf_kube_pod_free(p);
}
END_TEST

START_TEST(label_values_are_escaped_and_non_strings_skipped)
{
    json_t *j = load("init.json");
    json_t *labels = json_object_get(json_object_get(j, "metadata"), "labels");
    ck_assert_int_eq(json_object_set_new(labels, "weight", json_integer(3)), 0);
    struct lf_kube_pod *p = record(NULL, j, &defaults);
    /* the controller reference wins over the first one (a custom kind) */
    assert_members(p,
                   "\"pod\":{\"name\":\"api-0\",\"uid\":\"12345678-90ab-4cde-8f01-234567890abc\","
                   "\"ip\":\"10.244.3.90\"},\"namespace\":\"shop\",\"node\":{\"name\":\"node-a1\"},"
                   "\"labels\":{\"app\":\"api\",\"note\":\"say \\\"hi\\\"\\nthen go\"},"
                   "\"statefulset\":{\"name\":\"api\"}");
    lf_kube_pod_free(p);
}
END_TEST

START_TEST(container_lookup_finds_init_and_ephemeral_containers)
{
    struct lf_kube_pod *p = record("init.json", NULL, &defaults);
    ck_assert_uint_eq(p->n_containers, 3);
    const struct lf_kube_container *c = lf_kube_pod_container(p, LF_STR_LIT("wait-db"));
    ck_assert_ptr_nonnull(c);
    ck_assert_str_eq(c->image_json, "\"image\":{\"name\":\"busybox:1.36\"}");
    c = lf_kube_pod_container(p, LF_STR_LIT("api"));
    ck_assert_ptr_nonnull(c);
    ck_assert_str_eq(c->image_json, "\"image\":{\"name\":\"registry.example.com/shop/api:5.0.0\"}");
    c = lf_kube_pod_container(p, LF_STR_LIT("debugger-x7k2p"));
    ck_assert_ptr_nonnull(c);
    ck_assert_str_eq(c->image_json, "\"image\":{\"name\":\"nicolaka/netshoot\"}");
    ck_assert_ptr_null(lf_kube_pod_container(p, LF_STR_LIT("ap")));
    ck_assert_ptr_null(lf_kube_pod_container(p, LF_STR_LIT("api-x")));
    lf_kube_pod_free(p);
}
END_TEST

START_TEST(container_without_image_gets_an_empty_image_member)
{
    json_t *j = load("bare.json");
    json_t *c0 = json_array_get(json_object_get(json_object_get(j, "spec"), "containers"), 0);
    ck_assert_int_eq(json_object_del(c0, "image"), 0);
    struct lf_kube_pod *p = record(NULL, j, &defaults);
    const struct lf_kube_container *c = lf_kube_pod_container(p, LF_STR_LIT("debug"));
    ck_assert_ptr_nonnull(c);
    ck_assert_str_eq(c->image_json, "");
    lf_kube_pod_free(p);
}
END_TEST

/* The object without metadata.<key> (or with a number there) is refused with a reason. */
static void assert_refused(const char *key, json_t *value, const char *want)
{
    json_t *j = load("deployment.json");
    json_t *meta = json_object_get(j, "metadata");
    if (value != NULL)
        ck_assert_int_eq(json_object_set_new(meta, key, value), 0);
    else
        ck_assert_int_eq(json_object_del(meta, key), 0);
    struct lf_kube_pod *p = NULL;
    struct lf_errbuf eb = { "" };
    ck_assert_int_eq(lf_kube_pod_from_json(j, &defaults, &p, &eb), LF_EINVAL);
    ck_assert_ptr_null(p);
    ck_assert_str_eq(eb.msg, want);
    json_decref(j);
}

START_TEST(pod_without_uid_name_or_namespace_is_refused)
{
    assert_refused("uid", NULL, "pod web-7d4b9c8f6-x2x8k without metadata.uid");
    assert_refused("uid", json_integer(7), "pod web-7d4b9c8f6-x2x8k without metadata.uid");
    assert_refused("namespace", NULL, "pod web-7d4b9c8f6-x2x8k without metadata.namespace");
    assert_refused("name", NULL, "pod without metadata.name");
}
END_TEST

START_TEST(namespace_labels_are_dedotted_members)
{
    json_t *j = load("namespace.json");
    struct lf_kube_ns *ns = NULL;
    struct lf_errbuf eb = { "" };
    ck_assert_int_eq(lf_kube_ns_from_json(j, &defaults, &ns, &eb), LF_OK);
    ck_assert_str_eq(ns->name, "shop");
    ck_assert_str_eq(ns->uid, "9e8d7c6b-5a49-4382-9170-6e5d4c3b2a19");
    ck_assert_uint_eq(atomic_load(&ns->refs), 1);
    const char *want = "\"namespace_labels\":{\"kubernetes_io/metadata_name\":\"shop\","
                       "\"team\":\"payments\"}";
    ck_assert_uint_eq(ns->members.len, strlen(want));
    ck_assert_mem_eq(ns->members.ptr, want, ns->members.len);
    lf_kube_ns_free(ns);
    /* no labels: empty members */
    json_object_del(json_object_get(j, "metadata"), "labels");
    ck_assert_int_eq(lf_kube_ns_from_json(j, &defaults, &ns, &eb), LF_OK);
    ck_assert_uint_eq(ns->members.len, 0);
    ck_assert_str_eq(ns->name, "shop");
    lf_kube_ns_free(ns);
    json_object_del(json_object_get(j, "metadata"), "name");
    ck_assert_int_eq(lf_kube_ns_from_json(j, &defaults, &ns, &eb), LF_EINVAL);
    ck_assert_str_eq(eb.msg, "namespace without metadata.name");
    json_decref(j);
}
END_TEST

/* ---- the watcher ---- */

START_TEST(watcher_without_an_api_server_is_a_config_error)
{
    unsetenv("KUBERNETES_SERVICE_HOST");
    struct lf_kube_cache *c = NULL;
    ck_assert_int_eq(lf_kube_cache_new(1000, &c), LF_OK);
    struct lf_kube_conf conf = { .enabled = true, .api_server = "", .timeout_ms = 1000 };
    struct lf_kube_watch *w = NULL;
    struct lf_errbuf eb = { "" };
    ck_assert_int_eq(lf_kube_watch_start(&conf, c, &w, &eb), LF_ECONFIG);
    ck_assert_ptr_null(w);
    ck_assert_str_eq(eb.msg, "kubernetes: no API server: set kubernetes.api_server, or run in a "
                             "pod (KUBERNETES_SERVICE_HOST is not set)");
    lf_kube_watch_stop(NULL);
    lf_kube_cache_free(c);
}
END_TEST

/* A listening socket on 127.0.0.1 that takes connections and never answers. */
static int silent_server(int *port)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    ck_assert_int_ge(fd, 0);
    struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    socklen_t len = sizeof(sa);
    ck_assert_int_eq(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
    ck_assert_int_eq(listen(fd, 8), 0);
    ck_assert_int_eq(getsockname(fd, (struct sockaddr *)&sa, &len), 0);
    *port = ntohs(sa.sin_port);
    return fd;
}

/* The request head the watcher sends first, read from a connection to srv (5 s at most);
 * returns the connection, left unanswered. */
static int read_request(int srv, char *buf, size_t cap)
{
    struct pollfd pfd = { .fd = srv, .events = POLLIN };
    ck_assert_int_eq(poll(&pfd, 1, 5000), 1);
    int conn = accept(srv, NULL, NULL);
    ck_assert_int_ge(conn, 0);
    size_t n = 0;
    int64_t end = lf_mono_ms() + 5000;
    while (n + 1 < cap && strstr(buf, "\r\n\r\n") == NULL && lf_mono_ms() < end) {
        struct pollfd cp = { .fd = conn, .events = POLLIN };
        if (poll(&cp, 1, 100) != 1)
            continue;
        ssize_t r = read(conn, buf + n, cap - 1 - n);
        ck_assert_int_gt(r, 0);
        n += (size_t)r;
        buf[n] = '\0';
    }
    return conn;
}

START_TEST(watcher_lists_this_node_and_stops_within_a_second_of_a_silent_server)
{
    int port = 0;
    int srv = silent_server(&port);
    char url[64];
    snprintf(url, sizeof(url), "http://127.0.0.1:%d/", port);
    struct lf_kube_cache *c = NULL;
    ck_assert_int_eq(lf_kube_cache_new(1000, &c), LF_OK);
    struct lf_kube_conf conf = { .enabled = true,
                                 .api_server = url,
                                 .token_file = "/nonexistent/token",
                                 .ca_file = "",
                                 .node_name = "node a/1",
                                 .timeout_ms = 30000,
                                 .labels = true };
    struct lf_kube_watch *w = NULL;
    struct lf_errbuf eb = { "" };
    ck_assert_int_eq(lf_kube_watch_start(&conf, c, &w, &eb), LF_OK);
    char req[4096] = "";
    int conn = read_request(srv, req, sizeof(req));
    /* the node's pods only, escaped; no token over plain http (it is not even read) */
    const char *want = "GET /api/v1/pods?fieldSelector=spec.nodeName%3Dnode%20a%2F1&limit=500 "
                       "HTTP/1.1\r\n";
    ck_assert_msg(strncmp(req, want, strlen(want)) == 0, "%s", req);
    ck_assert_ptr_null(strcasestr(req, "authorization"));
    struct lf_kube_stats st;
    lf_kube_cache_stats(c, &st);
    ck_assert(!st.synced);
    int64_t t0 = lf_mono_ms();
    lf_kube_watch_stop(w); /* its LIST, unanswered, has 30 s to go */
    ck_assert_int_lt(lf_mono_ms() - t0, 1000);
    close(conn);
    close(srv);
    lf_kube_cache_free(c);
}
END_TEST

static Suite *kube_pod_suite(void)
{
    Suite *s = suite_create("kube_pod");
    TCase *owners = tcase_create("owners");
    tcase_add_test(owners, deployment_pod_gets_replicaset_deployment_and_dedotted_labels);
    tcase_add_test(owners, labels_keep_their_dots_without_dedot_and_are_left_out_when_off);
    tcase_add_test(owners, daemonset_pod_names_its_daemonset);
    tcase_add_test(owners, cronjob_job_pod_names_its_job_and_cronjob);
    tcase_add_test(owners, job_ending_in_four_digits_is_not_taken_for_a_cronjob);
    tcase_add_test(owners, bare_pod_has_no_owner_no_labels_and_no_ip_while_pending);
    tcase_add_test(owners, replicaset_whose_name_lacks_the_hash_names_no_deployment);
    suite_add_tcase(s, owners);
    TCase *maps = tcase_create("labels and annotations");
    tcase_add_test(maps, annotations_kept_are_those_included_and_not_excluded);
    tcase_add_test(maps, label_values_are_escaped_and_non_strings_skipped);
    tcase_add_test(maps, namespace_labels_are_dedotted_members);
    suite_add_tcase(s, maps);
    TCase *ctrs = tcase_create("containers");
    tcase_add_test(ctrs, container_lookup_finds_init_and_ephemeral_containers);
    tcase_add_test(ctrs, container_without_image_gets_an_empty_image_member);
    suite_add_tcase(s, ctrs);
    TCase *bad = tcase_create("refused");
    tcase_add_test(bad, pod_without_uid_name_or_namespace_is_refused);
    suite_add_tcase(s, bad);
    TCase *watcher = tcase_create("watcher");
    tcase_add_test(watcher, watcher_without_an_api_server_is_a_config_error);
    tcase_add_test(watcher, watcher_lists_this_node_and_stops_within_a_second_of_a_silent_server);
    suite_add_tcase(s, watcher);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(kube_pod_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
