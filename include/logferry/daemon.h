/* daemon.h - the tailing agent: follows files until SIGTERM/SIGINT. */
#ifndef LF_DAEMON_H
#define LF_DAEMON_H

#include "logferry/config.h"

/* Runs the agent on cfg until SIGTERM or SIGINT, then stops gracefully within
 * shutdown_timeout. Returns the process exit code: 0 after a graceful stop, 1 when the
 * data_dir or registry is unusable or the agent cannot start, 2 when the config asks for
 * what this build cannot run. Main thread (it runs the libuv loop). */
int lf_daemon_run(const struct lf_config *cfg);

#endif
