/* zframe.c - one zstd frame per call (see zframe.h). */
#include "config.h"

#include "logferry/zframe.h"

#include <zstd_errors.h>

enum lf_err lf_zstd_frame(ZSTD_CCtx **cctx, int level, struct lf_str src, struct lf_buf *dst)
{
    if (*cctx == NULL) {
        *cctx = ZSTD_createCCtx();
        if (*cctx == NULL)
            return LF_ENOMEM;
    }
    size_t bound = ZSTD_compressBound(src.len);
    if (ZSTD_isError(bound))
        return LF_ETOOBIG;
    lf_buf_reset(dst);
    enum lf_err err = lf_buf_grow(dst, bound);
    if (err)
        return err;
    ZSTD_CCtx *c = *cctx;
    size_t r = ZSTD_CCtx_reset(c, ZSTD_reset_session_only);
    if (!ZSTD_isError(r))
        r = ZSTD_CCtx_setParameter(c, ZSTD_c_compressionLevel, level);
    if (!ZSTD_isError(r))
        r = ZSTD_CCtx_setParameter(c, ZSTD_c_checksumFlag, 1);
    if (!ZSTD_isError(r))
        r = ZSTD_CCtx_setPledgedSrcSize(c, src.len);
    if (!ZSTD_isError(r))
        r = ZSTD_compress2(c, dst->ptr, bound, src.ptr, src.len);
    if (ZSTD_isError(r))
        return ZSTD_getErrorCode(r) == ZSTD_error_memory_allocation ? LF_ENOMEM : LF_EINVAL;
    dst->len = r;
    return LF_OK;
}
