/* reader_int.h - the line reader's state, shared by reader.c (splitting) and decode.c
 * (UTF-8 validation, iconv decoding, truncation). No other module includes this. */
#ifndef LF_READER_INT_H
#define LF_READER_INT_H

#include <iconv.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "logferry/buf.h"
#include "logferry/reader.h"

/* Undecoded source bytes kept across chunks: an incomplete character (at most 4 bytes in
 * UTF-8, a surrogate pair plus a partial unit in UTF-16, a few bytes of a stateful escape). */
#define LF_READER_CARRY_MAX 32

enum lf_reader_bom {
    LF_READER_BOM_NONE = 0,
    LF_READER_BOM_UTF8,    /* EF BB BF */
    LF_READER_BOM_UTF16LE, /* FF FE */
    LF_READER_BOM_UTF16BE, /* FE FF */
    LF_READER_BOM_UTF16,   /* either; switches the decoder to big-endian on FE FF */
};

struct lf_reader {
    /* options */
    size_t buffer_size;             /* bytes in `in` */
    size_t max_line_bytes;          /* cap on a decoded message */
    enum lf_line_overflow overflow; /* truncate or skip */

    /* input buffer: in[pos..end) not yet scanned */
    char *in;        /* owned; buffer_size bytes */
    size_t pos;      /* first byte not yet scanned */
    size_t end;      /* one past the last byte filled */
    uint64_t in_off; /* source offset of in[pos] */

    /* encoding */
    bool utf8;              /* the fast path: no iconv */
    iconv_t cd;             /* owned; decoder to UTF-8, (iconv_t)-1 on the fast path */
    iconv_t cd_be;          /* owned; big-endian decoder for "utf-16" with an FE FF BOM */
    size_t unit;            /* bytes per code unit of the newline: 1, 2 or 4 */
    unsigned char nl[4];    /* the newline code unit in the source encoding */
    unsigned char cr[4];    /* the carriage return code unit */
    enum lf_reader_bom bom; /* BOM to consume at offset 0 */
    bool bom_check;         /* still looking for it */

    /* the current line */
    bool in_line;          /* some of its bytes were consumed */
    uint64_t line_off;     /* source offset of its first byte */
    bool overflowed;       /* went over max_line_bytes: the rest is skipped up to the newline */
    bool cr_held;          /* its consumed bytes end in a CR unit not yet known to precede LF */
    unsigned char part[4]; /* a code unit cut by the chunk end (unit > 1 only) */
    size_t part_len;
    unsigned char carry[LF_READER_CARRY_MAX]; /* incomplete character awaiting bytes */
    size_t carry_len;
    struct lf_buf tmp; /* the decoded line; capped at max_line_bytes, reused */

    uint64_t done; /* end offset of the last line handed out or skipped */
    struct lf_reader_stats stats;
};

/* Appends n bytes of whole UTF-8 characters to the line, cutting before the first character
 * that would take it past max_line_bytes (then marks the line overflowed). LF_ENOMEM. */
LF_MUST_CHECK enum lf_err lf_reader__put(struct lf_reader *r, const void *p, size_t n);

/* Appends U+FFFD for one invalid byte or code unit and counts it. LF_ENOMEM. */
LF_MUST_CHECK enum lf_err lf_reader__replace(struct lf_reader *r);

/* Decodes source bytes p[0..n) of the current line (after any carried bytes) into r->tmp.
 * at_end: the line ends after them, so an incomplete character is invalid; otherwise it is
 * kept in r->carry for the next chunk. LF_ENOMEM. */
LF_MUST_CHECK enum lf_err
lf_reader__decode(struct lf_reader *r, const char *p, size_t n, bool at_end);

#endif
