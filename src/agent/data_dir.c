/* data_dir.c - data_dir at start-up, for the daemon and --once alike (see once.h). Its
 * messages carry the component "agent": they are the daemon's as much as the backfill's.
 * Main thread. */
#include "config.h"

#define LF_LOG_COMPONENT "agent"
#include <errno.h>
#include <stdbool.h>
#include <unistd.h>

#include "logferry/fsutil.h"
#include "logferry/log.h"
#include "logferry/once.h"

bool lf_agent_data_dir_ok(const struct lf_config *cfg)
{
    int e = lf_mkdir_p(cfg->data_dir, 0700); /* offsets and paths are nobody else's business */
    if (e == 0 && access(cfg->data_dir, W_OK | X_OK) != 0)
        e = errno;
    if (e)
        lf_error("data_dir %s is not usable: %s", cfg->data_dir, lf_strerror(e));
    return e == 0;
}
