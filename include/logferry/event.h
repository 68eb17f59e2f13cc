/* event.h - events, their per-source static metadata, and the streaming JSON encoder.
 *
 * An event is what a line (or a joined group of lines) becomes: its message and where it
 * came from. Everything that is the same for every event of one file (path, input id,
 * host, fields) is rendered to JSON once, in struct lf_source, and pasted per event. */
#ifndef LF_EVENT_H
#define LF_EVENT_H

#include <stdbool.h>
#include <stdint.h>

#include "logferry/buf.h"
#include "logferry/err.h"

#define LF_EVENT_MULTILINE      1u /* flag "multiline": lines were joined */
#define LF_EVENT_TRUNCATED      2u /* flag "truncated": cut at a size limit */
#define LF_EVENT_PARTIAL_JOINED 4u /* flag "partial_joined": runtime partials joined */
#define LF_EVENT_DROPPED        8u /* filtered out: never sent, yet its offsets are
                                      acknowledged with its batch (not a JSON flag) */
/* extra carries its own "input", "host" or "fields" (ndjson with overwrite_keys): the
 * encoder leaves out the source's member of that name (not JSON flags). */
#define LF_EVENT_OWN_INPUT  16u
#define LF_EVENT_OWN_HOST   32u
#define LF_EVENT_OWN_FIELDS 64u
/* Why a dropped event was dropped, beside LF_EVENT_DROPPED, for the input's counters (not
 * JSON flags): over a throttle's rate, or not in a sample's 1 in N. */
#define LF_EVENT_THROTTLED   128u
#define LF_EVENT_SAMPLED_OUT 256u

/* Static metadata of one source (a file, or stdin). Read freely; owned by its creator. */
struct lf_source {
    char *path;             /* owned; NULL for stdin */
    char *input_id;         /* owned */
    uint64_t file_dev;      /* the file's device and inode, as the registry knows it (0: not a
                               file); set by the producer before the source's first event */
    uint64_t file_ino;
    uint64_t stream_id;     /* the content generation the events belong to
                               (lf_stream_id_new()); set by the producer before the source's
                               first event, carried through the spool. With the offset it names
                               an event for idempotent outputs (elasticsearch's _id) */
    size_t tail_at[4];      /* offsets in tail where "input", "host" and "fields" start, and
                               where what follows them starts (an absent member is empty) */
    struct lf_buf log_head; /* `"log":{"file":{"path":"..."},"offset":` */
    struct lf_buf tail;     /* `,"input":{"id":"..."},"host":{"name":"..."}...}` + '\n' */
    /* Delivery state, on the producer thread only (the pipeline applies its answers there,
     * in lf_pipeline_take_acks()): */
    uint64_t acked_offset;  /* the highest end offset of an acknowledged event */
    uint64_t pinned_offset; /* the first offset of an event given up on (a batch that failed
                               for good); UINT64_MAX: none. Nothing at or past it is
                               acknowledged for the registry: the next run reads it again */
    uint64_t inflight;      /* events pushed and not answered yet: the source must live
                               until this is 0 */
    void *owner;            /* the producer's, passed back with each answer (the tail
                               engine's harvester); NULL for none */
    uint32_t owner_gen;     /* the producer's content generation when this was created */
};

struct lf_event {
    struct lf_str message;    /* UTF-8; borrowed from the batch arena or the reader */
    int64_t timestamp_ns;     /* @timestamp, ns since the Unix epoch (UTC) */
    uint64_t offset;          /* source offset of the event's first byte */
    uint64_t end_offset;      /* source offset just past its last line (resume point) */
    unsigned flags;           /* LF_EVENT_* */
    struct lf_source *source; /* borrowed; outlives every batch that holds the event */
    struct lf_str extra;      /* JSON members stages add at the root after "log", as
                                 `"stream":"stdout","error":{...}`: no braces, no leading
                                 comma; empty for none. Borrowed like message. Never one of
                                 the keys the encoder writes itself, but for those an
                                 LF_EVENT_OWN_* flag hands over */
    uint64_t routes;          /* bit r: the event matched its input's route r (the chain's
                                 last step, docs/processing.md "Routing"); 0: no route
                                 matched, or the input has none: its default outputs */
};

/* Returns a new source in *out with its JSON parts rendered; free with lf_source_free().
 * path NULL means stdin (no log.file.path); bytes of path, input_id or host that are not
 * UTF-8 become U+FFFD. host NULL leaves out "host". fields_json is a JSON object "{...}" or
 * NULL; with fields_under_root its members go at the root, else under "fields".
 * LF_EINVAL: input_id NULL or fields_json not a JSON object. LF_ENOMEM. */
LF_MUST_CHECK enum lf_err lf_source_new(const char *path,
                                        const char *input_id,
                                        const char *host,
                                        const char *fields_json,
                                        bool fields_under_root,
                                        struct lf_source **out);

/* Frees the source. lf_source_free(NULL) is a no-op. */
void lf_source_free(struct lf_source *src);

/* Appends s as the body of a JSON string (no quotes): escapes '"', '\\', control characters
 * and U+2028/U+2029. s must be valid UTF-8. Errors as lf_buf_append(). */
LF_MUST_CHECK enum lf_err lf_json_escape(struct lf_buf *out, struct lf_str s);

/* lf_json_escape() for bytes that may not be UTF-8: each byte that does not start a whole
 * valid character (an incomplete one at the end included) becomes U+FFFD. Errors as
 * lf_buf_append(); on error out is unchanged. */
LF_MUST_CHECK enum lf_err lf_json_escape_lossy(struct lf_buf *out, struct lf_str s);

/* Length of the run at the start of s that lf_json_escape() copies as it is: up to the
 * first control character, '"', '\\' or 0xE2 (the lead byte of U+2028 and U+2029, so
 * the run stops at every 0xE2, even one copied as it is). 16 bytes a step with SSE2. */
size_t lf_json_plain_len(struct lf_str s);

/* Appends the event as one JSON object and a '\n' (SPEC.md "Events"); a dropped event
 * (LF_EVENT_DROPPED) appends nothing. Errors as lf_buf_append(). Allocates nothing once
 * out has room. */
LF_MUST_CHECK enum lf_err lf_event_encode(struct lf_buf *out, const struct lf_event *ev);

/* The last formatted @timestamp, so events within one millisecond share one formatting.
 * A small value type: keep one per encoding loop (a batch holds one). Private fields. */
struct lf_ts_cache {
    int64_t ms; /* the millisecond text holds; valid only when set */
    bool set;
    char text[25]; /* lf_format_timestamp() output */
};

/* Starts an empty cache. */
void lf_ts_cache_init(struct lf_ts_cache *c);

/* lf_event_encode() reusing the timestamp text in c when the millisecond repeats. */
LF_MUST_CHECK enum lf_err
lf_event_encode_cached(struct lf_buf *out, const struct lf_event *ev, struct lf_ts_cache *c);

/* Formats ns as RFC 3339 UTC with milliseconds ("2026-11-30T01:02:03.456Z") into buf[25],
 * NUL-terminated. Sub-millisecond digits are dropped (floor), so a time never shows the next
 * second early; before 1970 also floors. */
void lf_format_timestamp(int64_t ns, char buf[25]);

/* The current wall-clock time in ns since the epoch. */
int64_t lf_now_ns(void);

#endif
