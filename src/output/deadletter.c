/* deadletter.c - the dead-letter file of one output (see deadletter.h).
 *
 * Records are built in one buffer and compressed with one context, both kept across writes,
 * so an output that keeps refusing allocates nothing after the first batch. The file opens
 * lazily: an output whose peer never refuses anything leaves no empty file behind. */
#include "config.h"

#include "logferry/deadletter.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zstd.h>

#include "logferry/buf.h"
#include "logferry/fsutil.h"
#include "output_int.h"

#define DL_DIR "dead_letters"
#define DL_MAX ((size_t)1 << 30) /* a record buffer never needs more than a batch's worth */

struct lf_deadletter {
    char *dir;          /* owned; <data_dir>/dead_letters */
    char *path;         /* owned; <dir>/<output>.ndjson.zst */
    char *output;       /* owned; the output's name, JSON-escaped into every record */
    int fd;             /* -1 until the first write */
    struct lf_buf rec;  /* the records of one write */
    size_t n_rec;       /* how many */
    struct lf_buf zout; /* their zstd frame */
    ZSTD_CCtx *cctx;    /* owned; made on the first write */
};

enum lf_err lf_deadletter_new(const char *data_dir,
                              const char *output,
                              struct lf_deadletter **out,
                              struct lf_errbuf *eb)
{
    struct lf_deadletter *dl = calloc(1, sizeof(*dl));
    if (dl == NULL)
        return lf_fail(eb, LF_ENOMEM, "out of memory");
    dl->fd = -1;
    lf_buf_init(&dl->rec, DL_MAX);
    lf_buf_init(&dl->zout, DL_MAX);
    size_t dlen = strlen(data_dir) + sizeof("/" DL_DIR);
    size_t plen = dlen + strlen(output) + sizeof("/.ndjson.zst");
    dl->dir = malloc(dlen);
    dl->path = malloc(plen);
    dl->output = strdup(output);
    if (dl->dir == NULL || dl->path == NULL || dl->output == NULL) {
        lf_deadletter_free(dl);
        return lf_fail(eb, LF_ENOMEM, "out of memory");
    }
    snprintf(dl->dir, dlen, "%s/" DL_DIR, data_dir);
    snprintf(dl->path, plen, "%s/%s.ndjson.zst", dl->dir, output);
    *out = dl;
    return LF_OK;
}

const char *lf_deadletter_path(const struct lf_deadletter *dl)
{
    return dl->path;
}

void lf_deadletter_free(struct lf_deadletter *dl)
{
    if (dl == NULL)
        return;
    if (dl->fd >= 0)
        close(dl->fd);
    lf_buf_release(&dl->rec);
    lf_buf_release(&dl->zout);
    ZSTD_freeCCtx(dl->cctx);
    free(dl->dir);
    free(dl->path);
    free(dl->output);
    free(dl);
}

enum lf_err
lf_deadletter_add(struct lf_deadletter *dl, struct lf_str event, int status, const char *reason)
{
    char head[32];
    struct lf_buf *r = &dl->rec;
    int hl = snprintf(head, sizeof(head), "\",\"status\":%d,\"reason\":\"", status);
    enum lf_err err = lf_buf_append(r, "{\"output\":\"", 11);
    if (!err)
        err = lf_json_escape(r, lf_str_make(dl->output, strlen(dl->output)));
    if (!err)
        err = lf_buf_append(r, head, (size_t)hl);
    if (!err)
        err = lf_json_escape(r, lf_str_make(reason, strlen(reason)));
    if (!err)
        err = lf_buf_append(r, "\",\"event\":", 10);
    if (!err)
        err = lf_buf_append(r, event.ptr, event.len);
    if (!err)
        err = lf_buf_append(r, "}\n", 2);
    if (err) {
        lf_buf_reset(r);
        dl->n_rec = 0;
        return err;
    }
    dl->n_rec++;
    return LF_OK;
}

static enum lf_err compress_records(struct lf_deadletter *dl)
{
    if (dl->cctx == NULL) {
        dl->cctx = ZSTD_createCCtx();
        if (dl->cctx == NULL)
            return LF_ENOMEM;
    }
    size_t bound = ZSTD_compressBound(dl->rec.len);
    lf_buf_reset(&dl->zout);
    enum lf_err err = lf_buf_grow(&dl->zout, bound);
    if (err)
        return err;
    size_t r = ZSTD_CCtx_setParameter(dl->cctx, ZSTD_c_checksumFlag, 1);
    if (!ZSTD_isError(r))
        r = ZSTD_compress2(dl->cctx, dl->zout.ptr, bound, dl->rec.ptr, dl->rec.len);
    if (ZSTD_isError(r))
        return LF_EINVAL;
    dl->zout.len = r;
    return LF_OK;
}

/* Opens the file for appending, made 0600 in a directory made 0700 (dead letters hold event
 * data: the owner's only). Neither may be a symlink, as the registry and spool refuse them:
 * whoever can write data_dir's parent must not point our writes at a file of their choice. */
static enum lf_err open_file(struct lf_deadletter *dl, struct lf_errbuf *eb)
{
    int e = lf_mkdir_p(dl->dir, 0700);
    struct stat st;
    if (e == 0 && lstat(dl->dir, &st) != 0)
        e = errno;
    if (e != 0)
        return lf_fail(eb, LF_EIO, "create %s: %s", dl->dir, lf_strerror(e));
    if (S_ISLNK(st.st_mode))
        return lf_fail(eb, LF_EIO, "%s is a symlink: refused; make it a directory", dl->dir);
    dl->fd = open(dl->path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (dl->fd < 0) {
        e = errno;
        if (e == ELOOP)
            return lf_fail(eb, LF_EIO, "open %s: a symlink: refused; move it away", dl->path);
        return lf_fail(eb, LF_EIO, "open %s: %s", dl->path, lf_strerror(e));
    }
    return LF_OK;
}

enum lf_err lf_deadletter_write(struct lf_deadletter *dl,
                                struct lf_str ndjson,
                                int status,
                                const char *reason,
                                size_t *n_events,
                                struct lf_errbuf *eb)
{
    const char *p = ndjson.ptr;
    const char *end = ndjson.ptr + ndjson.len;
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        size_t len = nl != NULL ? (size_t)(nl - p) : (size_t)(end - p);
        enum lf_err err = lf_deadletter_add(dl, lf_str_make(p, len), status, reason);
        if (err)
            return lf_fail(eb, err, "dead letters %s: %s", dl->path, lf_err_str(err));
        p += len + 1;
    }
    return lf_deadletter_commit(dl, n_events, eb);
}

enum lf_err lf_deadletter_commit(struct lf_deadletter *dl, size_t *n_events, struct lf_errbuf *eb)
{
    size_t n = dl->n_rec;
    enum lf_err err = compress_records(dl);
    lf_buf_reset(&dl->rec);
    dl->n_rec = 0;
    if (err)
        return lf_fail(eb, err, "dead letters %s: %s", dl->path, lf_err_str(err));
    if (dl->fd < 0) {
        err = open_file(dl, eb);
        if (err)
            return err;
    }
    struct stat st;
    if (fstat(dl->fd, &st) != 0) {
        int e = errno;
        return lf_fail(eb, LF_EIO, "stat %s: %s", dl->path, lf_strerror(e));
    }
    int e = lf_write_all(dl->fd, dl->zout.ptr, dl->zout.len);
    if (e == 0 && fdatasync(dl->fd) != 0)
        e = errno;
    if (e != 0) {
        /* Cut back to the last whole frame, so the file stays a valid zstd stream. */
        if (ftruncate(dl->fd, st.st_size) != 0) {
            close(dl->fd);
            dl->fd = -1;
        }
        return lf_fail(eb, LF_EIO, "write %s: %s", dl->path, lf_strerror(e));
    }
    *n_events = n;
    return LF_OK;
}
