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

#include "logferry/batch.h"
#include "logferry/buf.h"
#include "logferry/err.h"

/* The start of every state. */
struct lf_request {
    struct lf_batch *b; /* borrowed; NULL: free */
    struct lf_buf body; /* the request, plain */
    struct lf_buf gz;   /* the same, gzip'd */
};

struct lf_requests {
    uv_mutex_t mu;
    struct lf_request **v; /* owned, each owned */
    size_t n;
    size_t size;    /* of one state */
    size_t buf_max; /* cap of body and gz */
};

/* An empty table of states of size bytes (at least a struct lf_request) whose buffers hold
 * up to buf_max bytes. LF_ENOMEM. */
LF_MUST_CHECK enum lf_err lf_requests_init(struct lf_requests *t, size_t size, size_t buf_max);

/* b's state; else a free one claimed for b, *fresh set (the rest of it is as the last batch
 * left it, its buffers' room kept), or NULL if out of memory. */
void *lf_requests_of(struct lf_requests *t, struct lf_batch *b, bool *fresh);

/* Frees r's claim: it may serve another batch now. */
void lf_requests_release(struct lf_requests *t, struct lf_request *r);

/* Frees the table and every state, calling each (if not NULL) on each state first for what
 * it owns beyond struct lf_request. */
void lf_requests_free(struct lf_requests *t, void (*each)(void *state));

#endif
