/* batch.h - a batch of events: their bytes in one arena, encoded and compressed once.
 *
 * Events are added with lf_batch_add(), which copies each message into the batch's text
 * (the one copy a line's bytes get after the reader; the text is also the form the text
 * format sends). When the batch is cut, every output
 * asks for the form it sends: lf_batch_ndjson() encodes once, lf_batch_zstd() compresses
 * that once; later calls return the cached result. lf_batch_reset() keeps the memory.
 * One thread at a time. */
#ifndef LF_BATCH_H
#define LF_BATCH_H

#include <stddef.h>
#include <stdint.h>

#include "logferry/buf.h"
#include "logferry/err.h"
#include "logferry/event.h"

struct lf_batch;

/* What a batch keeps of the events added to it. */
enum lf_batch_mode {
    /* Messages are copied into the arena and encoded when the batch is cut; every output
     * form is available (lf_batch_event() included). The default. */
    LF_BATCH_KEEP_EVENTS = 0,
    /* Each event is encoded to NDJSON as it is added, on the adding thread, and its message
     * is not kept: lf_batch_event() returns it with an empty message. For routes whose
     * outputs only send NDJSON or zstd; it saves a copy and moves the encoding off the
     * delivery thread. */
    LF_BATCH_ENCODE_ON_ADD,
};

/* Returns a new empty batch that accepts up to max_events events and about max_bytes of
 * message bytes; NULL if out of memory. Free with lf_batch_free(). */
struct lf_batch *lf_batch_new(size_t max_events, size_t max_bytes);

/* Frees the batch. lf_batch_free(NULL) is a no-op. */
void lf_batch_free(struct lf_batch *b);

/* Empties the batch, dropping cached encodings; keeps its memory and its mode. */
void lf_batch_reset(struct lf_batch *b);

/* Sets the mode of an empty batch (LF_EINVAL if it holds events). */
LF_MUST_CHECK enum lf_err lf_batch_set_mode(struct lf_batch *b, enum lf_batch_mode mode);

/* Copies ev (and its message bytes) into the batch. LF_ETOOBIG: the batch is full (cut it
 * and add ev to the next one; a single event larger than max_bytes is still accepted into
 * an empty batch). LF_ENOMEM. */
LF_MUST_CHECK enum lf_err lf_batch_add(struct lf_batch *b, const struct lf_event *ev);

size_t lf_batch_count(const struct lf_batch *b);

/* True when an event whose message is message_len bytes fits (lf_batch_add() would not say
 * LF_ETOOBIG). */
bool lf_batch_has_room(const struct lf_batch *b, size_t message_len);

/* A run of a batch: events of one source added one after another, with what their answer
 * needs (the pipeline's struct lf_ack without the verdict). */
struct lf_batch_run {
    struct lf_source *source; /* borrowed, as the events' */
    uint64_t first;           /* the lowest start offset of the run's events */
    uint64_t end;             /* the highest end offset of the run's events */
    size_t events;
};

/* The batch's runs in the order their events were added (*n of them), recorded as events
 * are added (or restored), so answering a batch reads these instead of every event, and a
 * thread that answers a batch another thread filled reads a few lines, not all of them.
 * Borrowed: valid until the next add, reset or free. */
const struct lf_batch_run *lf_batch_runs(const struct lf_batch *b, size_t *n);

/* Of those, the dropped ones (LF_EVENT_DROPPED: carried for their offsets, never sent). */
size_t lf_batch_dropped(const struct lf_batch *b);

/* Message bytes held (what the queue counts against queue.max_bytes). */
size_t lf_batch_bytes(const struct lf_batch *b);

/* The i-th event, i < lf_batch_count(b). Borrowed: valid until reset or free. */
const struct lf_event *lf_batch_event(const struct lf_batch *b, size_t i);

/* The batch's mode (lf_batch_set_mode()). */
enum lf_batch_mode lf_batch_get_mode(const struct lf_batch *b);

/* LF_BATCH_KEEP_EVENTS: the messages of the events not dropped, each followed by a '\n', in
 * add order: the text form (file and console outputs, format text). Written as events are
 * added, on the adding thread (the events' messages point into it), so an output sends it
 * as is, without reading the events. LF_EINVAL with LF_BATCH_ENCODE_ON_ADD (no messages).
 * Borrowed: valid until the next add, reset or free. */
LF_MUST_CHECK enum lf_err lf_batch_text(const struct lf_batch *b, struct lf_str *out);

/* Refills an emptied batch (lf_batch_reset()) with n events read back from a disk copy,
 * whatever its limits: with mode LF_BATCH_KEEP_EVENTS the events' messages and extras are
 * copied in (ndjson is ignored: it is encoded again when asked for); with
 * LF_BATCH_ENCODE_ON_ADD the events keep only their metadata and ndjson becomes the batch's
 * NDJSON as is. LF_ENOMEM. */
LF_MUST_CHECK enum lf_err lf_batch_restore(struct lf_batch *b, enum lf_batch_mode mode,
                                           const struct lf_event *evs, size_t n,
                                           struct lf_str ndjson);

/* The batch as NDJSON, encoded on the first call. Borrowed: valid until reset or free. */
LF_MUST_CHECK enum lf_err lf_batch_ndjson(struct lf_batch *b, struct lf_str *out);

/* The NDJSON as one complete zstd frame at level, compressed on the first call with the
 * batch's own reused context. Borrowed: valid until reset or free. */
LF_MUST_CHECK enum lf_err lf_batch_zstd(struct lf_batch *b, int level, struct lf_str *out);

/* The NDJSON as one gzip member (RFC 1952) at zlib level (1-9), compressed on the first call
 * with the batch's own reused deflate state. Borrowed: valid until reset or free. */
LF_MUST_CHECK enum lf_err lf_batch_gzip(struct lf_batch *b, int level, struct lf_str *out);

#endif
