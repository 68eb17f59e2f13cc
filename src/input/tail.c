/* tail.c - the tail thread: inbox, scans, the turn loop, registry updates (see tail.h).
 *
 *   loop thread ──notify(path) / rescan / stop──► inbox (mutex + cond)
 *                                                    │
 *   tail thread: ┌─────────────────────────────────────┘
 *                ├─ scan (every scan_interval or on demand): globs -> harvesters, rotation,
 *                │  registry lookups, opens within max_open_files, dirs to watch
 *                ├─ poll (1 s; up to 10 s for unchanged watched files): fstat of open files:
 *                │  growth, truncation, deletion
 *                ├─ read the dirty harvesters, each a fair share per turn -> pipeline
 *                │  (several with a backlog: on reader threads, readers.c)
 *                ├─ cut batches (every batch flush_interval)
 *                └─ registry (every registry.flush_interval): acknowledged offsets, close
 *                   inactive files, forget deleted ones, free retired sources
 *
 * Once mode (the backfill, LF_TAIL_ONCE) is the same thread with one scan, no polls, every
 * file read to its end and closed, then stdin, and the stop once all is read.
 *
 * Scans live in scan.c, per-file reading in harvester.c, read phases in readers.c, registry
 * entries in tail_registry.c, reloads in tail_reload.c; this file is the thread itself, its
 * inbox, its turns and housekeeping. */
#include "config.h"

#define LF_LOG_COMPONENT "tail"
#include "tail_int.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "logferry/buf.h"
#include "logferry/fsutil.h"
#include "logferry/log.h"
#include "logferry/watchdog.h"

/* ---- inbox ---------------------------------------------------------------------- */

void lf_tail_notify(struct lf_tail *t, const char *path, enum lf_change change)
{
    if (change == LF_CHANGE_NAME) {
        /* Several renames and creates in a burst still cost one scan: it runs at the next
         * turn, after every note that arrived by then. */
        uv_mutex_lock(&t->mu);
        t->want_scan = true;
        uv_mutex_unlock(&t->mu);
    }
    char *copy = strdup(path);
    if (copy == NULL) {
        lf_tail_rescan(t); /* the scan finds whatever the note was about */
        return;
    }
    uv_mutex_lock(&t->mu);
    if (lf_array_grow(&t->notes, &t->cap_notes, t->n_notes, sizeof(*t->notes), 64)) {
        free(copy);
        t->want_scan = true;
        uv_cond_signal(&t->cond);
        uv_mutex_unlock(&t->mu);
        return;
    }
    t->notes[t->n_notes++] = copy;
    uv_cond_signal(&t->cond);
    uv_mutex_unlock(&t->mu);
}

/* Raises one of the inbox's flags (a field of t guarded by t->mu) and wakes the tail
 * thread. Any thread. */
static void raise_flag(struct lf_tail *t, bool *flag)
{
    uv_mutex_lock(&t->mu);
    *flag = true;
    uv_cond_signal(&t->cond);
    uv_mutex_unlock(&t->mu);
}

void lf_tail_stdin_ready(struct lf_tail *t)
{
    raise_flag(t, &t->stdin_ready);
}

void lf_tail_journal_ready(struct lf_tail *t)
{
    raise_flag(t, &t->journal_ready);
}

void lf_tail_set_watched(struct lf_tail *t, bool watched)
{
    uv_mutex_lock(&t->mu);
    t->watched = watched;
    uv_mutex_unlock(&t->mu);
}

void lf_tail_rescan(struct lf_tail *t)
{
    raise_flag(t, &t->want_scan);
}

void lf_tail_stop(struct lf_tail *t)
{
    raise_flag(t, &t->want_stop);
}

/* Index of the input with id id in t->cfg, or SIZE_MAX. Called with t->mu held or on the
 * tail thread (t->cfg changes on the tail thread, under t->mu). */
size_t lf_tail__input_by_id(const struct lf_tail *t, const char *id)
{
    for (size_t i = 0; i < t->cfg->n_inputs; i++) {
        if (strcmp(t->cfg->inputs[i].id, id) == 0)
            return i;
    }
    return SIZE_MAX;
}

void lf_tail_input_stats(struct lf_tail *t, const char *id, struct lf_tail_input_stats *out)
{
    *out = (struct lf_tail_input_stats){ 0 };
    uv_mutex_lock(&t->mu);
    size_t i = lf_tail__input_by_id(t, id);
    if (i != SIZE_MAX)
        *out = t->in_stats[i];
    uv_mutex_unlock(&t->mu);
}

void lf_tail_reload(struct lf_tail *t, const struct lf_config *cfg,
                    struct lf_chain_spec *const *specs)
{
    /* A read held up by outputs that are down stops at its next line, so the tail thread
     * gets to the reload at once. Before the reload is seen: the tail thread turns this off
     * when it takes it. */
    lf_pipeline_yield(t->pipeline, true);
    uv_mutex_lock(&t->mu);
    t->reload_cfg = cfg;
    t->reload_specs = specs;
    uv_cond_signal(&t->cond);
    uv_mutex_unlock(&t->mu);
}

void lf_tail_stats(struct lf_tail *t, struct lf_tail_stats *out)
{
    uv_mutex_lock(&t->mu);
    *out = t->stats;
    uv_mutex_unlock(&t->mu);
}

/* Marks the harvesters at path dirty; a path no harvester has that a glob matches means a
 * new file: rescan. */
static void handle_note(struct lf_tail *t, const char *path)
{
    bool known = false;
    for (size_t i = lf_tail__lower_bound(t, path, 0); i < t->n_h && strcmp(t->h[i]->path, path) == 0; i++) {
        struct harv *h = t->h[i];
        known = true;
        h->dirty = true;
        h->recheck = h->fd >= 0;
        if (h->fd < 0 && !h->gone)
            t->want_open = true; /* closed for inactivity and growing again: reopen */
    }
    if (known)
        return;
    for (size_t i = 0; i < t->cfg->n_inputs; i++) {
        const struct lf_input_conf *in = &t->cfg->inputs[i];
        for (size_t k = 0; k < in->n_paths; k++) {
            if (lf_glob_match(in->paths[k], path)) {
                t->next_scan_ms = 0;
                return;
            }
        }
    }
}

/* ---- inactivity, retired sources ---------------------------------------------- */

/* Frees the departed harvesters whose every event is answered (all: at the end). */
static void free_departed(struct lf_tail *t, bool all)
{
    size_t k = 0;
    for (size_t i = 0; i < t->n_departed; i++) {
        if (all || t->departed[i]->inflight == 0)
            lf_tail__harv_free(t, t->departed[i]);
        else
            t->departed[k++] = t->departed[i];
    }
    t->n_departed = k;
}

void lf_tail__free_retired(struct lf_tail *t, bool all)
{
    size_t k = 0;
    for (size_t i = 0; i < t->n_retired; i++) {
        struct retired *r = &t->retired[i];
        if (all || r->src->inflight == 0)
            lf_source_free(r->src);
        else
            t->retired[k++] = *r;
    }
    t->n_retired = k;
}

/* Closes files idle for close_inactive (at once when others wait for an fd), forgets
 * deleted files whose every event is acknowledged, and warns about deleted files held open
 * with unread data. */
/* The part of housekeeping that only closes descriptors and warns: closes files idle for
 * close_inactive (at once when others wait for a descriptor; from inside a push (in_push)
 * while the process is out of descriptors, every file but `busy`), gives up deleted files
 * after close_removed_after, warns about deleted files held open. Never touches `busy` (the
 * harvester being read, when called from inside a push) and never forgets a harvester, so it
 * is safe while a read is under way. Returns how many deleted files are held open. */
static uint64_t sweep_open(struct lf_tail *t, int64_t now_ms, const struct harv *busy,
                           bool in_push)
{
    bool others_wait = false;
    for (size_t i = 0; i < t->n_h; i++)
        others_wait |= t->h[i]->waiting;
    uint64_t removed_open = 0;
    for (size_t i = 0; i < t->n_h; i++) {
        struct harv *h = t->h[i];
        if (h->pr != NULL)
            continue; /* a reader thread's until the read phase ends */
        const struct lf_input_conf *in = &t->cfg->inputs[h->input_idx];
        struct stat st;
        if (h->fd >= 0 && in_push && !h->deleted && fstat(h->fd, &st) == 0 &&
            st.st_nlink == 0) {
            /* Polls do not run while a push waits: notice a deletion here, so that it is
             * warned about and close_removed_after can act. */
            h->deleted = true;
            h->deleted_ms = now_ms;
        }
        if (h->deleted && h->fd >= 0 && in->close_removed_after_ms > 0 &&
            now_ms - h->deleted_ms >= (int64_t)in->close_removed_after_ms) {
            uint64_t size = fstat(h->fd, &st) == 0 ? (uint64_t)st.st_size : h->read_pos;
            uint64_t lost = size > h->emitted_end ? size - h->emitted_end : 0;
            lf_warn("input %s: %s was deleted %" PRId64 " s ago and is still unread; giving up "
                    "its last %" PRIu64 " bytes (close_removed_after)", in->id, h->path,
                    (now_ms - h->deleted_ms) / 1000, lost);
            uv_mutex_lock(&t->mu);
            t->stats.bytes_given_up += lost;
            uv_mutex_unlock(&t->mu);
            if (h == busy) {
                /* Being read, inside a push: only the descriptor goes now (the disk space
                 * with it); the read stops, and drops its buffer, once the push returns. */
                close(h->fd);
                h->fd = -1;
                t->n_open--;
            } else {
                lf_tail__harv_close(t, h);
            }
        }
        if (h->deleted && h->fd >= 0) {
            removed_open++;
            if (h->removed_warned_ms == 0 || now_ms - h->removed_warned_ms >= LF_TAIL_WARN_MS) {
                off_t pos = lseek(h->fd, 0, SEEK_CUR);
                lf_warn("input %s: %s was deleted but is held open: %" PRIu64 " bytes read, "
                        "waiting for the outputs", in->id, h->path,
                        pos >= 0 ? (uint64_t)pos : h->read_pos);
                h->removed_warned_ms = now_ms;
            }
        }
        if (h == busy)
            continue;
        /* A partial last line does not keep it open: it is read again from its start when
         * the file grows. Out of descriptors, files with data to read give theirs back too
         * (an output may need one to make progress); they are reopened where they were. */
        if (h->fd >= 0 && !lf_chain_holding(h->chain) &&
            ((!h->dirty &&
              (others_wait || now_ms - h->active_ms >= (int64_t)in->close_inactive_ms)) ||
             (t->fd_starved && in_push)))
            lf_tail__harv_close(t, h);
    }
    return removed_open;
}

/* Closes what sweep_open() closes, forgets deleted files whose every event is answered, and
 * frees retired sources. Between reads only. */
static void housekeeping(struct lf_tail *t, int64_t now_ms)
{
    uint64_t removed_open = sweep_open(t, now_ms, NULL, false);
    for (size_t i = 0; i < t->n_h;) {
        struct harv *h = t->h[i];
        const struct lf_input_conf *in = &t->cfg->inputs[h->input_idx];
        if (h->deleted && h->fd < 0 && h->inflight == 0 && !lf_chain_holding(h->chain)) {
            if (t->cfg->registry.clean_removed && h->identified)
                lf_registry_remove(t->reg, in->id, h->id.dev, h->id.ino);
            lf_tail__forget(t, i);
            continue;
        }
        i++;
    }
    lf_tail__free_retired(t, false);
    free_departed(t, false);
    uv_mutex_lock(&t->mu);
    for (size_t k = 0; k < t->cfg->n_inputs; k++)
        t->in_stats[k].files_open = 0;
    for (size_t i = 0; i < t->n_h; i++)
        t->in_stats[t->h[i]->input_idx].files_open += t->h[i]->fd >= 0;
    t->stats.files_open = t->n_open;
    t->stats.files_known = t->n_h;
    t->stats.files_removed_open = removed_open;
    uv_mutex_unlock(&t->mu);
}

/* Per input, the bytes its files hold beyond what was read, from the sizes the last poll
 * and scan saw. Run after each poll, before reading, so that when the outputs block reading
 * the gauge shows the backlog as it was then, and again at each registry turn. */
static void count_lag(struct lf_tail *t)
{
    uv_mutex_lock(&t->mu);
    for (size_t k = 0; k < t->cfg->n_inputs; k++)
        t->in_stats[k].lag_bytes = 0;
    for (size_t i = 0; i < t->n_h; i++) {
        const struct harv *h = t->h[i];
        if (h->size > h->read_pos && !h->gone && !h->refused)
            t->in_stats[h->input_idx].lag_bytes += h->size - h->read_pos;
    }
    lf_tail__publish_files_locked(t);
    uv_mutex_unlock(&t->mu);
}

/* While the outputs hold up a push: take their answers and save the offsets they allow, so
 * the registry keeps up with what is delivered (and a crash re-sends no more than it must),
 * and refresh the backlog gauge. Runs inside a push: it frees nothing and reads no line. */
static void while_blocked(void *arg)
{
    struct lf_tail *t = arg;
    if (t->in_phase)
        return; /* reading a phase's share: the other readers' harvesters are theirs */
    lf_pipeline_take_acks(t->pipeline, lf_tail__harv_answer, t);
    int64_t now = lf_tail__now_ms();
    if (now >= t->next_registry_ms) {
        lf_tail__update_registry(t);
        /* Idle files are closed (an output may need a descriptor to make progress), deleted
         * ones given up after close_removed_after, warnings given; the file being read stays. */
        uint64_t removed_open = sweep_open(t, now, t->reading, true);
        uv_mutex_lock(&t->mu);
        t->stats.files_open = t->n_open;
        t->stats.files_removed_open = removed_open;
        uv_mutex_unlock(&t->mu);
        t->next_registry_ms = now + (int64_t)t->cfg->registry.flush_interval_ms;
    }
    count_lag(t);
}

void lf_tail__while_phase(struct lf_tail *t, int64_t now_ms)
{
    uint64_t removed_open = sweep_open(t, now_ms, NULL, true);
    uv_mutex_lock(&t->mu);
    t->stats.files_open = __atomic_load_n(&t->n_open, __ATOMIC_RELAXED);
    t->stats.files_removed_open = removed_open;
    uv_mutex_unlock(&t->mu);
}

/* ---- the thread ------------------------------------------------------------------ */

/* A reload taken from the inbox. */
struct reload_msg {
    const struct lf_config *cfg; /* NULL: none */
    struct lf_chain_spec *const *specs;
};

/* Once mode: whether every file was read to its end (or given up). */
static bool files_done(const struct lf_tail *t)
{
    if (t->first_scan)
        return false;
    for (size_t i = 0; i < t->n_h; i++) {
        const struct harv *h = t->h[i];
        if (h->dirty && !h->gone && !h->deleted && !h->refused)
            return false; /* open with bytes to read, or waiting for a descriptor */
    }
    return true;
}

/* Once mode: whether every journal was read to its end. */
static bool journals_done(const struct lf_tail *t)
{
    for (size_t i = 0; i < t->n_jh; i++) {
        if (!lf_tail__journal_done(t->jh[i]))
            return false;
    }
    return true;
}

/* Once mode: whether all is read: the files, then stdin; the journals. */
static bool once_done(const struct lf_tail *t)
{
    return (t->in_stdin == NULL || t->stdin_ended) && files_done(t) && journals_done(t);
}

/* Takes the inbox; returns false when asked to stop (once mode: when all is read). Waits
 * until there is something to do or the next timer is due (once mode: never). */
static bool take_inbox(struct lf_tail *t, int64_t now_ms, struct reload_msg *rl)
{
    bool busy = t->busy; /* the last turn left data unread: no waiting */
    bool done = t->once && once_done(t);
    int64_t due = t->next_scan_ms;
    if (t->next_poll_ms < due)
        due = t->next_poll_ms;
    if (t->next_registry_ms < due)
        due = t->next_registry_ms;
    if (t->uncut && t->next_cut_ms < due)
        due = t->next_cut_ms;
    if (t->next_tick_ms < due)
        due = t->next_tick_ms;
    if (t->n_jh > 0 && t->next_journal_ms < due)
        due = t->next_journal_ms;
    if (t->next_open_ms < due)
        due = t->next_open_ms;
    uv_mutex_lock(&t->mu);
    if (!busy && !t->once && !t->want_stop && !t->want_scan && t->n_notes == 0 &&
        t->reload_cfg == NULL && !t->stdin_ready && !t->journal_ready && due > now_ms) {
        uint64_t wait_ns = (uint64_t)(due - now_ms) * 1000000u;
        lf_err_ignore(uv_cond_timedwait(&t->cond, &t->mu, wait_ns) ? LF_EAGAIN : LF_OK);
    }
    char **notes = t->notes;
    size_t n_notes = t->n_notes;
    t->notes = NULL;
    t->n_notes = 0;
    t->cap_notes = 0;
    if (t->want_scan)
        t->next_scan_ms = 0;
    t->want_scan = false;
    bool stop = t->want_stop || done;
    if (!stop) {
        /* When stopping, a reload not applied stays the owner's to free. */
        *rl = (struct reload_msg){ t->reload_cfg, t->reload_specs };
        t->reload_cfg = NULL;
        t->reload_specs = NULL;
    }
    uv_mutex_unlock(&t->mu);
    if (rl->cfg != NULL)
        lf_pipeline_yield(t->pipeline, false); /* got here: pushes wait for room again */
    for (size_t i = 0; i < n_notes; i++) {
        handle_note(t, notes[i]);
        free(notes[i]);
    }
    free(notes);
    return !stop;
}

/* Once mode: stdin is read after the files, here, with no owner polling it: waits up to
 * 100 ms for fd 0 to be readable (or at its end). A poll, not a blocking read: stdin whose
 * O_NONBLOCK was set by a process sharing it (a shell, a supervisor) answers EAGAIN at once
 * and would otherwise be read in a loop at 100% CPU. */
static bool once_stdin_ready(struct lf_tail *t)
{
    if (t->in_stdin == NULL || t->stdin_ended || !files_done(t))
        return false;
    struct pollfd pfd = { .fd = STDIN_FILENO, .events = POLLIN };
    return poll(&pfd, 1, 100) != 0; /* readable, at its end, or an error the read reports */
}

/* Reads a chunk of stdin if the owner said fd 0 is readable, then asks it to poll again;
 * at the end of stdin the input has nothing more to do. */
static enum lf_err read_stdin(struct lf_tail *t, int64_t now)
{
    uv_mutex_lock(&t->mu);
    bool ready = t->stdin_ready;
    t->stdin_ready = false;
    uv_mutex_unlock(&t->mu);
    if (t->once)
        ready = once_stdin_ready(t);
    if (!ready || t->in_stdin == NULL || t->stdin_ended)
        return LF_OK;
    enum lf_err err = lf_tail__stdin_read(t, t->in_stdin, STDIN_FILENO);
    if (err == LF_EOF) {
        lf_info("input %s: stdin ended", t->cfg->inputs[t->in_stdin->input_idx].id);
        t->stdin_ended = true;
        return LF_OK;
    }
    if (err)
        return err;
    if (lf_chain_holding(t->in_stdin->chain))
        t->next_tick_ms = now; /* learn its deadline at the tick */
    if (t->hooks != NULL && t->hooks->on_stdin_wait != NULL)
        t->hooks->on_stdin_wait(t->hooks->arg);
    return LF_OK;
}

/* Entries a journal reads per turn before the others (and the files) get a go. */
#define LF_TAIL_JOURNAL_TURN 4096

/* Hands the owner duplicates of the journals' descriptors to poll, when they changed. */
static void report_journal_fds(struct lf_tail *t)
{
    if (!t->journal_fds_changed || t->once)
        return;
    t->journal_fds_changed = false;
    int fds[64];
    size_t n = 0;
    for (size_t i = 0; i < t->n_jh && n < sizeof(fds) / sizeof(fds[0]); i++) {
        int fd = lf_tail__journal_fd(t->jh[i]);
        if (fd >= 0 && (fds[n] = fcntl(fd, F_DUPFD_CLOEXEC, 3)) >= 0)
            n++;
    }
    if (t->hooks != NULL && t->hooks->on_journal_fds != NULL) {
        t->hooks->on_journal_fds(t->hooks->arg, fds, n);
        return;
    }
    for (size_t i = 0; i < n; i++)
        close(fds[i]);
}

/* Reads the journals: when the owner said one is readable, every second (new files, a
 * missed wake-up, a journal that could not be opened yet), and while one has a backlog. */
static enum lf_err read_journals(struct lf_tail *t, int64_t now)
{
    if (t->n_jh == 0)
        return LF_OK;
    uv_mutex_lock(&t->mu);
    bool ready = t->journal_ready;
    t->journal_ready = false;
    uv_mutex_unlock(&t->mu);
    bool tick = now >= t->next_journal_ms;
    if (tick)
        t->next_journal_ms = now + LF_TAIL_POLL_MS;
    for (size_t i = 0; i < t->n_jh; i++) {
        struct harv *h = t->jh[i];
        if (ready || tick)
            lf_tail__journal_poll(t, h, now);
        bool more = false;
        enum lf_err err = lf_tail__journal_read(t, h, LF_TAIL_JOURNAL_TURN, &more);
        if (err)
            return err;
        t->busy |= more;
        if (lf_chain_holding(h->chain))
            t->next_tick_ms = now; /* learn its deadline at the tick */
    }
    report_journal_fds(t);
    if (ready && t->hooks != NULL && t->hooks->on_journal_wait != NULL)
        t->hooks->on_journal_wait(t->hooks->arg);
    return LF_OK;
}

/* Ticks the stages of h (multiline timeouts), lowering t->next_tick_ms to its next deadline. */
static enum lf_err tick_harv(struct lf_tail *t, struct harv *h, int64_t now)
{
    if (h == NULL || !lf_chain_holding(h->chain))
        return LF_OK;
    int64_t next = INT64_MAX;
    enum lf_err err = lf_chain_tick(h->chain, now, &next);
    lf_tail__harv_settle(t, h);
    if (next < t->next_tick_ms)
        t->next_tick_ms = next;
    return err;
}

/* One turn: whatever timers are due, then a fair share of reading for every dirty file. */
/* Once mode, after the scan: how many threads read (every usable CPU, at most one per file,
 * for LF_TAIL_ONCE_SPREAD_BYTES or more; else this one alone, the files in path order), and
 * the owner learns how much there is to read. */
static void plan_once(struct lf_tail *t)
{
    uint64_t total = 0;
    for (size_t i = 0; i < t->n_h; i++)
        total += t->h[i]->size;
    if (total < LF_TAIL_ONCE_SPREAD_BYTES || t->max_readers > t->n_h)
        t->max_readers = total < LF_TAIL_ONCE_SPREAD_BYTES || t->n_h == 0 ? 1 : t->n_h;
    lf_debug("backfill: %zu reader(s) for %zu file(s)", t->max_readers, t->n_h);
    uv_mutex_lock(&t->mu);
    t->stats.files_known = t->n_h;
    uv_mutex_unlock(&t->mu);
    if (t->hooks != NULL && t->hooks->on_planned != NULL)
        t->hooks->on_planned(t->hooks->arg, t->n_h, total);
}

bool lf_tail__skip_input(const struct lf_input_conf *in)
{
    for (size_t i = 0; i < in->n_skip_if_exists; i++) {
        if (access(in->skip_if_exists[i], F_OK) == 0) {
            lf_info("input %s: reads nothing: %s exists (skip_if_exists)", in->id,
                    in->skip_if_exists[i]);
            return true;
        }
    }
    return false;
}

enum lf_err lf_tail__start_journals(struct lf_tail *t)
{
    const struct lf_config *cfg = t->cfg;
    for (size_t i = 0; i < cfg->n_inputs; i++) {
        if (cfg->inputs[i].type != LF_INPUT_JOURNALD || t->skipped[i])
            continue;
        bool have = false;
        for (size_t k = 0; k < t->n_jh && !have; k++)
            have = t->jh[k]->input_idx == i;
        if (have)
            continue;
        if (lf_array_grow(&t->jh, &t->cap_jh, t->n_jh, sizeof(*t->jh), 4))
            return LF_ENOMEM;
        struct harv *h = lf_tail__journal_new(t, i);
        if (h == NULL)
            return LF_ENOMEM;
        t->jh[t->n_jh++] = h;
    }
    uv_mutex_lock(&t->mu);
    t->stats.journals = t->n_jh;
    uv_mutex_unlock(&t->mu);
    return LF_OK;
}

/* A file input whose globs found nothing for a minute, on a host whose journal holds
 * entries, says once where its logs probably are. */
static void hint_journal(struct lf_tail *t, int64_t now)
{
    if (t->once || now - t->started_ms < 60000)
        return;
    for (size_t i = 0; i < t->cfg->n_inputs; i++) {
        const struct lf_input_conf *in = &t->cfg->inputs[i];
        if (in->type != LF_INPUT_FILE || t->skipped[i] || t->hinted[i] || in->n_paths == 0)
            continue;
        bool found = false;
        for (size_t k = 0; k < t->n_h && !found; k++)
            found = t->h[k]->input_idx == i;
        t->hinted[i] = true;
        if (found || !lf_tail__journal_has_entries(t))
            continue;
        lf_warn("input %s: no file matches %s%s; this host logs to the journal: see the "
                "journald input (docs/journald.md)",
                in->id, in->paths[0], in->n_paths > 1 ? " or its other paths" : "");
    }
}

/* The glob scan, when due: every scan_interval while following, once in once mode (where a
 * failure ends the run). */
static enum lf_err scan_due(struct lf_tail *t, int64_t now)
{
    const struct lf_config *cfg = t->cfg;
    if (now < t->next_scan_ms || (t->once && !t->first_scan))
        return LF_OK;
    uint64_t scan_ms = UINT64_MAX;
    for (size_t i = 0; i < cfg->n_inputs; i++) {
        if (cfg->inputs[i].scan_interval_ms < scan_ms)
            scan_ms = cfg->inputs[i].scan_interval_ms;
    }
    bool first = t->first_scan;
    enum lf_err err = lf_tail__scan(t, first, now);
    if (first && !err && cfg->registry.clean_removed)
        lf_tail__clean_registry(t);
    t->first_scan = false;
    t->next_scan_ms = now + (int64_t)(scan_ms ? scan_ms : 1000);
    if (err && t->once) {
        lf_error("file discovery failed: %s", lf_err_str(err));
        return err;
    }
    if (err)
        lf_error("scan failed: %s; trying again in %" PRIu64 " ms", lf_err_str(err), scan_ms);
    if (first && t->once)
        plan_once(t);
    hint_journal(t, now);
    return LF_OK;
}

static enum lf_err turn(struct lf_tail *t)
{
    const struct lf_config *cfg = t->cfg;
    int64_t now = lf_tail__now_ms();
    lf_pipeline_take_acks(t->pipeline, lf_tail__harv_answer, t);
    enum lf_err err = scan_due(t, now);
    if (err)
        return err;
    if (now >= t->next_poll_ms && !t->once) { /* a backfill reads each file to the end once */
        uv_mutex_lock(&t->mu);
        bool watched = t->watched;
        uv_mutex_unlock(&t->mu);
        for (size_t i = 0; i < t->n_h && t->n_open > 0; i++)
            lf_tail__harv_poll_due(t, t->h[i], now, watched);
        count_lag(t);
        t->next_poll_ms = now + LF_TAIL_POLL_MS;
    }
    t->busy = false;
    err = read_stdin(t, now);
    if (!err)
        err = read_journals(t, now);
    if (err)
        return err;
    err = lf_tail__read_dirty(t, now);
    if (err)
        return err; /* the pipeline failed for good */
    now = lf_tail__now_ms();
    if (now >= t->next_tick_ms) {
        /* Multiline timeouts: events held with no new line for too long go out. */
        t->next_tick_ms = INT64_MAX;
    t->next_open_ms = INT64_MAX;
        for (size_t i = 0; i < t->n_h && !err; i++)
            err = tick_harv(t, t->h[i], now);
        for (size_t i = 0; i < t->n_jh && !err; i++)
            err = tick_harv(t, t->jh[i], now);
        if (!err)
            err = tick_harv(t, t->in_stdin, now);
        if (err)
            return err;
    }
    now = lf_tail__now_ms();
    if (now >= t->next_cut_ms) {
        if (t->uncut && lf_tail__cut_all(t))
            return LF_EIO;
        t->uncut = false;
        t->next_cut_ms = now + (int64_t)cfg->queue.batch_flush_interval_ms;
    }
    if (now >= t->next_registry_ms) {
        lf_tail__update_registry(t);
        housekeeping(t, now); /* may close files, making room for waiting ones */
        count_lag(t);
        t->want_open = true;
        t->next_registry_ms = now + (int64_t)cfg->registry.flush_interval_ms;
    }
    if (t->want_open || t->once || now >= t->next_open_ms) {
        /* once: files closed at their end make room */
        t->want_open = false;
        t->next_open_ms = INT64_MAX;
        size_t before = t->n_open;
        lf_tail__open_pending(t, now);
        t->busy |= t->n_open > before; /* read what was just opened without waiting */
    }
    return LF_OK;
}

static void tail_main(void *arg)
{
    struct lf_tail *t = arg;
    enum lf_err err = LF_OK;
    struct reload_msg rl = { NULL, NULL };
    struct lf_errbuf web = { "" };
    lf_watchdog_enter("tail"); /* stamped each turn; its waits are bounded by its timers */
    if (lf_registry_start_writer(t->reg, &web)) /* registry writes off this thread */
        lf_error("%s; the registry is written on the tail thread", web.msg);
    if (lf_tail__start_journals(t)) {
        lf_error("out of memory starting the journald inputs");
        err = LF_ENOMEM;
    }
    while (!err && take_inbox(t, lf_tail__now_ms(), &rl)) {
        lf_watchdog_stamp();
        if (rl.cfg != NULL) {
            struct lf_errbuf eb = { "" };
            enum lf_err rerr = lf_tail__reload(t, rl.cfg, rl.specs, &eb);
            rl.cfg = NULL;
            t->hooks->on_reloaded(t->hooks->arg, rerr, &eb);
        }
        err = turn(t);
        if (err)
            break;
    }
    /* Stopping (once mode: all was read): what was read goes out, held multiline events
     * included, and is waited for (until shutdown_timeout, when the daemon aborts the
     * pipeline); then the acknowledged offsets are persisted. */
    lf_tail__readers_stop(t);
    for (size_t i = 0; i < t->n_h && !err; i++)
        err = lf_tail__harv_flush(t, t->h[i]);
    if (t->in_stdin != NULL && !err)
        err = lf_tail__harv_flush(t, t->in_stdin);
    for (size_t i = 0; i < t->n_jh && !err; i++)
        err = lf_tail__harv_flush(t, t->jh[i]);
    struct lf_errbuf eb = { "" };
    enum lf_err derr = lf_pipeline_drain(t->pipeline, &eb);
    if (derr && !t->once) /* the backfill's owner says it in its own words */
        lf_error("stopping: %s; the registry keeps only acknowledged offsets", eb.msg);
    if (err || derr)
        snprintf(t->why.msg, sizeof(t->why.msg), "%s", derr ? eb.msg : lf_err_str(err));
    lf_pipeline_take_acks(t->pipeline, lf_tail__harv_answer, t);
    lf_tail__update_registry(t);
    t->result = err ? err : derr;
    if (lf_registry_sync(t->reg, &eb)) { /* the last offsets are on disk before we end */
        lf_error("%s; the file keeps the offsets of the write before", eb.msg);
        if (t->once && !t->result)
            t->result = LF_EIO; /* a backfill that cannot save its offsets failed */
    }
    lf_watchdog_leave();
    if (t->hooks != NULL && t->hooks->on_end != NULL)
        t->hooks->on_end(t->hooks->arg);
}

/* ---- lifecycle ------------------------------------------------------------------- */

/* The tail's mutexes and condition variables, all or none. */
static int sync_init(struct lf_tail *t)
{
    if (uv_mutex_init(&t->mu) != 0)
        return -1;
    if (uv_cond_init(&t->cond) != 0)
        goto fail_cond;
    if (uv_mutex_init(&t->pmu) != 0)
        goto fail_pmu;
    if (uv_cond_init(&t->pgo) != 0)
        goto fail_pgo;
    if (uv_cond_init(&t->pdone) != 0)
        goto fail_pdone;
    return 0;
fail_pdone:
    uv_cond_destroy(&t->pgo);
fail_pgo:
    uv_mutex_destroy(&t->pmu);
fail_pmu:
    uv_cond_destroy(&t->cond);
fail_cond:
    uv_mutex_destroy(&t->mu);
    return -1;
}

enum lf_err lf_tail_new(const struct lf_config *cfg, struct lf_chain_spec *const *specs,
                        struct lf_pipeline *p, struct lf_registry *reg,
                        const struct lf_tail_hooks *hooks, enum lf_tail_mode mode,
                        struct lf_tail **out, struct lf_errbuf *eb)
{
    struct lf_tail *t = calloc(1, sizeof(*t));
    if (t == NULL)
        return LF_ENOMEM;
    t->once = mode == LF_TAIL_ONCE;
    t->first_scan = true;
    t->cfg = cfg;
    t->specs = specs;
    t->next_tick_ms = INT64_MAX;
    t->pipeline = p;
    if (p != NULL) /* none: lf_tail_read_file() */
        lf_pipeline_set_wait_hook(p, while_blocked, t, 250);
    t->reg = reg;
    t->hooks = hooks;
    if (gethostname(t->host, sizeof(t->host)) != 0)
        snprintf(t->host, sizeof(t->host), "localhost");
    t->host[sizeof(t->host) - 1] = '\0';
    if (sync_init(t) != 0) {
        free(t);
        return lf_fail(eb, LF_EIO, "cannot create a mutex or condition variable");
    }
    t->max_readers = lf_usable_cpus();
    if (t->max_readers > LF_TAIL_MAX_READERS)
        t->max_readers = LF_TAIL_MAX_READERS;
    t->disc = calloc(cfg->n_inputs ? cfg->n_inputs : 1, sizeof(*t->disc));
    t->in_stats = calloc(cfg->n_inputs ? cfg->n_inputs : 1, sizeof(*t->in_stats));
    t->fresh = calloc(cfg->n_inputs ? cfg->n_inputs : 1, sizeof(*t->fresh));
    if (t->disc == NULL || t->in_stats == NULL || t->fresh == NULL) {
        lf_tail_free(t);
        return LF_ENOMEM;
    }
    t->skipped = calloc(cfg->n_inputs ? cfg->n_inputs : 1, sizeof(*t->skipped));
    t->hinted = calloc(cfg->n_inputs ? cfg->n_inputs : 1, sizeof(*t->hinted));
    if (t->skipped == NULL || t->hinted == NULL) {
        lf_tail_free(t);
        return LF_ENOMEM;
    }
    t->started_ms = lf_tail__now_ms();
    for (size_t i = 0; i < cfg->n_inputs; i++) {
        t->fresh[i] = true;
        t->skipped[i] = p != NULL && lf_tail__skip_input(&cfg->inputs[i]);
    }
    for (size_t i = 0; i < cfg->n_inputs && t->in_stdin == NULL; i++) {
        if (cfg->inputs[i].type != LF_INPUT_STDIN || t->skipped[i])
            continue;
        t->in_stdin = lf_tail__harv_new(t, i, NULL);
        if (t->in_stdin == NULL) {
            lf_tail_free(t);
            return LF_ENOMEM;
        }
    }
    for (size_t i = 0; i < cfg->n_inputs; i++) {
        if (cfg->inputs[i].type != LF_INPUT_FILE || t->skipped[i])
            continue;
        enum lf_err err = lf_discover_new(&cfg->inputs[i], &t->disc[i], eb);
        if (err) {
            lf_tail_free(t);
            return err;
        }
    }
    *out = t;
    return LF_OK;
}

enum lf_err lf_tail_start(struct lf_tail *t, struct lf_errbuf *eb)
{
    if (uv_thread_create(&t->thread, tail_main, t) != 0)
        return lf_fail(eb, LF_EIO, "cannot start the tail thread");
    t->started = true;
    return LF_OK;
}

enum lf_err lf_tail_join(struct lf_tail *t, struct lf_errbuf *eb)
{
    if (t->started) {
        uv_thread_join(&t->thread);
        t->started = false;
    }
    *eb = t->why;
    return t->result;
}

void lf_tail_free(struct lf_tail *t)
{
    if (t == NULL)
        return;
    for (size_t i = 0; i < t->n_h; i++)
        lf_tail__harv_free(t, t->h[i]);
    free(t->h);
    if (t->in_stdin != NULL)
        lf_tail__harv_free(t, t->in_stdin);
    for (size_t i = 0; i < t->n_jh; i++)
        lf_tail__harv_free(t, t->jh[i]);
    free(t->jh);
    free(t->skipped);
    free(t->hinted);
    lf_tail__free_dirs(t->dirs, t->n_dirs);
    free_departed(t, true);
    free(t->departed);
    lf_tail__free_retired(t, true);
    free(t->retired);
    if (t->disc != NULL) {
        for (size_t i = 0; i < t->cfg->n_inputs; i++)
            lf_discover_free(t->disc[i]);
        free(t->disc);
    }
    for (size_t i = 0; i < t->n_notes; i++)
        free(t->notes[i]);
    free(t->notes);
    free(t->in_stats);
    lf_tail__free_files(t);
    free(t->fresh);
    free(t->dirty_h);
    uv_cond_destroy(&t->pdone);
    uv_cond_destroy(&t->pgo);
    uv_mutex_destroy(&t->pmu);
    uv_cond_destroy(&t->cond);
    uv_mutex_destroy(&t->mu);
    free(t);
}
