/* tail_int.h - the tail engine's private parts, shared by the files of src/input that make
 * it (tail.c, tail_registry.c, tail_reload.c, scan.c, harvester.c, readers.c) only. */
#ifndef LF_TAIL_INT_H
#define LF_TAIL_INT_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>
#include <uv.h>

#include "logferry/discover.h"
#include "logferry/event.h"
#include "logferry/identity.h"
#include "logferry/pipeline.h"
#include "logferry/reader.h"
#include "logferry/stage.h"
#include "logferry/tail.h"

#define LF_TAIL_POLL_MS 1000      /* fstat of open files, for missed or absent events */
#define LF_TAIL_POLL_MAX_MS 10000 /* the longest poll period of an unchanged, watched file */
#define LF_TAIL_WARN_MS 60000 /* a repeated warning about one file, at most this often */
#define LF_TAIL_KUBE_RETRY_MS 100 /* a file waiting for its pod's metadata looks again */
#define LF_TAIL_COPY_WAIT_MS 1000 /* how long a new file named like a copy may be left
                                     unopened while it is under 1 KiB (being written) */
/* Read per file per turn before others get a go. */
#define LF_TAIL_TURN_BYTES (4u << 20)
/* A backfill (once mode) smaller than this in all is read by the tail thread alone, file
 * after file: it would gain little, and its output keeps the files' order. */
#define LF_TAIL_ONCE_SPREAD_BYTES (64u << 20)
/* Reading threads of a read phase, at most. */
#define LF_TAIL_MAX_READERS 8
/* Unread bytes, in two files or more, that make a turn worth a read phase. */
#define LF_TAIL_SPREAD_BYTES (512u << 10)
/* A read phase ends at the end of the first chunk after this; answers, the registry and
 * the inbox wait for it. */
#define LF_TAIL_PHASE_MS 250

/* One followed file of one input. Lives from discovery until the file is gone and every
 * event read from it is acknowledged; holds an fd only while there is reading to do. */
struct harv {
    struct lf_tail *tail;    /* borrowed: the engine, for the chain's sink */
    size_t input_idx;
    char *path;              /* owned; the path it was last seen under */
    struct lf_file_id id;    /* device, inode, fingerprint */
    uint64_t found_dev;      /* device and inode the last scan saw at path, before opening */
    uint64_t found_ino;
    int fd;                  /* -1 while closed */
    uint64_t read_pos;       /* source offset of the next byte read(2) returns */
    uint64_t size;           /* the file's size at the last poll or scan */
    struct lf_reader *reader; /* owned; NULL while idle with no partial line buffered */
    struct lf_reader_stats counted; /* of the reader's counters, those already added to the
                                       input's stats */
    struct lf_source *src;   /* owned; events read now carry it (owner: this harvester) */
    struct lf_chain *chain;  /* owned; the input's stages, state for this file */
    struct lf_stage_out sink; /* where the chain's events go: the pipeline */
    struct lf_producer *pr;   /* borrowed; set during a read phase only: the producer of the
                                 reader thread it is read on. NULL: the pipeline's own (the
                                 tail thread) */
    struct lf_producer *last_pr; /* borrowed; where its last event went. Its batches there
                                    are cut before it pushes anywhere else (per-file order) */
    uint64_t pend_events;        /* counted during a read phase, added to the stats after it */
    uint64_t pend_filtered;
    uint64_t pend_throttled;   /* of pend_filtered, over a throttle's rate */
    uint64_t pend_sampled_out; /* of pend_filtered, left out by a sample stage */
    uint64_t emitted_end;    /* end offset of the last event handed to the pipeline */
    uint64_t acked;          /* highest end offset acknowledged of the current content */
    uint64_t pinned;         /* lowest offset of the current content given up on; UINT64_MAX:
                                none. The registry never passes it */
    uint64_t inflight;       /* events of any of its sources not answered yet: the harvester
                                and those sources live until this is 0 */
    uint32_t gen;            /* content generation: a truncation or replaced content starts
                                a new one, whose offsets answers of older events cannot move */
    uint64_t stream_id;      /* the generation's stream id (identity.h), carried by src */
    bool stream_unsaved;     /* stream_id is not in the registry file yet: no event of it may
                                be read before lf_tail__save_streams() */
    bool stream_fp_empty;    /* its registry entry has an empty fingerprint (saved while the
                                file was empty), which a restart would match with any content:
                                saved again, with the content's, before it is read */
    uint64_t closed_size;    /* read_pos when it was last closed: a closed file that differs
                                from this in size is reopened */
    uint64_t registered;     /* offset last written to the registry */
    struct lf_file_id prev_id; /* identity before the last truncation (fp_len 0: none) */
    uint64_t prev_end;       /* how far its old content had been read then */
    int64_t mtime_ms;        /* modification time at the last scan or poll */
    int64_t found_ms;        /* when the scan first found it (monotonic) */
    int64_t defer_ms;        /* not opened before this (a copy still being written) */
    int64_t active_ms;       /* when data was last read (or the file opened) */
    int64_t removed_warned_ms; /* when the held-open-deleted warning was last logged */
    int64_t deleted_ms;      /* when the deletion was noticed */
    int64_t next_poll_ms;    /* the periodic fstat is due (open files only) */
    uint32_t poll_every_ms;  /* its period: 1 s, doubled while the file stays unchanged
                                and watchers cover it, up to LF_TAIL_POLL_MAX_MS */
    struct timespec seen_mtim; /* what fstat showed when the fingerprint was last checked */
    struct timespec seen_ctim;
    uint64_t seen_size;
    bool dirty;              /* may have data to read */
    bool recheck;            /* a watcher reported a change: check size and fingerprint
                                before reading (truncation with quick regrowth) */
    bool seen;               /* found by the scan in progress */
    bool gone;               /* its path leads elsewhere now (renamed away, replaced) */
    bool deleted;            /* unlinked (st_nlink == 0): read to EOF, then forget */
    bool waiting;            /* wants an fd, but max_open_files are open */
    bool identified;         /* id was read from the file (it has been opened) */
    bool initial;            /* found by the first scan: start_at applies to it */
    bool refused;            /* outside allowed_roots or not a regular file (warned once) */
    struct tail_journal *journal; /* owned; a journald input's journal (journal.c), whose
                                     entries are numbered as offsets; NULL for files, stdin */
};

/* A source replaced (rename, truncation, inode reuse) while events of it are in flight. */
struct retired {
    struct lf_source *src; /* owned; freed once its inflight is 0 */
};

/* One thread of read phases. */
struct tail_reader {
    struct lf_tail *t;
    struct lf_producer *pr; /* owned */
    struct harv **jobs;     /* owned array of borrowed harvesters: this phase's, in order */
    size_t n_jobs;
    size_t cap_jobs;
    uint64_t phase_seen; /* the last phase it ran */
    enum lf_err err;     /* LF_EIO: the pipeline failed for good */
    bool started;
    uv_thread_t thread;
};

struct lf_tail {
    const struct lf_config *cfg;   /* borrowed */
    struct lf_pipeline *pipeline;  /* borrowed */
    struct lf_registry *reg;       /* borrowed */
    struct lf_discover **disc;     /* owned; per input (NULL for stdin) */
    bool *fresh;                   /* owned; per input: not scanned yet, so start_at applies
                                      to the files it finds (set at start and for inputs a
                                      reload adds) */
    struct lf_chain_spec *const *specs; /* borrowed; per input */
    const struct lf_tail_hooks *hooks; /* borrowed */
    char **dirs;     /* owned; the directory list last reported, sorted */
    size_t n_dirs;
    char host[256];

    struct harv **h; /* owned; sorted by path, then input */
    size_t n_h;
    size_t cap_h;
    size_t n_open;   /* harvesters holding an fd */
    struct harv *in_stdin;   /* owned; the stdin input's reading state, not in h[] (NULL:
                                no stdin input); kept after the end for its answers */
    bool stdin_ended;        /* stdin reached its end: nothing more to read */
    struct harv **jh;        /* owned; one per journald input that reads, outside h[] */
    size_t n_jh;
    size_t cap_jh;
    bool journal_fds_changed; /* a journal was opened or closed: tell the owner */
    int64_t next_journal_ms; /* the journals' periodic check (new files, missed wake-ups) */
    bool *skipped;           /* owned; per input: skip_if_exists found a path (reads nothing) */
    bool *hinted;            /* owned; per input: "this host logs to the journal" said */
    int64_t started_ms;      /* when the engine was made (monotonic) */
    struct retired *retired; /* owned */
    size_t n_retired;
    size_t cap_retired;
    struct harv **departed;  /* owned; harvesters of inputs a reload removed, closed, kept
                                (outside h[]) until their events in flight are answered */
    size_t n_departed;
    size_t cap_departed;

    uv_mutex_t mu;   /* guards the inbox and stats below */
    uv_cond_t cond;
    char **notes;    /* owned; paths notified since the last turn */
    size_t n_notes;
    size_t cap_notes;
    bool want_scan;
    bool want_stop;
    bool stdin_ready;        /* fd 0 is readable (the owner polled it) */
    bool journal_ready;      /* a journal's descriptor is readable (the owner polled it) */
    const struct lf_config *reload_cfg;        /* a reload asked for, or NULL */
    struct lf_chain_spec *const *reload_specs;
    struct lf_tail_stats stats;
    struct lf_tail_input_stats *in_stats; /* owned; per input, guarded by mu */
    struct lf_tail_file *files; /* owned; the snapshot of tail_files.c, guarded by mu */
    size_t n_files, cap_files;

    bool uncut; /* events were pushed since the last timed cut (tail thread only) */
    bool streams_unsaved; /* some harvester may have stream_unsaved set */
    int64_t next_scan_ms;
    int64_t next_poll_ms;
    int64_t next_cut_ms;
    int64_t next_registry_ms;
    int64_t next_tick_ms; /* earliest deadline of a held (multiline) event */
    int64_t next_open_ms; /* a deferred file (kubernetes.wait) is looked at again */
    bool want_open;       /* closed files want reading: open what max_open_files allows */
    bool busy;            /* the last turn left an open file with data unread */
    struct harv *reading; /* the harvester lf_tail__harv_read() is in, or NULL */
    bool fd_starved;      /* the last open failed with EMFILE/ENFILE: give descriptors back */
    bool watched;         /* every directory the last scan reported is watched (guarded by
                             mu): unchanged open files are polled less often */

    /* Read phases (readers.c): while two or more files have a backlog, each reader thread
     * reads some of them through a producer of its own, and the tail thread waits for all
     * before it goes on; between phases every harvester is the tail thread's again. */
    struct tail_reader *readers; /* owned; n_readers, made at the first phase */
    size_t n_readers;
    size_t max_readers;    /* CPUs usable, at most LF_TAIL_MAX_READERS; 1: never spread */
    bool spread_failed;    /* readers could not be started: the tail thread reads alone */
    struct harv **dirty_h; /* owned; the harvesters a turn reads */
    size_t cap_dirty;
    uv_mutex_t pmu;  /* guards the phase fields below */
    uv_cond_t pgo;   /* a phase began, or the readers must end */
    uv_cond_t pdone; /* a reader finished its part */
    uint64_t phase;
    size_t phase_pending; /* reader threads still reading */
    bool in_phase;        /* once mode: the tail thread reads its share of a phase (reader 0,
                             pr NULL); tail thread only */
    bool phase_quit;
    int64_t phase_deadline_ms;

    bool once;            /* LF_TAIL_ONCE: read everything once, then end */
    struct lf_stage_out sink; /* where events go without a pipeline (lf_tail_read_file()) */
    bool first_scan;      /* no scan ran yet: start_at applies to what the next one finds */
    enum lf_err result;
    struct lf_errbuf why; /* why result is not LF_OK */
    bool started;
    uv_thread_t thread;
};

/* What a file may read in one go: a fair share while following (LF_TAIL_TURN_BYTES), all
 * of it in once mode (a read phase still ends at its deadline). */
static inline size_t lf_tail__budget(const struct lf_tail *t)
{
    return t->once ? SIZE_MAX / 2 : LF_TAIL_TURN_BYTES;
}

/* Once mode: n more bytes done, for the progress line. Any reading thread. */
static inline void lf_tail__progress(struct lf_tail *t, uint64_t n)
{
    if (t->once && n > 0 && t->hooks != NULL && t->hooks->on_progress != NULL)
        t->hooks->on_progress(t->hooks->arg, n);
}

/* scan.c */
/* Index of the first harvester not below (path, input_idx) in the sorted array. */
size_t lf_tail__lower_bound(const struct lf_tail *t, const char *path, size_t input_idx);
/* Runs every input's globs: new harvesters, renames, files gone; opens what may be. */
enum lf_err lf_tail__scan(struct lf_tail *t, bool first_scan, int64_t now_ms);
/* Opens closed harvesters that have data, oldest data first, within max_open_files. */
void lf_tail__open_pending(struct lf_tail *t, int64_t now_ms);
/* Sorts the harvesters by path, then input. */
void lf_tail__resort(struct lf_tail *t);
/* Drops harvester i (its events all acknowledged, its file gone). */
void lf_tail__forget(struct lf_tail *t, size_t i);
void lf_tail__free_dirs(char **dirs, size_t n);

/* harvester.c */
int64_t lf_tail__now_ms(void);
/* The one way a log file is opened: read-only and O_NONBLOCK (a FIFO cannot hang the open);
 * then what was actually opened is checked: inside in's allowed_roots and a regular file (in
 * NULL: a path a person named, which need only be a regular file), fstat'ed into *st and
 * identified into *id. LF_OK: *fd is open (the caller's). LF_EREJECTED: refused (eb: why);
 * else it cannot be opened (*open_errno: errno, EMFILE/ENFILE out of descriptors) or read
 * (eb: why). Any thread. */
enum lf_err lf_tail__open(const struct lf_input_conf *in, const char *path, int *fd,
                          struct stat *st, struct lf_file_id *id, int *open_errno,
                          struct lf_errbuf *eb);
/* A harvester of input input_idx for path (NULL: stdin, whose events carry no path). */
struct harv *lf_tail__harv_new(struct lf_tail *t, size_t input_idx, const char *path);
void lf_tail__harv_free(struct lf_tail *t, struct harv *h);
/* Starts following h from offset on the already open fd (fstat'ed as st); the caller
 * decides what is acknowledged. */
enum lf_err lf_tail__harv_start(struct lf_tail *t, struct harv *h, int fd, const struct stat *st,
                                uint64_t offset);
/* Reads what h has, up to budget bytes. Returns LF_EIO only when the pipeline failed. */
enum lf_err lf_tail__harv_read(struct lf_tail *t, struct harv *h, size_t budget);
/* Tells whether the file h follows, open as fd and now size bytes, holds other content than
 * what h read up to pos: shorter than pos, or no longer starting with h's fingerprint. */
bool lf_tail__harv_replaced(struct lf_tail *t, struct harv *h, int fd, uint64_t size,
                            uint64_t pos);
/* Records that h's content was replaced (counted as a truncation; its old identity kept
 * for copytruncate copies; the registry told). The caller restarts reading at 0. */
void lf_tail__harv_restart(struct lf_tail *t, struct harv *h);
/* Reads h's fingerprint again when it is shorter than 1 KiB and more was read since: a
 * longer fingerprint, as the file grew. */
void lf_tail__harv_grow_id(struct harv *h);
/* Checks an open h with fstat and its fingerprint: growth (dirty), truncation or replaced
 * content (restart at 0), deletion. */
void lf_tail__harv_poll(struct lf_tail *t, struct harv *h);
/* The periodic poll of an open h: lf_tail__harv_poll(), at a period that doubles (up to
 * LF_TAIL_POLL_MAX_MS) while the file stays unchanged and watched is true, and falls back to
 * LF_TAIL_POLL_MS when it changes. */
void lf_tail__harv_poll_due(struct lf_tail *t, struct harv *h, int64_t now_ms, bool watched);
void lf_tail__harv_close(struct lf_tail *t, struct harv *h);
/* Adds what h's reader counted since the last call to the input's stats, then frees the
 * reader. */
void lf_tail__harv_drop_reader(struct lf_tail *t, struct harv *h);
/* Emits what h's stages hold (a pending multiline event). Returns LF_EIO only when the
 * pipeline failed. */
enum lf_err lf_tail__harv_flush(struct lf_tail *t, struct harv *h);
/* Replaces h's source. After a rename (new_content false) only the path rendered in events
 * changes: answers for the old source still move h's offsets. After a truncation or
 * replaced content (new_content true) h starts a new generation acknowledged up to acked,
 * and answers for older events only release their source. */
enum lf_err lf_tail__harv_new_source(struct lf_tail *t, struct harv *h, uint64_t acked,
                                     bool new_content);
/* Moves h to input input_idx of t->cfg (a reload changed its input's settings): new stages
 * and source from t->specs and t->cfg; what the old stages held, and a partial line, are read
 * again from where the last event went out. Events in flight still move its offsets.
 * LF_ENOMEM: h is closed (reopened where it was by the next scan). */
enum lf_err lf_tail__harv_rebind(struct lf_tail *t, struct harv *h, size_t input_idx);
/* Where the registry may resume h: acknowledged, never past a line given up on. */
uint64_t lf_tail__harv_acked(const struct harv *h);
/* Reads one chunk of stdin from fd (poll said it is readable, or it is a regular file) into
 * h (a harvester outside t->h, fd -1) and emits its complete lines. LF_EOF at its end, after
 * the unterminated last line and what the stages hold went out; LF_EIO only when the
 * pipeline failed. */
enum lf_err lf_tail__stdin_read(struct lf_tail *t, struct harv *h, int fd);
/* Applies one answer of the pipeline to the harvester that owns its source (tail thread). */
void lf_tail__harv_answer(void *arg, const struct lf_ack *ack);
/* lf_tail__harv_read() on a reader of a read phase (h->pr set): stops at the end of the
 * first chunk read after deadline_ms, and touches nothing outside h but the input's stats
 * (under t->mu) and t->n_open (atomically). */
enum lf_err
lf_tail__harv_read_phase(struct lf_tail *t, struct harv *h, size_t budget, int64_t deadline_ms);
/* Counts h's file as unreadable (it was warned about); in once mode it is done with. Any
 * thread that owns h. */
void lf_tail__harv_unreadable(struct lf_tail *t, struct harv *h);
/* Adds the events h counted during a read phase to the stats. Tail thread. */
void lf_tail__harv_settle(struct lf_tail *t, struct harv *h);

/* Gives h a new stream id, to be saved before its first event is read. */
void lf_tail__harv_new_stream(struct harv *h);

/* journal.c (docs/journald.md) */
/* A harvester for journald input input_idx, its journal opened and positioned from the
 * registry (or start_at; a new stream saved before its first event), or waiting for the
 * journal to appear (tried again every scan_interval). Without a pipeline (--preview)
 * nothing is opened. NULL: out of memory. */
struct harv *lf_tail__journal_new(struct lf_tail *t, size_t input_idx);
/* Frees h's journal state (lf_tail__harv_free() calls it). */
void lf_tail__journal_free(struct harv *h);
/* The inotify descriptor of h's journal (the owner polls a duplicate of it), or -1. */
int lf_tail__journal_fd(const struct harv *h);
/* Once mode: whether h read its journal to the end (or could not open it). */
bool lf_tail__journal_done(const struct harv *h);
/* Lets h's journal see what changed (new entries, files, rotation), or tries to open it
 * again when due. */
void lf_tail__journal_poll(struct lf_tail *t, struct harv *h, int64_t now_ms);
/* Reads up to max entries of h's journal into its stages; *more: it stopped at max. LF_EIO
 * only when the pipeline failed. */
enum lf_err lf_tail__journal_read(struct lf_tail *t, struct harv *h, size_t max, bool *more);
/* Sets h's registry entry when its acknowledged position or stream changed. */
void lf_tail__journal_register(struct lf_tail *t, struct harv *h, int64_t wall_ms);
/* After a reload (t->cfg, t->specs the new ones): h reads input input_idx. changed: its
 * settings differ: what its stages hold goes out, new stages and source; other units,
 * matches, priority or journal make a new stream from the position acknowledged. */
enum lf_err lf_tail__journal_rebind(struct lf_tail *t, struct harv *h, size_t input_idx,
                                    bool changed);
/* Whether the journal holds entries: a journald input of t read some, or this host's own
 * journal has one (for the hint about globs that match nothing). */
bool lf_tail__journal_has_entries(const struct lf_tail *t);

/* tail.c */
/* skip_if_exists: whether one of in's paths exists (said once, at info). */
bool lf_tail__skip_input(const struct lf_input_conf *in);
/* A harvester for every journald input that has none and is not skipped. LF_ENOMEM. */
enum lf_err lf_tail__start_journals(struct lf_tail *t);
/* Index of the input with id id in t->cfg, or SIZE_MAX. With t->mu held or on the tail
 * thread. */
size_t lf_tail__input_by_id(const struct lf_tail *t, const char *id);
/* Frees the retired sources whose events are all answered (all: at the end). */
void lf_tail__free_retired(struct lf_tail *t, bool all);

/* tail_registry.c */
/* clean_removed at start-up: forgets the entries of files that no longer exist. */
void lf_tail__clean_registry(struct lf_tail *t);
/* Sets the registry entry of every harvester outside a read phase whose offset or stream
 * id changed, and flushes the registry. */
void lf_tail__update_registry(struct lf_tail *t);

/* tail_reload.c */
/* Applies a reload to cfg and specs between two turns; on an error the old config runs
 * on (eb says why). */
enum lf_err lf_tail__reload(struct lf_tail *t, const struct lf_config *cfg,
                            struct lf_chain_spec *const *specs, struct lf_errbuf *eb);

/* tail_registry.c, for readers.c: writes the registry entry of every identified harvester whose
 * stream id is not saved yet, and waits until the file holds them (one write for all; a
 * no-op when there is none). So a crash after events of a new stream were sent finds the
 * stream again at the restart, and the resent events name the same documents. Tail thread,
 * between phases, before reading. */
void lf_tail__save_streams(struct lf_tail *t);

/* tail.c, for readers.c: what the tail thread does every second while a read phase waits
 * for the outputs, on the harvesters outside the phase only: closes idle files (and, out of
 * descriptors, files with data), gives up deleted ones after close_removed_after, warns. */
void lf_tail__while_phase(struct lf_tail *t, int64_t now_ms);

/* readers.c */
/* Reads every open dirty harvester a fair share (after checking those a watcher reported):
 * on the tail thread, or in a read phase when two or more have bytes unread, together
 * LF_TAIL_SPREAD_BYTES or more, and the process may use more than one CPU. LF_EIO only
 * when the pipeline failed. */
enum lf_err lf_tail__read_dirty(struct lf_tail *t, int64_t now_ms);
/* Cuts the batches of every producer: the pipeline's own and the readers'. Tail thread,
 * between phases. */
enum lf_err lf_tail__cut_all(struct lf_tail *t);
/* Ends the reader threads and frees their producers, which queues what they hold; every
 * harvester's events go to the pipeline's own producer from then on. Before a drain, a
 * reconfiguration and the end. Tail thread, between phases. */
void lf_tail__readers_stop(struct lf_tail *t);

/* tail_files.c: refreshes the snapshot lf_tail_files() reads (tail thread, mu held); frees
 * it (lf_tail_free()). */
void lf_tail__publish_files_locked(struct lf_tail *t);
void lf_tail__free_files(struct lf_tail *t);

#endif
