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

/* TMPDIR_TEST_MAIN with a second list of cases that run only when named on
 * the command line (cases that need what a plain run lacks, such as a PHP
 * storh checkout: registered with -DSTORH_PHP_DIR). */
#define TMPDIR_TEST_MAIN_WITH_NAMED(root, list, named)                                             \
    static int run_cases(int argc, char **argv);                                                   \
    static int run_named(int argc, char **argv);                                                   \
    int main(int argc, char **argv)                                                                \
    {                                                                                              \
        if (!tmpdir_make(root))                                                                    \
            return 2;                                                                              \
        bool one = false;                                                                          \
        for (size_t i = 0; argc > 1 && i < sizeof named / sizeof named[0]; i++)                    \
            one = one || !strcmp(argv[1], named[i].name);                                          \
        int rc = one ? run_named(argc, argv) : run_cases(argc, argv);                              \
        tmpdir_remove(root);                                                                       \
        return rc;                                                                                 \
    }                                                                                              \
    TEST_MAIN_NAMED(run_cases, list)                                                               \
    TEST_MAIN_NAMED(run_named, named)

#endif
