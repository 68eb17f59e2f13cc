/* requests_int.h - the per-batch request table of the HTTP outputs that build their own
 * bodies (elasticsearch, loki, splunk_hec), within src/output/ only.
 *
 * A request lives from the batch's first send until its answer for good: a retry sends the
 * same bytes. Each output keeps one state per batch out, in its own type that starts with a
 * struct lf_request; the table holds them. The lane thread claims a state for a batch at
 * send, the client's loop thread finds it at the answer, either frees it: the table's mutex
 * guards the table and every state's b (nothing else: a claimed state is its batch's alone).
 * States are allocated one by one and never move, so a pointer to one stays valid while the
 * table grows under another thread. */
#ifndef LF_REQUESTS_INT_H
#define LF_REQUESTS_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <uv.h>

#include "httpc_int.h"
#include "logferry/batch.h"
#include "logferry/buf.h"
#include "logferry/err.h"

/* The start of every state. */
struct lf_request {
    struct lf_batch *b; /* borrowed; NULL: free */
    struct lf_buf body; /* the request, plain */
    struct lf_buf gz;   /* the same, compressed (gzip or zstd) */
    bool built;         /* body (and gz) hold b's request; false when claimed */
};

struct lf_requests {
    uv_mutex_t mu;
    struct lf_request **v; /* owned, each owned */
    size_t n;
    size_t size;              /* of one state */
    size_t buf_max;           /* cap of body and gz */
    struct ZSTD_CCtx_s *cctx; /* owned; made at the first zstd body (lane thread) */
};

/* An empty table of states of size bytes (at least a struct lf_request) whose buffers hold
 * up to buf_max bytes. LF_ENOMEM. */
LF_MUST_CHECK enum lf_err lf_requests_init(struct lf_requests *t, size_t size, size_t buf_max);

/* b's state; else a free one claimed for b, *fresh set and built false (the rest of it is as
 * the last batch left it, its buffers' room kept), or NULL if out of memory. */
void *lf_requests_of(struct lf_requests *t, struct lf_batch *b, bool *fresh);

/* Frees r's claim: it may serve another batch now. */
void lf_requests_release(struct lf_requests *t, struct lf_request *r);

/* Builds b's body into r->body with build(arg, b, &r->body), unless built already. */
typedef enum lf_err lf_requests_build_fn(void *arg, struct lf_batch *b, struct lf_buf *body);

/* The send of an output whose bodies are built per batch, kept for its retries, compressed
 * as comp says (gzip with zs; zstd with t's context, level 1): b's state claimed in t, its
 * body built once (and compressed), then submitted
 * to client. On failure the state is freed, out's errors counted and the error returned
 * (logged, naming out). Lane thread. */
LF_MUST_CHECK enum lf_err lf_requests_send(struct lf_requests *t,
                                           struct lf_output *out,
                                           struct lf_httpc *client,
                                           struct z_stream_s *zs,
                                           enum lf_compression comp,
                                           struct lf_batch *b,
                                           lf_requests_build_fn *build,
                                           void *arg);

/* At the client's answer r for b: frees b's state unless r means "later" (no answer or a
 * retryable status: the retry sends the same bytes). Before answering b: the lane may send
 * from inside the answer. Loop thread. */
void lf_requests_answered(struct lf_requests *t,
                          struct lf_batch *b,
                          const struct lf_httpc_reply *r);

/* Walks the events of a batch that are sent (not dropped), each with its line of the
 * batch's NDJSON (without the newline). */
struct lf_batch_lines {
    struct lf_batch *b;
    const char *p;
    const char *end;
    size_t i;
};

/* Starts it on b (encoding b's NDJSON if not yet). Errors as lf_batch_ndjson(). */
LF_MUST_CHECK enum lf_err lf_batch_lines_start(struct lf_batch_lines *it, struct lf_batch *b);

/* The next sent event, its index in the batch and its line: false after the last. */
bool lf_batch_lines_next(struct lf_batch_lines *it,
                         const struct lf_event **ev,
                         size_t *i,
                         struct lf_str *line);

/* Frees the table and every state, calling each (if not NULL) on each state first for what
 * it owns beyond struct lf_request. */
void lf_requests_free(struct lf_requests *t, void (*each)(void *state));

#endif
