/* tmpdir.h: per-test scratch directories under $TMPDIR, removed at the end. */
#ifndef STORHD_TMPDIR_H
#define STORHD_TMPDIR_H

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>

static inline char *tmpdir_make(char out[PATH_MAX])
{
    const char *base = getenv("TMPDIR");
    snprintf(out, PATH_MAX, "%s/storhd-test-XXXXXX", base ? base : "/tmp");
    return mkdtemp(out);
}

static inline void tmpdir_remove(const char *dir)
{
    char cmd[PATH_MAX + 16];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", dir);
}

/* main() of a test that works in a scratch root (a char[PATH_MAX]). */
#define TMPDIR_TEST_MAIN(root, list)                                                               \
    static int run_cases(int argc, char **argv);                                                   \
    int main(int argc, char **argv)                                                                \
    {                                                                                              \
        TEST_LIST_EXIT(argc, argv, list);                                                          \
        if (!tmpdir_make(root))                                                                    \
            return 2;                                                                              \
        int rc = run_cases(argc, argv);                                                            \
        tmpdir_remove(root);                                                                       \
        return rc;                                                                                 \
    }                                                                                              \
    TEST_MAIN_NAMED(run_cases, list)

#endif
