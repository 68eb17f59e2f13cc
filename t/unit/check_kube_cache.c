/* check_kube_cache.c - the pod metadata cache and the container stage's use of it:
 * lookups by namespace/name, updates that change nothing, deletions kept for a grace
 * period, LISTs that forget what they no longer name, references that outlive a
 * replacement, and the members an event carries as the watch changes them. */
#include "config.h"

#include <check.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../src/stage/stage_int.h"
#include "logferry/kube.h"

#define K8S_ID   "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
#define PATH_WEB "/host/var/log/containers/web-1_shop_app-" K8S_ID ".log"

static const struct lf_kube_render_opts opts = { .labels = true, .dedot = true };

/* A v1 Pod as the API server writes it, with one label app=<app>. */
static struct lf_kube_pod *pod(const char *ns, const char *name, const char *uid, const char *app)
{
    char text[1024];
    snprintf(text, sizeof(text),
             "{\"kind\":\"Pod\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":\"%s\","
             "\"namespace\":\"%s\",\"uid\":\"%s\",\"resourceVersion\":\"7\","
             "\"labels\":{\"app\":\"%s\"}},\"spec\":{\"nodeName\":\"n1\",\"containers\":"
             "[{\"name\":\"app\",\"image\":\"shop/web:1.2\"}]},\"status\":{\"podIP\":"
             "\"10.1.2.3\",\"phase\":\"Running\"}}",
             name, ns, uid, app);
    json_error_t jerr;
    json_t *j = json_loads(text, 0, &jerr);
    ck_assert_ptr_nonnull(j);
    struct lf_kube_pod *p = NULL;
    struct lf_errbuf eb = { "" };
    ck_assert_int_eq(lf_kube_pod_from_json(j, &opts, &p, &eb), LF_OK);
    json_decref(j);
    return p;
}

static struct lf_kube_cache *cache;

static void setup(void)
{
    ck_assert_int_eq(lf_kube_cache_new(5000, &cache), LF_OK);
}

static void teardown(void)
{
    lf_kube_cache_set_current(NULL);
    lf_kube_cache_free(cache);
    cache = NULL;
}

static struct lf_str s(const char *c)
{
    return lf_str_make(c, strlen(c));
}

static bool has(const struct lf_kube_pod *p, const char *text)
{
    return p != NULL && memmem(p->members.ptr, p->members.len, text, strlen(text)) != NULL;
}

START_TEST(a_pod_is_found_by_namespace_and_name_and_keeps_its_record_while_replaced)
{
    lf_kube_cache_list_begin(cache);
    lf_kube_cache_put_pod(cache, pod("shop", "web-1", "u1", "web"));
    lf_kube_cache_put_pod(cache, pod("shop", "db-0", "u2", "db"));
    lf_kube_cache_list_end(cache, 1000);
    struct lf_kube_view v;
    lf_kube_cache_lookup(cache, s("shop"), s("web-1"), &v);
    ck_assert(has(v.pod, "\"app\":\"web\""));
    ck_assert_ptr_null(v.ns);
    struct lf_kube_view none;
    lf_kube_cache_lookup(cache, s("other"), s("web-1"), &none);
    ck_assert_ptr_null(none.pod);
    /* A MODIFIED with a new label replaces the record; the reader's stays whole. */
    uint64_t gen = lf_kube_cache_gen(cache);
    lf_kube_cache_put_pod(cache, pod("shop", "web-1", "u1", "web2"));
    ck_assert_uint_gt(lf_kube_cache_gen(cache), gen);
    ck_assert(has(v.pod, "\"app\":\"web\""));
    struct lf_kube_view v2;
    lf_kube_cache_lookup(cache, s("shop"), s("web-1"), &v2);
    ck_assert(has(v2.pod, "\"app\":\"web2\""));
    lf_kube_view_release(&v);
    lf_kube_view_release(&v2);
    struct lf_kube_stats st;
    lf_kube_cache_stats(cache, &st);
    ck_assert_uint_eq(st.pods, 2);
    ck_assert_uint_gt(st.bytes, 0);
}
END_TEST

START_TEST(an_update_that_changes_nothing_an_event_carries_leaves_the_generation)
{
    lf_kube_cache_put_pod(cache, pod("shop", "web-1", "u1", "web"));
    struct lf_kube_view v;
    lf_kube_cache_lookup(cache, s("shop"), s("web-1"), &v);
    uint64_t gen = lf_kube_cache_gen(cache);
    lf_kube_cache_put_pod(cache, pod("shop", "web-1", "u1", "web")); /* status only */
    ck_assert_uint_eq(lf_kube_cache_gen(cache), gen);
    struct lf_kube_view v2;
    lf_kube_cache_lookup(cache, s("shop"), s("web-1"), &v2);
    ck_assert_ptr_eq(v2.pod, v.pod); /* the same record: nothing to render again */
    lf_kube_view_release(&v);
    lf_kube_view_release(&v2);
}
END_TEST

START_TEST(a_deleted_pod_is_found_for_its_grace_then_dropped)
{
    lf_kube_cache_put_pod(cache, pod("shop", "web-1", "u1", "web"));
    lf_kube_cache_delete_pod(cache, "u1", 10000);
    lf_kube_cache_sweep(cache, 14999);
    struct lf_kube_view v;
    lf_kube_cache_lookup(cache, s("shop"), s("web-1"), &v);
    ck_assert(has(v.pod, "\"app\":\"web\""));
    lf_kube_cache_sweep(cache, 15000);
    struct lf_kube_view gone;
    lf_kube_cache_lookup(cache, s("shop"), s("web-1"), &gone);
    ck_assert_ptr_null(gone.pod);
    ck_assert(has(v.pod, "\"app\":\"web\"")); /* the reader's reference outlives the drop */
    lf_kube_view_release(&v);
    struct lf_kube_stats st;
    lf_kube_cache_stats(cache, &st);
    ck_assert_uint_eq(st.pods, 0);
    ck_assert_uint_eq(st.bytes, 0);
}
END_TEST

START_TEST(a_live_pod_wins_over_a_deleted_one_of_the_same_name)
{
    /* A StatefulSet's pod is deleted and comes back under its name with a new uid. */
    lf_kube_cache_put_pod(cache, pod("shop", "db-0", "old", "v1"));
    lf_kube_cache_delete_pod(cache, "old", 1000);
    lf_kube_cache_put_pod(cache, pod("shop", "db-0", "new", "v2"));
    struct lf_kube_view v;
    lf_kube_cache_lookup(cache, s("shop"), s("db-0"), &v);
    ck_assert(has(v.pod, "\"app\":\"v2\""));
    lf_kube_view_release(&v);
}
END_TEST

START_TEST(a_list_forgets_after_the_grace_what_it_no_longer_names)
{
    lf_kube_cache_list_begin(cache);
    lf_kube_cache_put_pod(cache, pod("shop", "web-1", "u1", "web"));
    lf_kube_cache_put_pod(cache, pod("shop", "web-2", "u2", "web"));
    lf_kube_cache_list_end(cache, 1000);
    /* The watch was down while web-2 was deleted: the re-list does not name it. */
    lf_kube_cache_list_begin(cache);
    lf_kube_cache_put_pod(cache, pod("shop", "web-1", "u1", "web"));
    lf_kube_cache_list_end(cache, 2000);
    struct lf_kube_view v;
    lf_kube_cache_lookup(cache, s("shop"), s("web-2"), &v);
    ck_assert_ptr_nonnull(v.pod); /* its last lines still find it */
    lf_kube_view_release(&v);
    lf_kube_cache_sweep(cache, 7000);
    lf_kube_cache_lookup(cache, s("shop"), s("web-2"), &v);
    ck_assert_ptr_null(v.pod);
    lf_kube_cache_lookup(cache, s("shop"), s("web-1"), &v);
    ck_assert_ptr_nonnull(v.pod);
    lf_kube_view_release(&v);
}
END_TEST

START_TEST(only_a_synced_cache_makes_new_files_wait)
{
    ck_assert(!lf_kube_cache_awaits(cache, s("shop"), s("web-1"))); /* API server away */
    ck_assert(!lf_kube_cache_wait_synced(cache, 10));
    lf_kube_cache_set_synced(cache, true);
    ck_assert(lf_kube_cache_wait_synced(cache, 0));
    ck_assert(lf_kube_cache_awaits(cache, s("shop"), s("web-1")));
    lf_kube_cache_put_pod(cache, pod("shop", "web-1", "u1", "web"));
    ck_assert(!lf_kube_cache_awaits(cache, s("shop"), s("web-1")));
}
END_TEST

/* ---- the container stage with the cache ---- */

static struct {
    struct lf_config *cfg;
    struct lf_chain_spec *spec;
    struct lf_chain *chain;
    struct lf_source *src;
    char *extra[16];
    size_t n;
} fx;

static enum lf_err collect(void *arg, const struct lf_event *ev)
{
    (void)arg;
    ck_assert_uint_lt(fx.n, 16);
    fx.extra[fx.n++] = strndup(ev->extra.ptr != NULL ? ev->extra.ptr : "", ev->extra.len);
    return LF_OK;
}

static const struct lf_stage_out sink = { collect, NULL };

static void chain_start(const char *path)
{
    static const char yaml[] = "inputs:\n  - id: k8s\n    paths: ['/x/*.log']\n"
                               "    parsers: [{container: {}}]\n"
                               "outputs:\n  - name: c\n    type: console\n";
    struct lf_buf errors;
    lf_buf_init(&errors, 1 << 16);
    ck_assert_int_eq(lf_config_load_mem("test.yml", yaml, strlen(yaml), &fx.cfg, &errors), LF_OK);
    lf_buf_release(&errors);
    struct lf_errbuf eb = { "" };
    ck_assert_int_eq(lf_chain_spec_new(&fx.cfg->inputs[0], 0, &fx.spec, NULL, &eb), LF_OK);
    ck_assert_int_eq(lf_chain_new(fx.spec, &sink, &fx.chain), LF_OK);
    ck_assert_int_eq(lf_source_new(path, "k8s", "node-1", NULL, false, &fx.src), LF_OK);
}

static void chain_teardown(void)
{
    lf_chain_free(fx.chain); /* first: its stage holds records of the cache */
    lf_chain_spec_free(fx.spec);
    lf_config_free(fx.cfg);
    lf_source_free(fx.src);
    for (size_t i = 0; i < fx.n; i++)
        free(fx.extra[i]);
    memset(&fx, 0, sizeof(fx));
    teardown();
}

static void feed(const char *line)
{
    size_t len = strlen(line);
    struct lf_event ev = { lf_str_make(line, len), 42, 0, len + 1, 0, fx.src, { NULL, 0 }, 0 };
    ck_assert_int_eq(lf_chain_process(fx.chain, &ev, 0), LF_OK);
}

#define LINE "2026-11-30T01:02:03Z stdout F hello"
#define NAMES_ONLY                                                                      \
    "\"stream\":\"stdout\",\"kubernetes\":{\"pod\":{\"name\":\"web-1\"},\"namespace\":" \
    "\"shop\",\"container\":{\"name\":\"app\"}},\"container\":{\"id\":\"" K8S_ID "\"}"

/* What an event of PATH_WEB carries with p known. */
static char *want_with(const struct lf_kube_pod *p)
{
    char *w = NULL;
    ck_assert_int_ge(asprintf(&w,
                              "\"stream\":\"stdout\",\"kubernetes\":{%.*s,\"container\":"
                              "{\"name\":\"app\"}},\"container\":{\"id\":\"" K8S_ID
                              "\",\"image\":{\"name\":\"shop/web:1.2\"}}",
                              (int)p->members.len, p->members.ptr),
                     0);
    return w;
}

START_TEST(events_carry_the_pod_s_members_and_follow_its_changes)
{
    chain_start(PATH_WEB);
    lf_kube_cache_set_current(cache);
    lf_kube_cache_put_pod(cache, pod("shop", "web-1", "u1", "web"));
    struct lf_kube_view v;
    lf_kube_cache_lookup(cache, s("shop"), s("web-1"), &v);
    char *want = want_with(v.pod);
    feed(LINE);
    feed(LINE);
    ck_assert_uint_eq(fx.n, 2);
    ck_assert_str_eq(fx.extra[0], want);
    ck_assert_str_eq(fx.extra[1], want);
    ck_assert(strstr(fx.extra[0], "\"labels\":{\"app\":\"web\"}") != NULL);
    free(want);
    lf_kube_view_release(&v);
    /* A label changed mid-run: the next event has the new value. */
    lf_kube_cache_put_pod(cache, pod("shop", "web-1", "u1", "canary"));
    feed(LINE);
    ck_assert(strstr(fx.extra[2], "\"labels\":{\"app\":\"canary\"}") != NULL);
    /* Deleted: still there during the grace; gone after it, the names from the path stay. */
    lf_kube_cache_delete_pod(cache, "u1", 100);
    feed(LINE);
    ck_assert(strstr(fx.extra[3], "\"labels\":{\"app\":\"canary\"}") != NULL);
    lf_kube_cache_sweep(cache, 100 + 5000);
    feed(LINE);
    ck_assert_str_eq(fx.extra[4], NAMES_ONLY);
    struct lf_kube_stats st;
    lf_kube_cache_stats(cache, &st);
    ck_assert_uint_eq(st.misses, 0);
}
END_TEST

START_TEST(a_file_of_an_unknown_pod_counts_one_miss_then_gets_the_pod_when_it_comes)
{
    chain_start(PATH_WEB);
    lf_kube_cache_set_current(cache);
    feed(LINE);
    feed(LINE);
    ck_assert_str_eq(fx.extra[0], NAMES_ONLY);
    ck_assert_str_eq(fx.extra[1], NAMES_ONLY);
    struct lf_kube_stats st;
    lf_kube_cache_stats(cache, &st);
    ck_assert_uint_eq(st.misses, 1); /* per file, not per event */
    lf_kube_cache_put_pod(cache, pod("shop", "web-1", "u1", "web"));
    feed(LINE);
    ck_assert(strstr(fx.extra[2], "\"labels\":{\"app\":\"web\"}") != NULL);
}
END_TEST

START_TEST(a_reload_that_turns_the_section_off_or_on_changes_the_next_event)
{
    chain_start(PATH_WEB);
    lf_kube_cache_set_current(cache);
    lf_kube_cache_put_pod(cache, pod("shop", "web-1", "u1", "web"));
    feed(LINE);
    ck_assert(strstr(fx.extra[0], "\"labels\":{\"app\":\"web\"}") != NULL);
    lf_kube_cache_set_current(NULL); /* kubernetes.enabled: false */
    feed(LINE);
    ck_assert_str_eq(fx.extra[1], NAMES_ONLY);
    lf_kube_cache_set_current(cache); /* on again */
    feed(LINE);
    ck_assert_str_eq(fx.extra[2], fx.extra[0]);
    struct lf_kube_stats st;
    lf_kube_cache_stats(cache, &st);
    ck_assert_uint_eq(st.misses, 0);
}
END_TEST

START_TEST(without_a_cache_events_carry_the_names_from_the_path)
{
    chain_start(PATH_WEB);
    feed(LINE);
    ck_assert_str_eq(fx.extra[0], NAMES_ONLY);
}
END_TEST

static Suite *suite(void)
{
    Suite *su = suite_create("kube_cache");
    TCase *c = tcase_create("cache");
    tcase_add_checked_fixture(c, setup, teardown);
    tcase_add_test(c, a_pod_is_found_by_namespace_and_name_and_keeps_its_record_while_replaced);
    tcase_add_test(c, an_update_that_changes_nothing_an_event_carries_leaves_the_generation);
    tcase_add_test(c, a_deleted_pod_is_found_for_its_grace_then_dropped);
    tcase_add_test(c, a_live_pod_wins_over_a_deleted_one_of_the_same_name);
    tcase_add_test(c, a_list_forgets_after_the_grace_what_it_no_longer_names);
    tcase_add_test(c, only_a_synced_cache_makes_new_files_wait);
    suite_add_tcase(su, c);
    TCase *st = tcase_create("stage");
    tcase_add_checked_fixture(st, setup, chain_teardown);
    tcase_add_test(st, events_carry_the_pod_s_members_and_follow_its_changes);
    tcase_add_test(st, a_file_of_an_unknown_pod_counts_one_miss_then_gets_the_pod_when_it_comes);
    tcase_add_test(st, a_reload_that_turns_the_section_off_or_on_changes_the_next_event);
    tcase_add_test(st, without_a_cache_events_carry_the_names_from_the_path);
    suite_add_tcase(su, st);
    return su;
}

int main(void)
{
    SRunner *sr = srunner_create(suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
