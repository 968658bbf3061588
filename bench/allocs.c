/* allocs: counts the heap allocation calls of the bench process (malloc,
 * calloc, realloc, here and in every library) so a suite can report
 * allocations per operation. glibc's own allocator does the work; builds
 * with a sanitizer (which brings its own allocator) count nothing. */
#include "allocs.h"

#include <stdatomic.h>
#include <stddef.h>
#include <stdlib.h>

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__) || !defined(__GLIBC__)
long long allocs_count(void)
{
    return -1;
}
#else
extern void *__libc_malloc(size_t n);
extern void *__libc_calloc(size_t n, size_t size);
extern void *__libc_realloc(void *p, size_t n);
extern void __libc_free(void *p);

static _Atomic long long calls;

void *malloc(size_t n)
{
    atomic_fetch_add_explicit(&calls, 1, memory_order_relaxed);
    return __libc_malloc(n);
}

void *calloc(size_t n, size_t size)
{
    atomic_fetch_add_explicit(&calls, 1, memory_order_relaxed);
    return __libc_calloc(n, size);
}

void *realloc(void *p, size_t n)
{
    atomic_fetch_add_explicit(&calls, 1, memory_order_relaxed);
    return __libc_realloc(p, n);
}

void free(void *p)
{
    __libc_free(p);
}

long long allocs_count(void)
{
    return atomic_load_explicit(&calls, memory_order_relaxed);
}
#endif
