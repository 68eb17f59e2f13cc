/* registry.c - the in-memory registry: a chained hash table of entries keyed by input id +
 * device + inode.
 *
 * Durability lives in store.c; here: lookups, updates and the dirty flag that decides
 * whether a flush writes anything. The table doubles when it holds as many entries as
 * buckets, so a lookup walks about one node; it never shrinks (sweeps remove entries, the
 * bucket array stays: one pointer per file seen at the peak).
 *
 *   buckets[hash & (n_buckets - 1)] -> node -> node -> NULL
 *                                      |e: input_id, id, offset, path, updated_ms|
 */
#include "config.h"

#include "logferry/registry.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "logferry/err.h"
#include "registry_int.h"

#define MIN_BUCKETS 64

static uint64_t mix64(uint64_t x)
{
    /* splitmix64's finalizer: every input bit reaches every output bit. */
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ull;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebull;
    x ^= x >> 31;
    return x;
}

static uint64_t key_hash(const char *input_id, uint64_t dev, uint64_t ino)
{
    uint64_t h = lf_file_id_hash(input_id, strlen(input_id));
    h = mix64(h ^ dev);
    return mix64(h ^ ino);
}

static struct lf_registry__node **
slot_of(struct lf_registry *r, uint64_t hash, const char *input_id, uint64_t dev, uint64_t ino)
{
    if (r->n_buckets == 0)
        return NULL;
    struct lf_registry__node **pp = &r->buckets[hash & (r->n_buckets - 1)];
    for (; *pp != NULL; pp = &(*pp)->next) {
        const struct lf_registry__node *n = *pp;
        if (n->hash == hash && n->e.id.dev == dev && n->e.id.ino == ino &&
            strcmp(n->e.input_id, input_id) == 0)
            return pp;
    }
    return pp; /* the NULL link at the end of the chain */
}

enum lf_err lf_registry__reserve(struct lf_registry *r, size_t n)
{
    if (n <= r->n_buckets)
        return LF_OK;
    size_t want = r->n_buckets == 0 ? MIN_BUCKETS : r->n_buckets;
    while (want < n) {
        if (want > SIZE_MAX / 2 / sizeof(*r->buckets))
            return LF_ENOMEM;
        want *= 2;
    }
    struct lf_registry__node **b = calloc(want, sizeof(*b));
    if (b == NULL)
        return LF_ENOMEM;
    for (size_t i = 0; i < r->n_buckets; i++) {
        struct lf_registry__node *node = r->buckets[i];
        while (node != NULL) {
            struct lf_registry__node *next = node->next;
            size_t k = node->hash & (want - 1);
            node->next = b[k];
            b[k] = node;
            node = next;
        }
    }
    free(r->buckets);
    r->buckets = b;
    r->n_buckets = want;
    return LF_OK;
}

enum lf_err lf_registry__insert(struct lf_registry *r,
                               char *input_id,
                               const struct lf_file_id *id,
                               uint64_t stream_id,
                               uint64_t offset,
                               char *path,
                               int64_t updated_ms)
{
    enum lf_err err = input_id == NULL || path == NULL ? LF_ENOMEM : LF_OK;
    if (!err && r->count >= r->n_buckets) {
        err = lf_registry__reserve(r, r->count + 1);
        if (r->n_buckets > 0)
            err = LF_OK; /* a full table still works, just slower: only an empty one fails */
    }
    uint64_t hash = err ? 0 : key_hash(input_id, id->dev, id->ino);
    struct lf_registry__node **pp = err ? NULL : slot_of(r, hash, input_id, id->dev, id->ino);
    if (!err && *pp != NULL)
        err = LF_EINVAL;
    struct lf_registry__node *node = err ? NULL : malloc(sizeof(*node));
    if (!err && node == NULL)
        err = LF_ENOMEM;
    if (err) {
        free(input_id);
        free(path);
        return err;
    }
    node->e.input_id = input_id;
    node->e.id = *id;
    node->e.offset = offset;
    node->e.stream_id = stream_id;
    node->e.path = path;
    node->e.updated_ms = updated_ms;
    node->hash = hash;
    node->next = NULL;
    *pp = node;
    r->count++;
    return LF_OK;
}

static char *dup_join(const char *a, const char *b)
{
    size_t la = strlen(a);
    size_t lb = strlen(b);
    char *s = malloc(la + lb + 1);
    if (s == NULL)
        return NULL;
    memcpy(s, a, la);
    memcpy(s + la, b, lb + 1);
    return s;
}

enum lf_err lf_registry__new_empty(const char *data_dir, struct lf_registry **out)
{
    *out = NULL;
    struct lf_registry *r = calloc(1, sizeof(*r));
    if (r == NULL)
        return LF_ENOMEM;
    lf_buf_init(&r->out, SIZE_MAX / 2);
    r->dir = strdup(data_dir);
    r->file_path = dup_join(data_dir, "/registry");
    r->tmp_path = dup_join(data_dir, "/registry.tmp");
    r->journal_path = dup_join(data_dir, "/registry.log");
    r->jfd = -1;
    if (r->dir == NULL || r->file_path == NULL || r->tmp_path == NULL ||
        r->journal_path == NULL) {
        lf_registry_free(r);
        return LF_ENOMEM;
    }
    *out = r;
    return LF_OK;
}

/* Opens and loads; *corrupt (if not NULL) says whether a failure was the file's content. */
static enum lf_err open_registry(const char *data_dir, struct lf_registry **out, bool *corrupt,
                                 struct lf_errbuf *eb)
{
    struct lf_registry *r = NULL;
    *out = NULL;
    if (lf_registry__new_empty(data_dir, &r))
        return lf_fail(eb, LF_ENOMEM, "registry: out of memory");
    enum lf_err err = lf_registry__load(r, eb);
    if (err) {
        if (corrupt != NULL)
            *corrupt = r->load_corrupt;
        lf_registry_free(r);
        return err;
    }
    r->dirty = r->replayed; /* the first flush folds the journal into the file */
    *out = r;
    return LF_OK;
}

enum lf_err lf_registry_open(const char *data_dir, struct lf_registry **out, struct lf_errbuf *eb)
{
    return open_registry(data_dir, out, NULL, eb);
}

/* fsync of a directory, so that a rename in it survives a power cut. */
static int sync_dir(const char *dir)
{
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return errno;
    int e = fsync(fd) != 0 ? errno : 0;
    close(fd);
    return e;
}

enum lf_err lf_registry_open_reset(const char *data_dir, struct lf_registry **out,
                                   char **moved_to, struct lf_errbuf *eb)
{
    *moved_to = NULL;
    bool corrupt = false;
    enum lf_err err = open_registry(data_dir, out, &corrupt, eb);
    if (err != LF_EIO || !corrupt)
        return err;
    char *file = dup_join(data_dir, "/registry");
    char stamp[64];
    struct tm tm;
    time_t now = time(NULL);
    if (file == NULL || gmtime_r(&now, &tm) == NULL ||
        strftime(stamp, sizeof(stamp), "/registry.broken-%Y%m%dT%H%M%SZ", &tm) == 0) {
        free(file);
        return lf_fail(eb, LF_ENOMEM, "registry: out of memory");
    }
    /* Never replace an earlier broken file: it may be the only copy of someone's offsets. */
    size_t cap = strlen(data_dir) + strlen(stamp) + 16;
    char *aside = malloc(cap);
    if (aside == NULL) {
        free(file);
        return lf_fail(eb, LF_ENOMEM, "registry: out of memory");
    }
    snprintf(aside, cap, "%s%s", data_dir, stamp);
    for (unsigned k = 1; access(aside, F_OK) == 0 && k < 1000; k++)
        snprintf(aside, cap, "%s%s.%u", data_dir, stamp, k);
    if (rename(file, aside) != 0) {
        int e = errno;
        err = lf_fail(eb, LF_EIO, "registry: rename %s to %s: %s", file, aside, lf_strerror(e));
        free(file);
        free(aside);
        return err;
    }
    free(file);
    int e = sync_dir(data_dir);
    if (e) {
        free(aside);
        return lf_fail(eb, LF_EIO, "registry: fsync directory %s: %s", data_dir, lf_strerror(e));
    }
    err = open_registry(data_dir, out, NULL, eb);
    if (err) {
        free(aside);
        return err;
    }
    *moved_to = aside;
    return LF_OK;
}

static void free_node(struct lf_registry__node *node)
{
    free(node->e.input_id);
    free(node->e.path);
    free(node);
}

void lf_registry__clear(struct lf_registry *r)
{
    for (size_t i = 0; i < r->n_buckets; i++) {
        struct lf_registry__node *node = r->buckets[i];
        while (node != NULL) {
            struct lf_registry__node *next = node->next;
            free_node(node);
            node = next;
        }
        r->buckets[i] = NULL;
    }
    r->count = 0;
    r->dirty = true;
}

void lf_registry_free(struct lf_registry *r)
{
    if (r == NULL)
        return;
    lf_registry__writer_stop(r);
    lf_registry__clear(r);
    free(r->buckets);
    lf_buf_release(&r->out);
    free(r->dir);
    free(r->file_path);
    free(r->tmp_path);
    free(r->journal_path);
    if (r->jfd >= 0)
        close(r->jfd);
    free(r);
}

struct lf_registry_entry *
lf_registry_find(struct lf_registry *r, const char *input_id, uint64_t dev, uint64_t ino)
{
    struct lf_registry__node **pp = slot_of(r, key_hash(input_id, dev, ino), input_id, dev, ino);
    return pp != NULL && *pp != NULL ? &(*pp)->e : NULL;
}

static bool same_id(const struct lf_file_id *a, const struct lf_file_id *b)
{
    return a->dev == b->dev && a->ino == b->ino && a->fp_len == b->fp_len &&
           a->fp_hash == b->fp_hash;
}

enum lf_err lf_registry_set(struct lf_registry *r,
                            const char *input_id,
                            const struct lf_file_id *id,
                            uint64_t stream_id,
                            uint64_t offset,
                            const char *path,
                            int64_t now_ms)
{
    struct lf_registry_entry *e = lf_registry_find(r, input_id, id->dev, id->ino);
    if (e != NULL) {
        bool path_same = strcmp(e->path, path) == 0;
        if (path_same && e->offset == offset && e->stream_id == stream_id && same_id(&e->id, id))
            return LF_OK;
        if (!path_same) {
            char *p = strdup(path);
            if (p == NULL)
                return LF_ENOMEM;
            free(e->path);
            e->path = p;
        }
        e->id = *id;
        e->offset = offset;
        e->stream_id = stream_id;
        e->updated_ms = now_ms;
        r->dirty = true;
        lf_registry__note_set(r, e);
        return LF_OK;
    }
    enum lf_err err =
        lf_registry__insert(r, strdup(input_id), id, stream_id, offset, strdup(path), now_ms);
    if (err)
        return err;
    r->dirty = true;
    if (r->writer != NULL)
        lf_registry__note_set(r, lf_registry_find(r, input_id, id->dev, id->ino));
    return LF_OK;
}

void lf_registry_remove(struct lf_registry *r, const char *input_id, uint64_t dev, uint64_t ino)
{
    struct lf_registry__node **pp = slot_of(r, key_hash(input_id, dev, ino), input_id, dev, ino);
    if (pp == NULL || *pp == NULL)
        return;
    struct lf_registry__node *node = *pp;
    *pp = node->next;
    lf_registry__note_remove(r, &node->e);
    free_node(node);
    r->count--;
    r->dirty = true;
}

void lf_registry_sweep(struct lf_registry *r,
                       bool (*fn)(void *arg, const struct lf_registry_entry *e),
                       void *arg)
{
    for (size_t i = 0; i < r->n_buckets; i++) {
        struct lf_registry__node **pp = &r->buckets[i];
        while (*pp != NULL) {
            struct lf_registry__node *node = *pp;
            if (!fn(arg, &node->e)) {
                pp = &node->next;
                continue;
            }
            *pp = node->next;
            lf_registry__note_remove(r, &node->e);
            free_node(node);
            r->count--;
            r->dirty = true;
        }
    }
}

size_t lf_registry_count(const struct lf_registry *r)
{
    return r->count;
}

enum lf_err lf_registry_flush(struct lf_registry *r, struct lf_errbuf *eb)
{
    if (r->writer != NULL)
        return lf_registry__writer_flush(r, eb);
    if (!r->dirty)
        return LF_OK;
    enum lf_err err = lf_registry__save(r, eb);
    if (err)
        return err;
    r->dirty = false;
    r->flushes++;
    return LF_OK;
}

uint64_t lf_registry_flushes(struct lf_registry *r)
{
    return r->writer != NULL ? lf_registry__writer_flushes(r) : r->flushes;
}

bool lf_registry_dirty(const struct lf_registry *r)
{
    return r->dirty;
}
