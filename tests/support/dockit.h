/* dockit: what the document store's tests share: a store opened under a
 * test's scratch root, files counted under a directory, an empty file
 * planted. Header-only, as js.h; include it after test.h. */
#ifndef STORHD_TEST_DOCKIT_H
#define STORHD_TEST_DOCKIT_H

#include <dirent.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "docstore.h"
#include "storh_err.h"

/* NULL with the reason on stderr when it cannot be opened. */
static inline docstore *dockit_open(const char *dir, const char *name)
{
    docstore *ds = NULL;
    storh_err err;
    if (docstore_open(dir, name, &ds, &err) != 0)
        fprintf(stderr, "open: %s\n", err.msg);
    return ds;
}

/* Files under dir (any depth) whose name contains suffix. */
static inline int dockit_count_files(const char *dir, const char *suffix)
{
    DIR *d = opendir(dir);
    if (!d)
        return 0;
    int n = 0;
    struct dirent *de;
    while ((de = readdir(d))) {
        if (de->d_name[0] == '.' && (!de->d_name[1] || !strcmp(de->d_name, "..")))
            continue;
        char p[PATH_MAX];
        snprintf(p, sizeof p, "%s/%s", dir, de->d_name);
        struct stat st;
        if (stat(p, &st) == 0 && S_ISDIR(st.st_mode))
            n += dockit_count_files(p, suffix);
        else if (strstr(de->d_name, suffix))
            n++;
    }
    closedir(d);
    return n;
}

/* An empty file at the path fmt makes (its directory there already). */
static inline void dockit_touch(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static inline void dockit_touch(const char *fmt, ...)
{
    char p[PATH_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(p, sizeof p, fmt, ap);
    va_end(ap);
    FILE *f = fopen(p, "w");
    CHECK(f != NULL);
    if (f)
        fclose(f);
}

#endif
