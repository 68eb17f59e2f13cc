/* pipeline.h - from events to acknowledged batches: batcher, queue, one lane per output.
 *
 *   producer thread                         a lane per output (its own thread)
 *   lf_pipeline_push(input, ev) ─► batch ─► queue (bounded) ─► encode/compress once,
 *                                   cut at max_events/max_bytes    send, retry, in order
 *   lf_pipeline_take_acks() ◄──── answers, in order ◄──── every routed output answered
 *
 * Each input fills its own batch, so a batch goes to exactly the outputs its input routes
 * to; an input with `routes:` fills one per output its routes reach (an event for two
 * outputs is copied into both), cut and completed together. Batches are cut when full, by lf_pipeline_flush(), and queued to the lane of every
 * routed output; each lane sends in cut order, so the events of one source reach every
 * output in offset order, and no output waits for another (only for the shared caps).
 * Unacknowledged message bytes are bounded by queue.max_bytes: push blocks while the queue
 * is at the cap (the caller is a reader: a slow output slows reading, never grows memory). */
#ifndef LF_PIPELINE_H
#define LF_PIPELINE_H

#include <stdbool.h>
#include <stdint.h>

#include "logferry/config.h"
#include "logferry/err.h"
#include "logferry/event.h"

struct lf_pipeline;

struct lf_pipeline_stats {
    uint64_t events_in;     /* events pushed */
    uint64_t events_acked;  /* events every routed output acknowledged */
    uint64_t batches_acked;
    uint64_t batches_failed; /* batches given up on (an output kept failing) */
    uint64_t events_failed;  /* events of those batches */
    uint64_t bytes_out;      /* bytes the outputs wrote, after encoding and compression */
    uint64_t retries;        /* sends retried after LF_EAGAIN */
    uint64_t queue_bytes;    /* message bytes of batches not yet acknowledged */
};

/* Creates and opens every output of cfg and starts their lanes. cfg is borrowed:
 * valid until lf_pipeline_free(). Returns a new pipeline in *out; free with
 * lf_pipeline_free(). LF_EIO/LF_ECONFIG with eb naming the output at fault. */
LF_MUST_CHECK enum lf_err lf_pipeline_new(const struct lf_config *cfg, struct lf_pipeline **out,
                                          struct lf_errbuf *eb);

/* Copies ev into input input_idx's current batch (ev->source->inflight grows by one); cuts
 * and queues it when full. Blocks while the queue is at queue.max_bytes. LF_EIO once
 * delivery has failed for good. One producer thread (others: lf_producer_new()). */
LF_MUST_CHECK enum lf_err lf_pipeline_push(struct lf_pipeline *p, size_t input_idx,
                                           const struct lf_event *ev);

/* Another producer, for another thread: it fills batches of its own, one per input, which
 * are queued to the same lanes as the pipeline's own (so each source still reaches every
 * output in the order it was pushed, as long as one thread pushes a source's events). Each
 * producer raises the cap on batches alive by one. The answers of its batches go to the
 * same log (lf_pipeline_take_acks(), on the pipeline's producer thread): a thread that
 * pushes through a producer must not touch its sources again until the pipeline's thread
 * has joined it. The pipeline's own producer alone runs the wait hook. LF_EINVAL beyond
 * 8 producers; LF_ENOMEM. Free every producer before lf_pipeline_reconfigure() or
 * lf_pipeline_free(). Any thread. */
struct lf_producer;
LF_MUST_CHECK enum lf_err lf_producer_new(struct lf_pipeline *p, struct lf_producer **out);

/* lf_pipeline_push() through pr: its own batches. The thread that owns pr. */
LF_MUST_CHECK enum lf_err
lf_producer_push(struct lf_producer *pr, size_t input_idx, const struct lf_event *ev);

/* Cuts pr's non-empty batches and queues them. LF_EIO once delivery has failed for good.
 * The thread that owns pr. */
LF_MUST_CHECK enum lf_err lf_producer_flush(struct lf_producer *pr);

/* Queues what pr still holds (nothing is lost), then frees it. NULL is a no-op. */
void lf_producer_free(struct lf_producer *pr);

/* One answer: a run of events of one source in one completed batch. */
struct lf_ack {
    struct lf_source *source; /* borrowed: still alive (its inflight counts these events) */
    uint64_t first;           /* the lowest start offset of these events */
    uint64_t end;             /* the highest end offset of these events */
    uint32_t events;
    bool delivered;           /* every routed output acknowledged them; false: given up on */
};

typedef void lf_ack_fn(void *arg, const struct lf_ack *ack);

/* Applies the answers of the batches completed since the last call, in completion order, to
 * their sources (inflight drops; acked_offset rises to the highest delivered end offset;
 * pinned_offset falls to the lowest offset given up on), then calls fn (if not NULL) for
 * each. The pipeline itself never writes into a source, so a source the producer frees once
 * its inflight reaches 0 is never touched again. Producer thread. Returns the number of
 * answers; allocates nothing in the steady state. */
size_t lf_pipeline_take_acks(struct lf_pipeline *p, lf_ack_fn *fn, void *arg);

/* Has a push that waits for room call fn(arg) every interval_ms while it waits, on the
 * producer's thread and without the pipeline's lock, so the producer can take answers and
 * save offsets while slow outputs hold it up. fn must not push. Before the producer starts. */
void lf_pipeline_set_wait_hook(struct lf_pipeline *p, void (*fn)(void *arg), void *arg,
                               uint64_t interval_ms);

/* Cuts every non-empty batch and queues it. Producer thread. */
LF_MUST_CHECK enum lf_err lf_pipeline_flush(struct lf_pipeline *p);

/* Flushes, then waits until every queued batch is acknowledged or given up on, and makes
 * every output has acknowledged it. LF_EIO (eb says which output and why) if anything was not
 * delivered. Producer thread. */
LF_MUST_CHECK enum lf_err lf_pipeline_drain(struct lf_pipeline *p, struct lf_errbuf *eb);

/* Spool mode (queue.spool.enabled): after lf_pipeline_drain() (everything cut is in the
 * spool), waits until every record in the spool is acknowledged by every output it routes
 * to. LF_EIO (eb says why) once a batch was given up on or the pipeline aborted: what was not
 * delivered stays in the spool for the next run. LF_OK at once without a spool. Producer
 * thread. */
LF_MUST_CHECK enum lf_err lf_pipeline_drain_spool(struct lf_pipeline *p, struct lf_errbuf *eb);

struct lf_spool_stats;

/* Spool mode: a snapshot of the spool's counters in *out, and true; false (zeros) without a
 * spool. Any thread. */
bool lf_pipeline_spool_stats(struct lf_pipeline *p, struct lf_spool_stats *out);

/* Sets how long (ms of backoff) a batch an output keeps answering LF_EAGAIN for is retried
 * before it is given up on; 0 retries for ever (the daemon: nothing is dropped). The
 * default, for backfills, is max(shutdown_timeout, 30 s). Any thread. */
void lf_pipeline_set_retry_budget(struct lf_pipeline *p, uint64_t budget_ms);

/* Gives up on everything not yet acknowledged: a blocked push or drain returns LF_EIO at
 * once, and every later one too (shutdown_timeout ran out); queued batches are answered
 * as given up on without being sent. Any thread. */
void lf_pipeline_abort(struct lf_pipeline *p, const char *why);

/* A snapshot of the counters. Any thread. */
void lf_pipeline_stats(struct lf_pipeline *p, struct lf_pipeline_stats *out);

/* Upper bounds, in seconds, of the buckets of the time from a batch's cut to an output's
 * acknowledgement (the last bucket, +Inf, is implied by the count). */
#define LF_LATENCY_BUCKETS 14
extern const double lf_pipeline_latency_bounds[LF_LATENCY_BUCKETS];

/* Per output, for the metrics. */
struct lf_pipeline_output_stats {
    uint64_t latency_in[LF_LATENCY_BUCKETS]; /* acknowledgements whose latency was at most
                                                bound i and above bound i-1 */
    uint64_t latency_count; /* acknowledgements timed */
    uint64_t latency_sum_us; /* their latencies added up */
    uint64_t events_acked; /* events it acknowledged (filtered ones not counted) */
    uint64_t errors;       /* batches it failed: answered LF_EAGAIN, refused, or send failed */
    uint64_t retries;      /* batches sent to it again after a failure */
    uint64_t dead_letters; /* events it refused for good, kept in its dead letters */
    uint64_t rejected;     /* events its peer refused without naming them: not kept */
    /* Its state, for /status: */
    uint64_t failing;          /* failed attempts in a row; 0 while it delivers */
    int64_t failing_since_ms;  /* Unix ms of the first of them (0 when failing is 0) */
    const char *last_error;    /* static text of the last failure (the log has details) */
    uint64_t backoff_ms;       /* longest a batch of it has waited in backoff so far */
};

/* A snapshot of the counters of the output named name (zeros if there is none). Counters
 * carry over when a reconfiguration replaces an output of the same name. Any thread. */
void lf_pipeline_output_stats(struct lf_pipeline *p, const char *name,
                              struct lf_pipeline_output_stats *out);

/* Switches p to cfg (borrowed: valid until lf_pipeline_borrows() says otherwise) without
 * waiting for any output: what the producer holds is cut and queued by the old routes; an
 * output whose settings are the same (by name, lf_config_output_same()) keeps its lane,
 * queue and batches in flight untouched; a changed output's new lane takes over what the
 * old one has not sent (and, after the old one's requests in flight are answered, what they
 * did not deliver); a removed output's lane sends what it holds (retrying for 30 s at most)
 * and ends. Inputs route by cfg from now on. In spool mode the delivery's lanes change so,
 * and every output keeps its place in the spool. On failure (an output does not open: eb
 * says which) nothing changed. No other producer may be alive. Producer thread. */
LF_MUST_CHECK enum lf_err lf_pipeline_reconfigure(struct lf_pipeline *p,
                                                  const struct lf_config *cfg,
                                                  struct lf_errbuf *eb);

/* Has pushes that wait for room stop waiting (on) and take a batch beyond the caps, until
 * called again with off: a producer that must get to other work (a reload) stops reading
 * soon, and its read is not held up by outputs that are down. Any thread. */
void lf_pipeline_yield(struct lf_pipeline *p, bool on);

/* True between lf_pipeline_yield(p, true) and (p, false): readers stop at the next line.
 * Any thread; no lock (read per line). */
bool lf_pipeline_yielding(struct lf_pipeline *p);

/* True while p uses cfg: its current config, the settings an output kept across a
 * reconfiguration (or retiring after one) was made from, or the config a batch not yet
 * answered was cut under. Any thread. */
bool lf_pipeline_borrows(struct lf_pipeline *p, const struct lf_config *cfg);

/* Stops the lanes (after the batches already queued), closes the outputs, frees.
 * lf_pipeline_free(NULL) is a no-op. */
void lf_pipeline_free(struct lf_pipeline *p);

#endif
