/* registry_open.c - the registry at start-up, for the daemon and --once alike: refuse a
 * broken one, or with --registry-reset-broken move it aside and start empty. */
#include "config.h"

#define LF_LOG_COMPONENT "registry"
#include <stdbool.h>
#include <stdlib.h>

#include "logferry/log.h"
#include "logferry/startup.h"
#include "logferry/registry.h"

static bool registry_reset_broken;

void lf_agent_set_registry_reset(bool on)
{
    registry_reset_broken = on;
}

int lf_agent_open_registry(const struct lf_config *cfg, struct lf_registry **out)
{
    struct lf_errbuf eb = { "" };
    char *moved = NULL;
    enum lf_err err = registry_reset_broken
                          ? lf_registry_open_reset(cfg->data_dir, out, &moved, &eb)
                          : lf_registry_open(cfg->data_dir, out, &eb);
    if (err) {
        lf_error("%s; not starting", eb.msg);
        return 1;
    }
    if (moved != NULL) {
        lf_warn("registry %s/registry was broken: moved aside to %s; starting with an empty "
                "registry (files not yet known start where start_at says)",
                cfg->data_dir, moved);
        free(moved);
    }
    return 0;
}
