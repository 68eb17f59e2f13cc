/* harvest.h - reads one open file (or stdin) to its end through an input's line reader and
 * turns each line into an event for a sink.
 *
 * The tailing daemon will drive harvesters chunk by chunk from the loop; a backfill
 * (--once) and --preview run one to EOF. Worker or main thread; one harvest per thread. */
#ifndef LF_HARVEST_H
#define LF_HARVEST_H

#include <stdint.h>

#include "logferry/config.h"
#include "logferry/err.h"
#include "logferry/event.h"
#include "logferry/stage.h"

struct lf_line;

/* The event a complete line becomes: its text (borrowed: valid while the line is), the time
 * it was read, its offsets, the truncated flag, from src. */
struct lf_event lf_harvest_event(const struct lf_line *line, int64_t now_ns,
                                 struct lf_source *src);

struct lf_harvest_sink {
    /* Receives each event; ev and its message are borrowed: valid during the call. A
     * non-zero return stops the harvest and is returned by lf_harvest_fd(). */
    enum lf_err (*emit)(void *arg, const struct lf_event *ev);
    /* Optional: told after each chunk read, with its size in bytes. */
    void (*chunk)(void *arg, size_t n);
    void *arg;
};

struct lf_harvest_stats {
    uint64_t events;        /* events emitted */
    uint64_t bytes;         /* source bytes read */
    uint64_t truncated;     /* lines cut at max_line_bytes */
    uint64_t skipped_long;  /* lines over max_line_bytes dropped (line_overflow: skip) */
    uint64_t skipped_empty; /* empty lines dropped (skip_empty_lines) */
    uint64_t filtered;      /* events dropped by include_lines / exclude_lines or skipped */
    uint64_t invalid_bytes; /* encoding errors replaced by U+FFFD */
};

/* Reads fd from start_offset (the fd is already positioned there) to EOF with in's reader
 * settings, runs each line through a chain of spec's stages (in's parsers, compiled) and
 * hands what comes out to the sink, from src (borrowed: must outlive the events'
 * batches). The last line is emitted at EOF even without a newline, and whatever a stage
 * still holds is flushed then. Dropped events (filters, skip_empty_lines) reach the sink
 * too, flagged, for their offsets. Adds to *stats. LF_EIO (eb says why) if reading fails;
 * the sink's error if it stops the harvest. */
LF_MUST_CHECK enum lf_err lf_harvest_fd(const struct lf_input_conf *in,
                                        const struct lf_chain_spec *spec, int fd,
                                        uint64_t start_offset, struct lf_source *src,
                                        const struct lf_harvest_sink *sink,
                                        struct lf_harvest_stats *stats, struct lf_errbuf *eb);

#endif
