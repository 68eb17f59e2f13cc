/* agent_int.h - shared within src/agent/ only: what the metrics endpoint looks at. */
#ifndef LF_AGENT_INT_H
#define LF_AGENT_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "logferry/buf.h"
#include "logferry/config.h"
#include "logferry/pipeline.h"
#include "logferry/tail.h"

/* The running daemon's parts, as the exporter reads them (all borrowed). Loop thread. */
struct lf_agent_view {
    const struct lf_config *cfg;
    struct lf_tail *tail;
    struct lf_pipeline *pipeline;
    struct lf_tail_input_stats *scratch_inputs; /* owned by the daemon; n_inputs slots */
    uint64_t reloads_ok;
    uint64_t reloads_error;
};

/* lf_metrics_render_fn over a struct lf_agent_view: every family of SPEC.md "Metrics". */
enum lf_err lf_agent_render_metrics(void *arg, struct lf_buf *out);

/* lf_metrics_health_fn: healthy while every output delivers within its retry budget. */
bool lf_agent_healthy(void *arg);

#endif
