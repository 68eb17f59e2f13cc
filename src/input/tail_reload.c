/* tail_reload.c - a reload applied by the tail thread between two turns (see
 * lf_tail_reload() in tail.h): inputs matched by id, kept ones untouched, changed ones
 * rebound to their new stages, removed ones departed until their events are answered,
 * outputs reconfigured.
 *
 * Tail thread only, between read phases (the readers are stopped first). */
#include "config.h"

#define LF_LOG_COMPONENT "tail"
#include "tail_int.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "logferry/buf.h"
#include "logferry/log.h"

/* What a reload builds before it changes anything. */
struct reload_parts {
    size_t *map;                      /* per old input: its new index, or SIZE_MAX when it goes
                                         (removed, or changed: it starts again) */
    size_t *heir;                     /* per old input: the new input of its id (kept or
                                         changed), or SIZE_MAX (removed) */
    struct lf_discover **disc;        /* per new input */
    bool *moved;                      /* per new input: disc[j] was the old input's */
    bool *fresh;                      /* per new input */
    bool *skipped;                    /* per new input: skip_if_exists */
    bool *hinted;                     /* per new input: the journal hint said (none yet) */
    struct lf_tail_input_stats *stats; /* per new input */
};

static void reload_parts_free(struct reload_parts *r, size_t n_new)
{
    for (size_t j = 0; j < n_new && r->disc != NULL && r->moved != NULL; j++) {
        if (!r->moved[j])
            lf_discover_free(r->disc[j]);
    }
    free(r->map);
    free(r->heir);
    free(r->disc);
    free(r->moved);
    free(r->fresh);
    free(r->skipped);
    free(r->hinted);
    free(r->stats);
}

/* Matches the inputs of cfg with the running ones by id and makes what new and changed
 * inputs need; changes nothing of t. */
static enum lf_err reload_build(struct lf_tail *t, const struct lf_config *cfg,
                                struct reload_parts *r, struct lf_errbuf *eb)
{
    size_t n_old = t->cfg->n_inputs ? t->cfg->n_inputs : 1;
    size_t n_new = cfg->n_inputs ? cfg->n_inputs : 1;
    r->map = calloc(n_old, sizeof(*r->map));
    r->heir = calloc(n_old, sizeof(*r->heir));
    r->disc = calloc(n_new, sizeof(*r->disc));
    r->moved = calloc(n_new, sizeof(*r->moved));
    r->fresh = calloc(n_new, sizeof(*r->fresh));
    r->stats = calloc(n_new, sizeof(*r->stats));
    r->skipped = calloc(n_new, sizeof(*r->skipped));
    r->hinted = calloc(n_new, sizeof(*r->hinted));
    if (r->map == NULL || r->heir == NULL || r->disc == NULL || r->moved == NULL ||
        r->fresh == NULL || r->stats == NULL || r->skipped == NULL || r->hinted == NULL)
        return lf_fail(eb, LF_ENOMEM, "out of memory");
    for (size_t i = 0; i < t->cfg->n_inputs; i++) {
        r->map[i] = SIZE_MAX;
        r->heir[i] = SIZE_MAX;
    }
    for (size_t j = 0; j < cfg->n_inputs; j++) {
        const struct lf_input_conf *in = &cfg->inputs[j];
        size_t i = lf_tail__input_by_id(t, in->id);
        if (i != SIZE_MAX)
            r->heir[i] = j;
        bool skip = lf_tail__skip_input(in); /* checked again at every reload */
        r->skipped[j] = skip;
        if (i != SIZE_MAX && lf_config_input_same(&t->cfg->inputs[i], in) &&
            skip == t->skipped[i]) {
            r->map[i] = j;
            r->disc[j] = t->disc[i]; /* borrows the old config: the owner keeps it */
            r->moved[j] = true;
            r->fresh[j] = t->fresh[i];
            continue;
        }
        r->fresh[j] = i == SIZE_MAX || (skip != t->skipped[i] && !skip);
        if (in->type != LF_INPUT_FILE || skip)
            continue;
        enum lf_err err = lf_discover_new(in, &r->disc[j], eb);
        if (err)
            return err;
    }
    return LF_OK;
}

/* Keeps h, a harvester of an input a reload removed, outside t->h until its events in
 * flight are answered (they name it); its file and stages go now. */
static void depart(struct lf_tail *t, struct harv *h)
{
    lf_tail__harv_close(t, h);
    lf_chain_free(h->chain); /* a held event is dropped, as the input is */
    h->chain = NULL;
    h->input_idx = SIZE_MAX;
    if (h->inflight == 0) {
        lf_tail__harv_free(t, h);
        return;
    }
    if (lf_array_grow(&t->departed, &t->cap_departed, t->n_departed, sizeof(*t->departed),
                      16)) {
        /* Never freed then: its answers still find it. */
        lf_error("out of memory keeping a removed input's file %s; it is freed at exit",
                 h->path);
        return;
    }
    t->departed[t->n_departed++] = h;
}

/* The harvesters of removed inputs, and of inputs skip_if_exists turns off now, depart.
 * Before t->cfg changes. */
static void depart_removed(struct lf_tail *t, const struct reload_parts *r)
{
    for (size_t i = 0; i < t->n_h;) {
        struct harv *h = t->h[i];
        size_t heir = r->heir[h->input_idx];
        if (heir == SIZE_MAX || r->skipped[heir]) {
            memmove(t->h + i, t->h + i + 1, (t->n_h - i - 1) * sizeof(*t->h));
            t->n_h--;
            depart(t, h);
            continue;
        }
        i++;
    }
}

/* The journals of removed inputs, of inputs now skipped and of inputs no longer journald
 * depart; kept ones read the new config's input; changed ones take its settings. After
 * t->cfg and t->specs became the new ones. */
static void move_journals(struct lf_tail *t, const struct reload_parts *r)
{
    size_t k = 0;
    for (size_t i = 0; i < t->n_jh; i++) {
        struct harv *h = t->jh[i];
        size_t was = h->input_idx;
        size_t now = r->heir[was];
        if (now == SIZE_MAX || r->skipped[now] || t->cfg->inputs[now].type != LF_INPUT_JOURNALD) {
            depart(t, h); /* its position stays in the registry as acknowledged */
            t->journal_fds_changed = true;
            continue;
        }
        if (lf_tail__journal_rebind(t, h, now, r->map[was] == SIZE_MAX))
            lf_warn("input %s: out of memory taking the new settings", t->cfg->inputs[now].id);
        t->jh[k++] = h;
    }
    t->n_jh = k;
}

/* The harvesters of kept and changed inputs get their new index (changed ones: new stages
 * and source, reading on from where their last event went out). After t->cfg and t->specs
 * became the new ones. */
static void move_harvesters(struct lf_tail *t, const struct reload_parts *r)
{
    for (size_t i = 0; i < t->n_h; i++) {
        struct harv *h = t->h[i];
        size_t was = h->input_idx;
        if (r->map[was] != SIZE_MAX) {
            h->input_idx = r->map[was];
        } else if (lf_tail__harv_rebind(t, h, r->heir[was])) {
            lf_warn("input %s: %s: out of memory taking the new settings; closed, reopened "
                    "where it was at the next scan", t->cfg->inputs[r->heir[was]].id, h->path);
        }
    }
}

/* Applies a reload between two turns, without waiting for any output: what was read is cut
 * and queued by the old routes, and the registry brought up to date (never past an event a
 * stage holds); then the outputs change (lf_pipeline_reconfigure()); harvesters of unchanged
 * inputs keep their files, offsets and held events; those of changed inputs keep their
 * files and offsets and take the new settings; those of removed inputs close and wait,
 * outside the engine, for the answers of their events still in flight. The next scan
 * applies the new and changed inputs' globs. */
enum lf_err lf_tail__reload(struct lf_tail *t, const struct lf_config *cfg,
                          struct lf_chain_spec *const *specs, struct lf_errbuf *eb)
{
    struct reload_parts r = { 0 };
    size_t n_new = cfg->n_inputs;
    enum lf_err err = reload_build(t, cfg, &r, eb);
    lf_tail__readers_stop(t); /* their batches are queued; producers go before a reconfigure */
    lf_pipeline_take_acks(t->pipeline, lf_tail__harv_answer, t);
    if (!err) {
        lf_tail__update_registry(t);
        err = lf_pipeline_reconfigure(t->pipeline, cfg, eb);
    }
    if (err) {
        reload_parts_free(&r, n_new);
        return err;
    }
    for (size_t i = 0; i < t->cfg->n_inputs; i++) {
        if (r.map[i] == SIZE_MAX)
            lf_discover_free(t->disc[i]);
    }
    depart_removed(t, &r);
    uv_mutex_lock(&t->mu);
    for (size_t j = 0; j < n_new; j++) {
        size_t i = lf_tail__input_by_id(t, cfg->inputs[j].id);
        if (i != SIZE_MAX)
            r.stats[j] = t->in_stats[i]; /* counters go on under the same id */
    }
    if (t->in_stdin != NULL)
        t->in_stdin->input_idx = r.map[t->in_stdin->input_idx]; /* kept: the owner refuses
                                                                   other changes to stdin */
    free(t->in_stats);
    t->in_stats = r.stats;
    t->cfg = cfg;
    uv_mutex_unlock(&t->mu);
    t->specs = specs;
    free(t->skipped);
    t->skipped = r.skipped;
    free(t->hinted);
    t->hinted = r.hinted;
    move_harvesters(t, &r);
    move_journals(t, &r);
    if (lf_tail__start_journals(t)) /* new journald inputs */
        lf_error("out of memory starting a new journald input; it starts at the next reload");
    lf_tail__free_retired(t, false);
    free(t->disc);
    t->disc = r.disc;
    free(t->fresh);
    t->fresh = r.fresh;
    free(r.map);
    free(r.heir);
    free(r.moved);
    lf_tail__resort(t);
    t->next_scan_ms = 0;  /* new and changed inputs find their files now */
    t->next_tick_ms = 0;  /* deadlines of held events, learned again */
    t->next_cut_ms = 0;
    return LF_OK;
}
