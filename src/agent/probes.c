/* probes.c - the daemon's answers to /healthz, /readyz and /status (SPEC.md "Metrics").
 *
 * /healthz is liveness only: the loop thread answers it (a stuck loop answers nothing) and
 * the watchdog says whether another long-lived thread has been blocked for longer than
 * metrics.stuck_after. /readyz follows the daemon's lifecycle flags in the view. Neither
 * looks at the outputs: an outage is reported by /status and the metrics, never by a
 * probe that would restart or unroute the agent holding the backlog. Loop thread. */
#include "config.h"

#include <stdio.h>

#include "agent_int.h"

#include "logferry/metrics.h"
#include "logferry/watchdog.h"

static int answer(struct lf_buf *out, int status, const char *text)
{
    if (lf_buf_append_cstr(out, text) || lf_buf_append_cstr(out, "\n"))
        return 500;
    return status;
}

static int healthz(const struct lf_agent_view *v, struct lf_buf *out)
{
    char why[128];
    if (lf_watchdog_stuck(v->cfg->metrics.stuck_after_ms, why, sizeof(why)))
        return answer(out, 503, why);
    return answer(out, 200, "ok");
}

static int readyz(const struct lf_agent_view *v, struct lf_buf *out)
{
    if (v->stopping)
        return answer(out, 503, "stopping");
    if (!v->ready)
        return answer(out, 503, "starting: inputs not started yet");
    return answer(out, 200, "ready");
}

int lf_agent_probe(void *arg, enum lf_metrics_route route, struct lf_buf *out)
{
    const struct lf_agent_view *v = arg;
    switch (route) {
    case LF_METRICS_ROUTE_HEALTHZ:
        return healthz(v, out);
    case LF_METRICS_ROUTE_READYZ:
        return readyz(v, out);
    case LF_METRICS_ROUTE_STATUS:
        return lf_agent_status_json(v, out) ? 500 : 200;
    default:
        return 500;
    }
}
