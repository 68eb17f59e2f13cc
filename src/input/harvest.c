/* harvest.c - one file to its end: reader -> events -> sink (see harvest.h). */
#include "config.h"

#define LF_LOG_COMPONENT "harvester"
#include "logferry/harvest.h"

#include <errno.h>
#include <poll.h>

#include "logferry/clock.h"
#include "logferry/log.h"
#include "logferry/reader.h"
#include "logferry/stage.h"

struct lf_event lf_harvest_event(const struct lf_line *line, int64_t now_ns,
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

/* Turns line into an event and runs it through the chain. An empty line skipped by
 * skip_empty_lines still travels, dropped, so that its offset is acknowledged. */
static enum lf_err emit_line(const struct lf_input_conf *in, struct lf_source *src,
                             const struct lf_line *line, const struct lf_clock *now,
                             struct lf_chain *chain, struct lf_harvest_stats *stats)
{
    struct lf_event ev = lf_harvest_event(line, now->wall_ns, src);
    if (line->text.len == 0 && in->skip_empty_lines) {
        stats->skipped_empty++;
        ev.flags |= LF_EVENT_DROPPED;
    }
    return lf_chain_process(chain, &ev, now->mono_ms);
}

/* Blocks until fd has bytes (or EOF, or an error) to read. A non-blocking fd answers EAGAIN
 * at once: stdin whose O_NONBLOCK was set by a process sharing it (a shell, a supervisor)
 * would otherwise be read in a loop at 100% CPU. A signal ends the wait early: harmless. */
static enum lf_err wait_readable(int fd, struct lf_errbuf *eb)
{
    struct pollfd pfd = { .fd = fd, .events = POLLIN };
    if (poll(&pfd, 1, -1) < 0 && errno != EINTR) {
        int e = errno;
        return lf_fail(eb, LF_EIO, "poll: %s", lf_strerror(e));
    }
    return LF_OK;
}

enum lf_err lf_harvest_fd(const struct lf_input_conf *in, const struct lf_chain_spec *spec,
                          int fd, uint64_t start_offset, struct lf_source *src,
                          const struct lf_harvest_sink *sink, struct lf_harvest_stats *stats,
                          struct lf_errbuf *eb)
{
    struct lf_stage_out out = { sink->emit, sink->arg };
    struct lf_chain *chain = NULL;
    if (lf_chain_new(spec, &out, &chain))
        return lf_fail(eb, LF_ENOMEM, "out of memory");
    struct lf_reader_opts opts = {
        .encoding = in->encoding,
        .buffer_size = in->buffer_size,
        .max_line_bytes = in->max_line_bytes,
        .overflow = in->line_overflow,
        .start_offset = start_offset,
    };
    struct lf_reader *r = NULL;
    enum lf_err err = lf_reader_new(&opts, &r, eb);
    if (err) {
        lf_chain_free(chain);
        return err;
    }
    struct lf_line line;
    struct lf_clock now;
    lf_clock_read(&now);
    for (;;) {
        err = lf_reader_next(r, &line);
        if (!err) {
            err = emit_line(in, src, &line, &now, chain, stats);
            if (err)
                break;
            continue;
        }
        if (err != LF_EAGAIN)
            break;
        uint64_t before = lf_reader_stats(r)->bytes;
        err = lf_reader_read_fd(r, fd, eb);
        if (err == LF_EOF) {
            /* finish hands back what is still buffered, then the unterminated last line. */
            while ((err = lf_reader_finish(r, &line)) == LF_OK) {
                err = emit_line(in, src, &line, &now, chain, stats);
                if (err)
                    break;
            }
            if (err == LF_EOF)
                err = lf_chain_flush(chain); /* a pending multiline event ends with the input */
            break;
        }
        if (err == LF_EAGAIN) {
            err = wait_readable(fd, eb);
            if (err)
                break;
            continue;
        }
        if (err)
            break;
        lf_clock_read(&now); /* once per chunk: events of a chunk share a time */
        if (sink->chunk != NULL)
            sink->chunk(sink->arg, (size_t)(lf_reader_stats(r)->bytes - before));
    }
    const struct lf_reader_stats *rs = lf_reader_stats(r);
    stats->bytes += rs->bytes;
    stats->truncated += rs->truncated;
    stats->skipped_long += rs->skipped;
    stats->invalid_bytes += rs->invalid_bytes;
    stats->events += lf_chain_stats(chain)->events_out;
    stats->filtered += lf_chain_stats(chain)->events_filtered;
    lf_reader_free(r);
    lf_chain_free(chain);
    return err;
}
