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
extern const struct lf_output_ops lf_output_splunk_hec;
extern const struct lf_output_ops lf_output_otlp;
extern const struct lf_output_ops lf_output_s3;

/* For the types' checks: tls.ca_file, tls.cert_file and tls.key_file, when given, can be
 * read. Found at load, not at the first batch: a typo should stop the start, not fill the
 * log. */
void lf_output__check_tls_files(const struct lf_output_conf *conf, struct lf_config_report *rep);

#endif
