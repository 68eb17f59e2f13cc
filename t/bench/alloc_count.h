/* alloc_count.h - counts heap allocations made by this process, for benches.
 *
 * alloc_count.c defines malloc, calloc, realloc and free, forwarding to glibc's
 * __libc_malloc and friends and counting calls and bytes. Under AddressSanitizer (which owns
 * malloc) nothing is interposed and lf_alloc_count_enabled() is false: print "n/a". */
#ifndef LF_ALLOC_COUNT_H
#define LF_ALLOC_COUNT_H

#include <stdbool.h>
#include <stdint.h>

struct lf_alloc_count {
    uint64_t calls; /* malloc + calloc + realloc calls (and aligned variants) */
    uint64_t bytes; /* bytes requested by them */
};

/* True when allocations are being counted (not under ASan). */
bool lf_alloc_count_enabled(void);

/* Counts since the process started. Any thread; relaxed atomics. */
struct lf_alloc_count lf_alloc_count_now(void);

#endif
