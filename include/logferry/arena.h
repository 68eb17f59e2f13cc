/* arena.h - a pointer-bump allocator whose memory is released as a whole (an nginx pool).
 *
 * Event bytes live in a batch's arena; when the batch is acknowledged, lf_arena_reset()
 * drops everything and keeps the first block, so the steady state allocates nothing.
 * Not thread-safe: one owner at a time. */
#ifndef LF_ARENA_H
#define LF_ARENA_H

#include <stddef.h>

#include "logferry/err.h"

struct lf_arena;

/* Returns a new arena that allocates blocks of block_size bytes (larger requests get a block
 * of their own); NULL if out of memory. Free with lf_arena_free(). */
struct lf_arena *lf_arena_new(size_t block_size);

/* Frees the arena and everything allocated from it. lf_arena_free(NULL) is a no-op. */
void lf_arena_free(struct lf_arena *a);

/* Returns n bytes aligned to 8, valid until lf_arena_reset() or lf_arena_free(); NULL if
 * out of memory. */
void *lf_arena_alloc(struct lf_arena *a, size_t n);

/* Copies n bytes into the arena and returns the copy (same lifetime as lf_arena_alloc). */
void *lf_arena_dup(struct lf_arena *a, const void *p, size_t n);

/* Drops every allocation; keeps the first block for reuse and frees the others. */
void lf_arena_reset(struct lf_arena *a);

/* Bytes handed out since the last reset (what the queue counts against max_bytes). */
size_t lf_arena_used(const struct lf_arena *a);

#endif
