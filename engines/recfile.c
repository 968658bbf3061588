#include "recfile.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
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
            l->found++;
            if (strlen(dir) + 1 + nl >= PATH_MAX || (keep && !keep(ctx, dirfd(d), dir, nm, nl - 6)))
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

/* A canonical lowercase UUID key (8-4-4-4-12 hex digits) packed into 128
 * bits, whose order as two integers is the string's byte order (digits and
 * lowercase hex letters both ascend, and the dashes sit at the same
 * places). */
typedef struct uuid_key {
    uint64_t hi, lo;
} uuid_key;

/* 1 + a lowercase hex digit's value, 0 for any other byte */
static const unsigned char HEX1[256] = {
    ['0'] = 1, ['1'] = 2,  ['2'] = 3,  ['3'] = 4,  ['4'] = 5,  ['5'] = 6,  ['6'] = 7,  ['7'] = 8,
    ['8'] = 9, ['9'] = 10, ['a'] = 11, ['b'] = 12, ['c'] = 13, ['d'] = 14, ['e'] = 15, ['f'] = 16,
};

/* The 16 hex digits at k's positions p[0..15] as one integer; false when
 * one is not a lowercase hex digit. */
static bool pack16(const unsigned char *k, const unsigned char *p, uint64_t *out)
{
    uint64_t w = 0;
    unsigned bad = 0;
    for (int i = 0; i < 16; i++) {
        unsigned v = HEX1[k[p[i]]];
        bad |= v == 0;
        w = w << 4 | ((v - 1) & 15);
    }
    *out = w;
    return !bad;
}

/* key packed; false for a key that is not a canonical lowercase UUID */
static bool uuid_pack(const char *key, size_t klen, uuid_key *out)
{
    static const unsigned char hi[16] = {0, 1, 2, 3, 4, 5, 6, 7, 9, 10, 11, 12, 14, 15, 16, 17};
    static const unsigned char lo[16] = {19, 20, 21, 22, 24, 25, 26, 27,
                                         28, 29, 30, 31, 32, 33, 34, 35};
    const unsigned char *k = (const unsigned char *)key;
    return klen == 36 && k[8] == '-' && k[13] == '-' && k[18] == '-' && k[23] == '-' &&
           pack16(k, hi, &out->hi) && pack16(k, lo, &out->lo);
}

/* Entries by their packed keys (keys[e.order]: order is the entry's index
 * before the sort), then walk order */
static int uuid_cmp(const void *a, const void *b, void *keys)
{
    const recfile_ent *x = a, *y = b;
    const uuid_key *kx = (const uuid_key *)keys + x->order, *ky = (const uuid_key *)keys + y->order;
    if (kx->hi != ky->hi)
        return kx->hi < ky->hi ? -1 : 1;
    if (kx->lo != ky->lo)
        return kx->lo < ky->lo ? -1 : 1;
    return x->order < y->order ? -1 : x->order > y->order;
}

/* Sorted as ent_cmp sorts, by the packed keys when every key is a UUID (a
 * store's record names: two integer compares instead of a memcmp through
 * the arena, most of a listing's sort); false when some key is not one or
 * there is no room for the keys. Sets *dups when two keys are equal. */
static bool sort_uuids(recfile_list *l, bool *dups)
{
    uuid_key *keys = malloc(l->n * sizeof *keys);
    if (!keys)
        return false;
    for (size_t i = 0; i < l->n; i++) {
        if (l->e[i].order != i || !uuid_pack(l->arena + l->e[i].key, l->e[i].klen, &keys[i])) {
            free(keys);
            return false;
        }
    }
    qsort_r(l->e, l->n, sizeof *l->e, uuid_cmp, keys);
    *dups = false;
    for (size_t i = 0; i + 1 < l->n && !*dups; i++) {
        const uuid_key *a = &keys[l->e[i].order], *b = &keys[l->e[i + 1].order];
        *dups = a->hi == b->hi && a->lo == b->lo;
    }
    free(keys);
    return true;
}

/* Sorted by key, the last of each run of equal keys kept. */
static void sort_unique(recfile_list *l)
{
    if (l->n < 2)
        return;
    bool dups = true;
    if (!sort_uuids(l, &dups))
        qsort_r(l->e, l->n, sizeof *l->e, ent_cmp, l->arena);
    if (!dups)
        return;
    size_t w = 0;
    for (size_t r = 0; r < l->n; r++) {
        if (r + 1 < l->n && l->e[r].klen == l->e[r + 1].klen &&
            !strcmp(l->arena + l->e[r].key, l->arena + l->e[r + 1].key))
            continue;
        l->e[w++] = l->e[r];
    }
    l->n = w;
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
    sort_unique(l);
    return 0;
}

/* ---- the listing walked by two threads ---- */

/* The directories of one half of datadir's, walked in their order. */
typedef struct half {
    recfile_list l;
    const char *datadir;
    char **names;
    size_t n;
    recfile_keep_fn keep;
    void *ctx;
    int rc, eno;
} half;

static void *walk_half(void *p)
{
    half *h = p;
    char path[PATH_MAX];
    for (size_t i = 0; h->rc == 0 && i < h->n; i++) {
        if (snprintf(path, sizeof path, "%s/%s", h->datadir, h->names[i]) >= (int)sizeof path)
            continue; /* as walk: a path too long is not a record's */
        h->rc = walk(&h->l, path, 1, h->keep, h->ctx);
    }
    h->eno = h->rc ? errno : 0;
    return NULL;
}

/* The entries of b appended to a (b's arena, directories and entries
 * after a's, b's walk order after a's); b stays the caller's to free. On
 * failure (errno ENOMEM) a keeps its own entries. */
static int merge(recfile_list *a, const recfile_list *b)
{
    if (a->alen + b->alen > UINT32_MAX || a->n + b->n > UINT32_MAX) {
        errno = ENOMEM;
        return -1;
    }
    char *ar = realloc(a->arena, a->alen + b->alen + 1);
    if (!ar)
        return -1;
    a->arena = ar;
    a->acap = a->alen + b->alen + 1;
    uint32_t *dirs = realloc(a->dirs, (a->ndirs + b->ndirs + 1) * sizeof *dirs);
    if (!dirs)
        return -1;
    a->dirs = dirs;
    a->dcap = a->ndirs + b->ndirs + 1;
    recfile_ent *e = realloc(a->e, (a->n + b->n + 1) * sizeof *e);
    if (!e)
        return -1;
    a->e = e;
    a->cap = a->n + b->n + 1;
    if (b->alen) /* none: b kept no file (its arena never made) */
        memcpy(a->arena + a->alen, b->arena, b->alen);
    for (size_t i = 0; i < b->ndirs; i++)
        a->dirs[a->ndirs + i] = b->dirs[i] + (uint32_t)a->alen;
    for (size_t i = 0; i < b->n; i++)
        a->e[a->n + i] =
            (recfile_ent){b->e[i].key + (uint32_t)a->alen, b->e[i].dir + (uint32_t)a->ndirs,
                          b->e[i].order + (uint32_t)a->n, b->e[i].klen};
    a->alen += b->alen;
    a->ndirs += b->ndirs;
    a->n += b->n;
    a->found += b->found;
    return 0;
}

/* datadir's names when every entry is a directory (none: an empty list;
 * 1: walk it in one go: a file, a link or a type the listing must stat
 * sits beside them, or they are too few to share); -1 on error. */
static int top_dirs(const char *datadir, char ***out, size_t *n)
{
    *out = NULL;
    *n = 0;
    DIR *d = opendir(datadir);
    if (!d)
        return errno == ENOENT ? 1 : -1;
    size_t cap = 0;
    int rc = 0;
    struct dirent *de;
    while (rc == 0 && (de = readdir(d))) {
        if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
            continue;
        if (de->d_type != DT_DIR) {
            rc = 1;
            break;
        }
        if (*n == cap) {
            cap = cap ? cap * 2 : 256;
            char **v = realloc(*out, cap * sizeof *v);
            if (!v) {
                rc = -1;
                break;
            }
            *out = v;
        }
        if (!((*out)[*n] = strdup(de->d_name)))
            rc = -1;
        else
            (*n)++;
    }
    int e = errno;
    closedir(d);
    if (rc == 0 && *n < RECFILE_SPLIT_MIN)
        rc = 1;
    if (rc) {
        for (size_t i = 0; i < *n; i++)
            free((*out)[i]);
        free(*out);
        *out = NULL;
        *n = 0;
    }
    errno = e;
    return rc;
}

int recfile_list_open_split(const char *datadir, recfile_list *l, recfile_keep_fn keep, void *ctx)
{
    char **names;
    size_t n;
    int t = top_dirs(datadir, &names, &n);
    if (t < 0) {
        memset(l, 0, sizeof *l);
        return -1;
    }
    if (t > 0)
        return recfile_list_open_keep(datadir, l, keep, ctx);
    /* the first directory here, then the rest: in one walk when the first
     * says the listing is small (a thread's start costs what a few
     * hundred files' listing does), else half of them on a thread of its
     * own, half here; merged, the same walk order as one walk of datadir,
     * whose readdir gave this order */
    half a = {.datadir = datadir, .names = names, .n = 1, .keep = keep, .ctx = ctx};
    walk_half(&a);
    half b = a;
    b.l = (recfile_list){0};
    b.n = 0;
    if (a.rc == 0 && a.l.found * n < RECFILE_SPLIT_FILES) {
        a.n = n - 1;
        a.names = names + 1;
        walk_half(&a);
    } else if (a.rc == 0) {
        a.n = (n - 1) / 2;
        a.names = names + 1;
        b.names = names + 1 + a.n;
        b.n = n - 1 - a.n;
        pthread_t th;
        bool threaded = pthread_create(&th, NULL, walk_half, &b) == 0;
        walk_half(&a);
        if (threaded)
            pthread_join(th, NULL);
        else
            walk_half(&b);
    }
    for (size_t i = 0; i < n; i++)
        free(names[i]);
    free(names);
    int rc = a.rc ? a.rc : b.rc, eno = a.rc ? a.eno : b.eno;
    if (!rc && b.l.found && (rc = merge(&a.l, &b.l)) != 0)
        eno = errno;
    recfile_list_free(&b.l);
    if (rc) {
        recfile_list_free(&a.l);
        memset(l, 0, sizeof *l);
        errno = eno;
        return -1;
    }
    *l = a.l;
    sort_unique(l);
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
