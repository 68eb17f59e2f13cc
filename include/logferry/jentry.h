/* jentry.h - one systemd journal entry's data items to an event: the message and the
 * "journald" member (docs/journald.md has the field names).
 *
 * The journald input gives each entry's items ("FIELD=value", the value any bytes, as
 * sd_journal_enumerate_data() returns them) one at a time between lf_jentry_begin() and
 * lf_jentry_end(); the result points into buffers the lf_jentry owns and reuses, so steady
 * state allocates nothing. What is the same for many entries (a unit name, a boot id, a
 * hostname, a field's JSON key) is rendered once per distinct value and pasted after.
 * Pure: no sd-journal call in here, so it is tested and fuzzed on plain bytes. One thread at
 * a time per lf_jentry. */
#ifndef LF_JENTRY_H
#define LF_JENTRY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "logferry/buf.h"
#include "logferry/config.h"
#include "logferry/err.h"

struct lf_jentry;

/* What one entry became. Every pointer is borrowed from the lf_jentry: valid until its next
 * lf_jentry_begin() or lf_jentry_free(). */
struct lf_jentry_out {
    struct lf_str message; /* MESSAGE as UTF-8 (invalid bytes as U+FFFD), cut to
                              max_line_bytes at a character boundary; empty if absent */
    struct lf_str extra;   /* `"journald":{...}`: no braces around, no leading comma; empty
                              when the entry has none of the mapped or included fields */
    int64_t timestamp_ns;  /* lf_jentry_begin()'s realtime_usec in ns */
    bool truncated;        /* the message was cut (LF_EVENT_TRUNCATED) */
    bool skip;             /* line_overflow: skip and the message was too long: drop it */
    uint64_t invalid;      /* bytes of MESSAGE that were not UTF-8 (encoding_errors_total) */
    uint64_t bytes;        /* bytes of MESSAGE as stored (bytes_read_total) */
};

/* A new converter for input in; free with lf_jentry_free(). in is borrowed and must outlive
 * it: include_fields and exclude_fields are indexed here (a changed list needs a new
 * converter), max_line_bytes and line_overflow are read at each entry. LF_ENOMEM. */
LF_MUST_CHECK enum lf_err lf_jentry_new(const struct lf_input_conf *in, struct lf_jentry **out);
void lf_jentry_free(struct lf_jentry *j);

/* Starts an entry written at realtime_usec (its __REALTIME_TIMESTAMP); forgets the last
 * one's result. Comes before the entry's first lf_jentry_add(). */
void lf_jentry_begin(struct lf_jentry *j, uint64_t realtime_usec);
/* Adds one item: "FIELD=value" (len bytes, value any bytes: NUL, invalid UTF-8); the bytes
 * are used during the call only. An item without '=' or with an empty field name is
 * ignored, and so is a field name over 256 bytes (journald allows 64). A field given twice
 * keeps its first value. journald.custom values are always strings; a field whose custom
 * name would be empty (a field named "_") or hold a control character is left out of it.
 * LF_ENOMEM. */
LF_MUST_CHECK enum lf_err lf_jentry_add(struct lf_jentry *j, const void *item, size_t len);
/* Ends the entry and renders it into *out. LF_ENOMEM. */
LF_MUST_CHECK enum lf_err lf_jentry_end(struct lf_jentry *j, struct lf_jentry_out *out);

#endif
