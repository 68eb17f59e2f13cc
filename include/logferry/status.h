/* status.h - `logferry --status`: how the inputs and outputs are doing, as a table. */
#ifndef LF_STATUS_H
#define LF_STATUS_H

#include "logferry/config.h"

/* Asks the agent at cfg's metrics.listen for GET /status and prints it as a table on
 * stdout; when none answers (or metrics.listen is ""), says why on stderr and prints each
 * file of the registry in cfg's data_dir instead (its size now, the acknowledged offset,
 * the bytes after it). Returns the exit code: 0 printed, 1 neither the agent nor the
 * registry could be read. Main thread. */
int lf_status_run(const struct lf_config *cfg);

#endif
