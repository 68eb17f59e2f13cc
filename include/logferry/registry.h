/* registry.h - acknowledged offsets per file, kept under data_dir across restarts.
 *
 * Entries are keyed by input id + device + inode; each carries the file's fingerprint, the
 * acknowledged offset (resume there), the stream id of its content, the path last seen and
 * when it last changed. The
 * registry lives in memory (a hash table) and lf_registry_flush() writes it whole to
 * <data_dir>/registry: registry.tmp, fsync, rename, fsync of data_dir, with a checksum so
 * a torn or edited file is refused on load, never read as "no offsets". Format:
 * docs/registry.md. Not thread-safe: the loop thread owns it (an optional writer thread,
 * lf_registry_start_writer(), only ever sees its own copy). */
#ifndef LF_REGISTRY_H
#define LF_REGISTRY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "logferry/err.h"
#include "logferry/identity.h"

struct lf_registry;

struct lf_registry_entry { /* read freely; owned by the registry */
    char *input_id;        /* owned by the registry; NUL-terminated */
    struct lf_file_id id;  /* device, inode and fingerprint */
    uint64_t offset;       /* acknowledged: resume here, in bytes */
    uint64_t stream_id;    /* the stream id of the file's current content (identity.h); 0: none
                              yet (an entry of a version 1 file) */
    char *path;            /* path last seen; owned by the registry */
    int64_t updated_ms;    /* wall clock of the last change, ms since the epoch */
};

/* Opens <data_dir>/registry (creating nothing until the first flush) and loads it into a
 * new registry in *out; free with lf_registry_free(). A missing file is an empty registry.
 * A torn, truncated or corrupt file is LF_EIO with eb saying what is wrong and where (and
 * the file is left untouched for the operator: the agent refuses to start rather than
 * re-read everything or lose data). A leftover registry.tmp is ignored. LF_ENOMEM. */
LF_MUST_CHECK enum lf_err
lf_registry_open(const char *data_dir, struct lf_registry **out, struct lf_errbuf *eb);

/* lf_registry_open(), except that a registry file whose content is broken (torn,
 * truncated, checksum or format error; not a system error such as EACCES) is renamed to
 * <data_dir>/registry.broken-<UTC yyyymmddTHHMMSSZ> (".N" appended if that exists), data_dir
 * is fsync'd, and *out is a new empty registry. *moved_to is then the new name (free() it),
 * else NULL. What --registry-reset-broken does. Any other failure as lf_registry_open(). */
LF_MUST_CHECK enum lf_err lf_registry_open_reset(const char *data_dir,
                                                 struct lf_registry **out,
                                                 char **moved_to,
                                                 struct lf_errbuf *eb);

/* Frees r and its entries without flushing. lf_registry_free(NULL) is a no-op. */
void lf_registry_free(struct lf_registry *r);

/* Entry for (input_id, dev, ino), or NULL. Borrowed: valid until the next call that
 * changes r. O(1) expected (hash table). */
struct lf_registry_entry *
lf_registry_find(struct lf_registry *r, const char *input_id, uint64_t dev, uint64_t ino);

/* Inserts or updates (keyed by input_id + dev + ino; the fingerprint and stream_id are
 * stored too). The strings are copied. Setting the values an entry already has changes
 * nothing (not even updated_ms) and leaves r clean. LF_ENOMEM leaves r as it was. */
LF_MUST_CHECK enum lf_err lf_registry_set(struct lf_registry *r,
                                          const char *input_id,
                                          const struct lf_file_id *id,
                                          uint64_t stream_id,
                                          uint64_t offset,
                                          const char *path,
                                          int64_t now_ms);

/* Forgets (input_id, dev, ino); a no-op if there is no such entry. */
void lf_registry_remove(struct lf_registry *r, const char *input_id, uint64_t dev, uint64_t ino);

/* Calls fn for every entry (e borrowed: valid during the call); fn returns true to remove
 * that entry (clean_removed uses it). fn must not call into r. */
void lf_registry_sweep(struct lf_registry *r,
                       bool (*fn)(void *arg, const struct lf_registry_entry *e),
                       void *arg);

size_t lf_registry_count(const struct lf_registry *r);

/* Writes the registry durably if it changed since the last flush (no-op otherwise). Creates
 * data_dir (one level) if missing. On failure (LF_EIO, eb says which step and path) the
 * previous file is intact and r stays dirty, so the next flush tries again.
 * With a writer (lf_registry_start_writer()), the write is handed to it and this returns
 * at once: the failure it returns is then that of an earlier write, not yet reported. */
LF_MUST_CHECK enum lf_err lf_registry_flush(struct lf_registry *r, struct lf_errbuf *eb);

/* Gives r a writer thread: from now on lf_registry_flush() hands the write over (with the
 * changes since the last one) instead of writing on the calling thread, so a large
 * registry never stalls it. The file, its format and its crash guarantees are the same;
 * it lags r by the write in progress. r's owner is still its only user; r keeps a second
 * copy of its entries for the writer. lf_registry_free() lets the writer finish what was
 * asked. LF_ENOMEM, LF_EIO (no thread). No-op if r has one already. */
LF_MUST_CHECK enum lf_err lf_registry_start_writer(struct lf_registry *r, struct lf_errbuf *eb);

/* lf_registry_flush(), then waits until the writer has written everything asked so far;
 * returns the first failure not yet reported. Without a writer, lf_registry_flush(). */
LF_MUST_CHECK enum lf_err lf_registry_sync(struct lf_registry *r, struct lf_errbuf *eb);

/* Successful writes so far (the registry_flushes_total metric). */
uint64_t lf_registry_flushes(struct lf_registry *r);

/* True if r changed since the last successful flush (or load). */
bool lf_registry_dirty(const struct lf_registry *r);

#endif
