/* pipeline_int.h - the pipeline's private parts, shared by the files of src/pipeline/ only.
 *
 *   batcher.c      producers, per-input current batches, cut, the shared caps (push, flush,
 *                  drain, yield); producer threads
 *   lane.c         one output's lane: its queue, sends, answers, retries, backoff, spool
 *                  cursor, hand-over to a successor; the lane's thread and its output's
 *                  answer callback. The only file that touches an output or a lane's
 *                  insides (struct lane is opaque elsewhere: lf_lane__*())
 *   answers.c      completion in cut order, the answer log, lf_pipeline_take_acks()
 *   prepare.c      the preparer thread: the outputs' forms (zstd) ahead of the lanes
 *   spool_writer.c the producer's spool writer thread: append, group commit, answers
 *   spool_feeder.c the delivery's spool feeder thread: records back into batches, routed
 *   reconfigure.c  lf_pipeline_reconfigure(): new lanes, retiring ones, reaping them
 *   pipeline.c     creation, stats, health, abort, teardown
 *
 * One lock (lane.c says why not one per lane): p->mu guards everything in struct lf_pipeline and in
 * its lanes and batches that is marked "under mu" or not marked otherwise: the alive list, every
 * lane's queue, retries and counters, the free lists, the answer log and the counters. A lane's
 * thread, the preparer, the spool writer and feeder all take it, and release it for the slow part
 * (a send, a flush, a compression, a disk write); functions named *_locked are called with it held.
 * p->dmu (a spool-mode producer's) guards only its delivery pointer. Lock order: a producer's dmu,
 * then its delivery's mu, then the producer's mu (a delivery lane that gives up tells the producer:
 * lf_pipeline__set_failed()); never the reverse. A batch's events belong to the thread that fills
 * it until it is cut, then are read-only until answered. */
#ifndef LF_PIPELINE_INT_H
#define LF_PIPELINE_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "logferry/batch.h"
#include "logferry/config.h"
#include "logferry/output.h"
#include "logferry/pipeline.h"
#include "logferry/spool.h"

/* Batches alive at once, at most: current ones, queued and in flight. Bounds memory beyond
 * queue.max_bytes (each batch keeps its arena, encode buffer and compression context). */
#define LF_PIPELINE_MAX_BATCHES 6
/* What two threads' fields are kept apart by, when one writes per event (x86-64 and arm64). */
#define LF_CACHE_LINE 64
/* Producers besides the pipeline's own (lf_producer_new()), at most. Each one raises the cap
 * on batches alive by one, so every producer can fill a batch while the others' are queued. */
#define LF_PIPELINE_MAX_PRODUCERS 8
/* Room in a lane's ring for every batch that can be alive: the cap, and the current batches
 * of every producer (a flush cuts them all at once). */
#define LANE_SLOTS(n_inputs)                               \
    (LF_PIPELINE_MAX_BATCHES + LF_PIPELINE_MAX_PRODUCERS + \
     (n_inputs) * (1 + LF_PIPELINE_MAX_PRODUCERS))
/* Batches one producer fills at once for one input: with routes, one per output the
 * routes reach (docs/processing.md "Routing by content"; the config refuses more); an input
 * without routes fills one, for all its outputs. */
#define LF_INPUT_SLOTS (LF_MAX_ROUTED_OUTPUTS + 1) /* and one for dropped events */
/* qbatch.to: the batch goes to every output of its input (an input without routes) ... */
#define LF_TO_INPUT SIZE_MAX
/* ... or to none: it holds only dropped events (an input with routes) */
#define LF_TO_NONE (SIZE_MAX - 1)
/* Entries of a producer's current batches: LF_INPUT_SLOTS per input. */
#define CURRENT_SLOTS(n_inputs) (((n_inputs) ? (n_inputs) : 1) * LF_INPUT_SLOTS)
/* zstd level of spool records: the HTTP output's, so its zstd form is compressed once. */
#define LF_SPOOL_ZSTD_LEVEL 1

/* One output's delivery (lane.c; opaque elsewhere: only lane.c touches a lane's queue,
 * retries or output). */
struct lane;

/* Answers of completed batches, waiting for the producer (lf_pipeline_take_acks()). */
struct ack_log {
    struct lf_ack *a; /* owned */
    size_t len;
    size_t cap;
};

struct qbatch {
    struct lf_batch *batch;      /* owned */
    const struct lf_config *cfg; /* borrowed: the config it was cut under (NULL: read back
                                    from the spool); names its input and routes */
    size_t input_idx;            /* in cfg */
    size_t to;                   /* the one output (index in cfg->outputs) an input with routes
                                    fills it for, LF_TO_INPUT or LF_TO_NONE */
    size_t primary;              /* its events counted here: an event routed to two outputs is
                                    in two batches, counted in the first */
    bool group_next;             /* the next batch on the alive list was cut with it, from the
                                    same producer and input: they complete together, so no
                                    source's offset passes an event still in the other */
    uint64_t order;              /* cut (or read back) order, for handing batches over in order */
    size_t bytes;                /* message bytes, counted against queue.max_bytes */
    size_t pending;              /* routed outputs that have not answered yet */
    uint64_t cut_ns;             /* when it was cut (uv_hrtime), for the latency histogram */
    bool failed;                 /* an output refused it, or retries ran out */
    enum {
        PREP_NONE,
        PREP_RUNNING,
        PREP_DONE
    } prep;       /* the outputs' forms computed yet? */
    bool spooled; /* spool mode, producer: appended to the spool */
    bool extra;   /* taken beyond the caps while yielding: small, reused only so */
    uint64_t seq; /* spool mode, producer: its record's number (lf_spool_appended()) */
    /* Spool mode, delivery: read back from the spool. */
    struct lf_spool_pos end;   /* where its record ends */
    struct lf_spool_meta meta; /* its sources (owned) */
    struct lane **routes;      /* owned array; the lanes it was queued to (borrowed; only
                                  read while the batch is not prepared, when they all live) */
    size_t n_routes;
    size_t cap_routes;
    uint32_t answered; /* delivery: bit k set once routes[k] delivered it */
    /* Held (lf_output_hold()): outputs that gather batches answer later, from their own
     * copy. Once only they still owe answers, the batch goes back to the pipeline
     * (p->spare) and this stays on the alive list as a stub, with what completion needs. */
    size_t held;         /* routed outputs holding it, not answered yet */
    size_t n_sent;       /* its events not dropped by a stage (the held ones' counts) */
    bool stub;           /* batch is NULL: given back while held */
    size_t n_events;     /* stub: the batch's event count */
    struct ack_log runs; /* stub, not delivery: its answer runs (memory kept for reuse) */
    struct qbatch *next; /* alive list or free list */
};

/* A producer besides the pipeline's own: a thread of its own pushes through it. */
struct lf_producer {
    _Alignas(LF_CACHE_LINE) struct lf_pipeline *p; /* allocated aligned: written per event,
                                                      it shares no cache line */
    struct qbatch **current;  /* owned; CURRENT_SLOTS: per input, the batches being filled */
    uint64_t events_in;       /* its thread writes, others read: relaxed atomics */
    struct lf_producer *next; /* p->producers, under p->mu */
};

struct lf_pipeline {
    const struct lf_config *cfg; /* borrowed */
    struct lane **lanes;         /* owned; the lanes of cfg->outputs (n_outputs, in order),
                                    then those retiring (up to n_lanes); under mu */
    size_t n_outputs;
    size_t n_lanes;
    struct qbatch **current;   /* owned; CURRENT_SLOTS(n_inputs): per input, LF_INPUT_SLOTS
                                  batches being filled, each for one set of routes (or NULL) */
    enum lf_batch_mode *modes; /* owned; per input: encode on add unless an output of its
                                  route reads messages */

    uv_mutex_t mu;
    uv_cond_t prep_work; /* the preparer has something to do */
    uv_cond_t space;     /* a batch completed */
    uv_cond_t prepared;  /* a batch's preparation finished */
    struct qbatch *head; /* alive: cut, not yet answered by every routed output; cut order */
    struct qbatch *tail;
    struct ack_log acks;   /* answers not yet taken by the producer */
    struct ack_log taking; /* the producer's: swapped with acks, so both keep their memory */
    struct qbatch *free_list;
    struct qbatch *extras; /* extra batches answered, for the next yield (never freed) */
    size_t alive;          /* batches on the alive list */
    size_t alive_bytes;    /* their message bytes */
    size_t n_batches;      /* batch objects allocated */
    bool stopping;
    bool failed;              /* a batch was given up on: --once cannot succeed */
    bool aborted;             /* lf_pipeline_abort(): waits end at once */
    uint64_t retry_budget_ms; /* backoff a batch may spend before it is given up; 0: never */
    char fail_msg[512];
    struct lf_pipeline_stats stats;
    uint64_t next_order; /* the order of the next batch cut or read back */
    size_t preparing;    /* batches being prepared: retired lanes are not freed meanwhile */
    bool lane_ended;     /* a retiring lane ended: join and free it (lf_pipeline__reap_lanes()) */
    struct lf_producer *producers; /* the other producers (lf_producer_new()) */
    size_t n_producers;
    uint64_t events_in_gone;    /* pushed through producers since freed */
    void (*wait_fn)(void *arg); /* called while a push waits (lf_pipeline_set_wait_hook) */
    void *wait_arg;
    uint64_t wait_interval_ms;

    bool preparer_started;
    uv_thread_t preparer; /* compresses queued batches ahead of the lanes */

    /* Spool mode (queue.spool.enabled). The producer's pipeline has no lanes: its writer
     * appends every cut batch to the spool and answers it once committed; the delivery
     * pipeline, with the outputs' lanes, is fed by its feeder reading the spool in order. */
    struct lf_spool *spool;       /* producer: owned; delivery: borrowed */
    struct lf_pipeline *delivery; /* producer: owned */
    struct lf_pipeline *parent;   /* delivery: the producer, told when delivery fails */
    bool detaching;               /* delivery: being stopped; give-ups are not failures */
    bool finishing;               /* drained: the last batches are cut, outputs holding batches
                                     deliver them now (lf_output_drain()) */
    size_t stubs;                 /* alive batches that are stubs: not counted against the caps */
    struct lf_batch **spare;      /* owned; batches given back by stubs, for the next cut */
    size_t n_spare;
    size_t cap_spare;
    struct lf_spool_codec codec; /* writer (producer) or feeder (delivery) */
    struct lf_buf payload;       /* feeder: the record read */
    uv_cond_t spool_work;        /* producer: a batch was cut */
    uv_mutex_t dmu;              /* producer: guards the delivery pointer */
    bool spool_thread_started;
    uv_thread_t spool_thread; /* producer: the writer; delivery: the feeder */

    /* Touched per event, each on a cache line of its own (the struct is allocated aligned
     * to LF_CACHE_LINE): every reading thread reads yield after each line, and the
     * pipeline's own producer writes events_in per event. Beside the fields the lanes write
     * under mu, every line read would fetch a cache line another core had just written. */
    _Alignas(LF_CACHE_LINE) uint64_t events_in; /* producer writes, others read: relaxed
                                                   atomics */
    _Alignas(LF_CACHE_LINE) bool yield;         /* lf_pipeline_yield(): a push does not wait for
                                                   room; relaxed atomics outside mu */
};

/* pipeline.c */

/* Marks p failed (delivery of a spool-mode producer failed for good) with msg, and wakes
 * whoever waits on it. Takes p->mu. */
void lf_pipeline__set_failed(struct lf_pipeline *p, const char *msg);
/* The delivery pipeline of a spool-mode producer, locked (p->dmu) until
 * lf_pipeline__delivery_put(); NULL (nothing locked) otherwise. */
struct lf_pipeline *lf_pipeline__delivery_get(struct lf_pipeline *p);
void lf_pipeline__delivery_put(struct lf_pipeline *p);

/* Wakes every thread of p that waits on its state (space, spool, preparer, lanes). p->mu
 * held. */
void lf_pipeline__wake_all_locked(struct lf_pipeline *p);

/* batcher.c */

/* A batch for cfg's inputs and routes; with p->mu held (cfg may be switched otherwise). */
struct qbatch *lf_pipeline__qbatch_new_locked(const struct lf_config *cfg, size_t max_events);
/* A qbatch of the regular size for p: with a batch a stub gave back (p->spare) when there
 * is one, else a new one. Every held batch gives its batch back while its qbatch stays
 * alive as a stub, so without the spares each would cost a new batch: an s3 object of a
 * thousand batches kept a thousand arenas, encodings and compression contexts. NULL: out of
 * memory. p->mu held. */
struct qbatch *lf_pipeline__qbatch_regular_locked(struct lf_pipeline *p);
/* True when events of input i that took the routes route_bits go to output o (an index
 * into cfg->outputs). */
bool lf_pipeline__routed_to(const struct lf_config *cfg, size_t i, uint64_t route_bits, size_t o);
/* The k-th output (index into qb->cfg->outputs) qb goes to; SIZE_MAX past the last. */
size_t lf_pipeline__output_of(const struct qbatch *qb, size_t k);
/* Per input of cfg: its batch mode, from its routed lanes (indexed like cfg->outputs). */
void lf_pipeline__set_modes(const struct lf_config *cfg,
                            struct lane *const *lanes,
                            enum lf_batch_mode *modes);
/* Appends qb to the alive list, waiting for pending answers. p->mu held. */
void lf_pipeline__append_locked(struct lf_pipeline *p, struct qbatch *qb, size_t pending);
/* Queues qb (alive) to the lane of each of its routes. p->mu held. */
void lf_pipeline__enqueue_locked(struct lf_pipeline *p, struct qbatch *qb);
/* Cuts and queues every non-empty batch of cur (a producer's). Takes p->mu. */
LF_MUST_CHECK enum lf_err lf_pipeline__flush_current(struct lf_pipeline *p, struct qbatch **cur);

/* answers.c */

/* Puts qb back on its free list. p->mu held. */
void lf_pipeline__recycle_locked(struct lf_pipeline *p, struct qbatch *qb);
/* Gives qb's batch back (qb becomes a stub) once only outputs holding it owe answers. p->mu
 * held. */
void lf_pipeline__maybe_stub_locked(struct lf_pipeline *p, struct qbatch *qb);
/* Gives qb, taken from a free list, a batch if it is a former stub's. False when out of
 * memory. p->mu held. */
LF_MUST_CHECK bool lf_pipeline__attach_locked(struct lf_pipeline *p, struct qbatch *qb);
/* qb's events, whole or stub. */
size_t lf_pipeline__count(const struct qbatch *qb);
/* Batches alive that hold memory: what the caps count. p->mu held. */
size_t lf_pipeline__heavy_locked(const struct lf_pipeline *p);
/* Answers and recycles the batches at the head of the alive list that are answered. p->mu
 * held. */
void lf_pipeline__complete_locked(struct lf_pipeline *p);

/* lane.c: every function that touches a lane's queue, retries or output. */

/* Makes and opens the output for conf and its lane (not started); free with lf_lane__free(). */
LF_MUST_CHECK enum lf_err lf_lane__new(struct lf_pipeline *p,
                                       const struct lf_output_conf *conf,
                                       size_t slots,
                                       struct lane **out,
                                       struct lf_errbuf *eb);
LF_MUST_CHECK enum lf_err lf_lane__start(struct lane *l, struct lf_errbuf *eb);
/* Waits for l's thread to end (after p->stopping or lf_lane__retire_locked()). */
void lf_lane__join(struct lane *l);
/* Closes l's output and frees l; its thread has ended. NULL is a no-op. */
void lf_lane__free(struct lane *l);
/* The settings l's output was made from (borrowed from the config that holds them). */
const struct lf_output_conf *lf_lane__conf(const struct lane *l);
/* True when l's output reads events' messages (not only the NDJSON). */
bool lf_lane__needs_messages(const struct lane *l);
/* Puts qb in l's queue by cut order. False when out of memory. p->mu held. */
bool lf_lane__insert(struct lane *l, struct qbatch *qb);
/* True when l's output can send qb (it has the messages the output reads). */
bool lf_lane__can_take(const struct lane *to, struct qbatch *qb);
/* Records that l's output gave up on qb. p->mu held. */
void lf_lane__give_up_locked(struct lane *l, struct qbatch *qb, const char *why);
/* Computes the form l's output will send of b (compression), on the preparer's thread,
 * without p->mu; l is not freed meanwhile (p->preparing). */
void lf_lane__prepare(struct lane *l, struct lf_batch *b);
/* Retires l: it ends once it holds nothing. With a successor (same name, other settings) it
 * hands succ what it has not sent, its counters go on in succ's, and succ sends nothing
 * until l's requests in flight are answered. p->mu held. */
void lf_lane__retire_locked(struct lane *l, struct lane *succ);
/* True once a retired l's thread returned: it may be joined and freed. p->mu held. */
bool lf_lane__ended_locked(const struct lane *l);
/* Wakes l's thread to look at p's state again (abort, stop). p->mu held. */
void lf_lane__wake_locked(struct lane *l);
/* l's counters. p->mu held. */
void lf_lane__stats_locked(const struct lane *l, struct lf_pipeline_output_stats *out);
/* The longest backoff a batch l retries has spent so far (0: none in backoff). p->mu held. */
uint64_t lf_lane__backoff_ms_locked(const struct lane *l);
/* Delivery: every record before this is delivered by l's output or not routed to it. p->mu
 * held. */
struct lf_spool_pos lf_lane__pos_locked(const struct lane *l);

/* prepare.c */

/* Prepares the oldest alive batch nobody has started on; false if there is none. p->mu
 * held, released while preparing. */
bool lf_pipeline__prepare_one_locked(struct lf_pipeline *p);
/* The preparer thread (arg: the pipeline). */
void lf_pipeline__preparer_main(void *arg);

/* spool_writer.c, spool_feeder.c */

/* The producer's spool writer thread (arg: the producer's pipeline). */
void lf_pipeline__spool_writer_main(void *arg);
/* The delivery pipeline's spool feeder thread (arg: the delivery pipeline). */
void lf_pipeline__spool_feeder_main(void *arg);

/* reconfigure.c */

/* Joins and frees the retiring lanes whose threads ended. Takes p->mu; never on a lane's
 * thread. */
void lf_pipeline__reap_lanes(struct lf_pipeline *p);

static inline bool lf_pipeline__pos_before(struct lf_spool_pos a, struct lf_spool_pos b)
{
    return a.seg < b.seg || (a.seg == b.seg && a.off < b.off);
}

#endif
