/* store.c - the registry file: format, checked loading and durable writes.
 *
 * Format (text, one record per line, so an operator can read it; version 2):
 *
 *   logferry-registry 2 <entries>\n
 *   <input_id>\t<dev>\t<ino>\t<fp_len>\t<fp_hash>\t<offset>\t<updated_ms>\t<stream>\t<path>\n
 *                                                                              x entries
 *   end <crc32>\n
 *
 * Version 1 (read, never written) has no <stream> field: its entries load with stream id 0,
 * so the next run gives each file a new one (its unacknowledged lines may be indexed once
 * more by an idempotent output; none is lost). Numbers are decimal (updated_ms may be
 * negative), fp_hash and stream are 16 lower-case hex digits and crc32 is 8: the CRC-32
 * (IEEE 802.3, as zlib's crc32()) of every byte before "end". In input_id and path, '\\' is
 * written "\\\\" and every byte below 0x20 or equal to 0x7f as "\\xHH"; other bytes (UTF-8
 * or not) are written as they are, so a field never holds a tab or a newline. Loading is
 * strict: a missing or damaged end line (a torn write), a checksum mismatch (a flipped bit,
 * an edit), a wrong count, a malformed field or a duplicate key is LF_EIO naming the line
 * and byte, and the file is never changed by loading.
 *
 * Writing: the whole file is encoded into one buffer (kept across flushes), written to
 * registry.tmp (O_TRUNC: a leftover from a crash is overwritten), fsync'd, renamed over
 * registry, and data_dir is fsync'd so the rename itself survives a power cut. A crash at
 * any step leaves either the old file or the new one, never a mix. registry.log is then
 * removed.
 *
 * The journal, registry.log: the registry's writer thread appends only the entries that
 * changed, rather than rewriting every entry each flush (10,000 idle files cost a 1 MB
 * rewrite a second without it):
 *
 *   logferry-registry-log 2 <crc32 of the registry file it follows>\n
 *   s\t<the 9 fields of a record>\t<crc32>\n        an entry set (8 in a version 1 journal)
 *   r\t<input_id>\t<dev>\t<ino>\t<crc32>\n         an entry removed
 *
 * Each record's crc32 covers the bytes of its line before its last tab. Appends end with an
 * fdatasync; the journal is folded into a new registry file (and removed) once it outgrows
 * max(LF_JOURNAL_MIN_BYTES, the file's size), at the first flush after a start, and when
 * the writer stops. Loading applies the journal in order when its header names the file's
 * checksum (a journal left beside a newer file by a crash is ignored: the file holds it),
 * and stops at the first record that is torn or fails its checksum, with a warning: the
 * entries it would have moved are then older, so a restart sends a few events again and
 * loses none. Replaying records a file already holds changes nothing. */
#include "config.h"

#define LF_LOG_COMPONENT "registry"

#include "logferry/registry.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "logferry/fsutil.h"
#include "logferry/log.h"
#include "registry_int.h"

#define MAGIC          "logferry-registry "
#define JOURNAL_MAGIC  "logferry-registry-log "
#define FORMAT_VERSION 2
#define N_FIELDS       9  /* version 1: 8, no stream id */
#define MIN_ENTRY_LEN  16 /* shortest possible record: caps what a header count may reserve */

/* The file's checksum: zlib's CRC-32 (IEEE 802.3), the sum the format has always used. */
static uint32_t file_crc(const void *p, size_t n)
{
    return (uint32_t)crc32_z(0, p, n);
}

/* ---- loading ---- */

/* Fills eb with "registry PATH: <what>; file left as is", marks r->load_corrupt (the
 * content is at fault, not the system) and returns LF_EIO. */
static enum lf_err corrupt(struct lf_errbuf *eb, struct lf_registry *r, const char *fmt, ...)
    LF_PRINTF(3, 4);
static enum lf_err corrupt(struct lf_errbuf *eb, struct lf_registry *r, const char *fmt, ...)
{
    r->load_corrupt = true;
    char what[768];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof(what), fmt, ap);
    va_end(ap);
    return lf_fail(eb, LF_EIO,
                   "registry %s: %s; file left as is, move it aside to start over "
                   "(or start with --registry-reset-broken)",
                   r->file_path, what);
}

/* Reads the whole file into *data (owned by the caller). *missing if it does not exist. */
static enum lf_err
read_all(const char *path, char **data, size_t *len, bool *missing, struct lf_errbuf *eb)
{
    *data = NULL;
    *len = 0;
    *missing = false;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        int e = errno;
        if (e == ENOENT) {
            *missing = true;
            return LF_OK;
        }
        return lf_fail(eb, lf_err_from_errno(e), "registry: open %s: %s", path, lf_strerror(e));
    }
    struct stat st;
    if (fstat(fd, &st) != 0) {
        int e = errno;
        close(fd);
        return lf_fail(eb, LF_EIO, "registry: fstat %s: %s", path, lf_strerror(e));
    }
    if (st.st_size < 0 || (uint64_t)st.st_size >= SIZE_MAX / 2) {
        close(fd);
        return lf_fail(eb, LF_ETOOBIG, "registry: %s is too large to load", path);
    }
    size_t cap = (size_t)st.st_size + 1;
    char *buf = malloc(cap);
    if (buf == NULL) {
        close(fd);
        return lf_fail(eb, LF_ENOMEM, "registry: out of memory reading %s", path);
    }
    size_t n = 0;
    while (n < cap) { /* reading until EOF (not just st_size) also catches a growing file */
        ssize_t got = read(fd, buf + n, cap - n);
        if (got < 0 && errno == EINTR)
            continue;
        if (got < 0) {
            int e = errno;
            free(buf);
            close(fd);
            return lf_fail(eb, LF_EIO, "registry: read %s: %s", path, lf_strerror(e));
        }
        if (got == 0)
            break;
        n += (size_t)got;
    }
    close(fd);
    if (n == cap) {
        free(buf);
        return lf_fail(eb, LF_EIO, "registry: %s changed while it was read", path);
    }
    *data = buf;
    *len = n;
    return LF_OK;
}

static int hex_val(unsigned char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    return -1;
}

static bool parse_u64(const char *p, const char *end, uint64_t *out)
{
    if (p == end || end - p > 20)
        return false;
    uint64_t v = 0;
    for (; p < end; p++) {
        if (*p < '0' || *p > '9')
            return false;
        if (__builtin_mul_overflow(v, 10, &v) || __builtin_add_overflow(v, *p - '0', &v))
            return false;
    }
    *out = v;
    return true;
}

static bool parse_i64(const char *p, const char *end, int64_t *out)
{
    bool neg = p < end && *p == '-';
    uint64_t mag = 0;
    if (!parse_u64(p + neg, end, &mag))
        return false;
    if (neg ? mag > (uint64_t)INT64_MAX + 1 : mag > (uint64_t)INT64_MAX)
        return false;
    *out = neg ? (int64_t)(0 - mag) : (int64_t)mag;
    return true;
}

static bool parse_hex(const char *p, const char *end, size_t digits, uint64_t *out)
{
    if ((size_t)(end - p) != digits)
        return false;
    uint64_t v = 0;
    for (; p < end; p++) {
        int d = hex_val((unsigned char)*p);
        if (d < 0)
            return false;
        v = v << 4 | (uint64_t)d;
    }
    *out = v;
    return true;
}

/* Decodes an escaped field into a new C string (*out, owned by the caller). On error *why
 * says what is wrong. */
static enum lf_err unescape(const char *p, const char *end, char **out, const char **why)
{
    char *s = malloc((size_t)(end - p) + 1);
    if (s == NULL)
        return LF_ENOMEM;
    size_t n = 0;
    while (p < end) {
        unsigned char c = (unsigned char)*p++;
        if (c < 0x20 || c == 0x7f) {
            *why = "raw control byte";
            goto bad;
        }
        if (c != '\\') {
            s[n++] = (char)c;
            continue;
        }
        if (p < end && *p == '\\') {
            s[n++] = '\\';
            p++;
            continue;
        }
        int hi = end - p >= 3 && p[0] == 'x' ? hex_val((unsigned char)p[1]) : -1;
        int lo = hi >= 0 ? hex_val((unsigned char)p[2]) : -1;
        if (lo < 0 || (hi == 0 && lo == 0)) {
            *why = "bad escape";
            goto bad;
        }
        s[n++] = (char)(hi << 4 | lo);
        p += 3;
    }
    s[n] = '\0';
    *out = s;
    return LF_OK;
bad:
    free(s);
    return LF_EINVAL;
}

static const char *const field_names[N_FIELDS] = {
    "input id",   "device",    "inode", "fingerprint length", "fingerprint hash", "offset",
    "updated_ms", "stream id", "path",
};

/* Parses one record [p, end) (no newline) found at line `line`, byte `at`, into r: added
 * (a duplicate key is an error), or with replace (the journal) set over what r holds. */
static enum lf_err parse_record(struct lf_registry *r,
                                const char *p,
                                const char *end,
                                size_t line,
                                size_t at,
                                bool replace,
                                struct lf_errbuf *eb)
{
    const char *f[N_FIELDS + 1];
    size_t want = r->load_version == 1 ? N_FIELDS - 1 : N_FIELDS;
    size_t nf = 0;
    f[nf++] = p;
    for (const char *q = p; q < end; q++) {
        if (*q != '\t')
            continue;
        if (nf == want)
            return corrupt(eb, r, "line %zu (byte %zu): more than %zu fields", line, at, want);
        f[nf++] = q + 1;
    }
    if (nf != want)
        return corrupt(eb, r, "line %zu (byte %zu): %zu fields, want %zu", line, at, nf, want);
    if (want < N_FIELDS) { /* version 1: no stream id; the path is field 8 of 9 */
        f[8] = f[7];
        f[7] = NULL;
    }
    f[N_FIELDS] = end + 1; /* so field i ends at f[i + 1] - 1 */
    struct lf_file_id id = { 0 };
    uint64_t fp_len = 0;
    uint64_t offset = 0;
    uint64_t stream_id = 0;
    int64_t updated_ms = 0;
    int bad = -1;
    if (!parse_u64(f[1], f[2] - 1, &id.dev))
        bad = 1;
    else if (!parse_u64(f[2], f[3] - 1, &id.ino))
        bad = 2;
    else if (!parse_u64(f[3], f[4] - 1, &fp_len) || fp_len > LF_FINGERPRINT_MAX)
        bad = 3;
    else if (!parse_hex(f[4], f[5] - 1, 16, &id.fp_hash))
        bad = 4;
    else if (!parse_u64(f[5], f[6] - 1, &offset))
        bad = 5;
    else if (!parse_i64(f[6], (f[7] != NULL ? f[7] : f[8]) - 1, &updated_ms))
        bad = 6;
    else if (f[7] != NULL && !parse_hex(f[7], f[8] - 1, 16, &stream_id))
        bad = 7;
    if (bad >= 0) {
        const char *next = f[bad + 1] != NULL ? f[bad + 1] : f[bad + 2];
        size_t shown = (size_t)(next - 1 - f[bad]);
        return corrupt(eb, r, "line %zu (byte %zu): bad %s \"%.*s\"", line, at, field_names[bad],
                       (int)(shown > 40 ? 40 : shown), f[bad]);
    }
    id.fp_len = (uint32_t)fp_len;
    const char *why = "";
    char *input_id = NULL;
    char *path = NULL;
    enum lf_err err = unescape(f[0], f[1] - 1, &input_id, &why);
    if (err == LF_OK)
        err = unescape(f[8], end, &path, &why);
    if (err == LF_ENOMEM) {
        free(input_id);
        return lf_fail(eb, LF_ENOMEM, "registry: out of memory loading %s", r->file_path);
    }
    if (err) {
        const char *field = input_id == NULL ? "input id" : "path";
        free(input_id);
        return corrupt(eb, r, "line %zu (byte %zu): %s in %s", line, at, why, field);
    }
    if (replace) {
        err = lf_registry_set(r, input_id, &id, stream_id, offset, path, updated_ms);
        free(input_id);
        free(path);
    } else {
        err = lf_registry__insert(r, input_id, &id, stream_id, offset, path, updated_ms);
    }
    if (err == LF_ENOMEM)
        return lf_fail(eb, LF_ENOMEM, "registry: out of memory loading %s", r->file_path);
    if (err)
        return corrupt(eb, r,
                       "line %zu (byte %zu): duplicate entry for device %" PRIu64 " inode %" PRIu64,
                       line, at, id.dev, id.ino);
    return LF_OK;
}

/* Checks the end line and the checksum; *body_len is where the end line starts, *crc the
 * checksum. */
static enum lf_err check_frame(struct lf_registry *r, const char *data, size_t n,
                               size_t *body_len, uint32_t *crc, struct lf_errbuf *eb)
{
    if (n == 0)
        return corrupt(eb, r, "empty file (a torn write)");
    if (data[n - 1] != '\n')
        return corrupt(eb, r, "truncated: ends at byte %zu inside a line (a torn write)", n);
    const char *nl = n >= 2 ? memrchr(data, '\n', n - 1) : NULL;
    size_t ls = nl == NULL ? 0 : (size_t)(nl - data) + 1;
    uint64_t stored = 0;
    if (n - ls != 13 || memcmp(data + ls, "end ", 4) != 0 ||
        !parse_hex(data + ls + 4, data + n - 1, 8, &stored))
        return corrupt(eb, r,
                       "truncated: the last line (byte %zu) is not the end line "
                       "(a torn write)",
                       ls);
    uint32_t computed = file_crc(data, ls);
    if (computed != (uint32_t)stored)
        return corrupt(eb, r,
                       "checksum mismatch: end line at byte %zu says %08" PRIx32
                       ", bytes 0-%zu sum to %08" PRIx32 " (damaged or edited)",
                       ls, (uint32_t)stored, ls, computed);
    *body_len = ls;
    *crc = computed;
    return LF_OK;
}

/* Parses the header line; *count is the number of records it announces. */
static enum lf_err parse_header(
    struct lf_registry *r, const char *p, const char *end, uint64_t *count, struct lf_errbuf *eb)
{
    size_t ml = sizeof(MAGIC) - 1;
    if ((size_t)(end - p) < ml || memcmp(p, MAGIC, ml) != 0)
        return corrupt(eb, r, "line 1 (byte 0): not a logferry registry");
    const char *v = p + ml;
    const char *sp = memchr(v, ' ', (size_t)(end - v));
    uint64_t version = 0;
    if (sp == NULL || !parse_u64(v, sp, &version) || !parse_u64(sp + 1, end, count))
        return corrupt(eb, r, "line 1 (byte 0): malformed header");
    if (version != 1 && version != FORMAT_VERSION)
        return corrupt(eb, r, "line 1 (byte 0): version %" PRIu64 ", this build reads 1 and %d",
                       version, FORMAT_VERSION);
    r->load_version = (unsigned)version;
    return LF_OK;
}

static enum lf_err
parse_body(struct lf_registry *r, const char *data, size_t n, struct lf_errbuf *eb)
{
    const char *end = data + n;
    const char *nl = memchr(data, '\n', n);
    if (nl == NULL)
        return corrupt(eb, r, "line 1 (byte 0): no header");
    uint64_t count = 0;
    enum lf_err err = parse_header(r, data, nl, &count, eb);
    if (err)
        return err;
    /* The count comes from the file: reserve no more than its size could hold. */
    uint64_t most = n / MIN_ENTRY_LEN + 1;
    if (lf_registry__reserve(r, (size_t)(count < most ? count : most)))
        return lf_fail(eb, LF_ENOMEM, "registry: out of memory loading %s", r->file_path);
    size_t line = 1;
    uint64_t seen = 0;
    for (const char *p = nl + 1; p < end; p = nl + 1) {
        line++;
        nl = memchr(p, '\n', (size_t)(end - p)); /* the body ends with one */
        err = parse_record(r, p, nl, line, (size_t)(p - data), false, eb);
        if (err)
            return err;
        seen++;
    }
    if (seen != count)
        return corrupt(eb, r, "header announces %" PRIu64 " entries, the file holds %" PRIu64,
                       count, seen);
    return LF_OK;
}

/* Applies one journal record [p, end) (no newline, checksum already checked): LF_EINVAL if
 * it is malformed, LF_ENOMEM. */
static enum lf_err replay_record(struct lf_registry *r, const char *p, const char *end,
                                 size_t line, size_t at)
{
    if (end - p >= 2 && p[0] == 's' && p[1] == '\t') {
        bool was = r->load_corrupt;
        struct lf_errbuf eb = { "" };
        enum lf_err err = parse_record(r, p + 2, end, line, at, true, &eb);
        r->load_corrupt = was;
        return err == LF_OK || err == LF_ENOMEM ? err : LF_EINVAL;
    }
    if (end - p < 2 || p[0] != 'r' || p[1] != '\t')
        return LF_EINVAL;
    const char *f1 = memchr(p + 2, '\t', (size_t)(end - p - 2));
    const char *f2 = f1 != NULL ? memchr(f1 + 1, '\t', (size_t)(end - f1 - 1)) : NULL;
    uint64_t dev = 0;
    uint64_t ino = 0;
    char *input_id = NULL;
    const char *why = "";
    if (f2 == NULL || !parse_u64(f1 + 1, f2, &dev) || !parse_u64(f2 + 1, end, &ino))
        return LF_EINVAL;
    enum lf_err err = unescape(p + 2, f1, &input_id, &why);
    if (err)
        return err;
    lf_registry_remove(r, input_id, dev, ino);
    free(input_id);
    return LF_OK;
}

/* Applies registry.log to r, just loaded from a file whose checksum is r->base_crc. Never
 * fails on the journal's content: what cannot be applied is reported and left out. */
static enum lf_err replay_journal(struct lf_registry *r, struct lf_errbuf *eb)
{
    char *data = NULL;
    size_t n = 0;
    bool missing = false;
    enum lf_err err = read_all(r->journal_path, &data, &n, &missing, eb);
    if (err || missing)
        return err;
    const char *end = data + n;
    const char *nl = memchr(data, '\n', n);
    char head[64];
    int hl =
        snprintf(head, sizeof(head), JOURNAL_MAGIC "%d %08" PRIx32, FORMAT_VERSION, r->base_crc);
    r->load_version = FORMAT_VERSION;
    if (nl != NULL && nl - data == hl &&
        memcmp(data, JOURNAL_MAGIC "1 ", sizeof(JOURNAL_MAGIC)) == 0) {
        head[sizeof(JOURNAL_MAGIC) - 1] = '1'; /* left by a version 1 agent: 8 fields a record */
        r->load_version = 1;
    }
    if (nl == NULL || nl - data != hl || memcmp(data, head, (size_t)hl) != 0) {
        lf_info("%s does not follow %s as it is now (left by an earlier write); ignored",
                r->journal_path, r->file_path);
        free(data);
        return LF_OK;
    }
    size_t line = 1;
    size_t applied = 0;
    for (const char *p = nl + 1; p < end; p = nl + 1) {
        line++;
        nl = memchr(p, '\n', (size_t)(end - p));
        const char *tab = nl != NULL ? memrchr(p, '\t', (size_t)(nl - p)) : NULL;
        uint64_t stored = 0;
        err = LF_EINVAL;
        if (tab != NULL && parse_hex(tab + 1, nl, 8, &stored) &&
            file_crc(p, (size_t)(tab - p)) == (uint32_t)stored)
            err = replay_record(r, p, tab, line, (size_t)(p - data));
        if (err == LF_ENOMEM) {
            free(data);
            return lf_fail(eb, LF_ENOMEM, "registry: out of memory loading %s", r->journal_path);
        }
        if (err) {
            lf_warn("%s: record at line %zu (byte %zu) is torn or damaged; it and the %zu bytes "
                    "after it are ignored, so the files they concern resume from earlier "
                    "offsets (events may be sent again, none is lost)",
                    r->journal_path, line, (size_t)(p - data), (size_t)(end - p));
            break;
        }
        applied++;
    }
    free(data);
    r->replayed = true;
    lf_debug("%s: %zu changes applied", r->journal_path, applied);
    return LF_OK;
}

enum lf_err lf_registry__load(struct lf_registry *r, struct lf_errbuf *eb)
{
    char *data = NULL;
    size_t n = 0;
    bool missing = false;
    r->replayed = false;
    enum lf_err err = read_all(r->file_path, &data, &n, &missing, eb);
    if (err || missing)
        return err; /* no file: a journal, if any, follows nothing and is ignored */
    size_t body_len = 0;
    uint32_t crc = 0;
    err = check_frame(r, data, n, &body_len, &crc, eb);
    if (err == LF_OK)
        err = parse_body(r, data, body_len, eb);
    free(data);
    if (err)
        return err;
    r->base_crc = crc;
    r->base_bytes = n;
    r->base_known = true;
    return replay_journal(r, eb);
}

/* ---- writing ---- */

static enum lf_err put_u64(struct lf_buf *b, uint64_t v, char sep)
{
    char tmp[24];
    size_t i = sizeof(tmp);
    tmp[--i] = sep;
    do {
        tmp[--i] = (char)('0' + v % 10);
        v /= 10;
    } while (v != 0);
    return lf_buf_append(b, tmp + i, sizeof(tmp) - i);
}

static enum lf_err put_escaped(struct lf_buf *b, const char *s, char sep)
{
    static const char hex[] = "0123456789abcdef";
    const char *run = s;
    enum lf_err err = LF_OK;
    for (; *s != '\0' && err == LF_OK; s++) {
        unsigned char c = (unsigned char)*s;
        if (c >= 0x20 && c != 0x7f && c != '\\')
            continue;
        err = lf_buf_append(b, run, (size_t)(s - run));
        if (err == LF_OK && c == '\\') {
            err = lf_buf_append(b, "\\\\", 2);
        } else if (err == LF_OK) {
            char esc[4] = { '\\', 'x', hex[c >> 4], hex[c & 15] };
            err = lf_buf_append(b, esc, sizeof(esc));
        }
        run = s + 1;
    }
    if (err == LF_OK)
        err = lf_buf_append(b, run, (size_t)(s - run));
    if (err == LF_OK)
        err = lf_buf_append(b, &sep, 1);
    return err;
}

/* v as 16 lower-case hex digits, then sep. */
static enum lf_err put_hex64(struct lf_buf *b, uint64_t v, char sep)
{
    char tmp[18];
    snprintf(tmp, sizeof(tmp), "%016" PRIx64 "%c", v, sep);
    return lf_buf_append(b, tmp, 17);
}

static enum lf_err put_entry(struct lf_buf *b, const struct lf_registry_entry *e)
{
    enum lf_err err = put_escaped(b, e->input_id, '\t');
    if (err == LF_OK)
        err = put_u64(b, e->id.dev, '\t');
    if (err == LF_OK)
        err = put_u64(b, e->id.ino, '\t');
    if (err == LF_OK)
        err = put_u64(b, e->id.fp_len, '\t');
    if (err == LF_OK)
        err = put_hex64(b, e->id.fp_hash, '\t');
    if (err == LF_OK)
        err = put_u64(b, e->offset, '\t');
    if (err == LF_OK && e->updated_ms < 0)
        err = lf_buf_append(b, "-", 1);
    if (err == LF_OK)
        err = put_u64(b, e->updated_ms < 0 ? 0 - (uint64_t)e->updated_ms : (uint64_t)e->updated_ms,
                      '\t');
    if (err == LF_OK)
        err = put_hex64(b, e->stream_id, '\t');
    if (err == LF_OK)
        err = put_escaped(b, e->path, '\n');
    return err;
}

static enum lf_err encode(struct lf_registry *r)
{
    struct lf_buf *b = &r->out;
    lf_buf_reset(b);
    char head[64];
    int hl = snprintf(head, sizeof(head), MAGIC "%d %zu\n", FORMAT_VERSION, r->count);
    enum lf_err err = lf_buf_append(b, head, (size_t)hl);
    for (size_t i = 0; i < r->n_buckets && err == LF_OK; i++) {
        for (const struct lf_registry__node *n = r->buckets[i]; n != NULL && err == LF_OK;
             n = n->next)
            err = put_entry(b, &n->e);
    }
    if (err)
        return err;
    uint32_t crc = file_crc(b->ptr, b->len);
    char tail[16];
    int tl = snprintf(tail, sizeof(tail), "end %08" PRIx32 "\n", crc);
    return lf_buf_append(b, tail, (size_t)tl);
}

/* Writes b to a new file at path, mode 0600. data_dir may be shared: whatever sits at path
 * (a stale tmp, or a symlink planted to make us write elsewhere) is unlinked, and the file is
 * created with O_EXCL | O_NOFOLLOW, so a name that reappears in between fails the write
 * (retried at the next flush) instead of being followed. */
static enum lf_err write_tmp(const char *path, const struct lf_buf *b, struct lf_errbuf *eb)
{
    unlink(path); /* ENOENT is the usual case; anything else shows in the open below */
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0) {
        int e = errno;
        return lf_fail(eb, lf_err_from_errno(e), "registry: open %s: %s", path, lf_strerror(e));
    }
    int we = lf_write_all(fd, b->ptr, b->len);
    if (we != 0) {
        close(fd);
        return lf_fail(eb, LF_EIO, "registry: write %s: %s", path, lf_strerror(we));
    }
    if (fsync(fd) != 0) {
        int e = errno;
        close(fd);
        return lf_fail(eb, LF_EIO, "registry: fsync %s: %s", path, lf_strerror(e));
    }
    if (close(fd) != 0) {
        int e = errno;
        return lf_fail(eb, LF_EIO, "registry: close %s: %s", path, lf_strerror(e));
    }
    return LF_OK;
}

static enum lf_err sync_dir(const char *dir, struct lf_errbuf *eb)
{
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) {
        int e = errno;
        return lf_fail(eb, LF_EIO, "registry: open directory %s: %s", dir, lf_strerror(e));
    }
    int rc = fsync(fd);
    int e = errno;
    close(fd);
    if (rc != 0)
        return lf_fail(eb, LF_EIO, "registry: fsync directory %s: %s", dir, lf_strerror(e));
    return LF_OK;
}

enum lf_err lf_registry__save(struct lf_registry *r, struct lf_errbuf *eb)
{
    enum lf_err err = encode(r);
    if (err)
        return lf_fail(eb, err, "registry: encoding %zu entries: %s", r->count, lf_err_str(err));
    if (mkdir(r->dir, 0700) != 0 && errno != EEXIST) {
        int e = errno;
        return lf_fail(eb, LF_EIO, "registry: mkdir %s: %s", r->dir, lf_strerror(e));
    }
    err = write_tmp(r->tmp_path, &r->out, eb);
    if (err) {
        unlink(r->tmp_path); /* best effort: a leftover is overwritten next time anyway */
        return err;
    }
    if (rename(r->tmp_path, r->file_path) != 0) {
        int e = errno;
        unlink(r->tmp_path);
        return lf_fail(eb, LF_EIO, "registry: rename %s to %s: %s", r->tmp_path, r->file_path,
                       lf_strerror(e));
    }
    r->base_known = false; /* the journal follows the old file: it goes, whatever happens */
    if (r->jfd >= 0)
        close(r->jfd);
    r->jfd = -1;
    r->jbytes = 0;
    err = sync_dir(r->dir, eb);
    if (err)
        return err;
    /* A journal still here after a crash follows the old file and is ignored at load. */
    unlink(r->journal_path);
    const char *end_line = r->out.ptr + r->out.len - 13; /* "end XXXXXXXX\n" */
    uint64_t crc = 0;
    if (parse_hex(end_line + 4, end_line + 12, 8, &crc)) {
        r->base_crc = (uint32_t)crc;
        r->base_bytes = r->out.len;
        r->base_known = true;
    }
    return LF_OK;
}

/* ---- the journal ---- */

enum lf_err lf_registry__journal_put(struct lf_buf *b, char kind, const struct lf_registry_entry *e)
{
    size_t start = b->len;
    char head[2] = { kind, '\t' };
    enum lf_err err = lf_buf_append(b, head, sizeof(head));
    if (err == LF_OK && kind == 's') {
        err = put_entry(b, e);
    } else if (err == LF_OK) {
        err = put_escaped(b, e->input_id, '\t');
        if (err == LF_OK)
            err = put_u64(b, e->id.dev, '\t');
        if (err == LF_OK)
            err = put_u64(b, e->id.ino, '\n');
    }
    if (err) {
        b->len = start;
        return err;
    }
    b->len--; /* the '\n': the checksum comes first */
    char tail[16];
    int tl = snprintf(tail, sizeof(tail), "\t%08" PRIx32 "\n",
                      file_crc(b->ptr + start, b->len - start));
    err = lf_buf_append(b, tail, (size_t)tl);
    if (err)
        b->len = start;
    return err;
}

bool lf_registry__journal_fits(const struct lf_registry *r, size_t n)
{
    uint64_t most = r->base_bytes > LF_JOURNAL_MIN_BYTES ? r->base_bytes : LF_JOURNAL_MIN_BYTES;
    return r->base_known && r->jbytes + n <= most;
}

enum lf_err lf_registry__journal_append(struct lf_registry *r, const struct lf_buf *b,
                                        struct lf_errbuf *eb)
{
    bool created = false;
    int we = 0;
    if (r->jfd < 0) {
        /* As registry.tmp: whatever sits at the name goes, and the file is created anew. */
        unlink(r->journal_path);
        r->jfd = open(r->journal_path, O_WRONLY | O_APPEND | O_CREAT | O_EXCL | O_NOFOLLOW |
                      O_CLOEXEC, 0600);
        if (r->jfd < 0) {
            int e = errno;
            r->base_known = false;
            return lf_fail(eb, lf_err_from_errno(e), "registry: open %s: %s", r->journal_path,
                           lf_strerror(e));
        }
        char head[64];
        int hl = snprintf(head, sizeof(head), JOURNAL_MAGIC "%d %08" PRIx32 "\n", FORMAT_VERSION,
                          r->base_crc);
        we = lf_write_all(r->jfd, head, (size_t)hl);
        r->jbytes = (uint64_t)hl;
        created = true;
    }
    if (we == 0)
        we = lf_write_all(r->jfd, b->ptr, b->len);
    const char *step = "write";
    if (we == 0 && fdatasync(r->jfd) != 0) {
        we = errno;
        step = "fdatasync";
    }
    if (we != 0) {
        close(r->jfd);
        r->jfd = -1;
        r->base_known = false; /* the next write is a whole file, which removes this one */
        return lf_fail(eb, LF_EIO, "registry: %s %s: %s", step, r->journal_path, lf_strerror(we));
    }
    r->jbytes += b->len;
    if (created) {
        enum lf_err err = sync_dir(r->dir, eb);
        if (err) {
            r->base_known = false;
            return err;
        }
    }
    return LF_OK;
}
