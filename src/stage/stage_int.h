/* stage_int.h - the stage types, shared within src/stage/ only. */
#ifndef LF_STAGE_INT_H
#define LF_STAGE_INT_H

#include "logferry/stage.h"

/* One per file in src/stage/; listed in the table in chain.c. */
extern const struct lf_stage_ops lf_stage_include_lines;
extern const struct lf_stage_ops lf_stage_exclude_lines;

#endif
