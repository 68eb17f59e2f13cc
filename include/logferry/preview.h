/* preview.h - --preview INPUT_ID PATH: one input's reader and stages over one file,
 * events as NDJSON on stdout. */
#ifndef LF_PREVIEW_H
#define LF_PREVIEW_H

#include "logferry/config.h"

/* Runs input input_id's reader over path and prints each event as NDJSON on stdout;
 * touches no output and no registry. Returns the process exit code. Main thread. */
int lf_preview_run(const struct lf_config *cfg, const char *input_id, const char *path);

#endif
