/* reader.h - the encoding-aware line reader.
 *
 * Bytes go in (lf_reader_read_fd() reads one buffer_size chunk from an fd; lf_reader_feed()
 * copies bytes the caller already has), lines come out (lf_reader_next()), each decoded to
 * UTF-8 without its terminator, with the byte offset in the source of its first byte.
 *
 * Memory: one input buffer of buffer_size and one temp buffer that grows to the longest line
 * seen (capped near max_line_bytes) and is reused; the steady state allocates nothing.
 * A returned line points into one of them, or straight into the input buffer when the line
 * needs no decoding and does not straddle a chunk: the caller copies it once, to where it
 * lives next (the batch arena). Not thread-safe: one worker drives a reader at a time.
 *
 * Decoding: UTF-8 (and NULL, "", "utf8") is validated without iconv; other names go through
 * glibc iconv. Each invalid byte (UTF-8 and byte-oriented charsets) or invalid code unit
 * (UTF-16/32) becomes one U+FFFD and counts once in stats.invalid_bytes; so does a
 * character left incomplete at the end of a line. "utf-16" without a BOM is little-endian.
 * A BOM at offset 0 is consumed only when start_offset is 0; the first line's offset is then
 * just past it. */
#ifndef LF_READER_H
#define LF_READER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "logferry/buf.h"
#include "logferry/config.h"
#include "logferry/err.h"

struct lf_reader;

struct lf_reader_opts {
    const char *encoding;  /* any iconv name; "utf-8" (or NULL) uses the fast path */
    size_t buffer_size;    /* read chunk size, >= 16 */
    size_t max_line_bytes; /* longest message kept, in decoded UTF-8 bytes, >= 4 */
    enum lf_line_overflow overflow; /* truncate (flag) or skip longer lines */
    uint64_t start_offset; /* source offset of the first byte fed (resume from a registry) */
};

#define LF_LINE_TRUNCATED 1u /* the message was cut at max_line_bytes */

struct lf_line {
    struct lf_str text;  /* UTF-8, no terminator; borrowed: valid until the next reader call */
    uint64_t offset;     /* source byte offset of the line's first byte */
    uint64_t end_offset; /* source byte offset just past its terminator (where to resume) */
    unsigned flags;      /* LF_LINE_* */
};

struct lf_reader_stats {
    uint64_t lines;           /* lines returned */
    uint64_t bytes;           /* source bytes taken in (fed or read) */
    uint64_t truncated;       /* lines cut (truncate) */
    uint64_t skipped;         /* lines dropped (skip) */
    uint64_t invalid_bytes;   /* U+FFFD written: one per invalid byte or code unit */
};

/* Returns a new reader in *out; free with lf_reader_free(). LF_EINVAL with a message in eb
 * for an encoding iconv does not know or options out of range; LF_ENOMEM. */
LF_MUST_CHECK enum lf_err lf_reader_new(const struct lf_reader_opts *opts, struct lf_reader **out,
                                        struct lf_errbuf *eb);

/* Frees the reader. lf_reader_free(NULL) is a no-op. */
void lf_reader_free(struct lf_reader *r);

/* Reads at most one buffer_size chunk from fd into the reader. LF_OK: bytes were read (or
 * the call was interrupted); LF_EOF: read returned 0; LF_EAGAIN: the fd would block;
 * LF_EIO: read failed (eb says why). Call only when lf_reader_next() returned LF_EAGAIN. */
LF_MUST_CHECK enum lf_err lf_reader_read_fd(struct lf_reader *r, int fd, struct lf_errbuf *eb);

/* Copies up to n bytes of data into the reader and returns how many it took (it takes at
 * most the free room of its input buffer: call lf_reader_next() until LF_EAGAIN, then feed
 * the rest). */
size_t lf_reader_feed(struct lf_reader *r, const void *data, size_t n);

/* Hands back the next complete line in *line. LF_EAGAIN: the bytes end mid-line (feed
 * more); LF_ENOMEM: the temp buffer could not grow. Lines over max_line_bytes come back cut
 * at a character boundary and flagged (truncate) or are not returned at all (skip). */
LF_MUST_CHECK enum lf_err lf_reader_next(struct lf_reader *r, struct lf_line *line);

/* At end of input: hands back the lines still buffered, then the last line if it had no
 * terminator (LF_OK each), then LF_EOF; call until LF_EOF. A final "\r" is kept. Used in
 * --once and at the end of a stream; a tailing reader waits for the newline. */
LF_MUST_CHECK enum lf_err lf_reader_finish(struct lf_reader *r, struct lf_line *line);

/* Source offset up to which lines have been handed out or skipped (where to resume). */
uint64_t lf_reader_offset(const struct lf_reader *r);

/* Counters since lf_reader_new(). Borrowed: valid while r lives. */
const struct lf_reader_stats *lf_reader_stats(const struct lf_reader *r);

/* Bytes allocated for the temp buffer (never above max_line_bytes): lets tests and benches
 * check that memory stays bounded. */
size_t lf_reader_temp_cap(const struct lf_reader *r);

#endif
