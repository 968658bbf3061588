/* test.h: the tiny harness every test executable uses. A file defines its
 * cases with TEST(name), lists each once with TEST_ENTRY(name) in a
 * `static const test_case tests[]`, and ends with a main from TEST_MAIN
 * (or TMPDIR_TEST_MAIN, DAEMON_TEST_MAIN). Checks record failures and keep
 * going; the process exits non-zero if any check failed. `./test_x name`
 * runs one case, `./test_x --list` prints the case names, one a line.
 * tests/CMakeLists.txt registers every TEST(name) of a file as the ctest
 * test `test_x.name`, run in its own process with its own timeout (as
 * libuv's runner does); a case missing from the list fails with "no test
 * ran", so the file and the registration cannot drift apart. */
#ifndef STORHD_TEST_H
#define STORHD_TEST_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

extern int test_failures;
int test_failures;

#define TEST(name) static void name(void)

#define CHECK(cond)                                                                                \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond);               \
            test_failures++;                                                                       \
        }                                                                                          \
    } while (0)

#define CHECK_STR(a, b)                                                                            \
    do {                                                                                           \
        const char *a_ = (a), *b_ = (b);                                                           \
        if (!a_ || !b_ || strcmp(a_, b_) != 0) {                                                   \
            fprintf(stderr, "%s:%d: CHECK_STR failed: %s\n  got:  %s\n  want: %s\n", __FILE__,     \
                    __LINE__, #a, a_ ? a_ : "(null)", b_ ? b_ : "(null)");                         \
            test_failures++;                                                                       \
        }                                                                                          \
    } while (0)

#define CHECK_INT(a, b)                                                                            \
    do {                                                                                           \
        long long a_ = (long long)(a), b_ = (long long)(b);                                        \
        if (a_ != b_) {                                                                            \
            fprintf(stderr, "%s:%d: CHECK_INT failed: %s = %lld, want %lld\n", __FILE__, __LINE__, \
                    #a, a_, b_);                                                                   \
            test_failures++;                                                                       \
        }                                                                                          \
    } while (0)

#define CHECK_PREFIX(a, prefix)                                                                    \
    do {                                                                                           \
        const char *a_ = (a), *p_ = (prefix);                                                      \
        if (!a_ || strncmp(a_, p_, strlen(p_)) != 0) {                                             \
            fprintf(stderr, "%s:%d: CHECK_PREFIX failed: %s\n  got:  %.200s\n  want: %s...\n",     \
                    __FILE__, __LINE__, #a, a_ ? a_ : "(null)", p_);                               \
            test_failures++;                                                                       \
        }                                                                                          \
    } while (0)

typedef struct test_case {
    const char *name;
    void (*fn)(void);
} test_case;

/* One row of a case list: the name is the function's. */
#define TEST_ENTRY(name)                                                                           \
    {                                                                                              \
#name, name                                                                                \
    }

/* In a main that sets things up before running the cases (a daemon, a
 * scratch dir), first: `--list` prints the names and exits, setting up
 * nothing. */
#define TEST_LIST_EXIT(argc, argv, list)                                                           \
    do {                                                                                           \
        if ((argc) > 1 && strcmp((argv)[1], "--list") == 0) {                                      \
            for (size_t i_ = 0; i_ < sizeof(list) / sizeof(list[0]); i_++)                         \
                printf("%s\n", list[i_].name);                                                     \
            return 0;                                                                              \
        }                                                                                          \
    } while (0)

#define TEST_MAIN(list) TEST_MAIN_NAMED(main, list)

/* The runner under another name, for mains that set something up first. */
#define TEST_MAIN_NAMED(fname, list)                                                               \
    int fname(int argc, char **argv)                                                               \
    {                                                                                              \
        TEST_LIST_EXIT(argc, argv, list);                                                          \
        size_t n = sizeof(list) / sizeof(list[0]);                                                 \
        int ran = 0;                                                                               \
        for (size_t i = 0; i < n; i++) {                                                           \
            if (argc > 1 && strcmp(argv[1], list[i].name) != 0)                                    \
                continue;                                                                          \
            int before = test_failures;                                                            \
            list[i].fn();                                                                          \
            ran++;                                                                                 \
            printf("%s %s\n", test_failures == before ? "ok" : "FAIL", list[i].name);              \
        }                                                                                          \
        if (ran == 0) {                                                                            \
            fprintf(stderr, "no test ran\n");                                                      \
            return 2;                                                                              \
        }                                                                                          \
        return test_failures ? 1 : 0;                                                              \
    }

#endif
