/* tail.h - the reading engine: finds, follows and rotates files, and persists offsets;
 * the daemon's (following until stopped) and the backfill's (--once: every file read to its
 * end, then the end).
 *
 * One tail thread owns every harvester (open file, reader, offsets) and the registry, and
 * is the pipeline's own producer; when several files have a backlog it lends them to
 * reader threads (a producer each) for the reading part of a turn. Other threads only
 * talk to it: lf_tail_notify() when a watcher saw a file change, lf_tail_rescan(),
 * lf_tail_stop(). It reads the files that
 * changed, rescans the globs every scan_interval, checks open files for growth, truncation
 * and deletion every second, cuts batches every queue.batch.flush_interval, and writes the
 * acknowledged offsets to the registry every registry.flush_interval and at the end.
 * --preview reads one file through the same harvester with lf_tail_read_file(), on the
 * calling thread, with no pipeline and no registry. */
#ifndef LF_TAIL_H
#define LF_TAIL_H

#include <stdint.h>

#include "logferry/config.h"
#include "logferry/err.h"
#include "logferry/pipeline.h"
#include "logferry/registry.h"
#include "logferry/stage.h"

struct lf_tail;

/* What the tail thread tells its owner, on the tail thread. */
struct lf_tail_hooks {
    /* After each scan: the directories holding the files followed, plus the globs' fixed
     * directories, so the owner can watch them. dirs is borrowed: valid during the call. */
    void (*on_dirs)(void *arg, char *const *dirs, size_t n);
    /* Once, as the thread ends (stopped, or the pipeline failed for good). */
    void (*on_end)(void *arg);
    /* After lf_tail_reload(): LF_OK, the new config runs; else the old one still does (eb:
     * why, borrowed during the call). */
    void (*on_reloaded)(void *arg, enum lf_err err, const struct lf_errbuf *eb);
    /* The tail thread read what lf_tail_stdin_ready() announced: tell it again when fd 0
     * is readable. Not called once stdin ended. */
    void (*on_stdin_wait)(void *arg);
    /* LF_TAIL_ONCE: after the scan, how many files it found and their bytes in all. */
    void (*on_planned)(void *arg, size_t files, uint64_t bytes);
    /* LF_TAIL_ONCE: n more bytes of the files done (read, or skipped: where a file resumes,
     * a file that cannot be read). On whichever thread reads, at once: lock as needed. */
    void (*on_progress)(void *arg, uint64_t n);
    /* The journals' descriptors changed (one opened or closed): the owner polls these
     * instead of the ones it had, and calls lf_tail_journal_ready() when one is readable.
     * fds (n of them) are duplicates the owner now owns and must close; the array is
     * borrowed during the call. Not called in LF_TAIL_ONCE. */
    void (*on_journal_fds)(void *arg, const int *fds, size_t n);
    /* The journals were read after lf_tail_journal_ready(): poll their descriptors again. */
    void (*on_journal_wait)(void *arg);
    void *arg;
};

/* How the engine runs. */
enum lf_tail_mode {
    /* The daemon: rescans the globs, follows files as they grow, rotate and go, until
     * lf_tail_stop(). */
    LF_TAIL_FOLLOW = 0,
    /* The backfill (--once): one scan; every file read to its end (the unterminated last
     * line included) and closed, start_at ignored; then stdin to its end; then it stops as
     * lf_tail_stop() does. With 64 MiB or more in two files or more, read phases use every
     * CPU (at most 8 threads); else the tail thread reads the files one after the other, in
     * path order. */
    LF_TAIL_ONCE,
};

struct lf_tail_stats {
    uint64_t files_open;     /* harvesters holding an fd */
    uint64_t files_known;    /* harvesters, open or not */
    uint64_t journals;       /* journald inputs read */
    uint64_t files_removed_open; /* deleted files still held open with unread data */
    uint64_t events;         /* events emitted */
    uint64_t bytes;          /* source bytes read */
    uint64_t rotations;      /* renames and inode changes followed */
    uint64_t truncations;    /* copytruncate and other shrinks */
    uint64_t registry_flushes;
    uint64_t registry_entries; /* files the registry holds, at its last flush */
    uint64_t bytes_given_up; /* unread bytes of deleted files given up (close_removed_after) */
    uint64_t files_unreadable; /* files that could not be opened or read (warned) */
    uint64_t filtered;       /* of events, those dropped (include/exclude_lines, skip_empty,
                                throttle, sample) */
    uint64_t throttled;      /* of filtered, those over a throttle's rate */
    uint64_t sampled_out;    /* of filtered, those a sample stage left out */
    uint64_t truncated;      /* lines cut at max_line_bytes */
    uint64_t skipped_long;   /* lines over max_line_bytes dropped (line_overflow: skip) */
    uint64_t invalid_bytes;  /* encoding errors replaced by U+FFFD */
};

/* Per input, for the metrics. */
struct lf_tail_input_stats {
    uint64_t events;        /* events read (lines, after stages; dropped ones excluded) */
    uint64_t bytes;         /* source bytes read */
    uint64_t filtered;      /* events dropped by a stage (include/exclude_lines, throttle,
                               sample, ...) or skip_empty_lines */
    uint64_t throttled;     /* of filtered, those over a throttle's rate */
    uint64_t sampled_out;   /* of filtered, those a sample stage left out */
    uint64_t truncated;     /* lines cut (or dropped) at max_line_bytes */
    uint64_t invalid_bytes; /* encoding errors replaced by U+FFFD */
    uint64_t files_open;    /* files this input holds open */
    uint64_t lag_bytes;     /* bytes in its files not read yet, as of the last poll and scan
                               (refreshed every registry.flush_interval while it reads) */
    uint64_t cursors_lost;  /* journald: saved positions no longer in the journal */
};

/* Returns a new engine in *out for cfg, running each input's stages from specs (one per
 * input), feeding p and persisting into reg (all borrowed, hooks too: they must outlive
 * it), in mode; free with lf_tail_free(). LF_ECONFIG if an exclude regex fails. */
LF_MUST_CHECK enum lf_err lf_tail_new(const struct lf_config *cfg,
                                      struct lf_chain_spec *const *specs, struct lf_pipeline *p,
                                      struct lf_registry *reg, const struct lf_tail_hooks *hooks,
                                      enum lf_tail_mode mode, struct lf_tail **out,
                                      struct lf_errbuf *eb);

/* One file of an input, as of the tail thread's last poll (for /status). */
struct lf_tail_file {
    size_t input_idx;
    char *path;     /* a journald input: the cursor of its last acknowledged entry, or "" */
    uint64_t size;  /* at the last poll or scan (0 for a journal) */
    uint64_t read;  /* offset read up to */
    uint64_t acked; /* offset every output acknowledged (a journal: entries acknowledged) */
    bool journal;
};

/* Calls fn for each file of input id, with the engine's lock held: fn must be short and
 * must not call into t; f is valid during the call only. Any thread. */
void lf_tail_files(struct lf_tail *t, const char *id,
                   void (*fn)(void *arg, const struct lf_tail_file *f), void *arg);

/* Starts the tail thread. LF_EIO if it cannot. */
LF_MUST_CHECK enum lf_err lf_tail_start(struct lf_tail *t, struct lf_errbuf *eb);

/* What a watcher saw happen to a path. */
enum lf_change {
    LF_CHANGE_DATA = 0, /* written to */
    LF_CHANGE_NAME,     /* created, renamed or deleted: the globs need a rescan */
};

/* A watcher saw path change. Any thread. */
void lf_tail_notify(struct lf_tail *t, const char *path, enum lf_change change);

/* A journal descriptor the owner polls (hooks->on_journal_fds) is readable: the journals
 * are read at the next turn, then hooks->on_journal_wait asks for more. Any thread. */
void lf_tail_journal_ready(struct lf_tail *t);

/* fd 0 is readable (or at its end): the stdin input reads one chunk of it at the next turn,
 * then asks for more through hooks->on_stdin_wait. Any thread. */
void lf_tail_stdin_ready(struct lf_tail *t);

/* Whether watchers now cover every directory the tail thread last reported (a watch that
 * could not start, or failed, makes it false). While true, open files that stay unchanged
 * are polled less and less often, down to once every 10 s; while false, every second.
 * Starts false. Any thread. */
void lf_tail_set_watched(struct lf_tail *t, bool watched);

/* Asks for a glob rescan now. Any thread. */
void lf_tail_rescan(struct lf_tail *t);

/* Asks the thread to stop reading, deliver what it read, persist the registry and end.
 * Any thread. lf_tail_join() waits for it. */
void lf_tail_stop(struct lf_tail *t);

/* Waits for the tail thread to end. Returns its result: LF_OK, or LF_EIO if something
 * read could not be delivered (the registry then holds only acknowledged offsets; eb says
 * why) or, in LF_TAIL_ONCE, the registry could not be written at the end. */
LF_MUST_CHECK enum lf_err lf_tail_join(struct lf_tail *t, struct lf_errbuf *eb);

/* A snapshot of the counters. Any thread. */
void lf_tail_stats(struct lf_tail *t, struct lf_tail_stats *out);

/* A snapshot of the counters of the input with id id (zeros if there is none). They carry
 * over a reload that keeps or changes the input. Any thread. */
void lf_tail_input_stats(struct lf_tail *t, const char *id, struct lf_tail_input_stats *out);

/* Asks the tail thread to switch to cfg, running each input's stages from specs (one per
 * input of cfg; cfg and specs borrowed: they must stay valid until the next reload that
 * succeeds, or lf_tail_free()). Inputs are matched by id: one whose settings are the same
 * (lf_config_input_same()) keeps its harvesters, offsets and held events and must get the
 * very spec it ran with; a changed one keeps its files and offsets and reads on with the new
 * stages (what the old ones held is read again); a removed one closes its files; new ones
 * start as at start-up. Outputs are reconfigured (lf_pipeline_reconfigure()). Nothing
 * waits for an output: a read held up by a full queue stops at its next line, and the
 * reload is applied between two turns; hooks->on_reloaded says how it went. Any thread;
 * one reload at a time. */
void lf_tail_reload(struct lf_tail *t, const struct lf_config *cfg,
                    struct lf_chain_spec *const *specs);

/* --preview: reads the file at path with input input_idx of cfg (its reader and the stages of
 * specs[input_idx]; specs holds one per input) to its end, the unterminated last line
 * included, through the engine's harvester on the calling thread, handing each event to
 * sink (borrowed during the call; a non-zero return ends the read and is returned). No
 * pipeline, no registry, no thread. path must be a regular file (allowed_roots do not apply:
 * a person named it). LF_EREJECTED: it is not ("refusing PATH: why" in eb); LF_EIO: it
 * cannot be opened ("cannot open PATH: why") or read. Main thread. */
LF_MUST_CHECK enum lf_err lf_tail_read_file(const struct lf_config *cfg,
                                            struct lf_chain_spec *const *specs, size_t input_idx,
                                            const char *path, const struct lf_stage_out *sink,
                                            struct lf_errbuf *eb);

/* --preview of a journald input: every entry of the journal at path (a journal file or a
 * directory; NULL: the input's own journal) from the oldest, through the input's stages,
 * to sink, on the calling thread. LF_EIO: it cannot be opened ("cannot open X: why"). */
LF_MUST_CHECK enum lf_err lf_tail_read_journal(const struct lf_config *cfg,
                                               struct lf_chain_spec *const *specs,
                                               size_t input_idx, const char *path,
                                               const struct lf_stage_out *sink,
                                               struct lf_errbuf *eb);

struct lf_line;

/* The event a complete line becomes: its text (borrowed: valid while the line is), the time
 * it was read, its offsets, the truncated flag, from src. Any thread. */
struct lf_event lf_tail_line_event(const struct lf_line *line, int64_t now_ns,
                                   struct lf_source *src);

/* Frees the engine (after lf_tail_join(), or if it was never started). */
void lf_tail_free(struct lf_tail *t);

#endif
