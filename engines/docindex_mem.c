/* docindex: equality and compound entry files kept in memory in a compact
 * form (the count and a sorted array of 36-byte ids), so a lookup does not
 * read and parse the file again. Each use validates the copy against the
 * file the way the record cache does (rcache.h, STAT): inode and device,
 * size, nanosecond mtime and ctime; a write by this process (a publish by
 * rename, an unlink) or by another one (storh, another storhd) changes
 * them, so the next lookup reads the file again. Where the entry's
 * directory is watched (dirwatch.h), a copy (or an absence) validated at
 * the watch's stamp is served without the stat while no event has named
 * anything in that directory since: one read of the watch instead of a
 * stat of a long path. Thread-safe: lookups run concurrently under the
 * store's index read lock. */
#include "docindex_int.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dirwatch.h"
#include "fsx.h"
#include "sjson.h"

#define MEM_BUCKETS 1024
#define MEM_MAX_ENTRIES 8192
#define MEM_MAX_BYTES ((size_t)64 << 20)
#define MEM_DIRS 64 /* entry dirs watched per index: its fields and pairs */

typedef docindex_fstate mstate;

static mstate state_of(const struct stat *st)
{
    return (mstate){st->st_dev, st->st_ino, st->st_size, st->st_mtim, st->st_ctim};
}

static bool same_state(const mstate *a, const mstate *b)
{
    return a->dev == b->dev && a->ino == b->ino && a->size == b->size &&
           a->mtim.tv_sec == b->mtim.tv_sec && a->mtim.tv_nsec == b->mtim.tv_nsec &&
           a->ctim.tv_sec == b->ctim.tv_sec && a->ctim.tv_nsec == b->ctim.tv_nsec;
}

typedef struct mnode {
    struct mnode *next;
    size_t hash;
    char *name; /* path, NUL, key */
    size_t name_len;
    mstate st;      /* all zero: the file was absent */
    uint64_t stamp; /* its dir's watch stamp when last validated; 0: none */
    dix_ids *ids;   /* &empty_ids when absent */
} mnode;

/* An entry directory and the watch over it (dirwatch.h). */
enum { MDIR_RETRY, MDIR_ABSENT, MDIR_NEVER };
typedef struct mdir {
    char *path;
    size_t len;
    dirwatch *w; /* NULL: none (state says whether to try again) */
    int state;
} mdir;

/* A range field's effective set, shared by the lookups that use it. */
struct docindex_range {
    _Atomic long refs;
    char *field;
    mstate st[2]; /* main file, delta */
    rset s;
};

#define MEM_RANGES 16

struct docindex_mem {
    pthread_mutex_t mu;
    mnode *b[MEM_BUCKETS];
    size_t entries, bytes;
    docindex_range *ranges[MEM_RANGES];
    mdir dirs[MEM_DIRS];
    size_t ndirs;
    /* the indexes dir's watch, over the names entries/ and the rebuild's
     * tree beside it (docindex_swap.c), and its stamp when the entry dirs'
     * watches were last known to watch what stands at their paths */
    dirwatch *root;
    uint64_t root_seen;
    bool root_never; /* it cannot be watched (as MDIR_NEVER) */
};

static dix_ids empty_ids = {.refs = 1};
static _Atomic uint64_t t_lookups, t_watched;

void docindex_mem_totals(docindex_mem_stats *out)
{
    *out = (docindex_mem_stats){atomic_load(&t_lookups), atomic_load(&t_watched)};
}

docindex_mem *docindex_mem_new(void)
{
    docindex_mem *m = calloc(1, sizeof *m);
    if (m)
        pthread_mutex_init(&m->mu, NULL);
    return m;
}

void docindex_ids_release(dix_ids *ids)
{
    if (!ids || ids == &empty_ids)
        return;
    if (atomic_fetch_sub(&ids->refs, 1) == 1) {
        free(ids->id);
        free(ids);
    }
}

/* Under mu. */
static void mem_clear(docindex_mem *m)
{
    for (size_t i = 0; i < MEM_BUCKETS; i++) {
        mnode *n = m->b[i];
        while (n) {
            mnode *next = n->next;
            docindex_ids_release(n->ids);
            free(n->name);
            free(n);
            n = next;
        }
        m->b[i] = NULL;
    }
    m->entries = m->bytes = 0;
}

void docindex_range_release(docindex_range *r)
{
    if (!r || atomic_fetch_sub(&r->refs, 1) != 1)
        return;
    docindex_rset_free(&r->s);
    free(r->field);
    free(r);
}

void docindex_mem_free(docindex_mem *m)
{
    if (!m)
        return;
    mem_clear(m);
    for (size_t i = 0; i < MEM_RANGES; i++)
        docindex_range_release(m->ranges[i]);
    for (size_t i = 0; i < m->ndirs; i++) {
        dirwatch_release(m->dirs[i].w);
        free(m->dirs[i].path);
    }
    dirwatch_release(m->root);
    pthread_mutex_destroy(&m->mu);
    free(m);
}

static size_t fnv(const char *s, size_t n)
{
    size_t h = 1469598103934665603ULL;
    for (size_t i = 0; i < n; i++)
        h = (h ^ (unsigned char)s[i]) * 1099511628211ULL;
    return h;
}

static int id_cmp(const void *a, const void *b)
{
    return memcmp(a, b, IDMAP_KEY);
}

static dix_ids *ids_new(size_t cap)
{
    dix_ids *d = calloc(1, sizeof *d);
    if (!d)
        return NULL;
    atomic_init(&d->refs, 1);
    if (cap && !(d->id = malloc(cap * IDMAP_KEY))) {
        free(d);
        return NULL;
    }
    return d;
}

/* Sorted in byte order, no duplicates (storh writes them so; a file
 * written otherwise is put in order here). */
static void ids_normalize(dix_ids *d)
{
    bool sorted = true;
    for (size_t i = 1; sorted && i < d->n; i++)
        sorted = memcmp(d->id[i - 1], d->id[i], IDMAP_KEY) < 0;
    if (sorted)
        return;
    qsort(d->id, d->n, IDMAP_KEY, id_cmp);
    size_t w = 0;
    for (size_t i = 0; i < d->n; i++)
        if (!w || memcmp(d->id[w - 1], d->id[i], IDMAP_KEY) != 0)
            memmove(d->id[w++], d->id[i], IDMAP_KEY);
    d->n = w;
}

/* The canonical bytes storh and storhd write:
 * {"field":..,"key":"K","count":N,"value":..,"ids":["<36>",...]}. NULL when
 * the text is not in that shape (then it is parsed). */
static dix_ids *raw_ids(const char *t, size_t len, const char *key)
{
    char want[300];
    int wl = snprintf(want, sizeof want, "\"key\":\"%s\",\"count\":", key);
    if (wl <= 0 || (size_t)wl >= sizeof want || len < 20 || strncmp(t, "{\"field\":", 9) != 0)
        return NULL;
    const char *k = memmem(t, len, want, (size_t)wl);
    if (!k)
        return NULL;
    char *end;
    long long n = strtoll(k + wl, &end, 10);
    if (end == k + wl || *end != ',' || n < 0 || (size_t)n > len / 38 + 1)
        return NULL;
    const char *p = memmem(end, len - (size_t)(end - t), ",\"ids\":[", 8);
    if (!p)
        return NULL;
    p += 8;
    const char *stop = t + len;
    dix_ids *d = ids_new((size_t)n);
    if (!d)
        return NULL;
    d->count = n;
    while (p < stop && *p == '"') {
        if (p + 38 > stop || p[37] != '"' || d->n == (size_t)n) {
            docindex_ids_release(d);
            return NULL;
        }
        memcpy(d->id[d->n++], p + 1, IDMAP_KEY);
        p += 38;
        if (p < stop && *p == ',')
            p++;
    }
    if (p >= stop || *p != ']' || d->n != (size_t)n) {
        docindex_ids_release(d);
        return NULL;
    }
    ids_normalize(d);
    return d;
}

/* Any other spelling (JSON with comments, other whitespace): parsed. A
 * file whose key is not key (two keys on one file name) holds none. */
static int parsed_ids(const char *t, size_t len, const char *key, const char *path, dix_ids **out,
                      storh_err *err)
{
    storh_err jerr;
    json_t *o = sjson_decode_jsonc_object(t, len, &jerr);
    json_t *k = json_object_get(o, "key"), *i = json_object_get(o, "ids");
    if (!o || !json_is_string(k) || !json_is_array(i)) {
        json_decref(o);
        return storh_err_set(err, STORH_ECORRUPT, "Malformed equality index: %s", path);
    }
    bool match = !strcmp(json_string_value(k), key);
    dix_ids *d = ids_new(match ? json_array_size(i) : 0);
    if (!d) {
        json_decref(o);
        return storh_err_set(err, STORH_ENOMEM, "Out of memory reading %s", path);
    }
    if (match) {
        d->count = (long long)json_array_size(i);
        size_t x;
        json_t *e;
        json_array_foreach (i, x, e)
            if (json_is_string(e) && json_string_length(e) == IDMAP_KEY)
                memcpy(d->id[d->n++], json_string_value(e), IDMAP_KEY);
        ids_normalize(d);
    }
    json_decref(o);
    *out = d;
    return 0;
}

/* Reads path with the state of the file its bytes came from. */
int docindex_read_state(const char *path, buf *b, mstate *st, storh_err *err)
{
    memset(st, 0, sizeof *st);
    struct stat s;
    storh_err local; /* an absent file is no error here: err stays untouched */
    int rc = fsx_read_all_stat(path, b, &s, &local);
    if (rc == STORH_ENOTFOUND)
        return rc;
    if (rc) {
        if (err)
            *err = local;
        return rc;
    }
    *st = state_of(&s);
    return 0;
}

/* Reads and decodes the entry file (no cache). */
static int load_ids(const char *path, const char *key, dix_ids **out, mstate *st, storh_err *err)
{
    buf b = BUF_INIT;
    int rc = docindex_read_state(path, &b, st, err);
    if (rc == STORH_ENOTFOUND) {
        buf_free(&b);
        *out = &empty_ids;
        return STORH_ENOTFOUND;
    }
    if (!rc) {
        *out = raw_ids(b.data, b.len, key);
        if (!*out)
            rc = parsed_ids(b.data, b.len, key, path, out, err);
    }
    buf_free(&b);
    return rc;
}

/* Under mu: the table's entry of path's directory, made when add is set
 * (NULL: none, a path without a dir, the table full or out of memory). */
static mdir *dir_of(docindex_mem *m, const char *path, bool add)
{
    const char *slash = strrchr(path, '/');
    if (!slash)
        return NULL;
    size_t len = (size_t)(slash - path);
    for (size_t i = 0; i < m->ndirs; i++)
        if (m->dirs[i].len == len && !memcmp(m->dirs[i].path, path, len))
            return &m->dirs[i];
    if (!add || m->ndirs == MEM_DIRS || !(m->dirs[m->ndirs].path = strndup(path, len)))
        return NULL;
    mdir *d = &m->dirs[m->ndirs++];
    d->len = len;
    d->w = NULL;
    d->state = MDIR_RETRY;
    return d;
}

static bool entries_names(const char *name)
{
    return !strcmp(name, "entries") || !strcmp(name, ".entries.swap");
}

/* Under mu: the stamp of the watch over path's directory (armed first if
 * it is not, or again if it died), 0 when there is none (watches off, the
 * dir absent or not watchable, the table full): then every lookup stats.
 * A watch follows its dir's inode, and a rebuild moves the whole entries/
 * tree above the entry dirs (swapped for a new one, docindex_swap.c, or
 * removed by storh) without an event in any of them: the indexes dir's
 * watch sees that move, and then every entry dir's watch is let go, to be
 * armed again on what stands at its path now. Without that watch, 0. */
static uint64_t dir_stamp(docindex_mem *m, const char *ixdir, const char *path)
{
    if (!m->root && !m->root_never) {
        m->root = dirwatch_add(ixdir, entries_names);
        m->root_seen = 0; /* armed now: nothing known of the moves before */
        m->root_never = !m->root && errno != ENOENT && errno != ENOTDIR;
    }
    if (!m->root)
        return 0;
    mdir *d = dir_of(m, path, true);
    dirwatch *ws[2] = {m->root, d ? d->w : NULL};
    uint64_t st[2] = {0, 0};
    dirwatch_stamps(ws, ws[1] ? 2 : 1, st); /* one drain for both */
    if (!st[0] || st[0] != m->root_seen) {
        for (size_t i = 0; i < m->ndirs; i++) {
            dirwatch_release(m->dirs[i].w);
            m->dirs[i].w = NULL;
            m->dirs[i].state = MDIR_RETRY;
        }
        st[1] = 0;
        if (!st[0]) { /* the indexes dir moved or gone: armed again next time */
            dirwatch_release(m->root);
            m->root = NULL;
            return 0;
        }
        m->root_seen = st[0];
    }
    if (!d || st[1] || d->state != MDIR_RETRY)
        return st[1];
    /* not watched, or its dir went away: watch what stands there now */
    dirwatch_release(d->w);
    d->w = dirwatch_add(d->path, NULL);
    if (!d->w) /* absent: tried again once a stat finds the file; else never */
        d->state = errno == ENOENT || errno == ENOTDIR ? MDIR_ABSENT : MDIR_NEVER;
    return d->w ? dirwatch_stamp(d->w) : 0;
}

/* Under mu: a stat found a file in path's directory, so an absent
 * directory's watch is tried again by the next lookup. */
static void dir_found(docindex_mem *m, const char *path)
{
    mdir *d = dir_of(m, path, false);
    if (d && d->state == MDIR_ABSENT)
        d->state = MDIR_RETRY;
}

/* Under mu: the node of name, NULL if none. */
static mnode *find(docindex_mem *m, const char *name, size_t nl, size_t h)
{
    for (mnode *n = m->b[h % MEM_BUCKETS]; n; n = n->next)
        if (n->hash == h && n->name_len == nl && !memcmp(n->name, name, nl))
            return n;
    return NULL;
}

/* Under mu: keeps d (absent: &empty_ids) as name's node, validated by st
 * and stamp; takes a reference to d. Takes name (freed if not kept). */
static void remember(docindex_mem *m, char *name, size_t nl, size_t h, const mstate *st,
                     uint64_t stamp, dix_ids *d)
{
    size_t bytes = sizeof(mnode) + nl + sizeof *d + d->n * IDMAP_KEY;
    mnode *n = find(m, name, nl, h);
    if (n) { /* a stale copy (or one another lookup just loaded): replaced */
        m->bytes -= sizeof(mnode) + nl + sizeof *d + n->ids->n * IDMAP_KEY;
        docindex_ids_release(n->ids);
        free(name);
    } else {
        if (m->entries >= MEM_MAX_ENTRIES || m->bytes + bytes > MEM_MAX_BYTES)
            mem_clear(m); /* bounded: the files are the truth, a miss re-reads */
        n = calloc(1, sizeof *n);
        if (!n) {
            free(name);
            return;
        }
        n->name = name;
        n->name_len = nl;
        n->hash = h;
        n->next = m->b[h % MEM_BUCKETS];
        m->b[h % MEM_BUCKETS] = n;
        m->entries++;
    }
    n->st = *st;
    n->stamp = stamp;
    n->ids = d;
    m->bytes += bytes;
    if (d != &empty_ids)
        atomic_fetch_add(&d->refs, 1);
}

int docindex_entry_ids(docindex *ix, const char *path, const char *key, dix_ids **out,
                       storh_err *err)
{
    docindex_mem *m = ix->mem;
    atomic_fetch_add_explicit(&t_lookups, 1, memory_order_relaxed);
    size_t pl = strlen(path), kl = strlen(key), nl = pl + 1 + kl;
    char *name = malloc(nl + 1);
    if (!name)
        return storh_err_set(err, STORH_ENOMEM, "Out of memory reading %s", path);
    memcpy(name, path, pl + 1);
    memcpy(name + pl + 1, key, kl + 1);
    size_t h = fnv(name, nl);
    uint64_t stamp = 0;
    if (m) {
        /* the watch's stamp before the stat: an entry validated at it is
         * fresh until an event in its directory moves it on */
        pthread_mutex_lock(&m->mu);
        stamp = dir_stamp(m, ix->dir, path);
        mnode *n = stamp ? find(m, name, nl, h) : NULL;
        if (n && n->stamp == stamp) {
            atomic_fetch_add_explicit(&t_watched, 1, memory_order_relaxed);
            if (n->ids != &empty_ids)
                atomic_fetch_add(&n->ids->refs, 1);
            *out = n->ids;
            pthread_mutex_unlock(&m->mu);
            free(name);
            return 0;
        }
        pthread_mutex_unlock(&m->mu);
    }
    struct stat s;
    if (stat(path, &s) != 0) {
        if (errno != ENOENT && errno != ENOTDIR) {
            free(name);
            return storh_err_sys(err, errno, "Could not stat storage file: %s", path);
        }
        *out = &empty_ids;
        if (m && stamp) { /* absent, and known to stay so while the stamp holds */
            mstate none = {0};
            pthread_mutex_lock(&m->mu);
            remember(m, name, nl, h, &none, stamp, &empty_ids);
            pthread_mutex_unlock(&m->mu);
        } else {
            free(name);
        }
        return 0;
    }
    mstate now = state_of(&s);
    if (m) {
        pthread_mutex_lock(&m->mu);
        dir_found(m, path);
        mnode *n = find(m, name, nl, h);
        if (n && n->ids != &empty_ids && same_state(&n->st, &now)) {
            n->stamp = stamp;
            atomic_fetch_add(&n->ids->refs, 1);
            *out = n->ids;
            pthread_mutex_unlock(&m->mu);
            free(name);
            return 0;
        }
        pthread_mutex_unlock(&m->mu);
    }
    mstate st;
    dix_ids *d;
    int rc = load_ids(path, key, &d, &st, err);
    if (rc == STORH_ENOTFOUND) { /* removed since the stat */
        free(name);
        *out = &empty_ids;
        return 0;
    }
    if (rc) {
        free(name);
        return rc;
    }
    if (!m || d == &empty_ids) {
        free(name);
        *out = d;
        return 0;
    }
    pthread_mutex_lock(&m->mu);
    remember(m, name, nl, h, &st, stamp, d);
    pthread_mutex_unlock(&m->mu);
    *out = d;
    return 0;
}

/* ---------- range fields ---------- */

static int stat_state(const char *path, mstate *st, storh_err *err)
{
    struct stat s;
    memset(st, 0, sizeof *st);
    if (stat(path, &s) == 0) {
        *st = state_of(&s);
        return 0;
    }
    if (errno == ENOENT || errno == ENOTDIR)
        return 0;
    return storh_err_sys(err, errno, "Could not stat storage file: %s", path);
}

int docindex_range_get(docindex *ix, const char *field, docindex_range **out, const rset **s,
                       storh_err *err)
{
    docindex_mem *m = ix->mem;
    char p[PATH_MAX];
    mstate now[2];
    int rc = docindex_range_path(ix, field, ".jsonl", p, err);
    if (!rc)
        rc = stat_state(p, &now[0], err);
    if (!rc)
        rc = docindex_range_path(ix, field, ".delta.jsonl", p, err);
    if (!rc)
        rc = stat_state(p, &now[1], err);
    if (rc)
        return rc;
    size_t slot = MEM_RANGES;
    if (m) {
        pthread_mutex_lock(&m->mu);
        for (size_t i = 0; i < MEM_RANGES; i++) {
            docindex_range *r = m->ranges[i];
            if (r && !strcmp(r->field, field)) {
                slot = i;
                if (same_state(&r->st[0], &now[0]) && same_state(&r->st[1], &now[1])) {
                    atomic_fetch_add(&r->refs, 1);
                    pthread_mutex_unlock(&m->mu);
                    *out = r;
                    *s = &r->s;
                    return 0;
                }
            }
            if (slot == MEM_RANGES && !r)
                slot = i;
        }
        pthread_mutex_unlock(&m->mu);
    }
    docindex_range *r = calloc(1, sizeof *r);
    if (!r || !(r->field = strdup(field))) {
        free(r);
        return storh_err_set(err, STORH_ENOMEM, "Out of memory");
    }
    atomic_init(&r->refs, 1);
    rc = docindex_rset_load_states(ix, field, &r->s, r->st, err);
    if (rc) {
        free(r->field);
        free(r);
        return rc;
    }
    if (m) {
        pthread_mutex_lock(&m->mu);
        if (slot == MEM_RANGES)
            slot = (size_t)(fnv(field, strlen(field)) % MEM_RANGES); /* full: one goes */
        else if (m->ranges[slot] && strcmp(m->ranges[slot]->field, field) != 0)
            slot = MEM_RANGES; /* taken since: this copy is not kept */
        if (slot < MEM_RANGES) {
            docindex_range_release(m->ranges[slot]);
            m->ranges[slot] = r;
            atomic_fetch_add(&r->refs, 1);
        }
        pthread_mutex_unlock(&m->mu);
    }
    *out = r;
    *s = &r->s;
    return 0;
}

/* ---------- id sets ---------- */

void docindex_idset_free(docindex_idset *s)
{
    free(s->own);
    docindex_ids_release(s->ref);
    *s = (docindex_idset)DOCINDEX_IDSET_INIT;
}

static int idset_reserve(docindex_idset *s, size_t n, storh_err *err)
{
    if (n <= s->cap)
        return 0;
    size_t cap = s->cap ? s->cap : 16;
    while (cap < n)
        cap *= 2;
    char(*own)[DOCINDEX_ID] = realloc(s->own, cap * DOCINDEX_ID);
    if (!own)
        return storh_err_set(err, STORH_ENOMEM, "Out of memory");
    s->own = own;
    s->cap = cap;
    s->id = (const char(*)[DOCINDEX_ID])own;
    return 0;
}

/* Makes s own its ids (a shared entry is copied). */
static int idset_own(docindex_idset *s, size_t extra, storh_err *err)
{
    if (!s->ref)
        return idset_reserve(s, s->n + extra, err);
    dix_ids *ref = s->ref;
    s->ref = NULL;
    s->id = NULL;
    int rc = idset_reserve(s, s->n + extra, err);
    if (!rc)
        memcpy(s->own, ref->id, s->n * DOCINDEX_ID);
    else
        s->n = 0;
    docindex_ids_release(ref);
    return rc;
}

int docindex_idset_push(docindex_idset *s, const char *id, storh_err *err)
{
    int rc = idset_own(s, 1, err);
    if (!rc)
        memcpy(s->own[s->n++], id, DOCINDEX_ID);
    return rc;
}

void docindex_idset_sort(docindex_idset *s)
{
    if (s->ref || s->n < 2)
        return; /* an entry's ids are in order already */
    bool sorted = true;
    for (size_t i = 1; sorted && i < s->n; i++)
        sorted = memcmp(s->own[i - 1], s->own[i], DOCINDEX_ID) < 0;
    if (sorted)
        return;
    qsort(s->own, s->n, DOCINDEX_ID, id_cmp);
    size_t w = 0;
    for (size_t i = 0; i < s->n; i++)
        if (!w || memcmp(s->own[w - 1], s->own[i], DOCINDEX_ID) != 0)
            memmove(s->own[w++], s->own[i], DOCINDEX_ID);
    s->n = w;
}

/* Shares d's ids if s is empty, else adds them (unsorted). */
int docindex_idset_add_entry(docindex_idset *s, dix_ids *d, storh_err *err)
{
    if (!d->n)
        return 0;
    if (!s->n && !s->ref && d != &empty_ids) {
        free(s->own);
        *s = (docindex_idset)DOCINDEX_IDSET_INIT;
        atomic_fetch_add(&d->refs, 1);
        s->ref = d;
        s->id = (const char(*)[DOCINDEX_ID])d->id;
        s->n = d->n;
        return 0;
    }
    int rc = idset_own(s, d->n, err);
    if (!rc) {
        memcpy(s->own[s->n], d->id, d->n * DOCINDEX_ID);
        s->n += d->n;
    }
    return rc;
}

int docindex_idset_intersect(docindex_idset *a, const docindex_idset *b, storh_err *err)
{
    int rc = idset_own(a, 0, err);
    if (rc)
        return rc;
    size_t w = 0, j = 0;
    for (size_t i = 0; i < a->n && j < b->n;) {
        int c = memcmp(a->own[i], b->id[j], DOCINDEX_ID);
        if (c < 0) {
            i++;
        } else if (c > 0) {
            j++;
        } else {
            memmove(a->own[w++], a->own[i], DOCINDEX_ID);
            i++;
            j++;
        }
    }
    a->n = w;
    return 0;
}

int docindex_idset_union(docindex_idset *a, const docindex_idset *b, storh_err *err)
{
    if (!b->n)
        return 0;
    int rc = idset_own(a, b->n, err);
    if (rc)
        return rc;
    memcpy(a->own[a->n], b->id, b->n * DOCINDEX_ID);
    a->n += b->n;
    docindex_idset_sort(a);
    return 0;
}
