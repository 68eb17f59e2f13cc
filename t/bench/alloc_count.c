/* alloc_count.c - malloc-counting shim (see alloc_count.h).
 *
 * Defining malloc and friends in the executable interposes them for the whole process,
 * libraries included; each forwards to glibc's __libc_* entry points, so no dlsym() (which
 * itself allocates) is needed. */
#include "config.h"

#include "alloc_count.h"

#include <errno.h>
#include <stddef.h>
#include <stdlib.h>

#if defined(__SANITIZE_ADDRESS__)
#define LF_ALLOC_COUNT_OFF 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define LF_ALLOC_COUNT_OFF 1
#endif
#endif

#ifdef LF_ALLOC_COUNT_OFF

bool lf_alloc_count_enabled(void)
{
    return false;
}

struct lf_alloc_count lf_alloc_count_now(void)
{
    struct lf_alloc_count c = { 0, 0 };
    return c;
}

#else

void *__libc_malloc(size_t n);
void *__libc_calloc(size_t k, size_t n);
void *__libc_realloc(void *p, size_t n);
void __libc_free(void *p);
void *__libc_memalign(size_t align, size_t n);

/* The counters: process-wide by nature, owned by this file. */
static uint64_t alloc_calls;
static uint64_t alloc_bytes;

static void count(size_t n)
{
    __atomic_fetch_add(&alloc_calls, 1, __ATOMIC_RELAXED);
    __atomic_fetch_add(&alloc_bytes, n, __ATOMIC_RELAXED);
}

void *malloc(size_t n)
{
    count(n);
    return __libc_malloc(n);
}

void *calloc(size_t k, size_t n)
{
    count(k * n);
    return __libc_calloc(k, n);
}

void *realloc(void *p, size_t n)
{
    count(n);
    return __libc_realloc(p, n);
}

void free(void *p)
{
    __libc_free(p);
}

void *aligned_alloc(size_t align, size_t n)
{
    count(n);
    return __libc_memalign(align, n);
}

int posix_memalign(void **out, size_t align, size_t n)
{
    count(n);
    void *p = __libc_memalign(align, n);
    if (p == NULL)
        return ENOMEM;
    *out = p;
    return 0;
}

bool lf_alloc_count_enabled(void)
{
    return true;
}

struct lf_alloc_count lf_alloc_count_now(void)
{
    struct lf_alloc_count c = {
        __atomic_load_n(&alloc_calls, __ATOMIC_RELAXED),
        __atomic_load_n(&alloc_bytes, __ATOMIC_RELAXED),
    };
    return c;
}

#endif
