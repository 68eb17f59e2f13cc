/* drop.c - drop: {when: COND}: drops the events its condition matches.
 *
 * The chain evaluates every stage's `when` (chain.c), so this stage only sees the events
 * to drop. Like include_lines and exclude_lines, it emits each one again with
 * LF_EVENT_DROPPED set rather than swallowing it: the chain routes it to the sink, which
 * counts it as filtered and acknowledges its offsets with its batch, and never sends it. */
#include "config.h"

#include "stage_int.h"

struct drop_spec {
    struct lf_stage_head head;
};

static const struct lf_stage_opt opts[] = {
    LF_STAGE_OPT_END,
};
static const struct lf_stage_table table = {
    .name = "drop",
    .opts = opts,
    .spec_size = sizeof(struct drop_spec),
};

static enum lf_err process(const void *spec,
                           void *state,
                           const struct lf_event *ev,
                           int64_t now_ms,
                           const struct lf_stage_out *out)
{
    (void)spec;
    (void)state;
    (void)now_ms;
    struct lf_event dropped = *ev;
    dropped.flags |= LF_EVENT_DROPPED;
    return out->emit(out->arg, &dropped);
}

const struct lf_stage_ops lf_stage_drop = {
    .kind = LF_PARSER_DROP,
    LF_STAGE_TABLE_OPS(table),
    .process = process,
};
