#include "recfile.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- the listing ---- */

static int arena_add(recfile_list *l, const char *s, size_t len, uint32_t *off)
{
    if (l->alen + len + 1 > UINT32_MAX) {
        errno = ENOMEM;
        return -1;
    }
    if (l->alen + len + 1 > l->acap) {
        size_t cap = l->acap ? l->acap : 16384;
        while (cap < l->alen + len + 1)
            cap *= 2;
        char *a = realloc(l->arena, cap);
        if (!a)
            return -1;
        l->arena = a;
        l->acap = cap;
    }
    memcpy(l->arena + l->alen, s, len);
    l->arena[l->alen + len] = '\0';
    *off = (uint32_t)l->alen;
    l->alen += len + 1;
    return 0;
}

static int add_dir(recfile_list *l, const char *path, uint32_t *idx)
{
    if (l->ndirs == l->dcap) {
        size_t cap = l->dcap ? l->dcap * 2 : 64;
        uint32_t *d = realloc(l->dirs, cap * sizeof *d);
        if (!d)
            return -1;
        l->dirs = d;
        l->dcap = cap;
    }
    uint32_t off;
    if (arena_add(l, path, strlen(path), &off))
        return -1;
    l->dirs[l->ndirs] = off;
    *idx = (uint32_t)l->ndirs++;
    return 0;
}

static int add_file(recfile_list *l, uint32_t dir, const char *name, size_t klen)
{
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 1024;
        recfile_ent *e = realloc(l->e, cap * sizeof *e);
        if (!e)
            return -1;
        l->e = e;
        l->cap = cap;
    }
    recfile_ent *e = &l->e[l->n];
    if (arena_add(l, name, klen, &e->key))
        return -1;
    e->dir = dir;
    e->order = (uint32_t)l->n;
    e->klen = (uint32_t)klen;
    l->n++;
    return 0;
}

static int walk(recfile_list *l, const char *dir, int depth, recfile_keep_fn keep, void *ctx)
{
    DIR *d = opendir(dir);
    if (!d)
        return (errno == ENOENT || depth > 0) ? 0 : -1;
    bool have_dir = false;
    uint32_t didx = 0;
    struct dirent *de;
    int rc = 0;
    while (rc == 0 && (de = readdir(d))) {
        const char *nm = de->d_name;
        if (!strcmp(nm, ".") || !strcmp(nm, ".."))
            continue;
        size_t nl = strlen(nm);
        unsigned char type = de->d_type;
        char path[PATH_MAX];
        bool need_path = type == DT_UNKNOWN || type == DT_LNK || type == DT_DIR;
        if (need_path && snprintf(path, sizeof path, "%s/%s", dir, nm) >= (int)sizeof path)
            continue;
        if (type == DT_UNKNOWN || type == DT_LNK) {
            struct stat st;
            if (stat(path, &st) != 0)
                continue;
            type = S_ISDIR(st.st_mode) ? DT_DIR : S_ISREG(st.st_mode) ? DT_REG : DT_UNKNOWN;
        }
        if (type == DT_DIR && depth < 64) {
            rc = walk(l, path, depth + 1, keep, ctx);
        } else if (type == DT_REG && nl > 6 && !strcmp(nm + nl - 6, ".jsonc")) {
            if (strlen(dir) + 1 + nl >= PATH_MAX || (keep && !keep(ctx, dirfd(d), nm, nl - 6)))
                continue;
            if (!have_dir && (rc = add_dir(l, dir, &didx)) != 0)
                break;
            have_dir = true;
            rc = add_file(l, didx, nm, nl - 6);
        }
    }
    int e = errno;
    closedir(d);
    errno = e;
    return rc;
}

static int ent_cmp(const void *a, const void *b, void *arena)
{
    const recfile_ent *x = a, *y = b;
    const char *ar = arena;
    /* byte order, as PHP strcmp (a name holds no NUL: memcmp of the
     * common length, then the shorter first) */
    int c = memcmp(ar + x->key, ar + y->key, x->klen < y->klen ? x->klen : y->klen);
    if (c)
        return c;
    if (x->klen != y->klen)
        return x->klen < y->klen ? -1 : 1;
    return x->order < y->order ? -1 : x->order > y->order;
}

int recfile_list_open(const char *datadir, recfile_list *l)
{
    return recfile_list_open_keep(datadir, l, NULL, NULL);
}

int recfile_list_open_keep(const char *datadir, recfile_list *l, recfile_keep_fn keep, void *ctx)
{
    memset(l, 0, sizeof *l);
    if (walk(l, datadir, 0, keep, ctx) != 0) {
        int e = errno;
        recfile_list_free(l);
        errno = e;
        return -1;
    }
    if (l->n > 1)
        qsort_r(l->e, l->n, sizeof *l->e, ent_cmp, l->arena);
    /* keep the last of each run of equal keys */
    size_t w = 0;
    for (size_t r = 0; r < l->n; r++) {
        if (r + 1 < l->n && l->e[r].klen == l->e[r + 1].klen &&
            !strcmp(l->arena + l->e[r].key, l->arena + l->e[r + 1].key))
            continue;
        l->e[w++] = l->e[r];
    }
    l->n = w;
    return 0;
}

void recfile_list_free(recfile_list *l)
{
    free(l->arena);
    free(l->dirs);
    free(l->e);
    memset(l, 0, sizeof *l);
}

int recfile_list_path(const recfile_list *l, size_t i, char *out)
{
    const recfile_ent *e = &l->e[i];
    const char *dir = l->arena + l->dirs[e->dir];
    size_t dl = strlen(dir);
    if (dl + 1 + e->klen + 6 >= PATH_MAX)
        return -1;
    memcpy(out, dir, dl);
    out[dl] = '/';
    memcpy(out + dl + 1, l->arena + e->key, e->klen);
    memcpy(out + dl + 1 + e->klen, ".jsonc", 7);
    return 0;
}
