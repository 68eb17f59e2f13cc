/* output.h - outputs behind one small vtable; one file per type in src/output/.
 *
 * An output receives batches with lf_output_send() and reports each one's fate through
 * lf_output_done(): LF_OK (delivered and durable: acknowledged), LF_EAGAIN (retry later),
 * LF_EREJECTED (refused for good). If send itself fails, done never comes for that batch.
 * done may come during send, or later: an output may hold sent batches to acknowledge
 * several with one sync (group commit), but it must answer every held batch, in the order
 * sent, when lf_output_flush() is called. The pipeline flushes whenever its queue runs dry.
 *
 * An output that gathers many batches into one delivery (s3: an object of many batches,
 * put once it is large or old enough) holds them instead: lf_output_hold() takes over a
 * batch's answer, the output keeps its own copy of what it will send, and the pipeline may
 * reuse the batch's memory; the answer comes later through lf_output_done_held(). A held
 * batch is never sent again by the pipeline: the output retries by itself. When the
 * pipeline drains (the end of --once, a stop) or the output is replaced by a reload, the
 * lane calls the output's drain: deliver what is held now. */
#ifndef LF_OUTPUT_H
#define LF_OUTPUT_H

#include <stdbool.h>
#include <stdint.h>

#include "logferry/batch.h"
#include "logferry/config.h"
#include "logferry/err.h"

struct lf_output;

/* Called once per batch sent, on the thread that called lf_output_done(). With res LF_OK,
 * n_dead of b's events were not delivered but written to the dead letters (deadletter.h):
 * they count as acknowledged. */
typedef void lf_output_done_fn(
    void *arg, struct lf_output *out, struct lf_batch *b, enum lf_err res, size_t n_dead);

struct lf_output_ops {
    const char *name; /* the YAML `type:` value */
    enum lf_err (*open)(struct lf_output *out, struct lf_errbuf *eb);
    enum lf_err (*send)(struct lf_output *out, struct lf_batch *b); /* ends in lf_output_done() */
    enum lf_err (*flush)(struct lf_output *out, struct lf_errbuf *eb); /* optional */
    bool (*needs_messages)(const struct lf_output *out); /* optional; default false */
    /* Optional: computes the form send will use (encoding, compression) ahead of time. Any
     * thread; runs for one batch while send runs for another, so it may touch only b. */
    enum lf_err (*prepare)(const struct lf_output *out, struct lf_batch *b);
    void (*close)(struct lf_output *out);
    /* Optional: reports every problem of conf that open would meet, opening nothing (a
     * URL's scheme, a file that is not there, options the library refuses). Any thread;
     * the type's library is loaded. */
    void (*check)(const struct lf_output_conf *conf, struct lf_config_report *rep);
    /* Optional, for outputs that hold batches (lf_output_hold()): give_up false: start
     * delivering every held batch now, without waiting for its gathering to end (the
     * pipeline drains, the lane retires); give_up true: the pipeline is aborting (a stop's
     * shutdown_timeout), stop retrying and answer every held batch not delivered with an
     * error as soon as what is on the wire has ended. Lane thread; must not block on the
     * peer. */
    void (*drain)(struct lf_output *out, bool give_up);
};

struct lf_output_stats {
    uint64_t events_acked;
    uint64_t batches_acked;
    uint64_t bytes_written; /* bytes handed to the OS or the peer, after compression */
    uint64_t errors;
    uint64_t events_dead; /* events written to the dead letters (lf_output_done_dead()) */
    uint64_t events_rejected; /* events the peer said it refused without naming them
                                 (lf_output_done_rejected()) */
};

/* What an answer carries beyond its result, for the done callback (lf_output_answer()). */
struct lf_output_answer {
    uint64_t retry_after_ms; /* LF_EAGAIN: the least delay the peer asked for; 0: none */
    size_t n_rejected;       /* LF_OK: events refused by the peer and not kept */
};

/* Returns a new output for conf in *out (not yet opened); free with lf_output_free().
 * LF_ECONFIG (eb says why) for a type not built yet. done/arg receive every batch's fate.
 * conf is borrowed: it must outlive the output. */
LF_MUST_CHECK enum lf_err lf_output_new(const struct lf_output_conf *conf,
                                        lf_output_done_fn *done,
                                        void *arg,
                                        struct lf_output **out,
                                        struct lf_errbuf *eb);

/* Once, at the start of the process and before any thread: prepares the environment the
 * libraries the outputs load read when they are loaded (lf_netlib_preinit()). */
void lf_output_preinit(void);

/* Loads the shared library conf's type needs (libcurl, librdkafka, or libssl for syslog over
 * TLS): lf_output_open() does so before the type's open, and --test-config calls it to find
 * a missing one before the start.
 * LF_OK at once for the types that need none; LF_EIO with eb filled ("output bus: cannot
 * load librdkafka.so.1, needed by the kafka output: ...") when it cannot be loaded. */
LF_MUST_CHECK enum lf_err lf_output_load_library(const struct lf_output_conf *conf,
                                                 struct lf_errbuf *eb);

/* Reports every problem of conf that lf_output_open() would meet, each with
 * lf_config_report(): the type's own check, once its library is loaded (a library that
 * cannot be loaded is not reported here: lf_output_load_library() says why). The config
 * loader runs it on every output (struct lf_config_checks), so --test-config, the start
 * and a reload refuse the same things. Any thread. */
void lf_output_check(const struct lf_output_conf *conf, struct lf_config_report *rep);

/* Opens files or connections. LF_ECONFIG (lf_output_check()'s first problem) or LF_EIO with
 * eb filled on failure. */
LF_MUST_CHECK enum lf_err lf_output_open(struct lf_output *out, struct lf_errbuf *eb);

/* Hands b to the output; b stays the caller's, and must not change until done is called. */
LF_MUST_CHECK enum lf_err lf_output_send(struct lf_output *out, struct lf_batch *b);

/* Makes everything sent so far durable (fsync for files) and answers every batch the output
 * still holds; a no-op where not supported. */
LF_MUST_CHECK enum lf_err lf_output_flush(struct lf_output *out, struct lf_errbuf *eb);

/* True if the output reads events' messages (lf_batch_event()), not only the batch's NDJSON
 * or zstd forms: its batches must then keep their events (LF_BATCH_KEEP_EVENTS). */
bool lf_output_needs_messages(const struct lf_output *out);

/* Computes ahead of send the form of b the output sends (say, its zstd frame, cached in
 * b), so that a pipeline can prepare several batches on several threads while sending in
 * order on one. Any thread; b must not be in use elsewhere. A failure here is reported by
 * send, which computes the form again. */
LF_MUST_CHECK enum lf_err lf_output_prepare(const struct lf_output *out, struct lf_batch *b);

/* Closes and frees. lf_output_free(NULL) is a no-op. */
void lf_output_free(struct lf_output *out);

/* For output implementations: reports b's fate to the owner. */
void lf_output_done(struct lf_output *out, struct lf_batch *b, enum lf_err res);

/* For implementations: answers b as done (LF_OK) where n_dead of its events were refused by
 * the peer for good and are durably in the output's dead letters (lf_deadletter_write()). */
void lf_output_done_dead(struct lf_output *out, struct lf_batch *b, size_t n_dead);

/* For implementations: answers b LF_EAGAIN, the retry to come no sooner than min_ms after
 * (an HTTP Retry-After). Only for outputs that answer on one thread at a time. */
void lf_output_done_later(struct lf_output *out, struct lf_batch *b, uint64_t min_ms);

/* For implementations: answers b as delivered (LF_OK) where the peer said n_rejected of its
 * events were refused for good without saying which (OTLP's partial success): nothing can
 * keep them, so they are answered with the batch, counted in events_rejected rather than
 * events_acked. Only for outputs that answer on one thread at a time. */
void lf_output_done_rejected(struct lf_output *out, struct lf_batch *b, size_t n_rejected);

/* In the done callback: what the answer being made carries beyond its result. */
const struct lf_output_answer *lf_output_answer(const struct lf_output *out);

/* A held batch's answer, owed by the output (lf_output_hold()); the output keeps it (in its
 * own per-batch record) until lf_output_done_held(). */
struct lf_held {
    size_t events; /* the batch's events that are sent (not dropped), for counts */
    void *token;   /* the owner's */
};

/* The owner's side of holding (the pipeline's lanes): hold is called by lf_output_hold()
 * and returns the token; done_held by lf_output_done_held(). Without them (an output made
 * outside a pipeline), a held batch is answered through the done callback. */
typedef void *lf_output_hold_fn(void *arg, struct lf_output *out, struct lf_batch *b);
typedef void lf_output_done_held_fn(void *arg, struct lf_output *out, void *token,
                                    enum lf_err res);
void lf_output_set_holder(struct lf_output *out, lf_output_hold_fn *hold,
                          lf_output_done_held_fn *done_held);

/* For implementations that gather batches: takes over b's answer into *h. From then on the
 * output must not touch b (copy what it sends first) and answers h exactly once with
 * lf_output_done_held(). Call it from send, instead of answering b. Cannot fail. */
void lf_output_hold(struct lf_output *out, struct lf_batch *b, struct lf_held *h);

/* Answers a held batch: LF_OK (delivered and durable) or an error (given up on: the events
 * are read again at the next start; never LF_EAGAIN, a held batch is not sent again by the
 * pipeline). Any thread, one at a time per output. */
void lf_output_done_held(struct lf_output *out, struct lf_held *h, enum lf_err res);

/* Calls the output's drain (ops->drain), if it has one. The lane's thread. */
void lf_output_drain(struct lf_output *out, bool give_up);

/* For implementations: the config and a slot for private state. */
const struct lf_output_conf *lf_output_conf(const struct lf_output *out);
void *lf_output_ctx(const struct lf_output *out);
void lf_output_set_ctx(struct lf_output *out, void *ctx);
struct lf_output_stats *lf_output_stats(struct lf_output *out);

#endif
