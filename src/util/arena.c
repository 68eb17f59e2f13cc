/* arena.c - pointer-bump allocator (see arena.h).
 *
 *   arena -> [first block: kept across resets] -> [block] -> [large block] -> NULL
 *
 * Allocations bump `used` in the head block; when it is full a new block of block_size (or
 * the request's size, if larger) is pushed at the head. Reset frees all but the first. */
#include "config.h"

#include "logferry/arena.h"

#include <stdlib.h>
#include <string.h>

struct block {
    struct block *next;
    size_t cap;  /* bytes in data */
    size_t used; /* bytes handed out */
    _Alignas(8) char data[];
};

struct lf_arena {
    struct block *head;  /* block allocations come from */
    struct block *first; /* the block kept across resets; last in the list */
    size_t block_size;   /* default block capacity */
    size_t used;         /* bytes handed out since the last reset */
};

static struct block *block_new(size_t cap)
{
    size_t sz;
    if (lf_size_add(sizeof(struct block), cap, &sz))
        return NULL;
    struct block *b = malloc(sz);
    if (b == NULL)
        return NULL;
    b->next = NULL;
    b->cap = cap;
    b->used = 0;
    return b;
}

struct lf_arena *lf_arena_new(size_t block_size)
{
    struct lf_arena *a = malloc(sizeof(*a));
    if (a == NULL)
        return NULL;
    a->block_size = block_size < 64 ? 64 : block_size;
    a->first = block_new(a->block_size);
    if (a->first == NULL) {
        free(a);
        return NULL;
    }
    a->head = a->first;
    a->used = 0;
    return a;
}

void lf_arena_free(struct lf_arena *a)
{
    if (a == NULL)
        return;
    struct block *b = a->head;
    while (b != NULL) {
        struct block *next = b->next;
        free(b);
        b = next;
    }
    free(a);
}

void *lf_arena_alloc(struct lf_arena *a, size_t n)
{
    size_t rounded;
    if (lf_size_add(n, 7, &rounded))
        return NULL;
    rounded &= ~(size_t)7;
    struct block *b = a->head;
    if (b->cap - b->used < rounded) {
        b = block_new(rounded > a->block_size ? rounded : a->block_size);
        if (b == NULL)
            return NULL;
        b->next = a->head;
        a->head = b;
    }
    void *p = b->data + b->used;
    b->used += rounded;
    a->used += n;
    return p;
}

void *lf_arena_dup(struct lf_arena *a, const void *p, size_t n)
{
    void *q = lf_arena_alloc(a, n);
    if (q != NULL && n > 0)
        memcpy(q, p, n);
    return q;
}

void lf_arena_reset(struct lf_arena *a)
{
    struct block *b = a->head;
    while (b != a->first) {
        struct block *next = b->next;
        free(b);
        b = next;
    }
    a->head = a->first;
    a->first->used = 0;
    a->used = 0;
}

size_t lf_arena_used(const struct lf_arena *a)
{
    return a->used;
}
