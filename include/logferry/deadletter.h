/* deadletter.h - where events an output's peer refused for good go: never dropped silently,
 * never retried for ever.
 *
 *   output: peer answers 400 ──► lf_deadletter_write(dl, batch NDJSON, 400, reason)
 *                                    │ one record per event, one zstd frame per call, fdatasync
 *                                    ▼
 *            <data_dir>/dead_letters/<output>.ndjson.zst
 *            {"output":"collector","status":400,"reason":"...","event":{...the event...}}
 *
 * The file is a zstd stream of concatenated frames (`zstd -dc` reads it whole); it is
 * appended to across restarts and never rotated. A successful write is durable, so the
 * output may then acknowledge the events (lf_output_done_dead()). One thread at a time. */
#ifndef LF_DEADLETTER_H
#define LF_DEADLETTER_H

#include <stddef.h>

#include "logferry/err.h"
#include "logferry/event.h"

struct lf_deadletter;

/* Returns a new dead-letter writer for output `output` in *out; the directory and file are
 * made on the first write. Free with lf_deadletter_free(). LF_ENOMEM. Strings are copied. */
LF_MUST_CHECK enum lf_err lf_deadletter_new(const char *data_dir,
                                            const char *output,
                                            struct lf_deadletter **out,
                                            struct lf_errbuf *eb);

/* Appends one record per line of ndjson (each line one event's JSON object) with status
 * (an HTTP status, or 0) and reason (printable, valid UTF-8), compressed as one zstd frame,
 * then fdatasyncs. *n_events: the records written. LF_EIO (eb says why): nothing may be
 * acknowledged; the file is cut back to its last whole frame. */
LF_MUST_CHECK enum lf_err lf_deadletter_write(struct lf_deadletter *dl,
                                              struct lf_str ndjson,
                                              int status,
                                              const char *reason,
                                              size_t *n_events,
                                              struct lf_errbuf *eb);

/* Adds one record for the event JSON line `event` (no newline) to the ones the next
 * lf_deadletter_commit() writes: for peers that refuse events one by one, with a status and
 * reason each. LF_ENOMEM (the pending records are dropped). */
LF_MUST_CHECK enum lf_err
lf_deadletter_add(struct lf_deadletter *dl, struct lf_str event, int status, const char *reason);

/* Writes the records added since the last commit as one zstd frame and fdatasyncs; *n_events:
 * how many. Errors as lf_deadletter_write(); the records are dropped either way. */
LF_MUST_CHECK enum lf_err
lf_deadletter_commit(struct lf_deadletter *dl, size_t *n_events, struct lf_errbuf *eb);

/* The path of the file (borrowed: valid until free), for messages. */
const char *lf_deadletter_path(const struct lf_deadletter *dl);

/* Closes and frees. lf_deadletter_free(NULL) is a no-op. */
void lf_deadletter_free(struct lf_deadletter *dl);

#endif
