/* requests.c - the per-batch request table (see requests_int.h). */
#include "config.h"

#define LF_LOG_COMPONENT "output"

#include "requests_int.h"

#include <stdlib.h>
#include <string.h>

#include "logferry/log.h"
#include "logferry/output.h"
#include "logferry/zframe.h"

enum lf_err lf_requests_init(struct lf_requests *t, size_t size, size_t buf_max)
{
    *t = (struct lf_requests){ .size = size, .buf_max = buf_max };
    return uv_mutex_init(&t->mu) == 0 ? LF_OK : LF_ENOMEM;
}

/* A new state, appended to the table; NULL if out of memory. Under t->mu. */
static struct lf_request *add_state(struct lf_requests *t)
{
    struct lf_request **v = realloc(t->v, (t->n + 1) * sizeof(*v));
    if (v == NULL)
        return NULL;
    t->v = v;
    struct lf_request *r = calloc(1, t->size);
    if (r == NULL)
        return NULL;
    lf_buf_init(&r->body, t->buf_max);
    lf_buf_init(&r->gz, t->buf_max);
    t->v[t->n++] = r;
    return r;
}

void *lf_requests_of(struct lf_requests *t, struct lf_batch *b, bool *fresh)
{
    struct lf_request *found = NULL;
    struct lf_request *free_one = NULL;
    *fresh = false;
    uv_mutex_lock(&t->mu);
    for (size_t i = 0; i < t->n && found == NULL; i++) {
        if (t->v[i]->b == b)
            found = t->v[i];
        else if (t->v[i]->b == NULL && free_one == NULL)
            free_one = t->v[i];
    }
    if (found == NULL && free_one == NULL)
        free_one = add_state(t);
    if (found == NULL && free_one != NULL) {
        found = free_one;
        found->b = b;
        found->built = false;
        *fresh = true;
    }
    uv_mutex_unlock(&t->mu);
    return found;
}

void lf_requests_release(struct lf_requests *t, struct lf_request *r)
{
    uv_mutex_lock(&t->mu);
    r->b = NULL;
    uv_mutex_unlock(&t->mu);
}

enum lf_err lf_requests_send(struct lf_requests *t,
                             struct lf_output *out,
                             struct lf_httpc *client,
                             struct z_stream_s *zs,
                             enum lf_compression comp,
                             struct lf_batch *b,
                             lf_requests_build_fn *build,
                             void *arg)
{
    bool fresh;
    struct lf_request *r = lf_requests_of(t, b, &fresh);
    if (r == NULL)
        return LF_ENOMEM;
    enum lf_err err = LF_OK;
    bool packed = comp == LF_COMPRESS_GZIP || comp == LF_COMPRESS_ZSTD;
    if (!r->built) {
        err = build(arg, b, &r->body);
        if (!err && comp == LF_COMPRESS_GZIP)
            err = lf_httpc_gzip(zs, lf_buf_str(&r->body), &r->gz);
        else if (!err && comp == LF_COMPRESS_ZSTD)
            err = lf_zstd_frame(&t->cctx, 1, lf_buf_str(&r->body), &r->gz); /* as gzip's 1 */
        if (!err)
            lf_debug("output %s: batch of %zu events: body of %zu bytes built",
                     lf_output_conf(out)->name, lf_batch_count(b),
                     (packed ? &r->gz : &r->body)->len);
    }
    if (err) {
        lf_requests_release(t, r);
        lf_output_stats(out)->errors++;
        lf_error("output %s: cannot build the request of a batch of %zu events: %s",
                 lf_output_conf(out)->name, lf_batch_count(b), lf_err_str(err));
        return err;
    }
    r->built = true;
    struct lf_str body = lf_buf_str(packed ? &r->gz : &r->body);
    lf_output_stats(out)->bytes_written += body.len;
    lf_httpc_submit(client, b, body);
    return LF_OK;
}

void lf_requests_answered(struct lf_requests *t, struct lf_batch *b, const struct lf_httpc_reply *r)
{
    bool fresh;
    struct lf_request *req = lf_requests_of(t, b, &fresh);
    bool later = r->error != NULL || lf_httpc_status_retryable(r->status);
    if (req != NULL && !later)
        lf_requests_release(t, req);
}

enum lf_err lf_batch_lines_start(struct lf_batch_lines *it, struct lf_batch *b)
{
    struct lf_str nd;
    enum lf_err err = lf_batch_ndjson(b, &nd);
    *it = (struct lf_batch_lines){ b, nd.ptr, nd.ptr + nd.len, 0 };
    if (err)
        it->end = it->p; /* nothing to walk */
    return err;
}

bool lf_batch_lines_next(struct lf_batch_lines *it,
                         const struct lf_event **ev,
                         size_t *i,
                         struct lf_str *line)
{
    size_t count = lf_batch_count(it->b);
    while (it->i < count) {
        const struct lf_event *e = lf_batch_event(it->b, it->i++);
        if (e->flags & LF_EVENT_DROPPED)
            continue;
        const char *nl = memchr(it->p, '\n', (size_t)(it->end - it->p));
        if (nl == NULL)
            return false; /* one line per sent event: cannot happen */
        *ev = e;
        *i = it->i - 1;
        *line = lf_str_make(it->p, (size_t)(nl - it->p));
        it->p = nl + 1;
        return true;
    }
    return false;
}

void lf_requests_free(struct lf_requests *t, void (*each)(void *state))
{
    for (size_t i = 0; i < t->n; i++) {
        if (each != NULL)
            each(t->v[i]);
        lf_buf_release(&t->v[i]->body);
        lf_buf_release(&t->v[i]->gz);
        free(t->v[i]);
    }
    free(t->v);
    ZSTD_freeCCtx(t->cctx);
    uv_mutex_destroy(&t->mu);
}
