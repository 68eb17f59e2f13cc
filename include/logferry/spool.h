/* spool.h - the disk spool: batches appended durably under data_dir/spool, read back in order.
 *
 *   writer: lf_spool_append() ... lf_spool_append() ─► lf_spool_commit() (one fdatasync)
 *   reader: lf_spool_next() ─► record ─► delivered ─► lf_spool_release(end) ─► segments removed
 *
 * The spool is a row of segment files, data_dir/spool/<16 hex digits>.spool, oldest first;
 * each holds records one after the other:
 *
 *   magic "LFS1" (u32 LE) | payload length (u32 LE) | CRC32 of the payload (u32 LE)
 *   | CRC32 of the 12 bytes before (u32 LE) | payload
 *
 * A record is visible to the reader once committed (fdatasync'd): one commit covers every
 * record appended since the last one (group commit). A failed write or fdatasync drops every
 * record appended since the last good commit (the segment is cut back to it; a failed sync is
 * never retried over the same pages), so the writer appends them again: records are numbered
 * from 1 in append order, and lf_spool_durable() says how many are durable. A segment is closed
 * once it reaches its size and a new one is started; every open starts a new one, so a torn
 * tail left by a kill is never appended to. The reader reads committed records in order; a
 * record whose header or payload does not check out (CRC mismatch, torn write) is logged,
 * counted and skipped: the reader looks for the next record that checks out, or the next
 * segment. lf_spool_release() marks everything before a position delivered; segments wholly
 * before it are removed, and the position is saved (data_dir/spool/cursor) so a restart resumes
 * there. Each output also has a position of its own, which may be ahead
 * (lf_spool_set_output_pos()): a restart sends it nothing from before that. Appends wait while
 * the spool holds max_bytes or more and something is still to deliver. One writer thread, one
 * reader thread; release, stats and interrupt from any thread. */
#ifndef LF_SPOOL_H
#define LF_SPOOL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "logferry/buf.h"
#include "logferry/err.h"

struct lf_spool;

#define LF_SPOOL_HEADER_BYTES 16
#define LF_SPOOL_MAX_RECORD   ((uint32_t)1 << 30) /* a longer payload is refused */

/* Where a record ends (the reader's and the delivered position): segment id and offset. */
struct lf_spool_pos {
    uint64_t seg;
    uint64_t off;
};

struct lf_spool_stats {
    uint64_t bytes;           /* bytes of the segment files on disk */
    uint64_t undelivered;     /* bytes of committed records not yet released */
    uint64_t records;         /* records appended */
    uint64_t commits;         /* fdatasyncs */
    uint64_t corrupt;         /* records skipped: CRC mismatch, bad header, torn write */
    uint64_t segments;        /* segment files on disk */
    uint64_t segments_removed;
};

/* Opens (creating it, mode 0700) the spool in dir, whose appends wait at max_bytes; segments
 * are closed at segment_bytes (0: max_bytes / 8, from 4 KiB to 64 MiB). Returns a new spool
 * in *out; free with lf_spool_close(). LF_EIO with eb filled. */
LF_MUST_CHECK enum lf_err lf_spool_open(const char *dir, uint64_t max_bytes,
                                        uint64_t segment_bytes, struct lf_spool **out,
                                        struct lf_errbuf *eb);

/* Appends a record of len bytes, number lf_spool_appended() (not yet durable: see
 * lf_spool_commit(); a full segment is committed at once). Waits while the spool is full;
 * LF_EAGAIN at once (nothing appended) after lf_spool_interrupt(). LF_ETOOBIG past
 * LF_SPOOL_MAX_RECORD. LF_EIO (eb filled): this record and every one past
 * lf_spool_durable() are dropped. Writer thread. */
LF_MUST_CHECK enum lf_err lf_spool_append(struct lf_spool *s, const void *payload, size_t len,
                                          struct lf_errbuf *eb);

/* Makes every record appended so far durable (one fdatasync, and the directory's fsync for
 * a new segment) and visible to the reader. LF_EIO (eb filled): every record past
 * lf_spool_durable() is dropped. Writer thread. */
LF_MUST_CHECK enum lf_err lf_spool_commit(struct lf_spool *s, struct lf_errbuf *eb);

/* The number of the last record appended since the open and not dropped by a failure. A
 * failure brings it back to lf_spool_durable(). Any thread. */
uint64_t lf_spool_appended(struct lf_spool *s);

/* How many of the records appended since the open are durable: records 1 to this number
 * survive a power loss; never more than lf_spool_appended(). Any thread. */
uint64_t lf_spool_durable(struct lf_spool *s);

/* Reads the next committed record into payload (reset first) and its end into *end. LF_EAGAIN:
 * none yet; LF_ENOMEM; LF_EIO (logged) when a segment cannot be read. Corrupt records are
 * skipped. Reader thread. */
LF_MUST_CHECK enum lf_err lf_spool_next(struct lf_spool *s, struct lf_buf *payload,
                                        struct lf_spool_pos *end);

/* Waits up to timeout_ms for a commit (or an interrupt). Reader thread. */
void lf_spool_wait(struct lf_spool *s, uint64_t timeout_ms);

/* Everything before end is delivered: removes the segments wholly before it and saves the
 * position (at most every 100 ms, and whenever a segment goes). Any thread. */
void lf_spool_release(struct lf_spool *s, const struct lf_spool_pos *end);

/* Where the output named name is in the spool: every record before the position is
 * delivered to it (or does not go to it). The position last set (or saved before a restart)
 * if it is ahead of the delivered position, else the delivered position. Any thread. */
struct lf_spool_pos lf_spool_output_pos(struct lf_spool *s, const char *name);

/* The output named name has everything before pos: a restart sends it nothing from before
 * pos. Saved in the cursor file with the delivered position (an `output SEG OFF NAME` line,
 * at most every 100 ms, and at close). Any thread. */
void lf_spool_set_output_pos(struct lf_spool *s, const char *name, struct lf_spool_pos pos);

/* True when every committed record is released. Any thread. */
bool lf_spool_empty(struct lf_spool *s);

/* Ends the waits of lf_spool_append() and lf_spool_wait(), now and later. Any thread. */
void lf_spool_interrupt(struct lf_spool *s);

void lf_spool_stats(struct lf_spool *s, struct lf_spool_stats *out);

/* Saves the delivered position, closes and frees. lf_spool_close(NULL) is a no-op. */
void lf_spool_close(struct lf_spool *s);

/* ---- batches as record payloads (spool_batch.c) ----
 *
 * A payload carries what delivery needs after a restart: the input's id, the names of the
 * outputs it routes to, the sources (their paths and JSON parts, so the events encode as
 * before), every event's metadata (timestamp, offsets, flags), and a zstd frame of either
 * the batch's NDJSON (batches encoded as events were added) or the events' messages and
 * extras (batches that keep them); so a batch read back sends the same bytes. */

struct lf_batch;
struct lf_source;
struct lf_event;

/* Reused buffers and compression context; zero-initialize, free with
 * lf_spool_codec_release(). One thread at a time. */
struct lf_spool_codec {
    struct lf_buf out;   /* the encoded payload */
    struct lf_buf text;  /* messages and extras, before compression */
    struct lf_buf body;  /* the decompressed body */
    void *cctx;          /* ZSTD_CCtx, made on first use */
    struct lf_source **src; /* scratch: the sources of the batch being encoded */
    size_t n_src;
    size_t cap_src;
    struct lf_event *ev; /* scratch: the events being decoded */
    size_t cap_ev;
};

void lf_spool_codec_release(struct lf_spool_codec *c);

/* Encodes b, cut from input input_id and routed to the outputs named routes[0..n_routes),
 * into c->out. zstd_level compresses the body (the batch's cached frame is reused at that
 * level). LF_ENOMEM, LF_ETOOBIG. */
LF_MUST_CHECK enum lf_err lf_spool_encode(struct lf_spool_codec *c, struct lf_batch *b,
                                          const char *input_id, const char *const *routes,
                                          size_t n_routes, int zstd_level);

/* What a decoded payload says besides its events. */
struct lf_spool_meta {
    struct lf_str input_id;  /* borrowed from the payload */
    size_t n_routes;
    struct lf_str routes[16]; /* borrowed from the payload; the first 16 */
    struct lf_source **sources; /* owned: free with lf_spool_meta_release() */
    size_t n_sources;
};

/* Frees the sources of m. */
void lf_spool_meta_release(struct lf_spool_meta *m);

/* Decodes payload into the emptied batch b (lf_batch_restore()) and m (released first).
 * The events' sources are m->sources: keep m until b is reset. LF_EINVAL: not a payload
 * this version wrote (a corrupt record that passed its CRC cannot be). LF_ENOMEM. */
LF_MUST_CHECK enum lf_err lf_spool_decode(struct lf_spool_codec *c, struct lf_str payload,
                                          struct lf_batch *b, struct lf_spool_meta *m);

#endif
