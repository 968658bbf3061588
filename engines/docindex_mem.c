/* docindex: equality and compound entry files kept in memory in a compact
 * form (the count and a sorted array of 36-byte ids), so a lookup does not
 * read and parse the file again. Each use validates the copy against the
 * file the way the record cache does (rcache.h, STAT): inode and device,
 * size, nanosecond mtime and ctime; a write by this process (a publish by
 * rename, an unlink) or by another one (storh, another storhd) changes
 * them, so the next lookup reads the file again. Thread-safe: lookups run
 * concurrently under the store's index read lock. */
#include "docindex_int.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fsx.h"
#include "sjson.h"

#define MEM_BUCKETS 1024
#define MEM_MAX_ENTRIES 8192
#define MEM_MAX_BYTES ((size_t)64 << 20)

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
    mstate st;
    dix_ids *ids;
} mnode;

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
};

static dix_ids empty_ids = {.refs = 1};

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

int docindex_entry_ids(docindex *ix, const char *path, const char *key, dix_ids **out,
                       storh_err *err)
{
    docindex_mem *m = ix->mem;
    struct stat s;
    if (stat(path, &s) != 0) {
        if (errno == ENOENT || errno == ENOTDIR) {
            *out = &empty_ids;
            return 0;
        }
        return storh_err_sys(err, errno, "Could not stat storage file: %s", path);
    }
    mstate now = state_of(&s);
    size_t pl = strlen(path), kl = strlen(key), nl = pl + 1 + kl;
    char *name = malloc(nl + 1);
    if (!name)
        return storh_err_set(err, STORH_ENOMEM, "Out of memory reading %s", path);
    memcpy(name, path, pl + 1);
    memcpy(name + pl + 1, key, kl + 1);
    size_t h = fnv(name, nl);
    if (m) {
        pthread_mutex_lock(&m->mu);
        for (mnode *n = m->b[h % MEM_BUCKETS]; n; n = n->next)
            if (n->hash == h && n->name_len == nl && !memcmp(n->name, name, nl) &&
                same_state(&n->st, &now)) {
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
    size_t bytes = sizeof(mnode) + nl + sizeof *d + d->n * IDMAP_KEY;
    pthread_mutex_lock(&m->mu);
    mnode **pp = &m->b[h % MEM_BUCKETS];
    while (*pp && !((*pp)->hash == h && (*pp)->name_len == nl && !memcmp((*pp)->name, name, nl)))
        pp = &(*pp)->next;
    mnode *n = *pp;
    if (n) { /* a stale copy (or one another lookup just loaded): replaced */
        m->bytes -= sizeof(mnode) + nl + sizeof *d + n->ids->n * IDMAP_KEY;
        docindex_ids_release(n->ids);
        free(name);
    } else {
        if (m->entries >= MEM_MAX_ENTRIES || m->bytes + bytes > MEM_MAX_BYTES) {
            mem_clear(m); /* bounded: the files are the truth, a miss re-reads */
            pp = &m->b[h % MEM_BUCKETS];
        }
        n = calloc(1, sizeof *n);
        if (!n) {
            pthread_mutex_unlock(&m->mu);
            free(name);
            *out = d;
            return 0;
        }
        n->name = name;
        n->name_len = nl;
        n->hash = h;
        n->next = *pp;
        *pp = n;
        m->entries++;
    }
    n->st = st;
    n->ids = d;
    m->bytes += bytes;
    atomic_fetch_add(&d->refs, 1);
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
