/* identity.h - what makes a file the same file across renames, and a new one after inode
 * reuse or truncation.
 *
 * Identity = device + inode + a fingerprint (length and 64-bit FNV-1a hash) of the first
 * bytes, up to LF_FINGERPRINT_MAX. A file shorter than that has a shorter fingerprint, which
 * is compared as a prefix as the file grows. Two files never share dev+ino at once, so small
 * files, empty files and files with identical first lines are never confused; the
 * fingerprint only tells a reused inode (other content) from the file that held it.
 * Regular files only (pread). Any thread: no shared state. */
#ifndef LF_IDENTITY_H
#define LF_IDENTITY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>

#include "logferry/err.h"

#define LF_FINGERPRINT_MAX 1024

struct lf_file_id {   /* value type: read freely, copy freely */
    uint64_t dev;     /* st_dev */
    uint64_t ino;     /* st_ino */
    uint32_t fp_len;  /* bytes the fingerprint covers: min(file size, 1 KiB) */
    uint64_t fp_hash; /* FNV-1a 64 of those first fp_len bytes */
};

/* Reads the identity of the open file fd whose fstat is st (pread of up to 1 KiB at 0,
 * never moving the file offset). LF_EIO with eb filled if the read fails. */
LF_MUST_CHECK enum lf_err
lf_file_id_read(int fd, const struct stat *st, struct lf_file_id *id, struct lf_errbuf *eb);

enum lf_id_match {
    LF_ID_DIFFERENT = 0, /* another file (other dev/ino, or same inode with other content) */
    LF_ID_SAME,          /* same file; `now` may have a longer fingerprint: store it */
};

/* Compares a stored identity with one read now from a file: same dev+ino and the shorter
 * fingerprint is a prefix of the longer one. Because only hashes are stored, a prefix check
 * needs the bytes: so this takes the fd of the file read now and re-hashes its first
 * stored->fp_len bytes when the lengths differ. Empty stored fingerprint (fp_len 0) matches
 * any content on the same dev+ino. A file now shorter than its stored fingerprint was
 * truncated (copytruncate, or the inode reused): LF_ID_DIFFERENT, read it from the start.
 * LF_EIO with eb filled if the re-read fails. */
LF_MUST_CHECK enum lf_err lf_file_id_match(const struct lf_file_id *stored,
                                           int fd,
                                           const struct lf_file_id *now,
                                           enum lf_id_match *out,
                                           struct lf_errbuf *eb);

/* Tells whether the open file fd, now size bytes long, still begins with the bytes of
 * stored's fingerprint: one pread of stored->fp_len bytes (at most 1 KiB) at 0. A file
 * shorter than the fingerprint does not; an empty fingerprint matches anything. This is how
 * content replaced in place (copytruncate followed by quick regrowth, an inode reused) is
 * told from growth when the size alone cannot tell. LF_EIO with eb filled if pread fails. */
LF_MUST_CHECK enum lf_err lf_file_id_same_head(const struct lf_file_id *stored, int fd,
                                               uint64_t size, bool *same, struct lf_errbuf *eb);

/* A new stream id: 64 random bits (getrandom(2)), never 0. A stream id names one content
 * generation of one source (a file first seen, a file after a truncation or with its inode
 * reused by other content, one run's stdin): the outputs build idempotent document ids from
 * it and the offset, so a resend of the same event names the same document and nothing new
 * ever does. 0 means "none" (a registry entry written before stream ids existed). Any
 * thread. */
uint64_t lf_stream_id_new(void);

/* FNV-1a 64 of n bytes at p: the fingerprint hash, exposed for tests and tools. */
uint64_t lf_file_id_hash(const void *p, size_t n);

#endif
