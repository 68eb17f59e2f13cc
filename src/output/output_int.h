/* output_int.h - the output types, shared within src/output/ only. */
#ifndef LF_OUTPUT_INT_H
#define LF_OUTPUT_INT_H

#include "logferry/output.h"

/* One per file in src/output/; listed in the registration table in output.c. */
extern const struct lf_output_ops lf_output_console;
extern const struct lf_output_ops lf_output_file;
extern const struct lf_output_ops lf_output_http;
extern const struct lf_output_ops lf_output_elasticsearch;
extern const struct lf_output_ops lf_output_loki;
extern const struct lf_output_ops lf_output_kafka;
extern const struct lf_output_ops lf_output_syslog;


#endif
