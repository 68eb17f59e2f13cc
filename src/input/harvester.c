/* harvester.c - one followed file: open, resume, read, notice truncation and deletion.
 *
 * A harvester reads on the tail thread, or during a read phase on the one reader thread
 * it was given (readers.c), which owns it until the phase ends. Its reader exists while
 * there is reading to do or a partial line is buffered; at EOF with nothing buffered the
 * reader is freed, so thousands of idle files cost no buffers. Offsets: read_pos is where
 * read(2) is, the reader's offset is where the last complete line ended, and acked is what
 * every output acknowledged (learnt from the pipeline's answers, on the tail thread): the
 * registry only ever stores the last of the three, and never passes a line given up on
 * (pinned). */
#include "config.h"

#define LF_LOG_COMPONENT "harvester"
#include "tail_int.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "logferry/buf.h"
#include "logferry/clock.h"
#include "logferry/log.h"
#include "logferry/pipeline.h"
#include "logferry/roots.h"
#include "logferry/stage.h"

int64_t lf_tail__now_ms(void)
{
    return lf_mono_ms();
}

static const struct lf_input_conf *input_of(const struct lf_tail *t, const struct harv *h)
{
    return &t->cfg->inputs[h->input_idx];
}

struct lf_event lf_tail_line_event(const struct lf_line *line, int64_t now_ns,
                                   struct lf_source *src)
{
    struct lf_event ev = {
        .message = line->text,
        .timestamp_ns = now_ns,
        .offset = line->offset,
        .end_offset = line->end_offset,
        .flags = (line->flags & LF_LINE_TRUNCATED) ? LF_EVENT_TRUNCATED : 0,
        .source = src,
    };
    return ev;
}

enum lf_err lf_tail__open(const struct lf_input_conf *in, const char *path, int *fd_out,
                          struct stat *st, struct lf_file_id *id, int *open_errno,
                          struct lf_errbuf *eb)
{
    *fd_out = -1;
    *open_errno = 0;
    /* O_NONBLOCK: a FIFO must not hang the open; it is refused just below. */
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
    if (fd < 0) {
        *open_errno = errno;
        return lf_fail(eb, LF_EIO, "%s", lf_strerror(*open_errno));
    }
    /* What was actually opened, links resolved; a path a person named need only be a
     * regular file. */
    enum lf_err err = in != NULL ? lf_roots_check(in, fd, eb) : lf_roots_check_regular(fd, eb);
    if (err) {
        close(fd);
        return LF_EREJECTED;
    }
    if (fstat(fd, st) != 0) {
        int e = errno;
        close(fd);
        return lf_fail(eb, LF_EIO, "fstat: %s", lf_strerror(e));
    }
    err = lf_file_id_read(fd, st, id, eb);
    if (err) {
        close(fd);
        return err;
    }
    *fd_out = fd;
    return LF_OK;
}

/* The chain's sink: events that made it through the stages go to the pipeline (to the
 * engine's sink without one: --preview). */
static enum lf_err to_pipeline(void *arg, const struct lf_event *ev)
{
    struct harv *h = arg;
    struct lf_tail *t = h->tail;
    if (ev->end_offset > h->emitted_end)
        h->emitted_end = ev->end_offset; /* a held partial may end below later events */
    /* Every event counts as read, a dropped one also as filtered: read = filtered + sent.
     * Counted here and added to the stats, under their lock, once per read (and after a
     * read phase, a tick, a flush). */
    h->pend_events++;
    h->pend_filtered += (ev->flags & LF_EVENT_DROPPED) != 0;
    h->pend_throttled += (ev->flags & LF_EVENT_THROTTLED) != 0;
    h->pend_sampled_out += (ev->flags & LF_EVENT_SAMPLED_OUT) != 0;
    enum lf_err err;
    if (t->pipeline == NULL) {
        return t->sink.emit(t->sink.arg, ev);
    } else if (h->pr != NULL) {
        err = lf_producer_push(h->pr, h->input_idx, ev); /* on a reader of a read phase */
    } else {
        if (h->last_pr != NULL) {
            /* Its last events went through a reader's producer: they are queued first. */
            err = lf_producer_flush(h->last_pr);
            if (err)
                return err;
            h->last_pr = NULL;
        }
        t->uncut = true;
        err = lf_pipeline_push(t->pipeline, h->input_idx, ev);
    }
    if (!err)
        h->inflight++;
    return err;
}

void lf_tail__harv_settle(struct lf_tail *t, struct harv *h)
{
    if (h->pend_events == 0)
        return;
    t->uncut = true;
    uv_mutex_lock(&t->mu);
    t->stats.events += h->pend_events;
    t->stats.filtered += h->pend_filtered;
    t->in_stats[h->input_idx].events += h->pend_events;
    t->in_stats[h->input_idx].filtered += h->pend_filtered;
    t->in_stats[h->input_idx].throttled += h->pend_throttled;
    t->in_stats[h->input_idx].sampled_out += h->pend_sampled_out;
    t->stats.throttled += h->pend_throttled;
    t->stats.sampled_out += h->pend_sampled_out;
    uv_mutex_unlock(&t->mu);
    h->pend_events = 0;
    h->pend_filtered = 0;
    h->pend_throttled = 0;
    h->pend_sampled_out = 0;
}

void lf_tail__harv_answer(void *arg, const struct lf_ack *ack)
{
    (void)arg;
    const struct lf_source *src = ack->source;
    struct harv *h = src->owner;
    h->inflight -= ack->events;
    if (src->owner_gen != h->gen)
        return; /* content that was truncated away: nothing to record */
    if (!ack->delivered) {
        if (ack->first < h->pinned)
            h->pinned = ack->first;
    } else if (ack->end > h->acked) {
        h->acked = ack->end;
    }
}

static enum lf_err new_owned_source(struct lf_tail *t, struct harv *h, struct lf_source **out)
{
    const struct lf_input_conf *in = input_of(t, h);
    enum lf_err err =
        lf_source_new(h->path, in->id, t->host, in->fields_json, in->fields_under_root, out);
    if (err)
        return err;
    (*out)->owner = h;
    (*out)->owner_gen = h->gen;
    (*out)->stream_id = h->stream_id;
    if (h->identified) {
        (*out)->file_dev = h->id.dev;
        (*out)->file_ino = h->id.ino;
    }
    return LF_OK;
}

void lf_tail__harv_new_stream(struct harv *h)
{
    h->stream_id = lf_stream_id_new();
    h->stream_unsaved = true;
    h->tail->streams_unsaved = true;
}

struct harv *lf_tail__harv_new(struct lf_tail *t, size_t input_idx, const char *path)
{
    struct harv *h = calloc(1, sizeof(*h));
    if (h == NULL)
        return NULL;
    h->tail = t;
    h->input_idx = input_idx;
    h->fd = -1;
    h->path = path != NULL ? strdup(path) : NULL; /* NULL: stdin */
    h->sink = (struct lf_stage_out){ to_pipeline, h };
    h->pinned = UINT64_MAX;
    lf_tail__harv_new_stream(h); /* stdin: one per run; a file: replaced by its registry's */
    if ((path != NULL && h->path == NULL) || new_owned_source(t, h, &h->src) ||
        lf_chain_new(t->specs[input_idx], &h->sink, &h->chain)) {
        lf_source_free(h->src);
        free(h->path);
        free(h);
        return NULL;
    }
    return h;
}

enum lf_err lf_tail__harv_flush(struct lf_tail *t, struct harv *h)
{
    (void)t;
    if (!lf_chain_holding(h->chain))
        return LF_OK;
    return lf_chain_flush(h->chain);
}

/* Adds what h's reader counted since the last time to the input's stats. */
static void account(struct lf_tail *t, struct harv *h)
{
    const struct lf_reader_stats *rs = lf_reader_stats(h->reader);
    uv_mutex_lock(&t->mu);
    struct lf_tail_input_stats *is = &t->in_stats[h->input_idx];
    is->bytes += rs->bytes - h->counted.bytes;
    is->truncated += (rs->truncated + rs->skipped) - (h->counted.truncated + h->counted.skipped);
    is->invalid_bytes += rs->invalid_bytes - h->counted.invalid_bytes;
    t->stats.bytes += rs->bytes - h->counted.bytes;
    t->stats.truncated += rs->truncated - h->counted.truncated;
    t->stats.skipped_long += rs->skipped - h->counted.skipped;
    t->stats.invalid_bytes += rs->invalid_bytes - h->counted.invalid_bytes;
    uv_mutex_unlock(&t->mu);
    h->counted = *rs;
}

void lf_tail__harv_drop_reader(struct lf_tail *t, struct harv *h)
{
    if (h->reader == NULL)
        return;
    account(t, h);
    lf_reader_free(h->reader);
    h->reader = NULL;
    memset(&h->counted, 0, sizeof(h->counted));
}

void lf_tail__harv_close(struct lf_tail *t, struct harv *h)
{
    if (h->fd >= 0) {
        close(h->fd);
        h->fd = -1;
        __atomic_fetch_sub(&t->n_open, 1, __ATOMIC_RELAXED); /* readers of a phase close too */
    }
    lf_tail__harv_drop_reader(t, h);
    /* Lines not yet complete are read again from the last line end when it reopens; it is
     * reopened when its size differs from what it was now. */
    h->closed_size = h->read_pos;
    h->read_pos = h->emitted_end;
}

void lf_tail__harv_free(struct lf_tail *t, struct harv *h)
{
    lf_tail__journal_free(h);
    lf_tail__harv_close(t, h);
    lf_chain_free(h->chain);
    lf_source_free(h->src);
    free(h->path);
    free(h);
}

uint64_t lf_tail__harv_acked(const struct harv *h)
{
    return h->acked < h->pinned ? h->acked : h->pinned;
}

enum lf_err lf_tail__harv_new_source(struct lf_tail *t, struct harv *h, uint64_t acked,
                                     bool new_content)
{
    /* A held event points at the old source: it goes out first, with the old path. */
    enum lf_err err = lf_tail__harv_flush(t, h);
    if (err)
        return err;
    uint32_t gen = h->gen;
    uint64_t stream_id = h->stream_id;
    bool unsaved = h->stream_unsaved;
    if (new_content) {
        h->gen++; /* answers for the old content no longer move the offsets */
        lf_tail__harv_new_stream(h); /* and its events name other documents */
    }
    struct lf_source *src = NULL;
    if (new_owned_source(t, h, &src)) {
        h->gen = gen;
        h->stream_id = stream_id;
        h->stream_unsaved = unsaved;
        return LF_ENOMEM;
    }
    if (h->src->inflight == 0) {
        lf_source_free(h->src); /* nothing of it is in flight */
    } else {
        if (lf_array_grow(&t->retired, &t->cap_retired, t->n_retired, sizeof(*t->retired),
                          16)) {
            lf_source_free(src);
            h->gen = gen;
            h->stream_id = stream_id;
            h->stream_unsaved = unsaved;
            return LF_ENOMEM;
        }
        t->retired[t->n_retired++] = (struct retired){ h->src };
    }
    h->src = src;
    if (new_content) {
        h->acked = acked;
        h->pinned = UINT64_MAX;
    }
    return LF_OK;
}

enum lf_err lf_tail__harv_rebind(struct lf_tail *t, struct harv *h, size_t input_idx)
{
    uint64_t from = h->emitted_end;
    uint64_t held = lf_chain_held_offset(h->chain);
    if (held < from)
        from = held; /* a held partial that later events overtook: never lost */
    h->input_idx = input_idx;
    lf_tail__harv_drop_reader(t, h); /* its counts go to the input under its id */
    struct lf_chain *chain = NULL;
    enum lf_err err = lf_chain_new(t->specs[input_idx], &h->sink, &chain);
    if (!err) {
        lf_chain_free(h->chain); /* what it held is read again below */
        h->chain = chain;
        err = lf_tail__harv_new_source(t, h, h->acked, false);
    }
    if (!err && h->fd >= 0 && lseek(h->fd, (off_t)from, SEEK_SET) < 0)
        err = LF_EIO;
    if (err) {
        lf_tail__harv_close(t, h);
        return err;
    }
    h->read_pos = from;
    h->emitted_end = from;
    if (h->fd >= 0)
        h->dirty = true;
    return LF_OK;
}

enum lf_err lf_tail__harv_start(struct lf_tail *t, struct harv *h, int fd, const struct stat *st,
                                uint64_t offset)
{
    if (offset > 0 && lseek(fd, (off_t)offset, SEEK_SET) < 0) {
        int e = errno;
        lf_warn("input %s: %s: cannot seek to %" PRIu64 ": %s; skipping it", input_of(t, h)->id,
                h->path, offset, lf_strerror(e));
        close(fd);
        return LF_EIO;
    }
#ifdef HAVE_POSIX_FADVISE
    if (t->once) /* read once from here to the end: a hint for a larger readahead */
        lf_err_ignore(posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL) ? LF_EIO : LF_OK);
#endif
    h->fd = fd;
    t->n_open++;
    h->read_pos = offset;
    h->emitted_end = offset;
    h->mtime_ms = (int64_t)st->st_mtim.tv_sec * 1000 + st->st_mtim.tv_nsec / 1000000;
    h->active_ms = lf_tail__now_ms();
    h->dirty = (uint64_t)st->st_size > offset;
    h->waiting = false;
    lf_tail__progress(t, offset); /* what an earlier run read counts as done */
    return LF_OK;
}

void lf_tail__harv_unreadable(struct lf_tail *t, struct harv *h)
{
    uv_mutex_lock(&t->mu);
    t->stats.files_unreadable++;
    uv_mutex_unlock(&t->mu);
    if (!t->once)
        return;
    if (h->fd >= 0) {
        /* Done with: what could not be read counts as done for the progress line. */
        struct stat st;
        if (fstat(h->fd, &st) == 0 && (uint64_t)st.st_size > h->read_pos)
            lf_tail__progress(t, (uint64_t)st.st_size - h->read_pos);
        lf_tail__harv_close(t, h);
    }
    h->dirty = false;
}

/* A complete line enters h's stages; an empty line skipped by skip_empty_lines travels
 * dropped, so that its offset is still acknowledged. */
static enum lf_err emit(struct lf_tail *t, struct harv *h, const struct lf_line *line,
                        const struct lf_clock *now)
{
    struct lf_event ev = lf_tail_line_event(line, now->wall_ns, h->src);
    if (line->text.len == 0 && input_of(t, h)->skip_empty_lines)
        ev.flags |= LF_EVENT_DROPPED;
    return lf_chain_process(h->chain, &ev, now->mono_ms);
}

static enum lf_err ensure_reader(struct lf_tail *t, struct harv *h)
{
    if (h->reader != NULL)
        return LF_OK;
    const struct lf_input_conf *in = input_of(t, h);
    struct lf_reader_opts opts = {
        .encoding = in->encoding,
        .buffer_size = in->buffer_size,
        .max_line_bytes = in->max_line_bytes,
        .overflow = in->line_overflow,
        .start_offset = h->read_pos,
    };
    struct lf_errbuf eb = { "" };
    enum lf_err err = lf_reader_new(&opts, &h->reader, &eb);
    if (err) {
        lf_error("input %s: %s: %s", in->id, h->path, eb.msg);
        if (h->path != NULL)
            lf_tail__harv_unreadable(t, h);
    }
    return err;
}

/* At EOF: a deleted file is done once its last line is out; an idle reader is dropped. */
static enum lf_err at_eof(struct lf_tail *t, struct harv *h, const struct lf_clock *now)
{
    h->dirty = false;
    off_t pos = lseek(h->fd, 0, SEEK_CUR);
    if (pos >= 0)
        h->read_pos = (uint64_t)pos;
    if (h->deleted || t->once) {
        /* Nobody can append any more (or, in once mode, the file is read to the size it
         * had): the unterminated last line is complete, held events go out. */
        struct lf_line line;
        enum lf_err err;
        while ((err = lf_reader_finish(h->reader, &line)) == LF_OK) {
            err = emit(t, h, &line, now);
            if (err)
                return err;
        }
        err = lf_tail__harv_flush(t, h);
        if (err)
            return err;
        lf_tail__harv_close(t, h);
        return LF_OK;
    }
    if (lf_reader_offset(h->reader) == h->read_pos)
        lf_tail__harv_drop_reader(t, h);
    return LF_OK;
}

enum lf_err lf_tail__stdin_read(struct lf_tail *t, struct harv *h, int fd)
{
    if (ensure_reader(t, h))
        return LF_EOF;
    struct lf_clock now;
    lf_clock_read(&now);
    struct lf_errbuf eb = { "" };
    struct lf_line line;
    enum lf_err err = lf_reader_read_fd(h->reader, fd, &eb);
    if (err == LF_EAGAIN)
        return LF_OK; /* O_NONBLOCK set by a process sharing it: poll again */
    if (err && err != LF_EOF)
        lf_warn("input %s: stdin: %s; not reading it any more", input_of(t, h)->id, eb.msg);
    if (err) {
        /* The end: the unterminated last line is complete, held events go out. */
        while ((err = lf_reader_finish(h->reader, &line)) == LF_OK) {
            err = emit(t, h, &line, &now);
            if (err)
                return err;
        }
        err = lf_tail__harv_flush(t, h);
        account(t, h);
        lf_tail__harv_settle(t, h);
        return err ? err : LF_EOF;
    }
    enum lf_err eerr = LF_OK;
    while (!eerr && lf_reader_next(h->reader, &line) == LF_OK)
        eerr = emit(t, h, &line, &now);
    account(t, h);
    lf_tail__harv_settle(t, h);
    return eerr;
}

static enum lf_err read_some(struct lf_tail *t, struct harv *h, size_t budget, int64_t deadline_ms);

enum lf_err lf_tail__harv_read(struct lf_tail *t, struct harv *h, size_t budget)
{
    if (h->fd < 0 || ensure_reader(t, h))
        return LF_OK;
    t->reading = h; /* what a push's wait hook must leave alone */
    enum lf_err err = read_some(t, h, budget, INT64_MAX);
    t->reading = NULL;
    lf_tail__harv_settle(t, h);
    return err;
}

enum lf_err
lf_tail__harv_read_phase(struct lf_tail *t, struct harv *h, size_t budget, int64_t deadline_ms)
{
    if (h->fd < 0 || ensure_reader(t, h))
        return LF_OK;
    return read_some(t, h, budget, deadline_ms); /* no wait hook runs in a phase */
}

static enum lf_err read_some(struct lf_tail *t, struct harv *h, size_t budget, int64_t deadline_ms)
{
    struct lf_clock now;
    lf_clock_read(&now);
    size_t chunks = 0;
    size_t max_chunks = budget / input_of(t, h)->buffer_size + 1;
    struct lf_line line;
    for (;;) {
        enum lf_err err = lf_reader_next(h->reader, &line);
        if (!err) {
            err = emit(t, h, &line, &now);
            if (err)
                return err;
            if (h->fd < 0) {
                /* Given up on while the push waited (close_removed_after): what the reader
                 * still holds is part of what was given up. */
                lf_tail__harv_close(t, h);
                return LF_OK;
            }
            if (t->pipeline != NULL && lf_pipeline_yielding(t->pipeline))
                break; /* a reload waits: the reader keeps the rest, h stays dirty */
            continue;
        }
        if (err != LF_EAGAIN) {
            lf_error("input %s: %s: %s; closing it", input_of(t, h)->id, h->path, lf_err_str(err));
            lf_tail__harv_close(t, h);
            lf_tail__harv_unreadable(t, h);
            return LF_OK;
        }
        if (chunks++ == max_chunks || (chunks > 1 && now.mono_ms >= deadline_ms))
            break; /* fair share used, or the phase is over: h stays dirty */
        struct lf_errbuf eb = { "" };
        uint64_t before = lf_reader_stats(h->reader)->bytes;
        err = lf_reader_read_fd(h->reader, h->fd, &eb);
        if (err == LF_EOF || err == LF_EAGAIN) {
            err = at_eof(t, h, &now);
            if (err)
                return err; /* the pipeline failed for good */
            break;
        }
        if (err) {
            lf_warn("input %s: %s: %s; closing it", input_of(t, h)->id, h->path, eb.msg);
            lf_tail__harv_unreadable(t, h);
            lf_tail__harv_close(t, h);
            return LF_OK;
        }
        lf_tail__progress(t, lf_reader_stats(h->reader)->bytes - before);
        lf_clock_read(&now); /* once per chunk: events of a chunk share a time */
        h->active_ms = now.mono_ms;
    }
    if (h->reader != NULL)
        account(t, h);
    return LF_OK;
}

bool lf_tail__harv_replaced(struct lf_tail *t, struct harv *h, int fd, uint64_t size,
                            uint64_t pos)
{
    if (size < pos)
        return true;
    if (pos == 0)
        return false; /* nothing read yet: nothing to lose */
    bool same = true;
    struct lf_errbuf eb = { "" };
    if (lf_file_id_same_head(&h->id, fd, size, &same, &eb)) {
        lf_warn("input %s: %s: %s", input_of(t, h)->id, h->path, eb.msg);
        return false; /* the size check above still applies at the next poll */
    }
    return !same;
}

void lf_tail__harv_restart(struct lf_tail *t, struct harv *h)
{
    uv_mutex_lock(&t->mu);
    t->stats.truncations++;
    uv_mutex_unlock(&t->mu);
    /* A copy of the old content (copytruncate) may turn up under a matching name: remember
     * what it looked like and how far it was read. */
    h->prev_id = h->id;
    h->prev_end = h->emitted_end;
    h->registered = UINT64_MAX; /* the registry must learn the new offset */
    h->id.fp_len = 0; /* new content: the fingerprint is read again as it grows */
}

void lf_tail__harv_grow_id(struct harv *h)
{
    if (h->fd < 0 || h->id.fp_len >= LF_FINGERPRINT_MAX || h->read_pos <= h->id.fp_len)
        return;
    struct stat st;
    struct lf_errbuf eb = { "" };
    struct lf_file_id id;
    if (fstat(h->fd, &st) == 0 && !lf_file_id_read(h->fd, &st, &id, &eb))
        h->id = id;
}

static bool same_time(struct timespec a, struct timespec b)
{
    return a.tv_sec == b.tv_sec && a.tv_nsec == b.tv_nsec;
}

/* Whether st shows h's file as the fingerprint check last saw it: same size, modification
 * and change times. Content replaced by a writer changes at least one of them. */
static bool unchanged(const struct harv *h, const struct stat *st)
{
    return (uint64_t)st->st_size == h->seen_size && same_time(st->st_mtim, h->seen_mtim) &&
           same_time(st->st_ctim, h->seen_ctim);
}

static void poll_stat(struct lf_tail *t, struct harv *h, const struct stat *st, bool periodic);

void lf_tail__harv_poll(struct lf_tail *t, struct harv *h)
{
    h->recheck = false;
    if (h->fd < 0)
        return;
    struct stat st;
    if (fstat(h->fd, &st) != 0)
        return;
    poll_stat(t, h, &st, false);
}

void lf_tail__harv_poll_due(struct lf_tail *t, struct harv *h, int64_t now_ms, bool watched)
{
    if (h->fd < 0 || now_ms < h->next_poll_ms)
        return;
    struct stat st;
    if (fstat(h->fd, &st) != 0)
        return;
    bool same = unchanged(h, &st) && st.st_nlink > 0;
    uint32_t every = h->poll_every_ms;
    if (!same || !watched || every < LF_TAIL_POLL_MS)
        every = LF_TAIL_POLL_MS;
    else if (every < LF_TAIL_POLL_MAX_MS)
        every = every * 2 < LF_TAIL_POLL_MAX_MS ? every * 2 : LF_TAIL_POLL_MAX_MS;
    h->poll_every_ms = every;
    h->next_poll_ms = now_ms + every;
    poll_stat(t, h, &st, true);
}

/* What a poll learns from st: the file's size, growth, deletion, and whether its content
 * was replaced. A periodic poll skips the fingerprint read when nothing in st changed since
 * the last check; a watcher's report always reads it (a rewrite within one tick of the
 * file system's clock keeps size and times). */
static void poll_stat(struct lf_tail *t, struct harv *h, const struct stat *st, bool periodic)
{
    h->recheck = false;
    h->mtime_ms = (int64_t)st->st_mtim.tv_sec * 1000 + st->st_mtim.tv_nsec / 1000000;
    if (st->st_nlink == 0 && !h->deleted) {
        h->deleted = true;
        h->deleted_ms = lf_tail__now_ms();
        h->dirty = true; /* read to the end, then close */
    }
    uint64_t size = (uint64_t)st->st_size;
    h->size = size;
    bool check = !periodic || !unchanged(h, st);
    if (check) {
        h->seen_size = size;
        h->seen_mtim = st->st_mtim;
        h->seen_ctim = st->st_ctim;
    }
    if (check && lf_tail__harv_replaced(t, h, h->fd, size, h->read_pos)) {
        if (size < h->read_pos)
            lf_info("input %s: %s shrank from %" PRIu64 " to %" PRIu64 " bytes (truncated); "
                    "reading it again from the start", input_of(t, h)->id, h->path,
                    h->read_pos, size);
        else
            lf_info("input %s: %s no longer starts with what was read from it (truncated and "
                    "written again, %" PRIu64 " bytes now); reading it again from the start",
                    input_of(t, h)->id, h->path, size);
        lf_tail__harv_drop_reader(t, h);
        lf_tail__harv_restart(t, h);
        if (lseek(h->fd, 0, SEEK_SET) != 0 || lf_tail__harv_new_source(t, h, 0, true)) {
            lf_tail__harv_close(t, h);
            return;
        }
        h->read_pos = 0;
        h->emitted_end = 0;
        h->dirty = true;
        return;
    }
    lf_tail__harv_grow_id(h); /* so that the next check covers what was read since */
    if (size > h->read_pos)
        h->dirty = true;
}

enum lf_err lf_tail_read_file(const struct lf_config *cfg, struct lf_chain_spec *const *specs,
                              size_t input_idx, const char *path, const struct lf_stage_out *sink,
                              struct lf_errbuf *eb)
{
    struct lf_tail *t = NULL;
    enum lf_err err = lf_tail_new(cfg, specs, NULL, NULL, NULL, LF_TAIL_ONCE, &t, eb);
    if (err)
        return err;
    t->sink = *sink;
    int fd = -1;
    int open_errno = 0;
    struct stat st = { 0 };              /* both set by lf_tail__open() when it succeeds; */
    struct lf_file_id id = { .dev = 0 }; /* zeroed for the analyzer, which cannot tell */
    struct lf_errbuf oeb = { "" };
    err = lf_tail__open(NULL, path, &fd, &st, &id, &open_errno, &oeb);
    struct harv *h = err ? NULL : lf_tail__harv_new(t, input_idx, path);
    if (err || h == NULL) {
        if (fd >= 0)
            close(fd);
        lf_tail_free(t);
        if (err == LF_EREJECTED)
            return lf_fail(eb, err, "refusing %s: %s", path, oeb.msg);
        if (err)
            return lf_fail(eb, err, "cannot open %s: %s", path, oeb.msg);
        return lf_fail(eb, LF_ENOMEM, "out of memory");
    }
    h->id = id;
    h->identified = true;
    h->src->file_dev = id.dev;
    h->src->file_ino = id.ino;
    err = lf_tail__harv_start(t, h, fd, &st, 0);
    while (!err && h->fd >= 0)
        err = lf_tail__harv_read(t, h, lf_tail__budget(t)); /* to the end: it closes there */
    if (!err && t->stats.files_unreadable > 0)
        err = lf_fail(eb, LF_EIO, "%s could not be read to its end (see above)", path);
    lf_tail__harv_free(t, h);
    lf_tail_free(t);
    return err;
}
