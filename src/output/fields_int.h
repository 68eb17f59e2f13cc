/* fields_int.h - the outputs' name for the fields module, whose API is public since the
 * stages use it too: see include/logferry/fields.h. */
#ifndef LF_FIELDS_INT_H
#define LF_FIELDS_INT_H

#include <stdint.h>

#include "logferry/fields.h"

/* Appends JSON text as the encoder writes it (one event's line: valid UTF-8) as the
 * contents of a JSON string: what lf_json_escape() writes for it, a backslash before each
 * '"' and '\\', found 16 bytes at a time (JSON text has a quote every few bytes, where the
 * escaper is made for text that has almost none). Errors as lf_buf_append(); on error out
 * is unchanged. */
LF_MUST_CHECK enum lf_err lf_json_quote_json(struct lf_buf *out, struct lf_str json);

/* Appends v in decimal. Errors as lf_buf_append(). */
LF_MUST_CHECK enum lf_err lf_buf_append_i64(struct lf_buf *out, int64_t v);

#endif
