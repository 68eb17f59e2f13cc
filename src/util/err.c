/* err.c - error buffers and conversions. */
#include "config.h"

#include "logferry/err.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

enum lf_err lf_fail(struct lf_errbuf *eb, enum lf_err code, const char *fmt, ...)
{
    if (eb != NULL) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(eb->msg, sizeof(eb->msg), fmt, ap);
        va_end(ap);
    }
    return code;
}

enum lf_err lf_err_from_errno(int e)
{
    switch (e) {
    case 0:
        return LF_OK;
    case ENOMEM:
        return LF_ENOMEM;
    case EAGAIN:
        return LF_EAGAIN;
    case EINVAL:
        return LF_EINVAL;
    case EFBIG:
    case E2BIG:
    case EOVERFLOW:
        return LF_ETOOBIG;
    default:
        return LF_EIO;
    }
}

const char *lf_strerror(int e)
{
    /* strerrordesc_np is thread-safe and never formats "Unknown error N" into a buffer. */
    const char *s = strerrordesc_np(e);
    return s != NULL ? s : "unknown error";
}

const char *lf_err_str(enum lf_err err)
{
    switch (err) {
    case LF_OK:
        return "success";
    case LF_ENOMEM:
        return "out of memory";
    case LF_EIO:
        return "I/O error";
    case LF_EINVAL:
        return "invalid argument";
    case LF_ECONFIG:
        return "invalid configuration";
    case LF_ETOOBIG:
        return "size limit exceeded";
    case LF_EAGAIN:
        return "try again";
    case LF_EOF:
        return "end of input";
    case LF_EREJECTED:
        return "rejected";
    }
    return "unknown error";
}
