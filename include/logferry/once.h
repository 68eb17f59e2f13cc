/* once.h - the backfill (--once): every matching file read to its end, then exit. */
#ifndef LF_ONCE_H
#define LF_ONCE_H

#include "logferry/config.h"

/* Reads every file the inputs match (and stdin for type stdin) to its end, delivers every
 * event to the routed outputs and waits for their acknowledgements. Returns the process
 * exit code: 0 all delivered, 1 delivery or data_dir failure, 2 config not runnable.
 * Shows a progress line on stderr when stderr is a terminal. Main thread. */
int lf_once_run(const struct lf_config *cfg);

#endif
