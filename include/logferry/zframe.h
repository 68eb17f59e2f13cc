/* zframe.h - one complete zstd frame from a buffer, with a compression context kept by the
 * caller: the batch's cached zstd form and the file output's text both write frames so.
 *
 * The context is owned by whoever holds it (made on first use, freed with ZSTD_freeCCtx());
 * a call uses it alone, so one context serves one thread at a time. */
#ifndef LF_ZFRAME_H
#define LF_ZFRAME_H

#include <zstd.h>

#include "logferry/buf.h"
#include "logferry/err.h"

/* Compresses src into dst (reset first) as one zstd frame at level, with checksum and content
 * size, creating *cctx if NULL. LF_ENOMEM, LF_ETOOBIG (src or dst's cap), LF_EINVAL. */
LF_MUST_CHECK enum lf_err
lf_zstd_frame(ZSTD_CCtx **cctx, int level, struct lf_str src, struct lf_buf *dst);

#endif
