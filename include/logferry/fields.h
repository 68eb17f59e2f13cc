/* fields.h - event fields and %{field} templates, read from an event's JSON text: the
 * outputs that name fields (kafka topic and key, loki labels, syslog app-name and severity,
 * hec metadata) and the stages that key on one (throttle, sample) share them.
 *
 * Fields are found by scanning an event's JSON text, not by decoding it: nothing is
 * allocated per event. A field is a dotted path (kubernetes.namespace, log.file.path); a
 * key may itself hold dots (app.kubernetes.io/name): at each level, a key equal to the rest
 * of the path wins, else one that is a prefix of it followed by '.' is entered. Any thread:
 * no shared state. Defined in src/output/fields.c. */
#ifndef LF_FIELDS_H
#define LF_FIELDS_H

#include <stdbool.h>
#include <stddef.h>

#include "logferry/buf.h"
#include "logferry/err.h"

#define LF_FIELDS_DEPTH_MAX 8 /* objects a lookup descends into, at most */

/* Finds path (plen bytes) in json: an object (`{"a":1,...}`) or a bare member list
 * (`"a":1,"b":{...}`, as an event's extra members are kept; a leading ',' and a closing
 * '}' are allowed). true with *val, the value's raw JSON text (a string with its quotes),
 * borrowed from json. */
bool lf_fields_find(struct lf_str json, const char *path, size_t plen, struct lf_str *val);

/* The scanner's steps, for an output that walks an event's members itself: the first byte
 * at or after p that is not JSON white space; the byte after the value at p (a string's
 * closing quote included). Either returns end at the latest. */
const char *lf_fields_skip_ws(const char *p, const char *end);
const char *lf_fields_skip_value(const char *p, const char *end);

/* Appends the JSON value v as plain text to out[*n] (cap bytes): a string unescaped (UTF-8),
 * null as nothing, anything else as written. false if it does not fit (*n then says how
 * much was written). */
bool lf_fields_text(struct lf_str v, char *out, size_t *n, size_t cap);

/* A template: literal text and %{field} references ("logs-%{kubernetes.namespace}"). */
struct lf_tmpl_part {
    bool field;
    char *text; /* owned: literal text, or the field's dotted path */
    size_t len;
};

struct lf_tmpl {
    struct lf_tmpl_part *parts; /* owned */
    size_t n;
};

/* Compiles s into t (zeroed, or released). LF_ECONFIG with eb filled ("output NAME: WHAT:
 * %{ without its } at column N") for a `%{` without its `}` or an empty %{}; LF_ENOMEM.
 * Release t with lf_tmpl_release() either way. */
LF_MUST_CHECK enum lf_err lf_tmpl_compile(
    struct lf_tmpl *t, const char *s, const char *name, const char *what, struct lf_errbuf *eb);

void lf_tmpl_release(struct lf_tmpl *t);

/* Renders t over the event's JSON line as plain text into out (cap bytes), fields as
 * lf_fields_text() writes them and absent ones as nothing; the length in *len. false if the
 * result does not fit. */
bool lf_tmpl_render(
    const struct lf_tmpl *t, struct lf_str event, char *out, size_t cap, size_t *len);

/* Appends t rendered over the event's JSON line to out as JSON string content (escaped,
 * without the quotes): a string field's content as it stands in the event (already
 * escaped), other values escaped, null and absent fields as nothing. LF_ENOMEM or
 * LF_ETOOBIG from out. */
LF_MUST_CHECK enum lf_err
lf_tmpl_render_json(const struct lf_tmpl *t, struct lf_str event, struct lf_buf *out);

#endif
