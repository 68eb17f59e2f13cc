/* once.c - backfill (--once) and --preview (see once.h).
 *
 * Backfill: discover every input's files first (so the progress line knows the total),
 * start each where the registry says this very file was acknowledged up to (or at 0),
 * then harvest them into the pipeline, whose lanes encode, compress and write on threads
 * of their own; finally drain, so the exit code says whether every event was acknowledged,
 * and save the acknowledged offsets: a second run over the same files reads only what was
 * added since.
 *
 * With several files, several CPUs and at least LF_ONCE_PARALLEL_BYTES to read, several
 * readers harvest at once: this thread and up to LF_ONCE_MAX_READERS - 1 more, one per CPU
 * the process may run on, each taking the next file of the plan and reading it whole
 * through a pipeline producer of its own. A file is read by one reader, so its events
 * reach every output in offset order; files read at once interleave batch by batch.
 *
 * Before any file is read, this thread places every file (identity, where it starts, its
 * stream id: the registry's for the content it knows, else a new one) and writes the
 * stream ids that are new to the registry: a run that crashes after sending finds them
 * again, so its resent events name the same documents. The registry is then only read
 * while the readers run, and written again at the end, by this thread. */
#include "config.h"

#define LF_LOG_COMPONENT "once"
#include "logferry/once.h"
#include "logferry/startup.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <uv.h>

#include "logferry/buf.h"
#include "logferry/discover.h"
#include "logferry/fsutil.h"
#include "logferry/event.h"
#include "logferry/harvest.h"
#include "logferry/identity.h"
#include "logferry/log.h"
#include "logferry/pipeline.h"
#include "logferry/progress.h"
#include "logferry/registry.h"
#include "logferry/roots.h"
#include "logferry/stage.h"

struct planned {
    char *path; /* owned */
    uint64_t size;
    size_t input_idx;
    struct lf_file_id id;    /* valid when src is set, or identified */
    bool identified;         /* placed before reading: id, offset and stream_id are set */
    uint64_t offset;         /* where reading starts */
    uint64_t stream_id;      /* the stream its events belong to, saved in the registry */
    struct lf_source *src;   /* borrowed from once.sources; NULL until the file is read */
};

/* Readers at once, at most: this thread and the pipeline producers it may add. */
#define LF_ONCE_MAX_READERS 8
/* A backfill smaller than this in all is read by one reader, file after file: it would
 * gain little, and its output keeps the files' order. */
#define LF_ONCE_PARALLEL_BYTES (64u << 20)

struct once;

/* One thread harvesting files of the plan. */
struct reader {
    struct once *o;
    struct lf_producer *prod; /* owned; NULL: this thread's, the pipeline's own producer */
    size_t input_idx;         /* the input being harvested */
    struct lf_harvest_stats stats;
    uint64_t files_failed;
    enum lf_err err;    /* why it stopped early */
    uv_thread_t thread; /* readers after the first */
};

struct once {
    const struct lf_config *cfg; /* borrowed */
    struct lf_pipeline *pipeline;
    struct lf_registry *reg;      /* read by the readers, written by this thread at the end */
    struct lf_chain_spec **specs; /* owned; per input; shared by the readers (read-only) */
    size_t input_idx;             /* discovery: the input being scanned */
    char host[256];
    struct planned *files; /* owned */
    size_t n_files;
    size_t cap_files;
    size_t next_file;           /* the next file a reader takes (atomic) */
    bool stop;                  /* a reader failed: the others take no more files (atomic) */
    uv_mutex_t mu;              /* guards sources and progress */
    struct lf_source **sources; /* owned; kept until every batch is acknowledged */
    size_t n_sources;
    size_t cap_sources;
    struct lf_harvest_stats stats; /* the readers', added up once they end */
    uint64_t files_failed;
    struct lf_progress progress;
};

static int plan_file(void *arg, const char *path, const struct stat *st)
{
    struct once *o = arg;
    if (o->n_files == o->cap_files) {
        size_t cap = o->cap_files ? o->cap_files * 2 : 64;
        struct planned *f = realloc(o->files, cap * sizeof(*f));
        if (f == NULL)
            return 1;
        o->files = f;
        o->cap_files = cap;
    }
    char *copy = strdup(path);
    if (copy == NULL)
        return 1;
    o->files[o->n_files++] = (struct planned){ .path = copy, .size = (uint64_t)st->st_size,
                                               .input_idx = o->input_idx };
    return 0;
}

static enum lf_err emit(void *arg, const struct lf_event *ev)
{
    struct reader *r = arg;
    if (r->prod != NULL)
        return lf_producer_push(r->prod, r->input_idx, ev);
    return lf_pipeline_push(r->o->pipeline, r->input_idx, ev);
}

static void progress_add(struct once *o, uint64_t n)
{
    uv_mutex_lock(&o->mu);
    lf_progress_add(&o->progress, n);
    uv_mutex_unlock(&o->mu);
}

static void on_chunk(void *arg, size_t n)
{
    struct reader *r = arg;
    progress_add(r->o, n);
}

static struct lf_source *new_source(struct reader *r, const char *path)
{
    struct once *o = r->o;
    const struct lf_input_conf *in = &o->cfg->inputs[r->input_idx];
    struct lf_source *src = NULL;
    if (lf_source_new(path, in->id, o->host, in->fields_json, in->fields_under_root, &src))
        return NULL;
    uv_mutex_lock(&o->mu);
    if (o->n_sources == o->cap_sources) {
        size_t cap = o->cap_sources ? o->cap_sources * 2 : 64;
        struct lf_source **s = realloc(o->sources, cap * sizeof(*s));
        if (s == NULL) {
            uv_mutex_unlock(&o->mu);
            lf_source_free(src);
            return NULL;
        }
        o->sources = s;
        o->cap_sources = cap;
    }
    o->sources[o->n_sources++] = src;
    uv_mutex_unlock(&o->mu);
    return src;
}

/* Harvests one fd into the pipeline: the file f (NULL: stdin, a new stream of its own).
 * A file that cannot be read is a warning, not an end: returns LF_EIO only when the
 * pipeline has failed (delivery cannot succeed any more). */
static enum lf_err harvest(struct reader *r, int fd, struct planned *f)
{
    struct once *o = r->o;
    const struct lf_input_conf *in = &o->cfg->inputs[r->input_idx];
    const char *path = f != NULL ? f->path : NULL;
    uint64_t offset = f != NULL ? f->offset : 0;
    struct lf_source *src = new_source(r, path);
    if (src == NULL)
        return LF_ENOMEM;
    src->acked_offset = offset;
    src->stream_id = f != NULL ? f->stream_id : lf_stream_id_new(); /* stdin: one per run */
    if (f != NULL) {
        src->file_dev = f->id.dev;
        src->file_ino = f->id.ino;
        f->src = src;
    }
    struct lf_harvest_sink sink = { emit, on_chunk, r };
    struct lf_errbuf eb = { "" };
    enum lf_err err =
        lf_harvest_fd(in, o->specs[r->input_idx], fd, offset, src, &sink, &r->stats, &eb);
    if (err == LF_EIO && eb.msg[0] != '\0') {
        lf_warn("input %s: %s: %s; going on with the other files", in->id,
                path != NULL ? path : "stdin", eb.msg);
        r->files_failed++;
        return LF_OK;
    }
    return err;
}

/* Places f, whose identity was just read from fd (fstat'ed as st): its registry offset and
 * stream id if the registry knows this very content, else 0 and a new stream id. Returns
 * true if the registry must learn f before it is read: a new stream id, or one saved with
 * an empty fingerprint (the file was empty) while f has content now, which a later run
 * must be able to tell from content that replaces it. */
static bool place(struct once *o, struct planned *f, int fd, const struct stat *st)
{
    const struct lf_input_conf *in = &o->cfg->inputs[f->input_idx];
    const struct lf_registry_entry *e = lf_registry_find(o->reg, in->id, f->id.dev, f->id.ino);
    enum lf_id_match m = LF_ID_DIFFERENT;
    struct lf_errbuf eb = { "" };
    f->offset = 0;
    f->stream_id = 0;
    if (e != NULL && !lf_file_id_match(&e->id, fd, &f->id, &m, &eb) && m == LF_ID_SAME &&
        e->offset <= (uint64_t)st->st_size) {
        f->offset = e->offset;
        f->stream_id = e->stream_id; /* 0 in a version 1 registry: a new one below */
    }
    f->identified = true;
    if (f->stream_id != 0)
        return e->id.fp_len == 0 && f->id.fp_len > 0;
    f->stream_id = lf_stream_id_new();
    return true;
}

/* Places every planned file before any is read, and saves the new stream ids (one
 * registry write). A file that cannot be opened now is left to harvest_path(), which says
 * why. Returns nonzero if the registry cannot be written. */
static int place_all(struct once *o)
{
    int64_t now_ms = lf_now_ns() / 1000000;
    size_t fresh = 0;
    for (size_t i = 0; i < o->n_files; i++) {
        struct planned *f = &o->files[i];
        int fd = open(f->path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
        struct stat st;
        struct lf_errbuf eb = { "" };
        if (fd >= 0 && !lf_roots_check(&o->cfg->inputs[f->input_idx], fd, &eb) &&
            fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && !lf_file_id_read(fd, &st, &f->id, &eb) &&
            place(o, f, fd, &st)) {
            const char *id = o->cfg->inputs[f->input_idx].id;
            if (lf_registry_set(o->reg, id, &f->id, f->stream_id, f->offset, f->path, now_ms)) {
                close(fd);
                lf_error("registry: out of memory");
                return 1;
            }
            fresh++;
        }
        if (fd >= 0)
            close(fd);
    }
    struct lf_errbuf eb = { "" };
    if (fresh > 0 && lf_registry_flush(o->reg, &eb)) {
        lf_error("registry: %s (the stream ids of %zu files are saved before they are read)",
                 eb.msg, fresh);
        return 1;
    }
    return 0;
}

static enum lf_err harvest_path(struct reader *r, struct planned *f)
{
    struct once *o = r->o;
    const struct lf_input_conf *in = &o->cfg->inputs[f->input_idx];
    r->input_idx = f->input_idx;
    int fd = open(f->path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
    struct stat st;
    struct lf_errbuf eb = { "" };
    enum lf_err rerr = fd < 0 ? LF_OK : lf_roots_check(in, fd, &eb);
    if (rerr == LF_EREJECTED) {
        lf_warn("input %s: refusing %s: %s; skipping it", in->id, f->path, eb.msg);
        close(fd);
        progress_add(o, f->size);
        return LF_OK;
    }
    struct lf_file_id now;
    if (fd < 0 || rerr || fstat(fd, &st) != 0 || lf_file_id_read(fd, &st, &now, &eb)) {
        int e = errno;
        lf_warn("input %s: cannot read %s: %s; skipping it", in->id, f->path,
                eb.msg[0] ? eb.msg : lf_strerror(e));
        if (fd >= 0)
            close(fd);
        r->files_failed++;
        progress_add(o, f->size);
        return LF_OK;
    }
    enum lf_id_match m = LF_ID_DIFFERENT;
    if (f->identified && lf_file_id_match(&f->id, fd, &now, &m, &eb))
        m = LF_ID_DIFFERENT;
    f->id = now;
    if (m != LF_ID_SAME) {
        /* Replaced since it was placed (or not openable then): placed again; a new stream
         * id is not saved before reading (a crash may index its events twice, never lose
         * them). */
        place(o, f, fd, &st);
    }
    uint64_t offset = f->offset;
    if (offset > 0 && lseek(fd, (off_t)offset, SEEK_SET) < 0)
        f->offset = offset = 0;
    progress_add(o, offset);
#ifdef HAVE_POSIX_FADVISE
    lf_err_ignore(posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL) ? LF_EIO : LF_OK); /* a hint */
#endif
    enum lf_err err = harvest(r, fd, f);
    close(fd);
    return err;
}

/* Harvests the files of the plan, taking the next one until none is left or a reader
 * failed. */
static void read_files(struct reader *r)
{
    struct once *o = r->o;
    while (!r->err && !__atomic_load_n(&o->stop, __ATOMIC_RELAXED)) {
        size_t i = __atomic_fetch_add(&o->next_file, 1, __ATOMIC_RELAXED);
        if (i >= o->n_files)
            break;
        r->err = harvest_path(r, &o->files[i]);
    }
    if (r->err)
        __atomic_store_n(&o->stop, true, __ATOMIC_RELAXED);
}

static void reader_main(void *arg)
{
    struct reader *r = arg;
    read_files(r);
    lf_producer_free(r->prod); /* queues what it still holds */
    r->prod = NULL;
}

static void add_stats(struct lf_harvest_stats *to, const struct lf_harvest_stats *s)
{
    to->events += s->events;
    to->bytes += s->bytes;
    to->truncated += s->truncated;
    to->skipped_long += s->skipped_long;
    to->skipped_empty += s->skipped_empty;
    to->filtered += s->filtered;
    to->invalid_bytes += s->invalid_bytes;
}

/* Harvests every planned file with one reader per usable CPU (at most one per file; one
 * for less than LF_ONCE_PARALLEL_BYTES), this thread being the first, then the stdin inputs
 * on this thread. */
static enum lf_err harvest_all(struct once *o, uint64_t total)
{
    struct reader readers[LF_ONCE_MAX_READERS] = { { 0 } };
    size_t n = total >= LF_ONCE_PARALLEL_BYTES ? lf_usable_cpus() : 1;
    if (n > o->n_files)
        n = o->n_files;
    if (n > LF_ONCE_MAX_READERS)
        n = LF_ONCE_MAX_READERS;
    if (n == 0)
        n = 1;
    size_t started = 1; /* readers[1..started) run on threads of their own */
    readers[0].o = o;
    for (size_t k = 1; k < n; k++) {
        struct reader *r = &readers[k];
        r->o = o;
        if (lf_producer_new(o->pipeline, &r->prod))
            break; /* fewer readers: not an error */
        if (uv_thread_create(&r->thread, reader_main, r) != 0) {
            lf_producer_free(r->prod);
            r->prod = NULL;
            break;
        }
        started++;
    }
    lf_debug("backfill: %zu reader(s) for %zu file(s)", started, o->n_files);
    read_files(&readers[0]);
    enum lf_err err = LF_OK;
    for (size_t k = 0; k < started; k++) {
        if (k > 0)
            uv_thread_join(&readers[k].thread);
        if (!err)
            err = readers[k].err;
    }
    for (size_t i = 0; i < o->cfg->n_inputs && !err; i++) {
        if (o->cfg->inputs[i].type != LF_INPUT_STDIN)
            continue;
        readers[0].input_idx = i;
        err = harvest(&readers[0], STDIN_FILENO, NULL);
    }
    for (size_t k = 0; k < started; k++) {
        add_stats(&o->stats, &readers[k].stats);
        o->files_failed += readers[k].files_failed;
    }
    return err;
}

/* Writes the acknowledged offset of every file read into the registry and flushes it. */
static int save_registry(struct once *o)
{
    int64_t now_ms = lf_now_ns() / 1000000;
    for (size_t i = 0; i < o->n_files; i++) {
        struct planned *f = &o->files[i];
        if (f->src == NULL)
            continue;
        const char *id = o->cfg->inputs[f->input_idx].id;
        uint64_t acked = lf_source_resume_offset(f->src);
        if (lf_registry_set(o->reg, id, &f->id, f->src->stream_id, acked, f->path, now_ms))
            return 1;
    }
    struct lf_errbuf eb = { "" };
    if (lf_registry_flush(o->reg, &eb)) {
        lf_error("registry: %s", eb.msg);
        return 1;
    }
    return 0;
}

static void free_once(struct once *o)
{
    lf_agent_free_chains(o->cfg, o->specs);
    lf_pipeline_free(o->pipeline);
    lf_registry_free(o->reg);
    for (size_t i = 0; i < o->n_files; i++)
        free(o->files[i].path);
    free(o->files);
    for (size_t i = 0; i < o->n_sources; i++)
        lf_source_free(o->sources[i]);
    free(o->sources);
    uv_mutex_destroy(&o->mu);
}

static int discover_all(struct once *o)
{
    for (size_t i = 0; i < o->cfg->n_inputs; i++) {
        const struct lf_input_conf *in = &o->cfg->inputs[i];
        if (in->type != LF_INPUT_FILE)
            continue;
        struct lf_discover *d = NULL;
        struct lf_errbuf eb = { "" };
        if (lf_discover_new(in, &d, &eb)) {
            lf_error("%s", eb.msg);
            return 2;
        }
        o->input_idx = i;
        enum lf_err err = lf_discover_scan(d, lf_now_ns() / 1000000, plan_file, o);
        lf_discover_free(d);
        if (err) {
            lf_error("input %s: file discovery failed: %s", in->id, lf_err_str(err));
            return 1;
        }
    }
    return 0;
}

/* "; output NAME: N delivered, M dead-lettered" for every output into buf: an event an
 * output refused for good is acknowledged (kept in its dead letters), never delivered. */
static void output_counts(struct once *o, char *buf, size_t size)
{
    size_t len = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < o->cfg->n_outputs && len < size; i++) {
        struct lf_pipeline_output_stats os;
        lf_pipeline_output_stats(o->pipeline, o->cfg->outputs[i].name, &os);
        int n = snprintf(buf + len, size - len, "; output %s: %" PRIu64 " delivered, %" PRIu64
                         " dead-lettered", o->cfg->outputs[i].name, os.events_acked,
                         os.dead_letters);
        if (n < 0)
            break;
        len += (size_t)n;
    }
}

static void summary(struct once *o, int64_t start_ns)
{
    struct lf_pipeline_stats ps;
    lf_pipeline_stats(o->pipeline, &ps);
    char outputs[1024];
    output_counts(o, outputs, sizeof(outputs));
    double secs = (double)(lf_now_ns() - start_ns) / 1e9;
    double mib = (double)o->stats.bytes / (1024.0 * 1024.0);
    lf_info("backfill done: %zu files (%" PRIu64 " unreadable), %" PRIu64 " events read, "
            "%" PRIu64 " filtered out, %s%s; %.1f MiB in %.2f s (%.1f MiB/s); %" PRIu64
            " truncated, %" PRIu64 " dropped as too long, %" PRIu64 " invalid bytes",
            o->n_files, o->files_failed, o->stats.events, o->stats.filtered,
            ps.events_acked == ps.events_in ? "all acknowledged" : "NOT all acknowledged",
            outputs, mib, secs, secs > 0 ? mib / secs : 0.0, o->stats.truncated,
            o->stats.skipped_long, o->stats.invalid_bytes);
}

int lf_once_run(const struct lf_config *cfg)
{
    struct lf_chain_spec **specs = NULL;
    int rc = lf_agent_compile_chains(cfg, &specs);
    if (rc)
        return rc;
    struct once o = { .cfg = cfg, .specs = specs };
    if (uv_mutex_init(&o.mu) != 0) {
        lf_agent_free_chains(cfg, specs);
        lf_error("cannot create a mutex");
        return 1;
    }
    if (!lf_agent_data_dir_ok(cfg)) {
        free_once(&o);
        return 1;
    }
    if (gethostname(o.host, sizeof(o.host)) != 0)
        strcpy(o.host, "localhost");
    o.host[sizeof(o.host) - 1] = '\0';
    int64_t start_ns = lf_now_ns();
    if (lf_agent_open_registry(cfg, &o.reg)) {
        free_once(&o);
        return 1;
    }

    rc = discover_all(&o);
    if (!rc)
        rc = place_all(&o);
    if (rc)
        goto out;
    uint64_t total = 0;
    for (size_t i = 0; i < o.n_files; i++)
        total += o.files[i].size;
    lf_progress_init(&o.progress, STDERR_FILENO, total);

    struct lf_errbuf eb = { "" };
    if (lf_pipeline_new(cfg, &o.pipeline, &eb)) {
        lf_error("%s", eb.msg);
        rc = 1;
        goto out;
    }
    enum lf_err err = harvest_all(&o, total);
    enum lf_err derr = lf_pipeline_drain(o.pipeline, &eb);
    lf_pipeline_take_acks(o.pipeline, NULL, NULL);
    lf_progress_done(&o.progress);
    if (derr || err) {
        struct lf_pipeline_stats ps;
        lf_pipeline_stats(o.pipeline, &ps);
        lf_error("backfill incomplete: %" PRIu64 " events are waiting (not acknowledged; the "
                 "next run reads them again): %s", ps.events_in - ps.events_acked,
                 derr ? eb.msg : lf_err_str(err));
        rc = 1;
    }
    if (save_registry(&o))
        rc = 1;
    /* With the spool, what is in it counts as acknowledged for the registry (saved above);
     * the run succeeds only once the outputs have it all, this run's and earlier ones'. */
    if (rc == 0 && lf_pipeline_drain_spool(o.pipeline, &eb)) {
        lf_error("backfill incomplete: %s", eb.msg);
        rc = 1;
    }
    summary(&o, start_ns);
out:
    free_once(&o);
    return rc;
}
