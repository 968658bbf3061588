#include "mempolicy.h"

#include <malloc.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

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

void *mempolicy_table(size_t bytes)
{
    void *p = NULL;
    if (bytes < MEMPOLICY_HUGE_MIN || posix_memalign(&p, (size_t)2 << 20, bytes) != 0)
        p = malloc(bytes ? bytes : 1);
    else /* advice only: a kernel without THP (or a sanitizer's heap) ignores it */
        (void)madvise(p, bytes, MADV_HUGEPAGE);
    if (p) /* written, not calloc'd (idmap.c says why) */
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
