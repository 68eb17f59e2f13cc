/* requests.c - the per-batch request table (see requests_int.h). */
#include "config.h"

#include "requests_int.h"

#include <stdlib.h>

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
    uv_mutex_destroy(&t->mu);
}
