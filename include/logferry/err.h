/* err.h - the program's one error enum, error buffers, checked size arithmetic. */
#ifndef LF_ERR_H
#define LF_ERR_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#if defined(__GNUC__)
#define LF_MUST_CHECK      __attribute__((warn_unused_result))
#define LF_PRINTF(fmt, va) __attribute__((format(printf, fmt, va)))
#else
#define LF_MUST_CHECK
#define LF_PRINTF(fmt, va)
#endif

enum lf_err {
    LF_OK = 0,
    LF_ENOMEM,    /* allocation failed */
    LF_EIO,       /* a system call failed; the errbuf says which and why */
    LF_EINVAL,    /* caller broke a documented precondition */
    LF_ECONFIG,   /* config rejected; errbuf holds FILE:LINE:COL: key: problem */
    LF_ETOOBIG,   /* a limit, or size_t arithmetic, would be exceeded */
    LF_EAGAIN,    /* not now (no full line yet, queue full, peer busy) */
    LF_EOF,       /* clean end of input */
    LF_EREJECTED, /* the peer refused this data for good */
};

/* Detail for people, filled by the callee (git's strbuf *err). Read freely: msg is always
 * NUL-terminated; an empty msg means nothing was said. */
struct lf_errbuf {
    char msg[1024];
};

/* Formats fmt into eb (if eb is not NULL) and returns code, so a failure is one statement. */
enum lf_err lf_fail(struct lf_errbuf *eb, enum lf_err code, const char *fmt, ...) LF_PRINTF(3, 4);

/* Converts an errno value to the nearest lf_err (ENOMEM -> LF_ENOMEM, else LF_EIO). */
enum lf_err lf_err_from_errno(int e);

/* strerror(3) that is thread-safe; the string is static. */
const char *lf_strerror(int e);

/* A short name for an lf_err ("out of memory", "I/O error", ...); static string. */
const char *lf_err_str(enum lf_err err);

/* Drops a result on purpose; say why at the call. */
static inline void lf_err_ignore(enum lf_err err)
{
    (void)err;
}

/* *out = a + b, or LF_ETOOBIG if that wraps. */
static inline LF_MUST_CHECK enum lf_err lf_size_add(size_t a, size_t b, size_t *out)
{
    if (__builtin_add_overflow(a, b, out))
        return LF_ETOOBIG;
    return LF_OK;
}

/* *out = a * b, or LF_ETOOBIG if that wraps. */
static inline LF_MUST_CHECK enum lf_err lf_size_mul(size_t a, size_t b, size_t *out)
{
    if (__builtin_mul_overflow(a, b, out))
        return LF_ETOOBIG;
    return LF_OK;
}

#endif
