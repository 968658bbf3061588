#include "snapshot.h"

#include <dirent.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "buf.h"
#include "fsx.h"
#include "xxhash.h"

typedef struct lines {
    char **v;
    size_t n, cap;
} lines;

static void walk(const char *root, const char *rel, lines *out)
{
    char dir[PATH_MAX];
    snprintf(dir, sizeof dir, "%s%s", root, rel);
    DIR *d = opendir(dir);
    if (!d)
        return;
    struct dirent *de;
    while ((de = readdir(d))) {
        if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
            continue;
        char r[PATH_MAX], full[PATH_MAX];
        snprintf(r, sizeof r, "%s/%s", rel, de->d_name);
        snprintf(full, sizeof full, "%s%s", root, r);
        struct stat st;
        if (lstat(full, &st) != 0)
            continue;
        if (S_ISDIR(st.st_mode)) {
            walk(root, r, out);
            continue;
        }
        if (strstr(r, "/.storh/writers/") || !strcmp(de->d_name, "write.lock"))
            continue;
        buf b = BUF_INIT;
        fsx_read_all(full, &b, NULL);
        char line[PATH_MAX + 64];
        snprintf(line, sizeof line, "%s %lld %016llx\n", r, (long long)st.st_size,
                 (unsigned long long)XXH64(b.data ? b.data : "", b.len, 0));
        buf_free(&b);
        if (out->n == out->cap) {
            out->cap = out->cap ? out->cap * 2 : 64;
            out->v = realloc(out->v, out->cap * sizeof *out->v);
        }
        out->v[out->n++] = strdup(line);
    }
    closedir(d);
}

static int cmp(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

char *snapshot_tree(const char *root)
{
    lines l = {0};
    walk(root, "", &l);
    if (l.n) /* an empty tree has no array to sort (qsort(NULL, 0) is undefined) */
        qsort(l.v, l.n, sizeof *l.v, cmp);
    buf out = BUF_INIT;
    buf_appends(&out, "");
    for (size_t i = 0; i < l.n; i++) {
        buf_appends(&out, l.v[i]);
        free(l.v[i]);
    }
    free(l.v);
    return out.data;
}
