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

/* Under AddressSanitizer a big table stays a heap block (posix_memalign):
 * its redzones and the leak checker's scan of it stay too. */
#if defined(__SANITIZE_ADDRESS__)
#define TABLE_ON_HEAP 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define TABLE_ON_HEAP 1
#endif
#endif
#ifndef TABLE_ON_HEAP
#define TABLE_ON_HEAP 0
#endif

static size_t page_round(size_t bytes)
{
    size_t pg = (size_t)sysconf(_SC_PAGESIZE);
    return (bytes + pg - 1) / pg * pg;
}

void *mempolicy_table(size_t bytes)
{
    if (bytes > SIZE_MAX - 2 * HUGE_ALIGN)
        return NULL;
    void *p = NULL;
    if (bytes < MEMPOLICY_HUGE_MIN) {
        p = malloc(bytes ? bytes : 1);
    } else if (TABLE_ON_HEAP) {
        if (posix_memalign(&p, HUGE_ALIGN, bytes) != 0)
            p = NULL;
        else
            (void)madvise(p, bytes & ~(page_round(1) - 1), MADV_HUGEPAGE);
    } else { /* a 2 MiB boundary cut out of a larger mapping */
        size_t len = bytes + HUGE_ALIGN;
        char *raw = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (raw == MAP_FAILED)
            return NULL;
        uintptr_t at = ((uintptr_t)raw + HUGE_ALIGN - 1) & ~(uintptr_t)(HUGE_ALIGN - 1);
        char *q = (char *)at;
        size_t head = (size_t)(q - raw), keep = page_round(bytes);
        if (head)
            munmap(raw, head);
        munmap(q + keep, len - head - keep);   /* at least a page: len has 2 MiB to spare */
        (void)madvise(q, keep, MADV_HUGEPAGE); /* advice: without THP it does nothing */
        p = q;
    }
    /* written, not only read as zero: a first read would map the zero page
     * and the put's write fault again (idmap.c) */
    if (p)
        explicit_bzero(p, bytes);
    return p;
}

void mempolicy_table_free(void *p, size_t bytes)
{
    if (!p)
        return;
    if (bytes < MEMPOLICY_HUGE_MIN || TABLE_ON_HEAP)
        free(p);
    else
        munmap(p, page_round(bytes));
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
