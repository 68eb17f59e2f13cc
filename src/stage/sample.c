/* sample.c - the sample stage: keeps 1 event in N; the others are dropped (acknowledged,
 * never sent, counted as sampled out).
 *
 *   sample: {rate: 10, key: "%{trace.id}"}
 *
 * With a key, the decision is the key's: an event is kept when the key's hash
 * (lf_stage__key_hash(): fixed and seedless) is 0 modulo N, so every line of a trace is
 * kept or dropped together, by every agent, in every run, and about 1 key in N is kept.
 * Events whose key renders empty (the field is missing) share one decision. Without a key,
 * a counter per source keeps its 1st, (N+1)th, (2N+1)th ... event: exact, no state shared
 * between sources or threads, and started again when a source's chain is (a new file, a
 * restart, a reload of a changed input). Nothing is allocated per event. */
#include "config.h"

#include "stage_int.h"

struct sample_spec {
    struct lf_stage_head head;
    size_t rate; /* keep 1 in rate */
    bool keyed;  /* key set: decide by it; else by the counter */
    struct lf_tmpl key;
};

struct sample_state {
    struct lf_stage_head head;
    struct lf_buf scratch; /* the rendered key */
    uint64_t seen;         /* events of this source so far (without a key) */
};

static void release(void *spec)
{
    struct sample_spec *s = spec;
    lf_tmpl_release(&s->key);
}

static enum lf_err build(void *spec, const struct lf_parser_conf *pc, struct lf_errbuf *eb)
{
    struct sample_spec *s = spec;
    s->keyed = pc->u.sample.key != NULL;
    return s->keyed ? lf_stage__key_compile("sample", pc->u.sample.key, &s->key, eb) : LF_OK;
}

#define S struct sample_spec
static const struct lf_stage_opt opts[] = {
    LF_STAGE_VALUE("rate", S, rate, u.sample.rate),
    LF_STAGE_OPT_END,
};
#undef S
static const struct lf_stage_slot slots[] = {
    LF_STAGE_BUF(struct sample_state, scratch),
    LF_STAGE_SLOT_END,
};
static const struct lf_stage_table table = {
    .name = "sample",
    .opts = opts,
    .spec_size = sizeof(struct sample_spec),
    .build = build,
    .release = release,
    .state_size = sizeof(struct sample_state),
    .slots = slots,
};

static enum lf_err process(const void *spec,
                           void *state,
                           const struct lf_event *ev,
                           int64_t now_ms,
                           const struct lf_stage_out *out)
{
    const struct sample_spec *s = spec;
    struct sample_state *st = state;
    (void)now_ms;
    bool keep;
    if (s->keyed) {
        struct lf_str key;
        enum lf_err err = lf_stage__key_render(&s->key, ev, &st->scratch, &key);
        if (err)
            return err;
        keep = lf_stage__key_hash(key) % s->rate == 0;
    } else {
        keep = st->seen++ % s->rate == 0;
    }
    if (keep)
        return out->emit(out->arg, ev);
    return lf_stage__emit_dropped(ev, LF_EVENT_SAMPLED_OUT, out);
}

const struct lf_stage_ops lf_stage_sample = {
    .kind = LF_PARSER_SAMPLE,
    LF_STAGE_TABLE_OPS(table),
    .process = process,
};
