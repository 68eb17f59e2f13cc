/* buf.c - growable byte buffers with a hard cap (see buf.h). */
#include "config.h"

#include "logferry/buf.h"

#include <stdlib.h>

#define LF_BUF_MIN_CAP 256

void lf_buf_init(struct lf_buf *b, size_t max)
{
    b->ptr = NULL;
    b->len = 0;
    b->cap = 0;
    b->max = max;
}

void lf_buf_release(struct lf_buf *b)
{
    free(b->ptr);
    b->ptr = NULL;
    b->len = 0;
    b->cap = 0;
}

enum lf_err lf_array_grow(void *items_p, size_t *cap, size_t len, size_t size, size_t first)
{
    if (len < *cap)
        return LF_OK;
    size_t n = first;
    size_t bytes;
    if ((*cap > 0 && lf_size_mul(*cap, 2, &n)) || lf_size_mul(n, size, &bytes))
        return LF_ENOMEM;
    void *items;
    memcpy(&items, items_p, sizeof(items)); /* any object pointer: T * */
    void *p = realloc(items, bytes);
    if (p == NULL)
        return LF_ENOMEM;
    memcpy(items_p, &p, sizeof(p));
    *cap = n;
    return LF_OK;
}

enum lf_err lf_buf_grow(struct lf_buf *b, size_t n)
{
    size_t need;
    if (lf_size_add(b->len, n, &need) || need > b->max)
        return LF_ETOOBIG;
    if (need <= b->cap)
        return LF_OK;
    size_t cap = b->cap < LF_BUF_MIN_CAP ? LF_BUF_MIN_CAP : b->cap;
    while (cap < need) {
        if (cap > b->max / 2) {
            cap = b->max;
            break;
        }
        cap *= 2;
    }
    if (cap > b->max)
        cap = b->max;
    char *p = realloc(b->ptr, cap);
    if (p == NULL)
        return LF_ENOMEM;
    b->ptr = p;
    b->cap = cap;
    return LF_OK;
}
