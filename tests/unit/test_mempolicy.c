/* test_mempolicy: the process's heap policy (mempolicy.h): a block of
 * megabytes comes from the heap, stays in it when freed and is served
 * again from it; a memory limit bounds what is kept; glibc tunables in the
 * environment leave the policy to them; a table of some MiB is zeroed and
 * advised for huge pages. glibc's allocator only: under
 * ASan (its own allocator, whose mallopt refuses) the policy must say it
 * applied nothing; valgrind's allocator is not run here (memcheck.sh). */
#include <malloc.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../test.h"
#include "mempolicy.h"

#define BLOCK ((size_t)4 << 20)

TEST(a_big_block_is_served_from_the_heap_and_kept)
{
    size_t keep = mempolicy_apply(0);
#if defined(__SANITIZE_ADDRESS__)
    CHECK_INT(keep, 0);
#else
    CHECK_INT(keep, MEMPOLICY_KEEP_MAX);
    struct mallinfo2 before = mallinfo2();
    char *p = malloc(BLOCK);
    CHECK(p != NULL);
    if (!p)
        return;
    memset(p, 1, BLOCK);
    struct mallinfo2 in_use = mallinfo2();
    /* not a mapping of its own (glibc's default for anything over 128 KiB) */
    CHECK_INT(in_use.hblkhd, before.hblkhd);
    CHECK(in_use.arena >= before.arena + BLOCK || in_use.uordblks >= before.uordblks + BLOCK);
    free(p);
    struct mallinfo2 freed = mallinfo2();
    /* kept: the heap did not give its top back */
    CHECK(freed.fordblks >= BLOCK);
    CHECK_INT(freed.arena, in_use.arena);
    char *q = malloc(BLOCK);
    CHECK(q != NULL);
    struct mallinfo2 again = mallinfo2();
    CHECK_INT(again.hblkhd, before.hblkhd);
    CHECK_INT(again.arena, in_use.arena); /* served from what was kept */
    free(q);
    /* the release gives it back */
    mempolicy_release();
    CHECK(mallinfo2().arena < in_use.arena || mallinfo2().fordblks < BLOCK);
#endif
}

TEST(a_memory_limit_bounds_what_is_kept)
{
#if defined(__SANITIZE_ADDRESS__)
    CHECK_INT(mempolicy_apply((uint64_t)256 << 20), 0);
#else
    CHECK_INT(mempolicy_apply((uint64_t)256 << 20), (size_t)8 << 20);
    CHECK_INT(mempolicy_apply((uint64_t)64 << 20), (size_t)2 << 20);
    CHECK_INT(mempolicy_apply((uint64_t)1 << 20), (size_t)128 << 10); /* never below glibc's */
    CHECK_INT(mempolicy_apply((uint64_t)64 << 30), MEMPOLICY_KEEP_MAX);
    /* with a small keep a block past it is a mapping again, as by default */
    CHECK_INT(mempolicy_apply((uint64_t)64 << 20), (size_t)2 << 20);
    struct mallinfo2 before = mallinfo2();
    char *p = malloc(BLOCK);
    CHECK(p != NULL);
    CHECK(mallinfo2().hblkhd >= before.hblkhd + BLOCK);
    free(p);
#endif
}

TEST(the_environment_s_malloc_tunables_stand)
{
    static const char *const vars[][2] = {
        {"GLIBC_TUNABLES", "glibc.malloc.trim_threshold=1048576"},
        {"MALLOC_MMAP_THRESHOLD_", "1048576"},
        {"MALLOC_TRIM_THRESHOLD_", "1048576"},
    };
    for (size_t i = 0; i < sizeof vars / sizeof *vars; i++) {
        setenv(vars[i][0], vars[i][1], 1);
        CHECK_INT(mempolicy_apply(0), 0);
        unsetenv(vars[i][0]);
    }
    /* tunables of something else do not count */
    setenv("GLIBC_TUNABLES", "glibc.pthread.rseq=0", 1);
#if defined(__SANITIZE_ADDRESS__)
    CHECK_INT(mempolicy_apply(0), 0);
#else
    CHECK_INT(mempolicy_apply(0), MEMPOLICY_KEEP_MAX);
#endif
    unsetenv("GLIBC_TUNABLES");
}

/* The VmFlags line of the mapping of /proc/self/smaps that holds p
 * into out ("" when none is found or smaps cannot be read). */
static void vmflags_of(const void *p, char *out, size_t cap)
{
    out[0] = '\0';
    FILE *f = fopen("/proc/self/smaps", "r");
    static char line[8192]; /* a mapping's line holds its path */
    bool in = false;
    while (f && fgets(line, sizeof line, f)) {
        unsigned long lo, hi;
        char dash;
        if (sscanf(line, "%lx%c%lx ", &lo, &dash, &hi) == 3 && dash == '-')
            in = (uintptr_t)p >= lo && (uintptr_t)p < hi;
        else if (in && !strncmp(line, "VmFlags:", 8))
            snprintf(out, cap, "%s", line + 8);
    }
    if (f)
        fclose(f);
}

/* Whether the kernel has transparent huge pages on (always or madvise). */
static bool thp_on(void)
{
    char thp[128] = "";
    FILE *f = fopen("/sys/kernel/mm/transparent_hugepage/enabled", "r");
    if (f && !fgets(thp, sizeof thp, f))
        thp[0] = '\0';
    if (f)
        fclose(f);
    return thp[0] && !strstr(thp, "[never]");
}

/* a table of some MiB: zeroed, writable, on a 2 MiB boundary, advised for
 * huge pages ("hg" in its mapping's flags); a small one: zeroed */
TEST(a_big_table_is_zeroed_and_advised_for_huge_pages)
{
    size_t big = MEMPOLICY_HUGE_MIN + 12345;
    unsigned char *t = mempolicy_table(big);
    CHECK(t != NULL);
    if (!t)
        return;
    CHECK_INT((long long)((uintptr_t)t % ((uintptr_t)2 << 20)), 0);
    size_t nonzero = 0;
    for (size_t i = 0; i < big; i++)
        nonzero += t[i] != 0;
    CHECK_INT((long long)nonzero, 0);
    memset(t, 0xab, big); /* all of it writable */
    char flags[256];
    vmflags_of(t, flags, sizeof flags);
    if (flags[0] && thp_on()) /* a kernel with huge pages takes the advice */
        CHECK(strstr(flags, " hg") != NULL);
    free(t);
    unsigned char *s = mempolicy_table(100);
    CHECK(s != NULL);
    for (size_t i = 0; s && i < 100; i++)
        CHECK_INT(s[i], 0);
    free(s);
}

static const test_case tests[] = {
    TEST_ENTRY(a_big_block_is_served_from_the_heap_and_kept),
    TEST_ENTRY(a_memory_limit_bounds_what_is_kept),
    TEST_ENTRY(the_environment_s_malloc_tunables_stand),
    TEST_ENTRY(a_big_table_is_zeroed_and_advised_for_huge_pages),
};

TEST_MAIN(tests)
