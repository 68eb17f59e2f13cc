/* registry_int.h - shared between src/registry/registry.c (the table) and
 * src/registry/store.c (the file format and durable writes). */
#ifndef LF_REGISTRY_INT_H
#define LF_REGISTRY_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "logferry/buf.h"
#include "logferry/registry.h"

struct lf_registry__node {
    struct lf_registry_entry e;     /* what callers see (they get &node->e) */
    uint64_t hash;                  /* of input_id, dev, ino */
    struct lf_registry__node *next; /* bucket chain */
};

struct lf_registry {
    char *dir;                          /* data_dir; owned */
    char *file_path;                    /* <dir>/registry; owned */
    char *tmp_path;                     /* <dir>/registry.tmp; owned */
    char *journal_path;                 /* <dir>/registry.log; owned */
    struct lf_registry__node **buckets; /* n_buckets chains; owned */
    size_t n_buckets;                   /* a power of two, or 0 before the first insert */
    size_t count;                       /* entries */
    bool dirty;                         /* changed since the last load or flush */
    bool load_corrupt;                  /* the last load failed on the file's content */
    unsigned load_version;              /* while loading: the format version of the records
                                           being read (1: no stream id field) */
    uint64_t flushes;                   /* successful flushes */
    struct lf_buf out;                  /* encoded file, reused across flushes */
    /* The journal (store.c): changes appended after the registry file this process last
     * wrote, so that a flush writes what changed rather than every entry. */
    int jfd;                            /* registry.log open for appending, or -1 */
    uint64_t jbytes;                    /* its size, header included; 0 if none */
    uint32_t base_crc;                  /* checksum of the registry file on disk */
    bool base_known;                    /* this process wrote or loaded that file */
    bool replayed;                      /* the last load applied a journal */
    size_t base_bytes;                  /* the size of that file */
    struct lf_registry__writer *writer; /* NULL: flushes write on the caller's thread */
};

/* Makes room for n entries without rehashing. LF_ENOMEM leaves r as it was. */
LF_MUST_CHECK enum lf_err lf_registry__reserve(struct lf_registry *r, size_t n);

/* Adds an entry (read from the file, or set); takes ownership of input_id and path, even
 * when the call fails. LF_EINVAL if the key is already present; LF_ENOMEM, also when
 * input_id or path is NULL (a copy that failed). */
LF_MUST_CHECK enum lf_err lf_registry__insert(struct lf_registry *r,
                                              char *input_id,
                                              const struct lf_file_id *id,
                                              uint64_t stream_id,
                                              uint64_t offset,
                                              char *path,
                                              int64_t updated_ms);

/* Loads r->file_path into r (empty r; a missing file leaves it empty). */
LF_MUST_CHECK enum lf_err lf_registry__load(struct lf_registry *r, struct lf_errbuf *eb);

/* Encodes r into r->out and writes it durably to r->file_path. */
LF_MUST_CHECK enum lf_err lf_registry__save(struct lf_registry *r, struct lf_errbuf *eb);

/* Appends to b one journal record: a set of e (kind 's') or a removal of e's key ('r'). */
LF_MUST_CHECK enum lf_err lf_registry__journal_put(struct lf_buf *b, char kind,
                                                   const struct lf_registry_entry *e);

/* True when appending n more bytes to r's journal is allowed: r wrote or loaded the file
 * on disk, and the journal would stay within max(LF_JOURNAL_MIN_BYTES, that file's size);
 * else the next write is a whole file (which starts the journal afresh). */
bool lf_registry__journal_fits(const struct lf_registry *r, size_t n);

/* Appends the records in b to r's journal durably (creating it after a whole-file write:
 * header, records, fdatasync, fsync of data_dir). On failure, r's next write must be a
 * whole file (base_known is cleared). */
LF_MUST_CHECK enum lf_err lf_registry__journal_append(struct lf_registry *r,
                                                      const struct lf_buf *b,
                                                      struct lf_errbuf *eb);

#define LF_JOURNAL_MIN_BYTES (64u << 10) /* a journal may always grow this far */

/* A new empty registry for data_dir (nothing loaded); LF_ENOMEM. */
LF_MUST_CHECK enum lf_err lf_registry__new_empty(const char *data_dir, struct lf_registry **out);

/* Forgets every entry (r becomes dirty). */
void lf_registry__clear(struct lf_registry *r);

/* writer.c: with a writer, each change to an entry is noted for it (no-ops without one). */
void lf_registry__note_set(struct lf_registry *r, const struct lf_registry_entry *e);
void lf_registry__note_remove(struct lf_registry *r, const struct lf_registry_entry *e);

/* lf_registry_flush() and lf_registry_flushes() when r has a writer. */
LF_MUST_CHECK enum lf_err lf_registry__writer_flush(struct lf_registry *r, struct lf_errbuf *eb);
uint64_t lf_registry__writer_flushes(struct lf_registry *r);

/* Lets the writer finish what was asked, ends it and frees it (no-op without one). */
void lf_registry__writer_stop(struct lf_registry *r);

#endif
