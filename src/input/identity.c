/* identity.c - file identity: device, inode and a fingerprint of the first bytes.
 *
 * The fingerprint is an FNV-1a 64 hash of the first min(size, LF_FINGERPRINT_MAX) bytes
 * plus their count. Only the hash is kept, so checking that a short stored fingerprint is a
 * prefix of the file's current bytes re-reads that many bytes and hashes them again (at
 * most 1 KiB, and only when the file grew past its stored fingerprint). */
#include "config.h"

#include "logferry/identity.h"

#include <errno.h>
#include <stdlib.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#define FNV_OFFSET 0xcbf29ce484222325ull
#define FNV_PRIME  0x100000001b3ull

uint64_t lf_file_id_hash(const void *p, size_t n)
{
    const unsigned char *b = p;
    uint64_t h = FNV_OFFSET;
    for (size_t i = 0; i < n; i++) {
        h ^= b[i];
        h *= FNV_PRIME;
    }
    return h;
}

/* getrandom() blocks only before the kernel's pool is first seeded (early boot); a failure
 * there is not worth stopping for: the clock, the pid and a counter mixed by a 64-bit
 * finalizer still make a collision between two streams of one input unlikely. */
static uint64_t fallback_random(void)
{
    static uint64_t counter;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    uint64_t x = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
    x ^= (uint64_t)getpid() << 32;
    x += __atomic_add_fetch(&counter, 1, __ATOMIC_RELAXED) * UINT64_C(0x9e3779b97f4a7c15);
    x = (x ^ (x >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
    x = (x ^ (x >> 27)) * UINT64_C(0x94d049bb133111eb);
    return x ^ (x >> 31);
}

uint64_t lf_stream_id_new(void)
{
    uint64_t v = 0;
    while (v == 0) {
        ssize_t n = getrandom(&v, sizeof(v), 0);
        if (n < 0 && errno == EINTR)
            continue;
        if (n != (ssize_t)sizeof(v))
            v = fallback_random();
    }
    return v;
}

/* Reads up to want bytes at offset 0 into buf; *got is how many the file had. */
static enum lf_err
read_head(int fd, unsigned char *buf, size_t want, size_t *got, struct lf_errbuf *eb)
{
    size_t n = 0;
    while (n < want) {
        ssize_t r = pread(fd, buf + n, want - n, (off_t)n);
        if (r < 0) {
            int e = errno;
            if (e == EINTR)
                continue;
            return lf_fail(eb, LF_EIO, "read fingerprint at offset %zu: %s", n, lf_strerror(e));
        }
        if (r == 0)
            break;
        n += (size_t)r;
    }
    *got = n;
    return LF_OK;
}

enum lf_err
lf_file_id_read(int fd, const struct stat *st, struct lf_file_id *id, struct lf_errbuf *eb)
{
    unsigned char buf[LF_FINGERPRINT_MAX];
    size_t want = LF_FINGERPRINT_MAX;
    if (st->st_size >= 0 && (uint64_t)st->st_size < want)
        want = (size_t)st->st_size;
    /* The file may grow between fstat and pread: the fingerprint covers what pread saw, so
     * fp_len and fp_hash always describe the same bytes. */
    size_t got = 0;
    enum lf_err err = read_head(fd, buf, want, &got, eb);
    if (err)
        return err;
    id->dev = (uint64_t)st->st_dev;
    id->ino = (uint64_t)st->st_ino;
    id->fp_len = (uint32_t)got;
    id->fp_hash = lf_file_id_hash(buf, got);
    return LF_OK;
}

enum lf_err lf_file_id_same_head(const struct lf_file_id *stored, int fd, uint64_t size, bool *same,
                                 struct lf_errbuf *eb)
{
    *same = stored->fp_len == 0;
    if (*same || stored->fp_len > LF_FINGERPRINT_MAX || size < stored->fp_len)
        return LF_OK;
    unsigned char buf[LF_FINGERPRINT_MAX];
    size_t got = 0;
    enum lf_err err = read_head(fd, buf, stored->fp_len, &got, eb);
    if (err)
        return err;
    *same = got == stored->fp_len && lf_file_id_hash(buf, got) == stored->fp_hash;
    return LF_OK;
}

enum lf_err lf_file_id_match(const struct lf_file_id *stored,
                             int fd,
                             const struct lf_file_id *now,
                             enum lf_id_match *out,
                             struct lf_errbuf *eb)
{
    *out = LF_ID_DIFFERENT;
    if (stored->dev != now->dev || stored->ino != now->ino)
        return LF_OK;
    if (stored->fp_len == 0) {
        *out = LF_ID_SAME;
        return LF_OK;
    }
    if (stored->fp_len > LF_FINGERPRINT_MAX || now->fp_len < stored->fp_len)
        return LF_OK; /* shrank below the stored fingerprint: truncated or reused */
    if (now->fp_len == stored->fp_len) {
        if (now->fp_hash == stored->fp_hash)
            *out = LF_ID_SAME;
        return LF_OK;
    }
    bool same = false;
    enum lf_err err = lf_file_id_same_head(stored, fd, now->fp_len, &same, eb);
    if (!err && same)
        *out = LF_ID_SAME;
    return err;
}
