/* buf.h - byte strings (lf_str), growable byte buffers with a hard cap (lf_buf), and
 * growing arrays (lf_array_grow()).
 *
 * Line data is never a C string: log lines may hold NUL bytes, so it travels as lf_str and
 * is handled with mem* functions. */
#ifndef LF_BUF_H
#define LF_BUF_H

#include <stddef.h>
#include <string.h>

#include "logferry/err.h"

/* A borrowed run of bytes. Read freely. */
struct lf_str {
    const char *ptr;
    size_t len;
};

#define LF_STR_LIT(s) ((struct lf_str){ (s), sizeof(s) - 1 })

static inline struct lf_str lf_str_make(const char *ptr, size_t len)
{
    struct lf_str s = { ptr, len };
    return s;
}

/* A growable buffer. Invariant: ptr is NULL only while cap is 0; len <= cap <= max.
 * Fields are private: use lf_buf_*() (reading ptr and len is fine). */
struct lf_buf {
    char *ptr;  /* owned */
    size_t len; /* bytes used */
    size_t cap; /* bytes allocated */
    size_t max; /* hard cap on cap; appends past it fail with LF_ETOOBIG */
};

/* Starts an empty buffer that will never hold more than max bytes. Allocates nothing. */
void lf_buf_init(struct lf_buf *b, size_t max);

/* Frees the memory; b is empty afterwards and may be reused. */
void lf_buf_release(struct lf_buf *b);

/* Empties b and keeps its allocation (the steady state allocates nothing). */
static inline void lf_buf_reset(struct lf_buf *b)
{
    b->len = 0;
}

/* Makes room for n more bytes, doubling the allocation. LF_ETOOBIG past max (b unchanged),
 * LF_ENOMEM if malloc fails (b unchanged). */
LF_MUST_CHECK enum lf_err lf_buf_grow(struct lf_buf *b, size_t n);

/* Makes room for one more item in an array of items of size bytes: items_p is the address
 * of the array's pointer (a T ** for a T *), *cap the items allocated, len those in use.
 * While len < *cap nothing changes; at len == *cap the allocation doubles (from first when
 * *cap is 0), the items kept. LF_ENOMEM (realloc failed, or the size overflows) leaves the
 * array and *cap as they were. */
LF_MUST_CHECK enum lf_err
lf_array_grow(void *items_p, size_t *cap, size_t len, size_t size, size_t first);

/* Appends n bytes. Errors as lf_buf_grow(); on error b is unchanged. */
static inline LF_MUST_CHECK enum lf_err lf_buf_append(struct lf_buf *b, const void *p, size_t n)
{
    if (b->cap - b->len < n) {
        enum lf_err err = lf_buf_grow(b, n);
        if (err)
            return err;
    }
    if (n > 0)
        memcpy(b->ptr + b->len, p, n);
    b->len += n;
    return LF_OK;
}

static inline LF_MUST_CHECK enum lf_err lf_buf_append_str(struct lf_buf *b, struct lf_str s)
{
    return lf_buf_append(b, s.ptr, s.len);
}

/* Appends the C string s (without its NUL). Errors as lf_buf_append(). */
static inline LF_MUST_CHECK enum lf_err lf_buf_append_cstr(struct lf_buf *b, const char *s)
{
    return lf_buf_append(b, s, strlen(s));
}

/* Free space after len; valid until the next grow. */
static inline size_t lf_buf_avail(const struct lf_buf *b)
{
    return b->cap - b->len;
}

static inline struct lf_str lf_buf_str(const struct lf_buf *b)
{
    return lf_str_make(b->ptr, b->len);
}

#endif
