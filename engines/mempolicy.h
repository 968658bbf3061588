/* mempolicy: how the process's heap keeps and gives back the memory that
 * operations free. In the virtual machines measured here (bench/NOTES.md,
 * "Fresh pages"), a page the process writes for the first time costs 4 to
 * 20 us, a page the heap hands out again 0.1 us. By default glibc serves
 * a block above 128 KiB as a fresh mapping and unmaps it when it is freed,
 * and gives back the top of the heap past twice that, so a bulk operation
 * of a few MiB (a claim of 10,000 jobs: its log lines, its notes, its
 * answer) pays for every page again each time: more than the write and
 * the fsync it waits for. mempolicy_apply keeps such blocks in the heap,
 * up to a bound; mempolicy_release gives back what the heap holds free,
 * for a server that has gone idle. Both are process-wide: call them from
 * main (storhd, storh-bench), not from a library (mempolicy_table is an
 * allocation, for anyone). */
#ifndef STORH_MEMPOLICY_H
#define STORH_MEMPOLICY_H

#include <stddef.h>
#include <stdint.h>

/* The most a freed block may be for the heap to keep it: 32 MiB (glibc's
 * own ceiling), less in a small memory limit. */
#define MEMPOLICY_KEEP_MAX ((size_t)32 << 20)

/* Blocks up to keep bytes (a 32nd of memory_limit, at most
 * MEMPOLICY_KEEP_MAX; memory_limit 0: the most) are served from the heap
 * and stay in it when freed, and the heap gives back its free top only
 * past twice that. Does nothing when the environment sets glibc's malloc
 * tunables (GLIBC_TUNABLES with malloc., MALLOC_MMAP_THRESHOLD_,
 * MALLOC_TRIM_THRESHOLD_): the operator's choice stands. Returns the
 * keep in force, 0 when left to the environment. */
size_t mempolicy_apply(uint64_t memory_limit);
/* Gives the heap's free memory back to the system (malloc_trim); counted. */
void mempolicy_release(void);
/* Zeroed memory for a table of bytes bytes (a hash map's slots), freed
 * with free(); NULL when out of memory. An ordinary heap allocation, safe from any thread and any
 * library (freed, the heap keeps it as mempolicy_apply says). From MEMPOLICY_HUGE_MIN up it is
 * aligned to 2 MiB and advised for transparent huge pages (MADV_HUGEPAGE, which Debian's kernels
 * honour by default): its first touch then costs a fault per 2 MiB, not one per 4 KiB page (18 MiB
 * zeroed in 1.3 ms against 50 to 94 ms in the virtual machines measured
 * here). With the kernel's default defrag setting such a fault may compact
 * memory first (34 ms once in the same probe); without THP the advice does
 * nothing. The advice stays on those heap pages after the table is freed
 * (a table of its own mapping, unmapped when freed, gave the heap less to
 * keep and release: test_http_metrics' quiet-spell release). */
void *mempolicy_table(size_t bytes);
#define MEMPOLICY_HUGE_MIN ((size_t)4 << 20)
/* For /metrics: the keep mempolicy_apply set last (0: none) and the
 * releases so far. Thread-safe. */
void mempolicy_stats(size_t *keep, uint64_t *releases);

#endif
