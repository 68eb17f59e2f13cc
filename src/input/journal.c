/* journal.c - the journald inputs: the systemd journal read through sd-journal on the tail
 * thread (docs/journald.md).
 *
 * A journald input is a harvester (struct harv: its stages, its source, its answers) whose
 * events come from an sd_journal instead of a file: h->journal holds the handle, the entry
 * converter (jentry.h) and the positions of the entries read. An entry's offset is its
 * number in its stream (0, 1, 2, ... from where the stream started), so answers move h->acked
 * as for files; the registry entry (input id, device 0, inode 0) holds the number
 * acknowledged, the stream id and, in its path field, a cursor of the last entry
 * acknowledged, which the ring of positions below gives without a call into sd-journal per
 * entry (sd_journal_get_cursor() allocates).
 *
 * Everything here runs on the tail thread, which owns the handle; the loop thread only
 * polls a duplicate of its inotify descriptor (lf_tail__journal_fd()) and says when it is
 * readable (lf_tail_journal_ready()). */
#include "config.h"

#define LF_LOG_COMPONENT "journal"
#include "tail_int.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "logferry/buf.h"
#include "logferry/clock.h"
#include "logferry/jentry.h"
#include "logferry/log.h"
#include "logferry/stage.h"

#ifdef HAVE_LIBSYSTEMD
#include <systemd/sd-journal.h>

/* Where an entry is: what a cursor names. dup counts the entries before it, in a row, with
 * the same three values (a cursor cannot tell those apart; a restart skips as many). */
struct jpos {
    uint64_t realtime;
    uint64_t monotonic;
    sd_id128_t boot;
    uint32_t dup;
};

struct tail_journal {
    sd_journal *j;            /* owned; NULL while the journal cannot be opened yet */
    struct lf_jentry *conv;   /* owned */
    struct jpos *ring;        /* owned; positions of entries base .. next - 1, ring order */
    size_t cap;               /* a power of two, or 0 */
    size_t head;              /* ring index of entry base */
    uint64_t base;            /* the number of the oldest entry the ring holds */
    uint64_t next;            /* the number the next entry read gets */
    struct jpos last;         /* the last entry read (valid when have_last) */
    bool have_last;
    char start_cursor[128];   /* where the stream resumed: the entry before number `start`
                                 ("" for the journal's start) */
    uint32_t start_dup;
    uint64_t start;           /* the number of the first entry read in this run */
    uint64_t filter_hash;     /* of the settings that decide which entries are read */
    bool reread;              /* the handle stands on an entry not read yet: read it before
                                 moving on (a lost cursor landed there, an entry whose
                                 MESSAGE was not there yet) */
    unsigned msg_tries;       /* times the current entry was found without its MESSAGE */
    bool at_end;              /* the last sd_journal_next() found nothing more */
    bool error_warned;
    int64_t next_open_ms;     /* when to try opening again */
    bool wait_warned;         /* "does not exist yet" said once */
    int fd;                   /* sd_journal_get_fd()'s, or -1 */
};

static const struct lf_input_conf *input_of(const struct lf_tail *t, const struct harv *h)
{
    return &t->cfg->inputs[h->input_idx];
}

/* FNV-1a over the strings that decide which entries are read, and in what numbering. */
static uint64_t fnv(uint64_t h, const char *s)
{
    for (; s != NULL && *s != '\0'; s++) {
        h ^= (unsigned char)*s;
        h *= 0x100000001b3ull;
    }
    h ^= 0xff; /* a separator, so ["ab"] and ["a","b"] differ */
    h *= 0x100000001b3ull;
    return h;
}

static uint64_t filter_hash(const struct lf_input_conf *in)
{
    uint64_t h = 0xcbf29ce484222325ull;
    h = fnv(h, in->journal_directory != NULL ? in->journal_directory : "-");
    for (size_t i = 0; i < in->n_journal_files; i++)
        h = fnv(h, in->journal_files[i]);
    h = fnv(h, "u");
    for (size_t i = 0; i < in->n_journal_units; i++)
        h = fnv(h, in->journal_units[i]);
    h = fnv(h, "m");
    for (size_t i = 0; i < in->n_journal_matches; i++)
        h = fnv(h, in->journal_matches[i]);
    char p[2] = { (char)('0' + in->journal_priority), '\0' };
    return fnv(h, p);
}

/* ---- positions ------------------------------------------------------------------- */

static void render_cursor(const struct jpos *p, char *buf, size_t size)
{
    char boot[SD_ID128_STRING_MAX];
    sd_id128_to_string(p->boot, boot);
    snprintf(buf, size, "b=%s;m=%" PRIx64 ";t=%" PRIx64, boot, p->monotonic, p->realtime);
}

static bool same_pos(const struct jpos *a, const struct jpos *b)
{
    return a->realtime == b->realtime && a->monotonic == b->monotonic &&
           sd_id128_equal(a->boot, b->boot);
}

/* Records the position of entry number tj->next. LF_ENOMEM. */
static enum lf_err ring_push(struct tail_journal *tj, const struct jpos *p)
{
    size_t n = (size_t)(tj->next - tj->base);
    if (n == tj->cap) {
        size_t cap = tj->cap ? tj->cap * 2 : 1024;
        struct jpos *ring = malloc(cap * sizeof(*ring));
        if (ring == NULL)
            return LF_ENOMEM;
        for (size_t i = 0; i < n; i++)
            ring[i] = tj->ring[(tj->head + i) & (tj->cap - 1)];
        free(tj->ring);
        tj->ring = ring;
        tj->cap = cap;
        tj->head = 0;
    }
    tj->ring[(tj->head + n) & (tj->cap - 1)] = *p;
    return LF_OK;
}

/* Forgets the positions of entries below number upto (kept: upto itself and later). */
static void ring_drop(struct tail_journal *tj, uint64_t upto)
{
    if (upto <= tj->base)
        return;
    if (upto > tj->next)
        upto = tj->next;
    tj->head = (tj->head + (size_t)(upto - tj->base)) & (tj->cap ? tj->cap - 1 : 0);
    tj->base = upto;
}

/* The cursor (and its dup count) of the entry before number n: where a restart resumes to
 * read entry n next. False if the ring no longer holds it. */
static bool cursor_before(const struct tail_journal *tj, uint64_t n, char *buf, size_t size,
                          uint32_t *dup)
{
    if (n == tj->start) {
        snprintf(buf, size, "%s", tj->start_cursor);
        *dup = tj->start_dup;
        return true;
    }
    if (n == 0 || n - 1 < tj->base || n - 1 >= tj->next)
        return false;
    const struct jpos *p = &tj->ring[(tj->head + (size_t)(n - 1 - tj->base)) & (tj->cap - 1)];
    render_cursor(p, buf, size);
    *dup = p->dup;
    return true;
}

/* ---- opening --------------------------------------------------------------------- */

static int open_files(sd_journal **j, const struct lf_input_conf *in)
{
    glob_t g = { 0 };
    int rc = 0;
    for (size_t i = 0; i < in->n_journal_files && rc == 0; i++) {
        int r = glob(in->journal_files[i], (i ? GLOB_APPEND : 0) | GLOB_NOSORT, NULL, &g);
        if (r == GLOB_NOSPACE)
            rc = -ENOMEM;
    }
    if (rc == 0 && g.gl_pathc == 0)
        rc = -ENOENT;
    if (rc == 0)
        rc = sd_journal_open_files(j, (const char **)g.gl_pathv, 0);
    globfree(&g);
    return rc;
}

/* Adds in's units, matches and priority: each group ANDed with the others. */
static int add_matches(sd_journal *j, const struct lf_input_conf *in)
{
    char m[512];
    int r = 0;
    for (size_t i = 0; i < in->n_journal_units && r >= 0; i++) {
        const char *u = in->journal_units[i];
        snprintf(m, sizeof(m), "_SYSTEMD_UNIT=%s", u);
        r = sd_journal_add_match(j, m, 0);
        if (r >= 0)
            r = sd_journal_add_disjunction(j);
        /* systemd's own messages about the unit (Started, Stopped, failed), as journalctl
         * -u shows them */
        snprintf(m, sizeof(m), "UNIT=%s", u);
        if (r >= 0)
            r = sd_journal_add_match(j, m, 0);
        if (r >= 0)
            r = sd_journal_add_match(j, "_PID=1", 0);
        if (r >= 0)
            r = sd_journal_add_disjunction(j);
    }
    if (r >= 0 && in->n_journal_units > 0)
        r = sd_journal_add_conjunction(j);
    for (size_t i = 0; i < in->n_journal_matches && r >= 0; i++)
        r = sd_journal_add_match(j, in->journal_matches[i], 0);
    if (r >= 0 && in->n_journal_matches > 0)
        r = sd_journal_add_conjunction(j);
    for (int p = 0; p <= in->journal_priority && in->journal_priority < 7 && r >= 0; p++) {
        snprintf(m, sizeof(m), "PRIORITY=%d", p);
        r = sd_journal_add_match(j, m, 0);
    }
    if (r >= 0 && in->journal_priority < 7)
        r = sd_journal_add_conjunction(j);
    return r;
}

/* What the input reads, for messages. */
static const char *what(const struct lf_input_conf *in, const char *path)
{
    if (path != NULL)
        return path;
    if (in->journal_directory != NULL)
        return in->journal_directory;
    if (in->n_journal_files > 0)
        return in->journal_files[0];
    return "the local journal";
}

/* Opens the handle: path (--preview's) or the input's directory, files or local journal,
 * with its matches. -ENOENT: not there (yet). */
static int open_handle(const struct lf_input_conf *in, const char *path, sd_journal **j)
{
    int r;
    struct stat st;
    if (path != NULL && stat(path, &st) == 0 && S_ISDIR(st.st_mode)) {
        r = sd_journal_open_directory(j, path, 0);
    } else if (path != NULL) {
        const char *one[] = { path, NULL };
        r = sd_journal_open_files(j, one, 0);
    } else if (in->journal_directory != NULL) {
        if (stat(in->journal_directory, &st) != 0)
            return -errno;
        r = sd_journal_open_directory(j, in->journal_directory, 0);
    } else if (in->n_journal_files > 0) {
        r = open_files(j, in);
    } else {
        r = sd_journal_open(j, SD_JOURNAL_LOCAL_ONLY);
    }
    if (r < 0)
        return r;
    /* MESSAGE whole up to max_line_bytes (the converter cuts and flags it); other fields
     * up to sd-journal's default 64 KiB at least */
    size_t limit = in->max_line_bytes + 16 > 65536 ? in->max_line_bytes + 16 : 65536;
    r = sd_journal_set_data_threshold(*j, limit);
    if (r >= 0)
        r = add_matches(*j, in);
    if (r < 0) {
        sd_journal_close(*j);
        *j = NULL;
    }
    return r;
}

/* Puts the handle on the entry cursor names (the dup-th of those sharing its values), so
 * that the next sd_journal_next() reads the entry after it. 1: found. 0: gone; the handle
 * stands on the first entry after its place, to be read first (*reread), if there is one.
 * < 0: not a cursor. */
static int seek_after(sd_journal *j, const char *cursor, uint32_t dup, bool *reread)
{
    *reread = false;
    int r = sd_journal_seek_cursor(j, cursor);
    if (r < 0)
        return r;
    int n = sd_journal_next(j);
    if (n <= 0 || sd_journal_test_cursor(j, cursor) <= 0) {
        *reread = n > 0;
        return 0;
    }
    for (uint32_t i = 0; i < dup; i++) {
        if (sd_journal_next(j) <= 0)
            break;
        if (sd_journal_test_cursor(j, cursor) <= 0) {
            *reread = true; /* a later entry: read it */
            break;
        }
    }
    return 1;
}

static void count_lost(struct lf_tail *t, struct harv *h, const char *cursor)
{
    lf_warn("input %s: journal position %s no longer exists (vacuumed or rotated away); "
            "reading on from the oldest entry after it",
            input_of(t, h)->id, cursor);
    uv_mutex_lock(&t->mu);
    t->in_stats[h->input_idx].cursors_lost++;
    uv_mutex_unlock(&t->mu);
}

/* Positions a just opened handle: after the registry's cursor, or per start_at. Sets the
 * stream (a new one when the position was lost or the filters changed). */
static void position(struct lf_tail *t, struct harv *h, bool use_registry)
{
    struct tail_journal *tj = h->journal;
    const struct lf_input_conf *in = input_of(t, h);
    struct lf_registry_entry *e =
        use_registry && t->reg != NULL ? lf_registry_find(t->reg, in->id, 0, 0) : NULL;
    tj->start_cursor[0] = '\0';
    tj->start_dup = 0;
    tj->start = 0;
    tj->reread = false;
    if (e != NULL && e->path != NULL && e->path[0] != '\0') {
        bool same_filters = e->id.fp_hash == tj->filter_hash && e->stream_id != 0;
        int r = seek_after(tj->j, e->path, e->id.fp_len, &tj->reread);
        if (r == 0) {
            count_lost(t, h, e->path);
            same_filters = false;
        } else if (r < 0) {
            lf_warn("input %s: the registry's journal position %s is not a cursor: %s; "
                    "reading from the journal's start",
                    in->id, e->path, lf_strerror(-r));
            sd_journal_seek_head(tj->j);
            same_filters = false;
        }
        if (r >= 0) {
            snprintf(tj->start_cursor, sizeof(tj->start_cursor), "%s", e->path);
            tj->start_dup = e->id.fp_len;
        }
        if (same_filters) {
            h->stream_id = e->stream_id;
            h->stream_unsaved = false;
            tj->start = e->offset;
        } else {
            lf_tail__harv_new_stream(h);
        }
    } else if (e != NULL && e->stream_id != 0 && e->id.fp_hash == tj->filter_hash) {
        sd_journal_seek_head(tj->j); /* nothing acknowledged yet: from the start again */
        h->stream_id = e->stream_id;
        h->stream_unsaved = false;
    } else if (in->start_at == LF_START_END && use_registry) {
        sd_journal_seek_tail(tj->j);
        if (sd_journal_previous(tj->j) > 0) {
            /* The last entry is the position: the next one is the first read. */
            uint64_t rt = 0;
            uint64_t mono = 0;
            sd_id128_t boot;
            if (sd_journal_get_realtime_usec(tj->j, &rt) >= 0 &&
                sd_journal_get_monotonic_usec(tj->j, &mono, &boot) >= 0) {
                struct jpos p = { rt, mono, boot, 0 };
                render_cursor(&p, tj->start_cursor, sizeof(tj->start_cursor));
            }
        }
        lf_tail__harv_new_stream(h);
    } else {
        sd_journal_seek_head(tj->j);
        lf_tail__harv_new_stream(h);
    }
    tj->base = tj->start;
    tj->next = tj->start;
    tj->head = 0;
    h->acked = tj->start;
    h->registered = h->stream_unsaved ? UINT64_MAX : tj->start;
    h->emitted_end = tj->start;
    h->src->stream_id = h->stream_id;
    lf_info("input %s: reading %s from %s", in->id, what(in, NULL),
            tj->start_cursor[0] != '\0' ? tj->start_cursor : "its oldest entry");
}

/* Where a restart may resume h: the number acknowledged (never past an event given up on
 * or one a stage holds). Only grows: the positions of entries before it are not needed. */
static uint64_t ack_point(const struct harv *h)
{
    uint64_t acked = lf_tail__harv_acked(h);
    uint64_t held = lf_chain_held_offset(h->chain);
    if (held < acked)
        acked = held;
    return acked < h->journal->start ? h->journal->start : acked;
}

/* Writes h's registry entry if its position or stream changed: the number acknowledged,
 * and the cursor of the entry before it. */
static bool journal_register(struct lf_tail *t, struct harv *h, int64_t wall_ms)
{
    struct tail_journal *tj = h->journal;
    if (t->reg == NULL || tj->j == NULL)
        return false;
    uint64_t acked = ack_point(h);
    if (acked == h->registered && !h->stream_unsaved)
        return false;
    char cursor[128];
    uint32_t dup = 0;
    if (!cursor_before(tj, acked, cursor, sizeof(cursor), &dup))
        return false;
    struct lf_file_id id = {
        .dev = 0, .ino = 0, .fp_len = dup > LF_FINGERPRINT_MAX ? LF_FINGERPRINT_MAX : dup,
        .fp_hash = tj->filter_hash,
    };
    if (lf_registry_set(t->reg, input_of(t, h)->id, &id, h->stream_id, acked, cursor, wall_ms))
        return false;
    h->registered = acked;
    h->stream_unsaved = false;
    ring_drop(tj, acked > 0 ? acked - 1 : 0);
    return true;
}

void lf_tail__journal_register(struct lf_tail *t, struct harv *h, int64_t wall_ms)
{
    lf_tail__harv_settle(t, h);
    journal_register(t, h, wall_ms);
}

/* A new stream is in the registry file before any of its events leaves. */
static void save_stream(struct lf_tail *t, struct harv *h)
{
    if (!h->stream_unsaved || t->reg == NULL)
        return;
    if (!journal_register(t, h, lf_now_ns() / 1000000))
        return; /* out of memory: tried again at the next registry update */
    struct lf_errbuf eb = { "" };
    if (lf_registry_sync(t->reg, &eb))
        lf_error("%s; the journal is read all the same (after a crash before its "
                 "position is saved, its events may be indexed twice)",
                 eb.msg);
}

/* Counts the journal files (*.journal, *.journal~) under dir and one level of machine-id
 * directories below it that this process may not read; the first one found goes into
 * first[4096] if that is still empty. */
static size_t count_unreadable(const char *dir, int depth, char *first)
{
    DIR *d = opendir(dir);
    if (d == NULL)
        return 0;
    size_t n = 0;
    struct dirent *e;
    char path[4096];
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.')
            continue;
        snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
        size_t len = strlen(e->d_name);
        bool journal = (len > 8 && strcmp(e->d_name + len - 8, ".journal") == 0) ||
                       (len > 9 && strcmp(e->d_name + len - 9, ".journal~") == 0);
        if (journal && access(path, R_OK) != 0) {
            if (first[0] == '\0')
                snprintf(first, 4096, "%s", path);
            n++;
        } else if (!journal && depth > 0 && e->d_type == DT_DIR) {
            n += count_unreadable(path, depth - 1, first);
        }
    }
    closedir(d);
    return n;
}

/* Journal files the agent's user may not read are left out by sd-journal without a word:
 * said once, with the fix. */
static void warn_unreadable(const struct lf_input_conf *in)
{
    char first[4096] = "";
    size_t n = 0;
    if (in->journal_directory != NULL) {
        n = count_unreadable(in->journal_directory, 1, first);
    } else if (in->n_journal_files == 0) {
        n = count_unreadable("/run/log/journal", 1, first);
        n += count_unreadable("/var/log/journal", 1, first);
    }
    if (n > 0)
        lf_warn("input %s: %zu journal files cannot be read by this user (such as %s): their "
                "entries are left out; add the user to the group systemd-journal (or adm) "
                "and restart",
                in->id, n, first);
}

/* Opens h's journal if it can; else tries again in scan_interval. */
static void try_open(struct lf_tail *t, struct harv *h, int64_t now_ms)
{
    struct tail_journal *tj = h->journal;
    const struct lf_input_conf *in = input_of(t, h);
    int r = open_handle(in, NULL, &tj->j);
    if (r < 0) {
        tj->next_open_ms = now_ms + (int64_t)in->scan_interval_ms;
        if (t->once) {
            lf_error("input %s: cannot open %s: %s", in->id, what(in, NULL), lf_strerror(-r));
            tj->at_end = true;
            uv_mutex_lock(&t->mu);
            t->stats.files_unreadable++;
            uv_mutex_unlock(&t->mu);
        } else if (!tj->wait_warned) {
            lf_warn("input %s: cannot open %s: %s; trying again every %" PRIu64 " ms", in->id,
                    what(in, NULL), lf_strerror(-r), in->scan_interval_ms);
        }
        tj->wait_warned = true;
        return;
    }
    if (tj->wait_warned)
        lf_info("input %s: %s can be read now", in->id, what(in, NULL));
    warn_unreadable(in);
    position(t, h, true);
    save_stream(t, h);
    tj->at_end = false;
    if (!t->once) {
        tj->fd = sd_journal_get_fd(tj->j);
        if (tj->fd < 0)
            lf_warn("input %s: cannot watch %s: %s; looking for new entries every second",
                    in->id, what(in, NULL), lf_strerror(-tj->fd));
        t->journal_fds_changed = true;
    }
}

struct harv *lf_tail__journal_new(struct lf_tail *t, size_t input_idx)
{
    struct harv *h = lf_tail__harv_new(t, input_idx, NULL);
    if (h == NULL)
        return NULL;
    struct tail_journal *tj = calloc(1, sizeof(*tj));
    if (tj == NULL || lf_jentry_new(&t->cfg->inputs[input_idx], &tj->conv)) {
        free(tj);
        lf_tail__harv_free(t, h);
        return NULL;
    }
    tj->fd = -1;
    tj->filter_hash = filter_hash(&t->cfg->inputs[input_idx]);
    h->journal = tj;
    h->identified = true;
    if (t->pipeline != NULL) /* --preview opens its own */
        try_open(t, h, lf_tail__now_ms());
    return h;
}

void lf_tail__journal_free(struct harv *h)
{
    struct tail_journal *tj = h->journal;
    if (tj == NULL)
        return;
    if (tj->j != NULL)
        sd_journal_close(tj->j);
    lf_jentry_free(tj->conv);
    free(tj->ring);
    free(tj);
    h->journal = NULL;
}

int lf_tail__journal_fd(const struct harv *h)
{
    return h->journal != NULL && h->journal->j != NULL ? h->journal->fd : -1;
}

bool lf_tail__journal_done(const struct harv *h)
{
    return h->journal == NULL || h->journal->at_end;
}

void lf_tail__journal_poll(struct lf_tail *t, struct harv *h, int64_t now_ms)
{
    struct tail_journal *tj = h->journal;
    if (tj->j == NULL) {
        if (now_ms >= tj->next_open_ms)
            try_open(t, h, now_ms);
        return;
    }
    int r = sd_journal_process(tj->j); /* new files, rotation, appended entries */
    if (r < 0 && !tj->error_warned) {
        lf_warn("input %s: %s: %s", input_of(t, h)->id, what(input_of(t, h), NULL),
                lf_strerror(-r));
        tj->error_warned = true;
    }
    const struct lf_input_conf *in = input_of(t, h);
    bool filtered = in->n_journal_units > 0 || in->n_journal_matches > 0 ||
                    in->journal_priority < 7;
    if (tj->at_end && filtered && tj->have_last && !tj->reread) {
        /* With matches, libsystemd (252) can miss an entry appended after it found the end
         * until the file grows again: looking again from the last entry read finds it. */
        char cursor[128];
        bool reread = false;
        render_cursor(&tj->last, cursor, sizeof(cursor));
        if (seek_after(tj->j, cursor, tj->last.dup, &reread) >= 0)
            tj->reread = reread;
    }
    tj->at_end = false;
}

/* libsystemd (252) can show a writer's newest entry before all its data is linked: read
 * then, its MESSAGE is missing without an error, and there a moment later. So an entry
 * without MESSAGE that is the last one there is read again after LF_JOURNAL_RETRY_MS, up to
 * LF_JOURNAL_RETRIES times; one with a later entry after it is complete, and taken as it is.
 * True: wait for it (the handle stays on it). */
#define LF_JOURNAL_RETRY_MS 50
#define LF_JOURNAL_RETRIES 20
static bool message_pending(struct lf_tail *t, struct tail_journal *tj)
{
    const void *d;
    size_t len;
    if (tj->msg_tries >= LF_JOURNAL_RETRIES ||
        sd_journal_get_data(tj->j, "MESSAGE", &d, &len) != -ENOENT)
        return false;
    if (sd_journal_next(tj->j) > 0) {
        /* A later entry: this one is whole. The handle stays on the later one, read next
         * (never stepping back: backwards over a damaged file sd-journal drops it). */
        tj->reread = true;
        return false;
    }
    tj->msg_tries++;
    int64_t due = lf_tail__now_ms() + LF_JOURNAL_RETRY_MS;
    if (due < t->next_journal_ms)
        t->next_journal_ms = due;
    return true;
}

/* Reads the current entry's position; false if the entry cannot be read. */
static bool entry_pos(struct tail_journal *tj, struct jpos *p)
{
    if (sd_journal_get_realtime_usec(tj->j, &p->realtime) < 0 ||
        sd_journal_get_monotonic_usec(tj->j, &p->monotonic, &p->boot) < 0)
        return false;
    p->dup = tj->have_last && same_pos(p, &tj->last) ? tj->last.dup + 1 : 0;
    return true;
}

/* Converts the current entry; false if its data cannot be read (a corrupt entry). */
static bool entry_convert(struct lf_tail *t, struct harv *h, uint64_t realtime,
                          struct lf_jentry_out *o, enum lf_err *err)
{
    struct tail_journal *tj = h->journal;
    const void *d;
    size_t len;
    int r;
    lf_jentry_begin(tj->conv, realtime);
    sd_journal_restart_data(tj->j);
    while ((r = sd_journal_enumerate_available_data(tj->j, &d, &len)) > 0) {
        *err = lf_jentry_add(tj->conv, d, len);
        if (*err)
            return false;
    }
    if (r < 0) {
        if (!tj->error_warned)
            lf_warn("input %s: an entry of %s cannot be read: %s; skipping it",
                    input_of(t, h)->id, what(input_of(t, h), NULL), lf_strerror(-r));
        tj->error_warned = true;
        return false;
    }
    *err = lf_jentry_end(tj->conv, o);
    return *err == LF_OK;
}

enum lf_err lf_tail__journal_read(struct lf_tail *t, struct harv *h, size_t max, bool *more)
{
    struct tail_journal *tj = h->journal;
    *more = false;
    if (tj->j == NULL || tj->at_end)
        return LF_OK;
    save_stream(t, h);
    uint64_t ap = ack_point(h); /* the positions of entries answered are not needed */
    ring_drop(tj, ap > 0 ? ap - 1 : 0);
    const struct lf_input_conf *in = input_of(t, h);
    struct lf_clock now;
    lf_clock_read(&now);
    struct lf_tail_input_stats add = { 0 };
    uint64_t skipped = 0; /* too long, dropped (line_overflow: skip) */
    enum lf_err err = LF_OK;
    size_t n = 0;
    t->reading = h;
    for (; n < max && !err; n++) {
        if (t->pipeline != NULL && lf_pipeline_yielding(t->pipeline)) {
            n = max; /* a reload waits: it is taken before the rest is read */
            break;
        }
        int r = 1;
        if (!tj->reread)
            r = sd_journal_next(tj->j);
        tj->reread = false;
        if (r <= 0) {
            if (r < 0 && !tj->error_warned) {
                lf_warn("input %s: %s: %s", in->id, what(in, NULL), lf_strerror(-r));
                tj->error_warned = true;
            }
            tj->at_end = true;
            break;
        }
        struct jpos p;
        if (!entry_pos(tj, &p))
            continue; /* no position: nothing a cursor could name; a restart reads it too */
        struct lf_jentry_out o;
        bool converted = entry_convert(t, h, p.realtime, &o, &err);
        if (err)
            converted = false;
        else if (converted && o.message.len == 0 && message_pending(t, tj)) {
            tj->reread = true; /* this very entry, once its MESSAGE is linked */
            if (!t->once) {
                tj->at_end = true;
                break;
            }
            nanosleep(&(struct timespec){ 0, LF_JOURNAL_RETRY_MS * 1000000L }, NULL);
            continue;
        }
        tj->msg_tries = 0;
        err = ring_push(tj, &p);
        if (err) {
            tj->reread = true; /* read again at the next turn */
            break;
        }
        tj->last = p;
        tj->have_last = true;
        uint64_t number = tj->next++;
        if (!converted)
            continue;
        add.bytes += o.bytes;
        add.invalid_bytes += o.invalid;
        add.truncated += o.truncated;
        skipped += o.skip;
        if (o.skip)
            continue; /* its number is passed over by the next event's answer */
        struct lf_event ev = {
            .message = o.message,
            .timestamp_ns = o.timestamp_ns,
            .offset = number,
            .end_offset = number + 1,
            .flags = o.truncated ? LF_EVENT_TRUNCATED : 0,
            .source = h->src,
            .extra = o.extra,
        };
        if (o.message.len == 0 && in->skip_empty_lines)
            ev.flags |= LF_EVENT_DROPPED;
        err = lf_chain_process(h->chain, &ev, now.mono_ms);
    }
    t->reading = NULL;
    *more = n >= max;
    uv_mutex_lock(&t->mu);
    struct lf_tail_input_stats *is = &t->in_stats[h->input_idx];
    is->bytes += add.bytes;
    is->invalid_bytes += add.invalid_bytes;
    is->truncated += add.truncated + skipped; /* the metric counts both, as for files */
    t->stats.bytes += add.bytes;
    t->stats.invalid_bytes += add.invalid_bytes;
    t->stats.truncated += add.truncated;
    t->stats.skipped_long += skipped;
    uv_mutex_unlock(&t->mu);
    lf_tail__harv_settle(t, h);
    return err;
}

enum lf_err lf_tail__journal_rebind(struct lf_tail *t, struct harv *h, size_t input_idx,
                                    bool changed)
{
    struct tail_journal *tj = h->journal;
    const struct lf_input_conf *in = &t->cfg->inputs[input_idx];
    struct lf_jentry *conv = NULL;
    if (lf_jentry_new(in, &conv))
        return LF_ENOMEM;
    lf_jentry_free(tj->conv); /* it read the old config's input */
    tj->conv = conv;
    enum lf_err err = changed ? lf_tail__harv_flush(t, h) : LF_OK; /* with the old stages */
    h->input_idx = input_idx;
    if (!changed || err)
        return err;
    struct lf_chain *chain = NULL;
    err = lf_chain_new(t->specs[input_idx], &h->sink, &chain);
    if (err)
        return err;
    lf_chain_free(h->chain);
    h->chain = chain;
    uint64_t fh = filter_hash(in);
    if (fh == tj->filter_hash || tj->j == NULL) {
        tj->filter_hash = fh;
        return lf_tail__harv_new_source(t, h, h->acked, false);
    }
    /* Other filters number other entries: a new stream, from the position acknowledged
     * (entries in flight that the new filters keep are read again). */
    char cursor[128] = "";
    uint32_t dup = 0;
    uint64_t at = ack_point(h);
    if (!cursor_before(tj, at, cursor, sizeof(cursor), &dup))
        cursor_before(tj, tj->start, cursor, sizeof(cursor), &dup);
    err = lf_tail__harv_new_source(t, h, 0, true);
    if (err)
        return err;
    tj->filter_hash = fh;
    sd_journal_flush_matches(tj->j);
    int r = add_matches(tj->j, in);
    if (r < 0)
        lf_warn("input %s: cannot apply the new matches: %s", in->id, lf_strerror(-r));
    if (cursor[0] == '\0' || seek_after(tj->j, cursor, dup, &tj->reread) < 0)
        sd_journal_seek_head(tj->j);
    snprintf(tj->start_cursor, sizeof(tj->start_cursor), "%s", cursor);
    tj->start_dup = dup;
    tj->start = tj->base = tj->next = 0;
    tj->head = 0;
    h->registered = UINT64_MAX;
    h->emitted_end = 0;
    tj->at_end = false;
    save_stream(t, h);
    return LF_OK;
}

enum lf_err lf_tail_read_journal(const struct lf_config *cfg, struct lf_chain_spec *const *specs,
                                 size_t input_idx, const char *path,
                                 const struct lf_stage_out *sink, struct lf_errbuf *eb)
{
    struct lf_tail *t = NULL;
    enum lf_err err = lf_tail_new(cfg, specs, NULL, NULL, NULL, LF_TAIL_ONCE, &t, eb);
    if (err)
        return err;
    t->sink = *sink;
    struct harv *h = lf_tail__journal_new(t, input_idx);
    if (h == NULL) {
        lf_tail_free(t);
        return lf_fail(eb, LF_ENOMEM, "out of memory");
    }
    const struct lf_input_conf *in = &cfg->inputs[input_idx];
    int r = open_handle(in, path, &h->journal->j);
    if (r < 0) {
        err = lf_fail(eb, LF_EIO, "cannot open %s: %s", what(in, path), lf_strerror(-r));
    } else {
        position(t, h, false);
        bool more = true;
        while (!err && !h->journal->at_end)
            err = lf_tail__journal_read(t, h, 4096, &more);
        if (!err)
            err = lf_tail__harv_flush(t, h);
    }
    lf_tail__harv_free(t, h);
    lf_tail_free(t);
    return err;
}

bool lf_tail__journal_has_entries(const struct lf_tail *t)
{
    for (size_t i = 0; i < t->n_jh; i++) {
        if (t->jh[i]->journal != NULL && t->jh[i]->journal->have_last)
            return true; /* a journald input read some */
    }
    sd_journal *j = NULL;
    if (sd_journal_open(&j, SD_JOURNAL_LOCAL_ONLY) < 0)
        return false;
    bool yes = sd_journal_seek_head(j) >= 0 && sd_journal_next(j) > 0;
    sd_journal_close(j);
    return yes;
}

#else /* no libsystemd: the config loader refuses journald inputs */

struct harv *lf_tail__journal_new(struct lf_tail *t, size_t input_idx)
{
    (void)t;
    (void)input_idx;
    return NULL;
}

void lf_tail__journal_free(struct harv *h)
{
    (void)h;
}

int lf_tail__journal_fd(const struct harv *h)
{
    (void)h;
    return -1;
}

bool lf_tail__journal_done(const struct harv *h)
{
    (void)h;
    return true;
}

void lf_tail__journal_poll(struct lf_tail *t, struct harv *h, int64_t now_ms)
{
    (void)t;
    (void)h;
    (void)now_ms;
}

enum lf_err lf_tail__journal_read(struct lf_tail *t, struct harv *h, size_t max, bool *more)
{
    (void)t;
    (void)h;
    (void)max;
    *more = false;
    return LF_OK;
}

void lf_tail__journal_register(struct lf_tail *t, struct harv *h, int64_t wall_ms)
{
    (void)t;
    (void)h;
    (void)wall_ms;
}

enum lf_err lf_tail__journal_rebind(struct lf_tail *t, struct harv *h, size_t input_idx,
                                    bool changed)
{
    (void)t;
    (void)h;
    (void)input_idx;
    (void)changed;
    return LF_OK;
}

enum lf_err lf_tail_read_journal(const struct lf_config *cfg, struct lf_chain_spec *const *specs,
                                 size_t input_idx, const char *path,
                                 const struct lf_stage_out *sink, struct lf_errbuf *eb)
{
    (void)cfg;
    (void)specs;
    (void)input_idx;
    (void)path;
    (void)sink;
    return lf_fail(eb, LF_EINVAL, "this logferry was built without libsystemd: no journald");
}

bool lf_tail__journal_has_entries(const struct lf_tail *t)
{
    (void)t;
    return false;
}

#endif
