/* spool.c - segment files of CRC-checked records, group commit, ordered reads (see spool.h).
 *
 *   segs[0] ... segs[n-1]   oldest first; the last is the writer's while wfd >= 0
 *   delivered ≤ reader ≤ committed end of the last segment
 *
 * One mutex guards the segment list, the positions and the counters; file I/O runs without
 * it (the writer owns the end of the last segment, the reader what lies between its position
 * and the committed end, and nothing at or after the delivered position is ever removed).
 *
 * Durability: only the last segment ever holds records no fdatasync has covered (a segment
 * is sealed only after a good one). A failed write or fdatasync cuts that segment back to
 * its committed length, so nothing a failed fdatasync covered stays behind: Linux may drop
 * the pages of a failed writeback and report success for the next fdatasync, so syncing
 * again proves nothing. The records cut are counted out of `appended`; the writer appends
 * them again (lf_spool_durable()), and each is read once. */
#include "config.h"

#define LF_LOG_COMPONENT "spool"
#include "logferry/spool.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <uv.h>
#include <zlib.h>

#include "logferry/fsutil.h"
#include "logferry/log.h"

#define MAGIC              UINT32_C(0x3153464c) /* "LFS1" little-endian */
#define SEG_MIN            (4u * 1024)
#define SEG_MAX            (64u * 1024 * 1024)
#define CURSOR_INTERVAL_MS 100

struct seg {
    uint64_t id;
    uint64_t size;  /* bytes written (the last segment: appended, committed or not) */
    bool sealed;    /* no more appends: read to its size */
};

/* An output's own position (lf_spool_set_output_pos()), while it is ahead of the delivered
 * one. */
struct out_pos {
    char *name; /* owned */
    struct lf_spool_pos pos;
};

struct lf_spool {
    char *dir;         /* owned */
    uint64_t max_bytes;
    uint64_t seg_max;
    uv_mutex_t mu;
    uv_cond_t room;    /* a release removed a segment, or an interrupt */
    uv_cond_t data;    /* a commit, or an interrupt */
    struct seg *segs;  /* owned */
    size_t n_segs;
    size_t cap_segs;
    uint64_t next_id;
    int wfd;           /* the last segment, open for appends; -1: none (the next append
                          starts a segment) */
    uint64_t committed; /* durable bytes of the last unsealed segment */
    bool new_seg;      /* a segment was created since the last commit: sync the directory */
    bool writing;      /* the writer is in an append or commit: wfd must stay open */
    bool cut_due;      /* a cut back to committed failed: tried again before any append */
    uint64_t appended; /* records appended since the open, less those cut back */
    uint64_t durable;  /* of which an fdatasync (and the directory's fsync) made durable */
    struct lf_spool_pos delivered;
    struct lf_spool_pos reader;
    int rfd;           /* the reader's open segment, or -1 */
    uint64_t rfd_id;
    struct lf_buf scan; /* the reader's buffer for finding a record after a bad one */
    bool interrupted;
    bool cursor_dirty;
    uint64_t cursor_saved_ms;
    struct out_pos *outs; /* owned; the outputs' own positions, in the cursor file too */
    size_t n_outs;
    size_t cap_outs;
    struct lf_spool_stats st;
};

static uint32_t get32(const unsigned char *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static void put32(unsigned char *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (unsigned char)(v >> (8 * i));
}

static uint32_t crc(const void *p, size_t n)
{
    uLong c = crc32(0L, Z_NULL, 0);
    const unsigned char *b = p;
    while (n > 0) { /* zlib counts in uInt */
        uInt k = n > 0x40000000u ? 0x40000000u : (uInt)n;
        c = crc32(c, b, k);
        b += k;
        n -= k;
    }
    return (uint32_t)c;
}

static uint64_t now_ms(void)
{
    return uv_hrtime() / 1000000u;
}

static void seg_path(const struct lf_spool *s, uint64_t id, char *out, size_t cap)
{
    snprintf(out, cap, "%s/%016" PRIx64 ".spool", s->dir, id);
}

/* Reads n bytes at off; false on error or end of file. */
static bool read_at(int fd, void *p, size_t n, uint64_t off)
{
    char *c = p;
    while (n > 0) {
        ssize_t r = pread(fd, c, n, (off_t)off);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return false;
        c += r;
        n -= (size_t)r;
        off += (uint64_t)r;
    }
    return true;
}

/* Makes the directory's entries durable (a new segment's name); 0 or an errno value. */
static int sync_dir(const struct lf_spool *s)
{
    int fd = open(s->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return errno;
    int e = fsync(fd) != 0 ? errno : 0;
    close(fd);
    return e;
}

static bool pos_before(struct lf_spool_pos a, struct lf_spool_pos b)
{
    return a.seg < b.seg || (a.seg == b.seg && a.off < b.off);
}

/* The cursor file's text, in a new string (free it): the delivered position, then every
 * output's own position that is ahead of it, one line each:
 *
 *   spool <segment, 16 hex digits> <offset>
 *   output <segment> <offset> <name, to the end of the line>
 *
 * A name holding a newline is left out (that output restarts at the delivered position).
 * NULL when out of memory. Called with s->mu held. */
static char *cursor_text_locked(const struct lf_spool *s, size_t *len)
{
    size_t cap = 64;
    for (size_t i = 0; i < s->n_outs; i++)
        cap += strlen(s->outs[i].name) + 64;
    char *text = malloc(cap);
    if (text == NULL)
        return NULL;
    int n = snprintf(text, cap, "spool %016" PRIx64 " %" PRIu64 "\n", s->delivered.seg,
                     s->delivered.off);
    size_t used = (size_t)n;
    for (size_t i = 0; i < s->n_outs; i++) {
        const struct out_pos *o = &s->outs[i];
        if (!pos_before(s->delivered, o->pos) || strchr(o->name, '\n') != NULL)
            continue;
        n = snprintf(text + used, cap - used, "output %016" PRIx64 " %" PRIu64 " %s\n",
                     o->pos.seg, o->pos.off, o->name);
        used += (size_t)n;
    }
    *len = used;
    return text;
}

/* Saves the positions: cursor.tmp, then renamed over cursor. Called with s->mu held; a
 * failure is logged (a restart then sends some records again). */
static void save_cursor_locked(struct lf_spool *s)
{
    char tmp[4200], path[4200];
    snprintf(tmp, sizeof(tmp), "%s/cursor.tmp", s->dir);
    snprintf(path, sizeof(path), "%s/cursor", s->dir);
    size_t n = 0;
    char *text = cursor_text_locked(s, &n);
    if (text == NULL) {
        lf_warn("cannot save the spool position in %s: out of memory", path);
        return;
    }
    unlink(tmp);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    bool ok = fd >= 0 && lf_write_all(fd, text, n) == 0;
    free(text);
    if (fd >= 0 && close(fd) != 0)
        ok = false;
    if (!ok || rename(tmp, path) != 0) {
        lf_warn("cannot save the spool position in %s: %s", path, lf_strerror(errno));
        unlink(tmp);
        return;
    }
    s->cursor_dirty = false;
    s->cursor_saved_ms = now_ms();
}

/* Sets the position of the output named name (kept while ahead of the delivered one).
 * False when out of memory. Called with s->mu held, or before the spool is shared. */
static bool set_out_locked(struct lf_spool *s, const char *name, size_t name_len,
                           struct lf_spool_pos pos)
{
    for (size_t i = 0; i < s->n_outs; i++) {
        if (strlen(s->outs[i].name) == name_len && memcmp(s->outs[i].name, name, name_len) == 0) {
            s->outs[i].pos = pos;
            return true;
        }
    }
    if (lf_array_grow(&s->outs, &s->cap_outs, s->n_outs, sizeof(*s->outs), 8))
        return false;
    char *copy = strndup(name, name_len);
    if (copy == NULL)
        return false;
    s->outs[s->n_outs++] = (struct out_pos){ copy, pos };
    return true;
}

/* Parses "<hex segment> <decimal offset>" at p into *pos; the end in *end. */
static bool parse_pos(const char *p, struct lf_spool_pos *pos, char **end)
{
    errno = 0;
    pos->seg = strtoull(p, end, 16);
    if (errno != 0 || *end == p || **end != ' ')
        return false;
    p = *end + 1;
    pos->off = strtoull(p, end, 10);
    return errno == 0 && *end != p;
}

/* Reads the outputs' lines of the cursor file, after its first line (text). */
static void load_outputs(struct lf_spool *s, char *text, const char *path)
{
    for (char *line = text; line != NULL && *line != '\0';) {
        char *nl = strchr(line, '\n');
        if (nl == NULL)
            break; /* torn: cursor files are renamed into place whole, so not ours */
        *nl = '\0';
        struct lf_spool_pos pos;
        char *end = NULL;
        bool ok = strncmp(line, "output ", 7) == 0 && parse_pos(line + 7, &pos, &end) &&
                  *end == ' ' && end[1] != '\0';
        if (ok && !set_out_locked(s, end + 1, strlen(end + 1), pos))
            lf_warn("out of memory reading %s: output %s restarts at the delivered position",
                    path, end + 1);
        else if (!ok)
            lf_warn("%s: a line that is not an output's position; ignored", path);
        line = nl + 1;
    }
}

static void load_cursor(struct lf_spool *s)
{
    char path[4200];
    snprintf(path, sizeof(path), "%s/cursor", s->dir);
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return;
    size_t cap = 1u << 16;
    char *text = malloc(cap);
    ssize_t n = text != NULL ? read(fd, text, cap - 1) : -1;
    close(fd);
    if (n < 0) {
        lf_warn("%s cannot be read; delivering the spool from its start", path);
        free(text);
        return;
    }
    text[n] = '\0';
    struct lf_spool_pos pos;
    char *end = NULL;
    if (strncmp(text, "spool ", 6) == 0 && parse_pos(text + 6, &pos, &end) && *end == '\n') {
        s->delivered = pos;
        load_outputs(s, end + 1, path);
    } else {
        lf_warn("%s is not a spool position; delivering the spool from its start", path);
    }
    free(text);
}

static int cmp_seg(const void *a, const void *b)
{
    const struct seg *x = a, *y = b;
    return x->id < y->id ? -1 : x->id > y->id;
}

static enum lf_err push_seg(struct lf_spool *s, uint64_t id, uint64_t size, bool sealed)
{
    if (lf_array_grow(&s->segs, &s->cap_segs, s->n_segs, sizeof(*s->segs), 16))
        return LF_ENOMEM;
    s->segs[s->n_segs++] = (struct seg){ id, size, sealed };
    s->st.bytes += size;
    return LF_OK;
}

/* Lists the segment files of s->dir, oldest first; all of them sealed. */
static enum lf_err scan_dir(struct lf_spool *s, struct lf_errbuf *eb)
{
    DIR *d = opendir(s->dir);
    if (d == NULL) {
        int e = errno;
        return lf_fail(eb, LF_EIO, "spool: open directory %s: %s", s->dir, lf_strerror(e));
    }
    struct dirent *de;
    enum lf_err err = LF_OK;
    while (!err && (de = readdir(d)) != NULL) {
        char *end = NULL;
        if (strlen(de->d_name) != 22 || strcmp(de->d_name + 16, ".spool") != 0)
            continue;
        uint64_t id = strtoull(de->d_name, &end, 16);
        if (end != de->d_name + 16)
            continue;
        struct stat st;
        if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 ||
            !S_ISREG(st.st_mode)) {
            lf_warn("%s/%s is not a regular file; ignored", s->dir, de->d_name);
            continue;
        }
        err = push_seg(s, id, (uint64_t)st.st_size, true);
        if (!err && id >= s->next_id)
            s->next_id = id + 1;
    }
    closedir(d);
    if (err)
        return lf_fail(eb, err, "out of memory");
    if (s->n_segs > 1)
        qsort(s->segs, s->n_segs, sizeof(*s->segs), cmp_seg);
    return LF_OK;
}

/* Removes the segments wholly delivered. Called with s->mu held. */
static bool remove_delivered_locked(struct lf_spool *s)
{
    size_t k = 0;
    while (k < s->n_segs) {
        const struct seg *g = &s->segs[k];
        bool done = g->id < s->delivered.seg ||
                    (g->sealed && g->id == s->delivered.seg && s->delivered.off >= g->size);
        if (k == s->n_segs - 1 && s->wfd >= 0) {
            /* The writer's: closed too when all of it is durable and delivered and the
             * writer is not in it (the next append starts a new one). */
            done = !s->writing && s->delivered.seg == g->id && s->delivered.off >= g->size &&
                   s->committed == g->size;
            if (done) {
                close(s->wfd);
                s->wfd = -1;
            }
        }
        if (!done)
            break;
        char path[4200];
        seg_path(s, g->id, path, sizeof(path));
        if (unlink(path) != 0 && errno != ENOENT)
            lf_warn("cannot remove delivered spool segment %s: %s", path, lf_strerror(errno));
        s->st.bytes -= g->size;
        s->st.segments_removed++;
        k++;
    }
    if (k == 0)
        return false;
    memmove(s->segs, s->segs + k, (s->n_segs - k) * sizeof(*s->segs));
    s->n_segs -= k;
    uv_cond_broadcast(&s->room);
    return true;
}

/* The committed end of the spool: the end of the last segment as the reader may see it. */
static struct lf_spool_pos end_locked(const struct lf_spool *s)
{
    if (s->n_segs == 0)
        return s->delivered;
    const struct seg *g = &s->segs[s->n_segs - 1];
    return (struct lf_spool_pos){ g->id, g->sealed ? g->size : s->committed };
}

/* Bytes appended and not yet released. */
static uint64_t undelivered_locked(const struct lf_spool *s)
{
    uint64_t n = 0;
    for (size_t k = 0; k < s->n_segs; k++) {
        const struct seg *g = &s->segs[k];
        uint64_t size = g->size;
        if (g->id > s->delivered.seg)
            n += size;
        else if (g->id == s->delivered.seg && size > s->delivered.off)
            n += size - s->delivered.off;
    }
    return n;
}

enum lf_err lf_spool_open(const char *dir, uint64_t max_bytes, uint64_t segment_bytes,
                          struct lf_spool **out, struct lf_errbuf *eb)
{
    int e = lf_mkdir_p(dir, 0700); /* batches hold event data: the owner's only */
    if (e != 0)
        return lf_fail(eb, LF_EIO, "spool: mkdir %s: %s", dir, lf_strerror(e));
    struct stat st;
    if (lstat(dir, &st) != 0 || !S_ISDIR(st.st_mode))
        return lf_fail(eb, LF_EIO, "spool: %s is not a directory (a symbolic link?)", dir);
    if ((st.st_mode & 077) != 0 && chmod(dir, 0700) != 0)
        lf_warn("spool directory %s is open to others and cannot be restricted: %s", dir,
                lf_strerror(errno));
    struct lf_spool *s = calloc(1, sizeof(*s));
    if (s == NULL || (s->dir = strdup(dir)) == NULL) {
        free(s);
        return lf_fail(eb, LF_ENOMEM, "out of memory");
    }
    if (segment_bytes == 0) {
        segment_bytes = max_bytes / 8;
        segment_bytes = segment_bytes < SEG_MIN ? SEG_MIN : segment_bytes;
        segment_bytes = segment_bytes > SEG_MAX ? SEG_MAX : segment_bytes;
    }
    s->max_bytes = max_bytes;
    s->seg_max = segment_bytes;
    s->wfd = -1;
    s->rfd = -1;
    lf_buf_init(&s->scan, (size_t)SEG_MAX * 2 + LF_SPOOL_MAX_RECORD);
    uv_mutex_init(&s->mu);
    uv_cond_init(&s->room);
    uv_cond_init(&s->data);
    enum lf_err err = scan_dir(s, eb);
    if (err) {
        lf_spool_close(s);
        return err;
    }
    load_cursor(s);
    if (s->delivered.seg >= s->next_id)
        s->next_id = s->delivered.seg + 1;
    if (s->n_segs > 0 && s->delivered.seg < s->segs[0].id)
        s->delivered = (struct lf_spool_pos){ s->segs[0].id, 0 };
    if (s->n_segs == 0)
        s->delivered = (struct lf_spool_pos){ s->next_id, 0 };
    remove_delivered_locked(s);
    s->reader = s->delivered;
    s->st.segments = s->n_segs;
    *out = s;
    return LF_OK;
}

/* Starts segment next_id for appends. Writer thread, with writing set. */
static enum lf_err start_segment(struct lf_spool *s, struct lf_errbuf *eb)
{
    char path[4200];
    seg_path(s, s->next_id, path, sizeof(path));
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC | O_APPEND, 0600);
    if (fd < 0) {
        int e = errno;
        return lf_fail(eb, LF_EIO, "spool: create %s: %s", path, lf_strerror(e));
    }
    uv_mutex_lock(&s->mu);
    enum lf_err err = push_seg(s, s->next_id, 0, false);
    if (err) {
        uv_mutex_unlock(&s->mu);
        close(fd);
        unlink(path);
        return lf_fail(eb, err, "out of memory");
    }
    s->next_id++;
    s->wfd = fd;
    s->committed = 0;
    s->new_seg = true;
    s->st.segments = s->n_segs;
    uv_mutex_unlock(&s->mu);
    return LF_OK;
}

/* Marks the writer in (or out of) an append or commit: while in, a release leaves wfd
 * open. */
static void set_writing(struct lf_spool *s, bool on)
{
    uv_mutex_lock(&s->mu);
    s->writing = on;
    uv_mutex_unlock(&s->mu);
}

/* The path of the writer's segment, for messages (a release may move the list meanwhile). */
static void writer_path(struct lf_spool *s, char *out, size_t cap)
{
    uv_mutex_lock(&s->mu);
    seg_path(s, s->segs[s->n_segs - 1].id, out, cap);
    uv_mutex_unlock(&s->mu);
}

/* Makes the last segment durable up to what was appended: one fdatasync, and the
 * directory's fsync when the segment is new. Writer thread, with writing set. */
static enum lf_err sync_segment(struct lf_spool *s, struct lf_errbuf *eb)
{
    if (s->wfd < 0)
        return LF_OK; /* closed only when every record in it was durable */
    char path[4200];
    if (fdatasync(s->wfd) != 0) {
        int e = errno;
        writer_path(s, path, sizeof(path));
        return lf_fail(eb, LF_EIO, "spool: fdatasync of %s: %s", path, lf_strerror(e));
    }
    int e = s->new_seg ? sync_dir(s) : 0;
    if (e != 0) {
        writer_path(s, path, sizeof(path));
        return lf_fail(eb, LF_EIO, "spool: fsync of directory %s (for the new %s): %s", s->dir,
                       path, lf_strerror(e));
    }
    s->new_seg = false;
    uv_mutex_lock(&s->mu);
    s->committed = s->segs[s->n_segs - 1].size;
    s->durable = s->appended;
    s->st.commits++;
    uv_cond_broadcast(&s->data);
    uv_mutex_unlock(&s->mu);
    return LF_OK;
}

/* Cuts the last segment back to its committed length: the records past it are gone (counted
 * out of appended). LF_EIO when the cut fails: appends wait until one succeeds. Writer
 * thread, with writing set. */
static enum lf_err cut_back(struct lf_spool *s, struct lf_errbuf *eb)
{
    uv_mutex_lock(&s->mu);
    s->appended = s->durable;
    s->cut_due = s->wfd >= 0;
    uint64_t keep = s->committed;
    uv_mutex_unlock(&s->mu);
    if (s->wfd < 0)
        return LF_OK;
    if (ftruncate(s->wfd, (off_t)keep) != 0) {
        int e = errno;
        char path[4200];
        writer_path(s, path, sizeof(path));
        return lf_fail(eb, LF_EIO, "spool: cut %s back to its %" PRIu64 " durable bytes: %s", path,
                       keep, lf_strerror(e));
    }
    uv_mutex_lock(&s->mu);
    struct seg *g = &s->segs[s->n_segs - 1];
    s->st.bytes -= g->size - keep;
    g->size = keep;
    s->cut_due = false;
    uv_mutex_unlock(&s->mu);
    return LF_OK;
}

/* After a failed write or sync (eb says which): cuts back, adding to eb if that fails too.
 * Returns LF_EIO. */
static enum lf_err write_failed(struct lf_spool *s, struct lf_errbuf *eb)
{
    struct lf_errbuf cut = { "" };
    if (cut_back(s, &cut)) {
        char first[sizeof(eb->msg)];
        snprintf(first, sizeof(first), "%s", eb->msg);
        return lf_fail(eb, LF_EIO, "%s; %s", first, cut.msg);
    }
    return LF_EIO;
}

/* Waits while the spool is full (making what is appended readable first, so it can be
 * delivered); on LF_OK the writer is in (set_writing()). LF_EAGAIN after an interrupt. */
static enum lf_err wait_for_room(struct lf_spool *s, struct lf_errbuf *eb)
{
    uv_mutex_lock(&s->mu);
    bool full = !s->interrupted && s->st.bytes >= s->max_bytes && undelivered_locked(s) > 0;
    if (full && s->wfd >= 0 && s->committed < s->segs[s->n_segs - 1].size) {
        s->writing = true;
        uv_mutex_unlock(&s->mu);
        enum lf_err err = sync_segment(s, eb);
        if (err) {
            err = write_failed(s, eb);
            set_writing(s, false);
            return err;
        }
        uv_mutex_lock(&s->mu);
    }
    while (!s->interrupted && s->st.bytes >= s->max_bytes && undelivered_locked(s) > 0)
        uv_cond_wait(&s->room, &s->mu);
    bool interrupted = s->interrupted;
    s->writing = !interrupted;
    uv_mutex_unlock(&s->mu);
    return interrupted ? LF_EAGAIN : LF_OK;
}

/* Seals the last segment, synced whole, and closes it: the next append starts a new one. */
static void seal_segment(struct lf_spool *s)
{
    uv_mutex_lock(&s->mu);
    s->segs[s->n_segs - 1].sealed = true;
    close(s->wfd);
    s->wfd = -1;
    s->writing = false;
    remove_delivered_locked(s); /* delivered already if the reader kept up */
    s->st.segments = s->n_segs;
    uv_mutex_unlock(&s->mu);
}

/* Writes one record at the end of the last segment (starting one if needed); a full
 * segment is synced and sealed. Writer thread, with writing set. */
static enum lf_err
write_record(struct lf_spool *s, const void *payload, size_t len, struct lf_errbuf *eb)
{
    if (s->cut_due && cut_back(s, eb))
        return LF_EIO; /* appending after what a failed sync left would make it readable */
    if (s->wfd < 0) {
        enum lf_err err = start_segment(s, eb);
        if (err)
            return err;
    }
    unsigned char h[LF_SPOOL_HEADER_BYTES];
    put32(h, MAGIC);
    put32(h + 4, (uint32_t)len);
    put32(h + 8, crc(payload, len));
    put32(h + 12, crc(h, 12));
    if (lf_write_all(s->wfd, h, sizeof(h)) != 0 || lf_write_all(s->wfd, payload, len) != 0) {
        int e = errno;
        lf_fail(eb, LF_EIO, "spool: write in %s: %s", s->dir, lf_strerror(e));
        return write_failed(s, eb); /* a partial record included */
    }
    uv_mutex_lock(&s->mu);
    struct seg *g = &s->segs[s->n_segs - 1];
    g->size += sizeof(h) + len;
    s->st.bytes += sizeof(h) + len;
    s->st.records++;
    s->appended++;
    bool rolled = g->size >= s->seg_max;
    uv_mutex_unlock(&s->mu);
    if (!rolled)
        return LF_OK;
    if (sync_segment(s, eb))
        return write_failed(s, eb); /* not sealed: a sealed segment is read to its end */
    seal_segment(s);
    return LF_OK;
}

enum lf_err lf_spool_append(struct lf_spool *s, const void *payload, size_t len,
                            struct lf_errbuf *eb)
{
    if (len > LF_SPOOL_MAX_RECORD)
        return lf_fail(eb, LF_ETOOBIG, "spool: a record of %zu bytes is too large", len);
    enum lf_err err = wait_for_room(s, eb);
    if (err)
        return err;
    err = write_record(s, payload, len, eb);
    set_writing(s, false);
    return err;
}

enum lf_err lf_spool_commit(struct lf_spool *s, struct lf_errbuf *eb)
{
    set_writing(s, true);
    enum lf_err err = LF_OK;
    if (s->cut_due)
        err = cut_back(s, eb); /* nothing was appended since the failure: no sync is owed */
    else if (sync_segment(s, eb))
        err = write_failed(s, eb);
    set_writing(s, false);
    return err;
}

uint64_t lf_spool_appended(struct lf_spool *s)
{
    uv_mutex_lock(&s->mu);
    uint64_t n = s->appended;
    uv_mutex_unlock(&s->mu);
    return n;
}

uint64_t lf_spool_durable(struct lf_spool *s)
{
    uv_mutex_lock(&s->mu);
    uint64_t n = s->durable;
    uv_mutex_unlock(&s->mu);
    return n;
}

/* Finds the first record at or after from that checks out in fd, before limit; its offset
 * in *at, or limit if there is none. Reader thread. */
static enum lf_err resync(struct lf_spool *s, int fd, uint64_t from, uint64_t limit,
                          uint64_t *at)
{
    *at = limit;
    if (from >= limit)
        return LF_OK;
    lf_buf_reset(&s->scan);
    size_t n = (size_t)(limit - from);
    enum lf_err err = lf_buf_grow(&s->scan, n);
    if (err)
        return err;
    if (!read_at(fd, s->scan.ptr, n, from))
        return LF_EIO;
    const unsigned char *p = (const unsigned char *)s->scan.ptr;
    for (size_t i = 0; i + LF_SPOOL_HEADER_BYTES <= n; i++) {
        if (get32(p + i) != MAGIC || get32(p + i + 12) != crc(p + i, 12))
            continue;
        uint32_t len = get32(p + i + 4);
        if (len > n - i - LF_SPOOL_HEADER_BYTES)
            continue;
        if (crc(p + i + LF_SPOOL_HEADER_BYTES, len) == get32(p + i + 8)) {
            *at = from + i;
            break;
        }
    }
    return LF_OK;
}

/* Opens segment id for the reader. */
static int reader_fd(struct lf_spool *s, uint64_t id)
{
    if (s->rfd >= 0 && s->rfd_id == id)
        return s->rfd;
    if (s->rfd >= 0)
        close(s->rfd);
    char path[4200];
    seg_path(s, id, path, sizeof(path));
    s->rfd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    s->rfd_id = id;
    if (s->rfd < 0)
        lf_error("cannot read spool segment %s: %s", path, lf_strerror(errno));
    return s->rfd;
}

enum lf_err lf_spool_next(struct lf_spool *s, struct lf_buf *payload, struct lf_spool_pos *end)
{
    for (;;) {
        uv_mutex_lock(&s->mu);
        size_t k = 0;
        while (k < s->n_segs && s->segs[k].id < s->reader.seg)
            k++;
        if (k == s->n_segs) {
            uv_mutex_unlock(&s->mu);
            return LF_EAGAIN;
        }
        struct seg g = s->segs[k];
        if (g.id > s->reader.seg)
            s->reader = (struct lf_spool_pos){ g.id, 0 }; /* removed, or skipped over */
        uint64_t limit = g.sealed ? g.size : s->committed;
        bool last = k == s->n_segs - 1;
        struct lf_spool_pos at = s->reader;
        uv_mutex_unlock(&s->mu);
        if (at.off >= limit) {
            if (!g.sealed || last)
                return LF_EAGAIN;
            uv_mutex_lock(&s->mu);
            s->reader = (struct lf_spool_pos){ s->segs[k + 1].id, 0 };
            uv_mutex_unlock(&s->mu);
            continue;
        }
        int fd = reader_fd(s, g.id);
        if (fd < 0)
            return LF_EIO;
        unsigned char h[LF_SPOOL_HEADER_BYTES];
        bool ok = limit - at.off >= sizeof(h) && read_at(fd, h, sizeof(h), at.off) &&
                  get32(h) == MAGIC && get32(h + 12) == crc(h, 12) &&
                  get32(h + 4) <= limit - at.off - sizeof(h);
        if (ok) {
            uint32_t len = get32(h + 4);
            lf_buf_reset(payload);
            enum lf_err err = lf_buf_grow(payload, len);
            if (err)
                return err;
            if (!read_at(fd, payload->ptr, len, at.off + sizeof(h)))
                return LF_EIO;
            payload->len = len;
            if (crc(payload->ptr, len) == get32(h + 8)) {
                *end = (struct lf_spool_pos){ g.id, at.off + sizeof(h) + len };
                uv_mutex_lock(&s->mu);
                s->reader = *end;
                uv_mutex_unlock(&s->mu);
                return LF_OK;
            }
        }
        uint64_t next;
        enum lf_err err = resync(s, fd, at.off + 1, limit, &next);
        if (err)
            return err;
        lf_warn("spool segment %s/%016" PRIx64 ".spool: corrupt or torn record at offset %" PRIu64
                "; %" PRIu64 " bytes skipped", s->dir, g.id, at.off, next - at.off);
        uv_mutex_lock(&s->mu);
        s->st.corrupt++;
        s->reader = (struct lf_spool_pos){ g.id, next };
        uv_mutex_unlock(&s->mu);
    }
}

void lf_spool_wait(struct lf_spool *s, uint64_t timeout_ms)
{
    uv_mutex_lock(&s->mu);
    struct lf_spool_pos e = end_locked(s);
    if (!s->interrupted && !pos_before(s->reader, e))
        lf_err_ignore(uv_cond_timedwait(&s->data, &s->mu, timeout_ms * 1000000u) ? LF_EAGAIN
                                                                                 : LF_OK);
    uv_mutex_unlock(&s->mu);
}

void lf_spool_release(struct lf_spool *s, const struct lf_spool_pos *end)
{
    uv_mutex_lock(&s->mu);
    if (pos_before(s->delivered, *end)) {
        s->delivered = *end;
        s->cursor_dirty = true;
    }
    bool removed = remove_delivered_locked(s);
    s->st.segments = s->n_segs;
    if (s->cursor_dirty && (removed || now_ms() - s->cursor_saved_ms >= CURSOR_INTERVAL_MS))
        save_cursor_locked(s);
    uv_mutex_unlock(&s->mu);
}

struct lf_spool_pos lf_spool_output_pos(struct lf_spool *s, const char *name)
{
    uv_mutex_lock(&s->mu);
    struct lf_spool_pos pos = s->delivered;
    for (size_t i = 0; i < s->n_outs; i++) {
        if (strcmp(s->outs[i].name, name) == 0 && pos_before(pos, s->outs[i].pos))
            pos = s->outs[i].pos;
    }
    uv_mutex_unlock(&s->mu);
    return pos;
}

void lf_spool_set_output_pos(struct lf_spool *s, const char *name, struct lf_spool_pos pos)
{
    uv_mutex_lock(&s->mu);
    if (!set_out_locked(s, name, strlen(name), pos))
        lf_warn("out of memory keeping output %s's spool position; a restart may send it "
                "records again", name);
    s->cursor_dirty = true;
    if (now_ms() - s->cursor_saved_ms >= CURSOR_INTERVAL_MS)
        save_cursor_locked(s);
    uv_mutex_unlock(&s->mu);
}

bool lf_spool_empty(struct lf_spool *s)
{
    uv_mutex_lock(&s->mu);
    bool empty = undelivered_locked(s) == 0;
    uv_mutex_unlock(&s->mu);
    return empty;
}

void lf_spool_interrupt(struct lf_spool *s)
{
    uv_mutex_lock(&s->mu);
    s->interrupted = true;
    uv_cond_broadcast(&s->room);
    uv_cond_broadcast(&s->data);
    uv_mutex_unlock(&s->mu);
}

void lf_spool_stats(struct lf_spool *s, struct lf_spool_stats *out)
{
    uv_mutex_lock(&s->mu);
    *out = s->st;
    out->undelivered = undelivered_locked(s);
    uv_mutex_unlock(&s->mu);
}

void lf_spool_close(struct lf_spool *s)
{
    if (s == NULL)
        return;
    if (s->wfd >= 0) {
        struct lf_errbuf eb = { "" };
        if (lf_spool_commit(s, &eb))
            lf_warn("%s; records appended since the last good fdatasync are not kept", eb.msg);
        close(s->wfd);
    }
    if (s->rfd >= 0)
        close(s->rfd);
    if (s->cursor_dirty)
        save_cursor_locked(s);
    uv_cond_destroy(&s->room);
    uv_cond_destroy(&s->data);
    uv_mutex_destroy(&s->mu);
    lf_buf_release(&s->scan);
    for (size_t i = 0; i < s->n_outs; i++)
        free(s->outs[i].name);
    free(s->outs);
    free(s->segs);
    free(s->dir);
    free(s);
}
