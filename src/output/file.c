/* file.c - the file output: batches appended to rotating files in one directory.
 *
 *   <path>/logferry-20261130T010203-000000.ndjson.zst   <- full: rotated
 *   <path>/logferry-20261130T010203-000001.ndjson.zst   <- current, O_APPEND
 *
 * With compression zstd each batch is one complete zstd frame, so the file is a valid zstd
 * stream at every batch boundary; with none it is the batch's bytes. Those are its NDJSON
 * (format json, files *.ndjson[.zst]) or, with format text, each message as it was read
 * and a '\n' (files *.txt[.zst]): the batch's text, written as the batch was filled (its
 * zstd frame is made here on the lane, in a buffer kept across batches). A batch goes out in
 * one write loop and is then held, unacknowledged, until an fdatasync covers it: the file
 * output's ack means durable. Syncs are group commits: one when LF_FILE_SYNC_BYTES have
 * been written since the last, when the held list is full, before a rotation, and on
 * flush (the pipeline flushes whenever its queue runs empty, so an idle agent acks at
 * once). One fdatasync per batch cost more CPU than the whole rest of a backfill.
 * Once synced, a range is clean and durable, and is dropped from the page cache
 * (POSIX_FADV_DONTNEED): the next writes reuse those pages instead of taking new ones from
 * the free pool, so a backfill keeps about LF_FILE_SYNC_BYTES of output cached, not all of
 * it (docs/benchmarks.md, "Why CPU time varies": on this VM a page not touched lately costs
 * far more to fill than one just freed).
 * If a write fails (ENOSPC, EIO, EFBIG), the file is cut back to its last whole batch, so
 * no reader ever sees a torn frame or half an event, and the batch is reported LF_EAGAIN
 * for the pipeline to retry. If a sync fails, what reached the disk is unknown: the file
 * is cut back to its last synced size and every held batch is reported LF_EAGAIN.
 *
 * Names sort in write order: UTC second, then a 6-digit sequence within that second that
 * continues after the highest one already in the directory; files are created with O_EXCL
 * so an existing file is never overwritten, by us or by another process.
 *
 * Retention: every file of that name shape other than the current one is rotated. With
 * rotate_keep, only the newest rotate_keep of them are kept; with max_age, one last
 * modified longer ago than that is removed. Both are applied each time a new file starts
 * and, for an output that writes little, on a flush (after a write) at most every
 * LF_FILE_PRUNE_MS. A file of another name is never touched. All on the lane's thread. */
#include "config.h"

#define LF_LOG_COMPONENT "output"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "logferry/fsutil.h"
#include "logferry/log.h"
#include "logferry/zframe.h"
#include "output_int.h"

#define NAME_PREFIX "logferry-"
#define SEQ_MAX     999999u

#define LF_FILE_SYNC_BYTES (8u << 20) /* written since the last sync that forces one */
#define LF_FILE_MAX_HELD   64         /* batches written and waiting for a sync, at most */
#define LF_FILE_TEXT_MAX   ((size_t)SIZE_MAX / 4)
#define LF_FILE_PRUNE_MS   60000      /* an idle output applies max_age this often */

struct file_out {
    const char *name; /* borrowed: the output's name, for messages */
    const char *dir;  /* borrowed: conf->path */
    int dirfd;        /* the directory, for openat() and fsync of new entries */
    int fd;           /* the current file; -1 before the first batch and after a failure */
    uint64_t size;    /* bytes of whole batches in the current file */
    uint64_t synced;  /* of which an fdatasync has made durable */
    struct lf_batch *held[LF_FILE_MAX_HELD]; /* borrowed: written, not yet acknowledged */
    size_t n_held;
    char file[64];     /* the current file's name within dir */
    char sec[16];      /* UTC yyyymmddTHHMMSS of the last file created */
    unsigned seq;      /* its sequence number */
    struct lf_buf zst; /* format text, compression zstd: the text's frame, reused */
    ZSTD_CCtx *cctx;   /* owned; format text with zstd, created on first use */
    int64_t pruned_ms; /* CLOCK_MONOTONIC ms of the last retention pass; 0 = none yet */
};

static enum lf_err file_open(struct lf_output *out, struct lf_errbuf *eb)
{
    const struct lf_output_conf *conf = lf_output_conf(out);
    if (conf->path == NULL || conf->path[0] == '\0')
        return lf_fail(eb, LF_ECONFIG, "output %s: path is required", conf->name);
    int e = lf_mkdir_p(conf->path, 0750);
    if (e != 0) {
        return lf_fail(eb, LF_EIO, "output %s: create directory %s: %s", conf->name, conf->path,
                       lf_strerror(e));
    }
    int dirfd = open(conf->path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dirfd < 0) {
        e = errno;
        return lf_fail(eb, LF_EIO, "output %s: open directory %s: %s", conf->name, conf->path,
                       lf_strerror(e));
    }
    if (faccessat(dirfd, ".", W_OK | X_OK, AT_EACCESS) != 0) {
        e = errno;
        close(dirfd);
        return lf_fail(eb, LF_EIO, "output %s: directory %s is not writable: %s", conf->name,
                       conf->path, lf_strerror(e));
    }
    struct file_out *f = calloc(1, sizeof(*f));
    if (f == NULL) {
        close(dirfd);
        return lf_fail(eb, LF_ENOMEM, "output %s: out of memory", conf->name);
    }
    f->name = conf->name;
    f->dir = conf->path;
    f->dirfd = dirfd;
    f->fd = -1;
    lf_buf_init(&f->zst, LF_FILE_TEXT_MAX);
    lf_output_set_ctx(out, f);
    return LF_OK;
}

/* The highest sequence already used in the directory for second sec, or -1. */
static long highest_seq(struct file_out *f, const char *sec)
{
    long best = -1;
    int fd = dup(f->dirfd);
    DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
    if (d == NULL) {
        if (fd >= 0)
            close(fd);
        return best; /* O_EXCL still keeps us from overwriting anything */
    }
    rewinddir(d);
    char prefix[32];
    int plen = snprintf(prefix, sizeof(prefix), NAME_PREFIX "%s-", sec);
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        if (strncmp(de->d_name, prefix, (size_t)plen) != 0)
            continue;
        char *end;
        long seq = strtol(de->d_name + plen, &end, 10);
        if (end != de->d_name + plen && *end == '.' && seq > best)
            best = seq;
    }
    closedir(d);
    return best;
}

/* Creates the next file. Returns 0 or an errno value. */
static int open_next(struct file_out *f, const struct lf_output_conf *conf)
{
    time_t now = time(NULL);
    struct tm tm;
    char sec[16];
    gmtime_r(&now, &tm);
    strftime(sec, sizeof(sec), "%Y%m%dT%H%M%S", &tm);
    unsigned seq = 0;
    if (strcmp(sec, f->sec) == 0)
        seq = f->seq + 1;
    else
        seq = (unsigned)(highest_seq(f, sec) + 1);
    bool zst = conf->compression == LF_COMPRESS_ZSTD;
    const char *ext = conf->format == LF_CONSOLE_TEXT ? (zst ? ".txt.zst" : ".txt")
                                                      : (zst ? ".ndjson.zst" : ".ndjson");
    for (;; seq++) {
        if (seq > SEQ_MAX)
            return EEXIST;
        snprintf(f->file, sizeof(f->file), NAME_PREFIX "%s-%06u%s", sec, seq, ext);
        int fd =
            openat(f->dirfd, f->file, O_WRONLY | O_CREAT | O_EXCL | O_APPEND | O_CLOEXEC, 0640);
        if (fd >= 0) {
            f->fd = fd;
            break;
        }
        if (errno != EEXIST)
            return errno;
    }
    memcpy(f->sec, sec, sizeof(sec));
    f->seq = seq;
    f->size = 0;
    f->synced = 0;
    /* The new name must survive a crash too, or acked data could vanish with it. */
    if (fsync(f->dirfd) != 0)
        return errno;
    return 0;
}

/* True for a name this output writes: logferry-yyyymmddTHHMMSS-nnnnnn.{ndjson,txt}[.zst]. */
static bool is_output_file(const char *name)
{
    static const char *const exts[] = { ".ndjson", ".ndjson.zst", ".txt", ".txt.zst", NULL };
    size_t plen = strlen(NAME_PREFIX);
    if (strncmp(name, NAME_PREFIX, plen) != 0 || strlen(name) < plen + 22)
        return false;
    const char *p = name + plen; /* yyyymmddTHHMMSS-nnnnnn */
    for (size_t i = 0; i < 22; i++) {
        bool digit = p[i] >= '0' && p[i] <= '9';
        if (i == 8 ? p[i] != 'T' : i == 15 ? p[i] != '-' : !digit)
            return false;
    }
    for (size_t i = 0; exts[i] != NULL; i++) {
        if (strcmp(p + 22, exts[i]) == 0)
            return true;
    }
    return false;
}

static int newest_first(const void *a, const void *b)
{
    return -strcmp(a, b);
}

/* The rotated files of the directory (every output file but the current one) into *names,
 * newest first (names sort in write order); returns how many, or -1 (errno) if the
 * directory cannot be read. *names is malloc'd: free it. */
static long rotated_files(struct file_out *f, char (**names)[64])
{
    *names = NULL;
    int fd = dup(f->dirfd);
    DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
    if (d == NULL) {
        int e = errno;
        if (fd >= 0)
            close(fd);
        errno = e;
        return -1;
    }
    rewinddir(d);
    size_t n = 0, cap = 0;
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        if (!is_output_file(de->d_name) || strlen(de->d_name) >= sizeof(**names) ||
            (f->fd >= 0 && strcmp(de->d_name, f->file) == 0))
            continue;
        if (n == cap) {
            cap = cap ? cap * 2 : 64;
            char(*grown)[64] = realloc(*names, cap * sizeof(**names));
            if (grown == NULL) {
                closedir(d);
                errno = ENOMEM;
                return -1;
            }
            *names = grown;
        }
        snprintf((*names)[n++], sizeof(**names), "%s", de->d_name);
    }
    closedir(d);
    if (n > 0)
        qsort(*names, n, sizeof(**names), newest_first);
    return (long)n;
}

static int64_t mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Removes the rotated files past rotate_keep, and those older than max_age. A failure is
 * logged and left for the next pass: it never holds up a batch. */
static void prune(struct file_out *f, const struct lf_output_conf *conf)
{
    if (conf->rotate_keep == 0 && conf->max_age_ms == 0)
        return;
    f->pruned_ms = mono_ms();
    char(*names)[64];
    long n = rotated_files(f, &names);
    if (n < 0) {
        int e = errno;
        lf_warn("output %s: list %s to remove old files: %s", f->name, f->dir, lf_strerror(e));
        return;
    }
    time_t now = time(NULL);
    size_t removed = 0;
    for (long i = 0; i < n; i++) {
        struct stat st;
        bool old = false;
        if (conf->max_age_ms > 0 && fstatat(f->dirfd, names[i], &st, AT_SYMLINK_NOFOLLOW) == 0)
            old = st.st_mtime < now && (uint64_t)(now - st.st_mtime) * 1000 > conf->max_age_ms;
        if (!old && (conf->rotate_keep == 0 || (size_t)i < conf->rotate_keep))
            continue;
        if (unlinkat(f->dirfd, names[i], 0) == 0) {
            removed++;
        } else if (errno != ENOENT) {
            int e = errno;
            lf_warn("output %s: remove %s/%s: %s", f->name, f->dir, names[i], lf_strerror(e));
        }
    }
    free(names);
    if (removed > 0)
        lf_debug("output %s: removed %zu rotated files from %s", f->name, removed, f->dir);
}

static void close_current(struct file_out *f)
{
    if (f->fd >= 0)
        close(f->fd);
    f->fd = -1;
}

/* Appends data as one whole batch, or cuts the file back to its last whole batch.
 * Returns 0 or an errno value. */
static int append_whole(struct file_out *f, struct lf_str data)
{
    int e = lf_write_all(f->fd, data.ptr, data.len);
    if (e == 0)
        return 0;
    if (ftruncate(f->fd, (off_t)f->size) != 0) {
        int te = errno;
        lf_error("output %s: truncate %s/%s after a failed write: %s; starting a new file", f->name,
                 f->dir, f->file, lf_strerror(te));
        close_current(f);
    }
    return e;
}

/* Makes the held batches durable and acknowledges them, or, if the sync fails, cuts the
 * file back to its last synced size and hands them back for a retry, in order. */
static void sync_held(struct lf_output *out, struct file_out *f)
{
    if (f->n_held == 0)
        return;
    enum lf_err res = LF_OK;
    if (f->fd >= 0 && fdatasync(f->fd) != 0) {
        int e = errno;
        lf_warn("output %s: fdatasync %s/%s: %s; %zu batches will be retried", f->name, f->dir,
                f->file, lf_strerror(e), f->n_held);
        lf_output_stats(out)->errors++;
        res = LF_EAGAIN;
        if (ftruncate(f->fd, (off_t)f->synced) != 0)
            close_current(f);
        else
            f->size = f->synced;
    } else {
        /* Advice only: a failure leaves the pages cached, which is what we had before. */
        if (f->fd >= 0)
            (void)posix_fadvise(f->fd, (off_t)f->synced, (off_t)(f->size - f->synced),
                                POSIX_FADV_DONTNEED);
        f->synced = f->size;
    }
    size_t n = f->n_held;
    f->n_held = 0; /* done() may send again, re-entering this output */
    for (size_t i = 0; i < n; i++)
        lf_output_done(out, f->held[i], res);
}

/* The bytes this output appends for b: its text (b's, as filled; its zstd frame in f's
 * buffer), or its NDJSON or zstd frame (cached in b). */
static enum lf_err file_form(const struct lf_output *out, struct file_out *f, struct lf_batch *b,
                             struct lf_str *data)
{
    const struct lf_output_conf *conf = lf_output_conf(out);
    if (conf->format == LF_CONSOLE_TEXT) {
        struct lf_str text;
        enum lf_err err = lf_batch_text(b, &text);
        if (!err && conf->compression == LF_COMPRESS_ZSTD)
            err = lf_zstd_frame(&f->cctx, conf->compression_level, text, &f->zst);
        if (!err)
            *data = conf->compression == LF_COMPRESS_ZSTD ? lf_buf_str(&f->zst) : text;
        return err;
    }
    return conf->compression == LF_COMPRESS_ZSTD ? lf_batch_zstd(b, conf->compression_level, data)
                                                 : lf_batch_ndjson(b, data);
}

/* Runs on the preparer thread: only the forms cached in b can be made ahead. */
static enum lf_err file_prepare(const struct lf_output *out, struct lf_batch *b)
{
    const struct lf_output_conf *conf = lf_output_conf(out);
    struct lf_str data;
    if (conf->format == LF_CONSOLE_TEXT)
        return LF_OK;
    return conf->compression == LF_COMPRESS_ZSTD
               ? lf_batch_zstd(b, conf->compression_level, &data)
               : lf_batch_ndjson(b, &data);
}

static enum lf_err file_send(struct lf_output *out, struct lf_batch *b)
{
    struct file_out *f = lf_output_ctx(out);
    const struct lf_output_conf *conf = lf_output_conf(out);
    struct lf_str data;
    enum lf_err err = file_form(out, f, b, &data);
    if (err) {
        lf_output_stats(out)->errors++;
        return err;
    }
    if (f->fd >= 0 && f->size > 0 && f->size + data.len > conf->rotate_bytes) {
        sync_held(out, f);
        close_current(f);
    }
    int e = 0;
    if (f->fd < 0) {
        e = open_next(f, conf);
        if (e == 0)
            prune(f, conf);
    }
    if (e != 0) {
        close_current(f);
        lf_warn("output %s: create a file in %s: %s; batch will be retried", f->name, f->dir,
                lf_strerror(e));
    } else {
        e = append_whole(f, data);
        if (e != 0) {
            lf_warn("output %s: write %s/%s: %s; batch will be retried", f->name, f->dir, f->file,
                    lf_strerror(e));
        }
    }
    if (e != 0) {
        lf_output_stats(out)->errors++;
        lf_output_done(out, b, LF_EAGAIN);
        return LF_OK;
    }
    f->size += data.len;
    lf_output_stats(out)->bytes_written += data.len;
    f->held[f->n_held++] = b;
    if (f->n_held == LF_FILE_MAX_HELD || f->size - f->synced >= LF_FILE_SYNC_BYTES)
        sync_held(out, f);
    return LF_OK;
}

static enum lf_err file_flush(struct lf_output *out, struct lf_errbuf *eb)
{
    (void)eb; /* a failed sync hands the batches back for a retry: not an error here */
    struct file_out *f = lf_output_ctx(out);
    sync_held(out, f);
    if (f->pruned_ms == 0 || mono_ms() - f->pruned_ms >= LF_FILE_PRUNE_MS)
        prune(f, lf_output_conf(out));
    return LF_OK;
}

static void file_close(struct lf_output *out)
{
    struct file_out *f = lf_output_ctx(out);
    sync_held(out, f); /* the pipeline drains first; this only guards other callers */
    close_current(f);
    close(f->dirfd);
    lf_buf_release(&f->zst);
    ZSTD_freeCCtx(f->cctx);
    free(f);
    lf_output_set_ctx(out, NULL);
}

/* Text format writes raw messages, so its batches must keep them. */
static bool file_needs_messages(const struct lf_output *out)
{
    return lf_output_conf(out)->format == LF_CONSOLE_TEXT;
}

/* The directory open makes and writes to: made or writable, checked ahead. */
static void file_check(const struct lf_output_conf *conf, struct lf_config_report *rep)
{
    int e = conf->path != NULL ? lf_dir_writable(conf->path) : 0;
    if (e != 0)
        lf_config_report(rep, "path", "cannot make or write files in %s: %s", conf->path,
                         lf_strerror(e));
}

const struct lf_output_ops lf_output_file = {
    .name = "file",
    .open = file_open,
    .send = file_send,
    .flush = file_flush,
    .prepare = file_prepare,
    .close = file_close,
    .needs_messages = file_needs_messages,
    .check = file_check,
};
