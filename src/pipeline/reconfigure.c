/* reconfigure.c - lf_pipeline_reconfigure(): switching the lanes and inputs to a new config.
 *
 *   old lanes ──same settings──► kept as they are
 *             ──changed──────► retire, hand what they have not sent to the new lane
 *             ──removed──────► retire, send what they hold (30 s at most), end
 *
 * Builds the new lanes first (so a failure changes nothing), then switches under p->mu; the
 * retiring lanes are reaped (joined, freed) later by lf_pipeline__reap_lanes(). Producer
 * thread (lf_pipeline_borrows(): any thread). */
#include "config.h"

#define LF_LOG_COMPONENT "pipeline"
#include "pipeline_int.h"

#include <stdlib.h>
#include <string.h>

#include "logferry/log.h"

/* Joins and frees the retiring lanes whose threads ended, unless a batch is being prepared
 * (for their outputs, perhaps). Never on a lane's thread. */
void lf_pipeline__reap_lanes(struct lf_pipeline *p)
{
    struct lane *done[16];
    size_t n = 0;
    uv_mutex_lock(&p->mu);
    if (p->lane_ended && p->preparing == 0) {
        p->lane_ended = false;
        size_t k = p->n_outputs;
        for (size_t i = p->n_outputs; i < p->n_lanes; i++) {
            struct lane *l = p->lanes[i];
            if (lf_lane__ended_locked(l) && n < 16) {
                done[n++] = l;
                continue;
            }
            p->lane_ended |= lf_lane__ended_locked(l); /* the next call takes it */
            p->lanes[k++] = l;
        }
        p->n_lanes = k;
    }
    uv_mutex_unlock(&p->mu);
    for (size_t i = 0; i < n; i++) {
        lf_lane__join(done[i]);
        lf_lane__free(done[i]);
    }
}

/* What a reconfiguration builds before it changes anything, so that it can still fail
 * without effect. */
struct reconf {
    struct lane **lanes; /* per new output: an old lane kept, or a new one (started) */
    bool *kept;          /* per new output */
    struct lane **all;   /* the new p->lanes: room for the new ones and every old one */
    struct qbatch **current; /* per new input (the producer) */
    enum lf_batch_mode *modes;
};

/* Ends and frees the new lanes of r (a reconfiguration that failed), and r. */
static void reconf_undo(struct lf_pipeline *p, struct reconf *r, size_t n_new)
{
    for (size_t j = 0; j < n_new && r->lanes != NULL; j++) {
        struct lane *l = r->lanes[j];
        if (l == NULL || r->kept[j])
            continue;
        uv_mutex_lock(&p->mu);
        lf_lane__retire_locked(l, NULL); /* it has nothing: it ends at once */
        uv_mutex_unlock(&p->mu);
        lf_lane__join(l);
        lf_lane__free(l);
    }
    free(r->lanes);
    free(r->kept);
    free(r->all);
    free(r->current);
    free(r->modes);
}

/* p's current lane for the output named name, or NULL. Producer thread (the only one that
 * changes the current lanes). */
static struct lane *current_lane(const struct lf_pipeline *p, const char *name)
{
    for (size_t i = 0; i < p->n_outputs; i++) {
        if (strcmp(lf_lane__conf(p->lanes[i])->name, name) == 0)
            return p->lanes[i];
    }
    return NULL;
}

/* Builds r for cfg: an output whose settings are the same keeps its lane, the others get
 * a new lane, made, opened and started (with nothing to send yet). Nothing of lp changes.
 * n_inputs sizes the producer's new arrays. */
static enum lf_err reconf_build(struct lf_pipeline *lp, const struct lf_config *cfg,
                                struct reconf *r, struct lf_errbuf *eb)
{
    size_t n_new = cfg->n_outputs ? cfg->n_outputs : 1;
    size_t n_in = cfg->n_inputs ? cfg->n_inputs : 1;
    r->lanes = calloc(n_new, sizeof(*r->lanes));
    r->kept = calloc(n_new, sizeof(*r->kept));
    r->all = calloc(n_new + lp->n_lanes, sizeof(*r->all));
    r->current = calloc(CURRENT_SLOTS(n_in), sizeof(*r->current));
    r->modes = calloc(n_in, sizeof(*r->modes));
    if (r->lanes == NULL || r->kept == NULL || r->all == NULL || r->current == NULL ||
        r->modes == NULL)
        return lf_fail(eb, LF_ENOMEM, "out of memory");
    for (size_t j = 0; j < cfg->n_outputs; j++) {
        const struct lf_output_conf *oc = &cfg->outputs[j];
        struct lane *old = current_lane(lp, oc->name);
        if (old != NULL && lf_config_output_same(lf_lane__conf(old), oc)) {
            r->kept[j] = true;
            r->lanes[j] = old;
            continue;
        }
        enum lf_err err = lf_lane__new(lp, oc, LANE_SLOTS(cfg->n_inputs), &r->lanes[j], eb);
        if (!err)
            err = lf_lane__start(r->lanes[j], eb);
        if (err)
            return err;
    }
    return LF_OK;
}

/* Switches lp's lanes to r's: the new ones first, in cfg's order, then the retiring ones
 * (old lanes not kept, and those retiring already). lp->cfg is the caller's to switch.
 * Called with lp->mu held. */
static void lanes_switch_locked(struct lf_pipeline *lp, const struct lf_config *cfg,
                                struct reconf *r)
{
    size_t k = 0;
    for (size_t j = 0; j < cfg->n_outputs; j++)
        r->all[k++] = r->lanes[j];
    for (size_t i = 0; i < lp->n_outputs; i++) {
        struct lane *l = lp->lanes[i];
        struct lane *succ = NULL;
        bool kept = false;
        for (size_t j = 0; j < cfg->n_outputs; j++) {
            kept |= r->lanes[j] == l;
            if (!r->kept[j] && strcmp(lf_lane__conf(r->lanes[j])->name, lf_lane__conf(l)->name) == 0)
                succ = r->lanes[j];
        }
        if (kept)
            continue;
        lf_lane__retire_locked(l, succ);
        r->all[k++] = l;
    }
    for (size_t i = lp->n_outputs; i < lp->n_lanes; i++)
        r->all[k++] = lp->lanes[i];
    struct lane **old = lp->lanes;
    lp->lanes = r->all;
    r->all = old; /* freed with r */
    lp->n_outputs = cfg->n_outputs;
    lp->n_lanes = k;
}

/* The producer's side: cfg's inputs, their batch modes (from lp's new lanes), empty current
 * batches. Called with p->mu held. */
static void producer_switch_locked(struct lf_pipeline *p, const struct lf_config *cfg,
                                   struct reconf *r)
{
    for (size_t i = 0; i < CURRENT_SLOTS(p->cfg->n_inputs); i++) {
        struct qbatch *qb = p->current[i]; /* empty: flushed before */
        if (qb != NULL)
            lf_pipeline__recycle_locked(p, qb);
    }
    struct qbatch **cur = p->current;
    enum lf_batch_mode *modes = p->modes;
    p->current = r->current;
    p->modes = r->modes;
    r->current = cur;
    r->modes = modes; /* freed with r */
    p->cfg = cfg;
}

enum lf_err lf_pipeline_reconfigure(struct lf_pipeline *p, const struct lf_config *cfg,
                                    struct lf_errbuf *eb)
{
    uv_mutex_lock(&p->mu);
    size_t producers = p->n_producers;
    uv_mutex_unlock(&p->mu);
    if (producers > 0)
        return lf_fail(eb, LF_EINVAL, "reconfigured with other producers alive");
    /* Spool mode: the delivery pipeline's lanes change; the producer's inputs. */
    struct lf_pipeline *lp = p->spool != NULL ? p->delivery : p;
    size_t n_new = cfg->n_outputs ? cfg->n_outputs : 1;
    struct reconf r = { 0 };
    enum lf_err err = reconf_build(lp, cfg, &r, eb);
    if (err) {
        reconf_undo(lp, &r, n_new);
        return err;
    }
    /* What was read under the old config is cut and queued (or spooled) by its routes. A
     * failure shows again at the next push. */
    lf_err_ignore(lf_pipeline__flush_current(p, p->current));
    uv_mutex_lock(&lp->mu);
    lanes_switch_locked(lp, cfg, &r);
    lf_pipeline__set_modes(cfg, lp->lanes, r.modes);
    if (lp == p)
        producer_switch_locked(p, cfg, &r); /* sets p->cfg, after the old one's inputs */
    else
        lp->cfg = cfg;
    uv_mutex_unlock(&lp->mu);
    if (lp != p) {
        uv_mutex_lock(&p->mu);
        producer_switch_locked(p, cfg, &r);
        uv_mutex_unlock(&p->mu);
    }
    free(r.lanes);
    free(r.kept);
    free(r.all);
    free(r.current);
    free(r.modes);
    lf_pipeline__reap_lanes(lp);
    return LF_OK;
}

bool lf_pipeline_borrows(struct lf_pipeline *p, const struct lf_config *cfg)
{
    struct lf_pipeline *d = lf_pipeline__delivery_get(p);
    if (d != NULL) {
        bool used = lf_pipeline_borrows(d, cfg);
        lf_pipeline__delivery_put(p);
        if (used)
            return true;
    }
    uintptr_t lo = (uintptr_t)cfg->outputs;
    uintptr_t hi = (uintptr_t)(cfg->outputs + cfg->n_outputs);
    uv_mutex_lock(&p->mu);
    bool used = p->cfg == cfg;
    for (size_t i = 0; i < p->n_lanes && !used; i++) { /* retiring ones too */
        uintptr_t c = (uintptr_t)lf_lane__conf(p->lanes[i]);
        used = c >= lo && c < hi;
    }
    for (const struct qbatch *qb = p->head; qb != NULL && !used; qb = qb->next)
        used = qb->cfg == cfg; /* cut under it: names its input and routes */
    uv_mutex_unlock(&p->mu);
    return used;
}
