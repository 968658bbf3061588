#include "mempolicy.h"

#include <malloc.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

static _Atomic size_t kept;
static _Atomic uint64_t releases;

static int left_to_environment(void)
{
    const char *t = getenv("GLIBC_TUNABLES");
    return (t && strstr(t, "glibc.malloc.")) || getenv("MALLOC_MMAP_THRESHOLD_") ||
           getenv("MALLOC_TRIM_THRESHOLD_");
}

size_t mempolicy_apply(uint64_t memory_limit)
{
    atomic_store(&kept, 0);
    if (left_to_environment())
        return 0;
    size_t keep = MEMPOLICY_KEEP_MAX;
    if (memory_limit && memory_limit / 32 < keep)
        keep = (size_t)(memory_limit / 32);
    if (keep < ((size_t)128 << 10)) /* glibc's own start: never below it */
        keep = (size_t)128 << 10;
    /* a fixed threshold also stops glibc moving it with each free; an
     * allocator that is not glibc's (a sanitizer's) answers 0 or -1 */
    if (mallopt(M_MMAP_THRESHOLD, (int)keep) != 1)
        return 0;
    if (mallopt(M_TRIM_THRESHOLD, (int)(2 * keep)) != 1) /* glibc: never */
        return 0;
    atomic_store(&kept, keep);
    return keep;
}

#define HUGE_ALIGN ((size_t)2 << 20)

void *mempolicy_table(size_t bytes)
{
    if (bytes > SIZE_MAX - HUGE_ALIGN)
        return NULL;
    void *p = NULL;
    if (bytes < MEMPOLICY_HUGE_MIN) {
        p = malloc(bytes ? bytes : 1);
    } else if (posix_memalign(&p, HUGE_ALIGN, bytes) != 0) {
        p = NULL;
    } else { /* advice: without THP it does nothing */
        size_t pg = (size_t)sysconf(_SC_PAGESIZE);
        (void)madvise(p, bytes / pg * pg, MADV_HUGEPAGE);
    }
    /* written, not only read as zero: a first read would map the zero page
     * and the put's write fault again (idmap.c) */
    if (p)
        explicit_bzero(p, bytes);
    return p;
}

void mempolicy_release(void)
{
    malloc_trim(0);
    atomic_fetch_add(&releases, 1);
}

void mempolicy_stats(size_t *keep, uint64_t *n)
{
    *keep = atomic_load(&kept);
    *n = atomic_load(&releases);
}
