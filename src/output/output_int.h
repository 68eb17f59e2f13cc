/* output_int.h - the output types, shared within src/output/ only. */
#ifndef LF_OUTPUT_INT_H
#define LF_OUTPUT_INT_H

#include "logferry/output.h"

/* One per file in src/output/; listed in the registration table in output.c. */
extern const struct lf_output_ops lf_output_console;
extern const struct lf_output_ops lf_output_file;
extern const struct lf_output_ops lf_output_kafka;

/* Writes all n bytes to fd, resuming after partial writes and EINTR. Returns 0, or the
 * errno of the failing write(2). */
int lf_output__write_all(int fd, const void *p, size_t n);

#endif
