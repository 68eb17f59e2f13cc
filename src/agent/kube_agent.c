/* kube_agent.c - the agent's side of pod metadata: one cache for the process, one watcher
 * for the kubernetes section that runs.
 *
 * The daemon and the backfill start it before their inputs (so the files found at start
 * find their pods: the first LIST is waited for, at most kubernetes.wait), stop it after
 * their tail thread ended, and the daemon hands it each committed reload. The cache lives
 * from start to exit, whatever reloads do, since stages hold references to its records;
 * a changed section replaces the watcher only. Loop (or main) thread. */
#include "config.h"

#define LF_LOG_COMPONENT "kubernetes"
#include "agent_int.h"

#include <inttypes.h>
#include <stdlib.h>

#include "logferry/kube.h"

static bool same_text(const char *a, const char *b)
{
    return (a == NULL && b == NULL) || (a != NULL && b != NULL && strcmp(a, b) == 0);
}

static bool same_list(char *const *a, size_t na, char *const *b, size_t nb)
{
    if (na != nb)
        return false;
    for (size_t i = 0; i < na; i++) {
        if (!same_text(a[i], b[i]))
            return false;
    }
    return true;
}

/* Everything but delete_grace, which the cache takes as it is. */
static bool watch_same(const struct lf_kube_conf *a, const struct lf_kube_conf *b)
{
    return a->enabled == b->enabled && same_text(a->api_server, b->api_server) &&
           same_text(a->token_file, b->token_file) && same_text(a->ca_file, b->ca_file) &&
           same_text(a->node_name, b->node_name) && a->wait_ms == b->wait_ms &&
           a->timeout_ms == b->timeout_ms && a->labels == b->labels && a->dedot == b->dedot &&
           a->namespace_labels == b->namespace_labels &&
           same_list(a->ann_include, a->n_ann_include, b->ann_include, b->n_ann_include) &&
           same_list(a->ann_exclude, a->n_ann_exclude, b->ann_exclude, b->n_ann_exclude);
}

enum lf_err lf_agent_kube_start(struct lf_agent_kube *k, const struct lf_config *cfg,
                                struct lf_errbuf *eb)
{
    const struct lf_kube_conf *kc = &cfg->kubernetes;
    if (!kc->enabled)
        return LF_OK;
    if (k->cache == NULL && lf_kube_cache_new(kc->delete_grace_ms, &k->cache))
        return lf_fail(eb, LF_ENOMEM, "kubernetes: out of memory");
    enum lf_err err = lf_kube_watch_start(kc, k->cache, &k->watch, eb);
    if (err)
        return err;
    lf_kube_cache_set_current(k->cache);
    k->conf = kc;
    if (!lf_kube_cache_wait_synced(k->cache, kc->wait_ms))
        lf_warn("the API server has not listed this node's pods within %" PRIu64 " ms: files "
                "are read without pod metadata until it does",
                kc->wait_ms);
    return LF_OK;
}

void lf_agent_kube_reload(struct lf_agent_kube *k, const struct lf_config *cfg)
{
    const struct lf_kube_conf *kc = &cfg->kubernetes;
    if (k->cache != NULL)
        lf_kube_cache_set_grace(k->cache, kc->delete_grace_ms);
    if (k->conf != NULL && watch_same(k->conf, kc)) {
        k->conf = kc; /* the old config is freed once the reload is done */
        return;
    }
    if (k->conf == NULL && !kc->enabled)
        return;
    lf_kube_watch_stop(k->watch);
    k->watch = NULL;
    k->conf = NULL;
    lf_kube_cache_set_current(NULL); /* records already rendered stay with their files */
    if (k->cache != NULL)
        lf_kube_cache_set_synced(k->cache, false); /* until the new watcher has listed */
    if (!kc->enabled) {
        lf_info("pod metadata off: events carry what the file name says");
        return;
    }
    struct lf_errbuf eb = { "" };
    if (k->cache == NULL && lf_kube_cache_new(kc->delete_grace_ms, &k->cache)) {
        lf_error("kubernetes: out of memory; events carry what the file name says");
        return;
    }
    if (lf_kube_watch_start(kc, k->cache, &k->watch, &eb)) {
        lf_error("%s; events carry what the file name says", eb.msg);
        return;
    }
    k->conf = kc;
    lf_kube_cache_set_current(k->cache);
}

void lf_agent_kube_stop(struct lf_agent_kube *k)
{
    lf_kube_watch_stop(k->watch);
    k->watch = NULL;
    k->conf = NULL;
    lf_kube_cache_set_current(NULL);
}

void lf_agent_kube_free(struct lf_agent_kube *k)
{
    lf_agent_kube_stop(k);
    lf_kube_cache_free(k->cache);
    k->cache = NULL;
}
