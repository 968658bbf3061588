/* mirror_feed: the records of a docstore as a push takes them, read ahead
 * on a thread of its own while the push writes rows, so the record files'
 * reads overlap SQLite's inserts instead of adding to them. The reader
 * lists data/ (in id order, as the stream) as soon as the feed opens, so
 * the listing overlaps the push reading the table's rows (or a rebuild
 * emptying it); it takes no record until mirror__feed_start says the row
 * map is complete. Then for each record it either knows it unchanged (its
 * file has the state the memo holds and the row holds the memo's hash: one
 * fstatat) or makes its row (mirror_rows.c) from its bytes: those the
 * docstore's record cache holds (a put's or a bulk's, validated as a
 * listing's lookups, with the file state the memo keeps), else its file's
 * (one open, fstat, read and close). When the row map
 * is complete before the feed opens (the push kept it), each file is
 * stated as it is listed, relative to its shard (half the shards by a
 * thread of the listing's own, recfile.h), and a record known unchanged
 * never enters the listing (nor its sort). The push consumes
 * the items in order from a ring. During the walk the memo belongs to the
 * reader and the row map is only read by it (the push sets have_row.seen,
 * a field the reader never reads). Every push has its reader (a listing is
 * not known small before it is made); when the thread cannot start, the
 * same steps run inline. */
#include "mirror.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fsx.h"
#include "mmemo.h"
#include "recfile.h"
#include "mirror_int.h"

/* Items the reader may make ahead. A thread's wake-up takes up to about a
 * millisecond in a virtual machine (its vCPU halted), and the push inserts
 * a row in about 5 µs: the reader is woken while a quarter of the ring is
 * free, so the push still has hundreds of items to insert by the time the
 * reader runs (with 256 items, half free at the wake, each thread waited
 * for the other about a third of a push). */
#define RING 1024
/* Items the reader makes between two takes of the lock, and the push
 * takes or lets go at once: a handoff per item cost each thread a lock per
 * record */
#define FEED_RUN 32

/* Cache lookups of the walk validated against one drain of the watch (as
 * a listing's, doclist.c) */
#define FEED_DRAIN 64

struct mfeed {
    const mirror *m;
    const mirror_coll *c;
    docstore *ds;
    unsigned long looked; /* cache lookups made (one drain per FEED_DRAIN) */
    const idmap *rows;
    bool complete; /* rows was complete at open: files are judged as listed */
    mmemo *memo;
    char data[PATH_MAX]; /* data/ */
    bool listed;         /* l, datafd and datalen are made (list_rc: how) */
    bool reserve;        /* the memo's room for the listing is still to make */
    int list_rc;
    storh_err list_err;
    recfile_list l;
    int datafd;             /* data/, opened once: files are stated relative to it */
    size_t datalen;         /* strlen of data/'s path, as the listing's paths begin */
    size_t next;            /* the listing entry the reader takes next */
    _Atomic long unchanged; /* records known unchanged (their rows marked seen) */
    bool split;             /* two threads list (keep_file's rule for it) */
    atomic_bool odd;        /* a file the split listing found outside its shard */
    storh_err err;          /* the reader's, until the push takes the item MFEED_ERR */
    bool done;              /* the reader handed out its last item */
    mfeed_item ring[RING];
    /* the thread: head = items made, tail = items the push let go; the
     * push takes every item made at once ([tail, end), while holding) and
     * lets them go when it wants more; at: the one it holds now */
    bool threaded, stop, holding, go; /* go: the row map is complete */
    unsigned long at, end;
    bool rwait, pwait; /* the reader waits for room, the push for items */
    unsigned long head, tail;
    pthread_t th;
    pthread_mutex_t mu;
    pthread_cond_t made, freed;
};

/* The path of entry i relative to data/ into out (PATH_MAX); -1 if too
 * long. One descriptor for the whole walk (the service's budget sets a
 * few aside per mirror), not one per shard. */
static int entry_rel(const mfeed *f, size_t i, char *out)
{
    const char *dir = f->l.arena + f->l.dirs[f->l.e[i].dir];
    size_t dl = strlen(dir), k = 0;
    if (dl > f->datalen) { /* a shard: "<xx>/" */
        k = dl - f->datalen - 1;
        if (k + 1 >= PATH_MAX)
            return -1;
        memcpy(out, dir + f->datalen + 1, k);
        out[k++] = '/';
    }
    const char *key = recfile_list_key(&f->l, i);
    size_t kl = f->l.e[i].klen;
    if (k + kl + 7 > PATH_MAX)
        return -1;
    memcpy(out + k, key, kl);
    memcpy(out + k + kl, ".jsonc", 7);
    return 0;
}

/* 1 when the record key, whose file is rel under dirfd, is what its row
 * holds, known by one fstatat and the memo; -1 when its file is gone
 * (deleted since it was listed); 0: read it (a file that cannot be stated
 * is read too: the read says why). */
static int judge(mfeed *f, int dirfd, const char *rel, const char *key, const have_row *have)
{
    struct stat st;
    if (!have->ok)
        return 0;
    if (fstatat(dirfd, rel, &st, 0) != 0)
        return errno == ENOENT ? -1 : 0;
    const char *h = mmemo_hash(f->memo, key, &st);
    return h && !memcmp(h, have->hash, 32);
}

/* judge of the record at entry i of the listing. */
static int known_unchanged(mfeed *f, size_t i, const have_row *have)
{
    char rel[PATH_MAX];
    if (!have->ok || f->datafd < 0 || entry_rel(f, i, rel) != 0)
        return 0;
    return judge(f, f->datafd, rel, recfile_list_key(&f->l, i), have);
}

/* Whether dir, as the listing walked it, is key's own shard: data/<xx>
 * with xx the id's 25th and 26th characters (docstore_record_path). */
static bool own_shard(const mfeed *f, const char *dir, const char *key)
{
    size_t dl = f->datalen;
    return strlen(dir) == dl + 3 && !memcmp(dir, f->data, dl) && dir[dl] == '/' &&
           dir[dl + 1] == key[24] && dir[dl + 2] == key[25];
}

/* A file as it is listed (rows complete): false, left out, when it is
 * gone or known unchanged (its row marked seen). Of two files of one id
 * the later listed wins, as in the listing: one found after a file of its
 * id was left out goes in (that one no longer counts), and one found after
 * a file of its id went in goes in too. While two threads list (f->split)
 * only a file in its own shard is judged: a directory holds one file of a
 * name, so no two threads judge one id; a file elsewhere (a copy may sit
 * in its shard, walked by the other thread) goes in untouched and has the
 * listing made again in one walk (list). */
static bool keep_file(void *p, int dirfd, const char *dir, const char *name, size_t klen)
{
    mfeed *f = p;
    char key[IDMAP_KEY + 1];
    if (klen != IDMAP_KEY)
        return true;
    memcpy(key, name, IDMAP_KEY);
    key[IDMAP_KEY] = '\0';
    have_row *have = uuid7_is_valid(key, IDMAP_KEY) ? idmap_get(f->rows, key) : NULL;
    if (!have)
        return true;
    if (f->split && !own_shard(f, dir, key)) {
        atomic_store(&f->odd, true);
        return true;
    }
    if (have->seen) {
        have->seen = false;
        f->unchanged--;
    } else if (!have->listed) {
        int k = judge(f, dirfd, name, key, have);
        if (k < 0) /* deleted since readdir */
            return false;
        if (k) {
            have->seen = true;
            f->unchanged++;
            return false;
        }
    }
    have->listed = true;
    return true;
}

/* The memo's room for the listing, made once: after the first run of
 * items is published (the reader's), or after the first item (inline). */
static void reserve_memo(mfeed *f)
{
    if (f->reserve)
        mmemo_reserve(f->memo, f->l.n);
    f->reserve = false;
}

/* Lists data/ (the reader's, or the push's without a thread). Where each
 * file is judged as it is listed, the shards are halved between this
 * thread and another (recfile_list_open_split): the stats are most of
 * such a push. A listing alone is not: halved, a first push of 50,000
 * records took longer (the halves' memory, merged). */
static void list(mfeed *f)
{
    f->listed = true;
    f->datafd = -1;
    f->datalen = strlen(f->data);
    bool judge = f->complete && f->memo;
    f->split = judge;
    int rc = judge ? recfile_list_open_split(f->data, &f->l, keep_file, f)
                   : recfile_list_open_keep(f->data, &f->l, NULL, NULL);
    if (rc == 0 && judge && atomic_load(&f->odd)) {
        /* a file outside its shard: the marks undone, then one walk */
        recfile_list_free(&f->l);
        mirror__rows_unmark(f->rows);
        f->unchanged = 0;
        f->split = false;
        rc = recfile_list_open_keep(f->data, &f->l, keep_file, f);
    }
    if (rc != 0) {
        f->list_rc = storh_err_sys(&f->list_err, errno, "Could not list records under %s", f->data);
        return;
    }
    f->datafd = f->l.n ? open(f->data, O_RDONLY | O_DIRECTORY | O_CLOEXEC) : -1;
    /* a first walk puts every record in the memo: room made at once, not a
     * doubling per power of two; once the first items are out, so that the
     * push inserts while the table's pages are made (reserve_memo) */
    f->reserve = f->memo != NULL;
}

/* The row of entry i from the docstore's record cache when it holds the
 * record's bytes, validated as a listing's lookups (the state it gives is
 * the file's, for the memo): true when made (*st set); false: read the
 * file (which also says why bytes that make no row do not). */
static bool from_cache(mfeed *f, size_t i, const char *key, bool uuid, mfeed_item *it,
                       struct stat *st)
{
    char path[PATH_MAX];
    rcache_blob *b;
    if (!uuid || recfile_list_path(&f->l, i, path) != 0 ||
        !docstore_cached_file(f->ds, key, path, f->looked++ % FEED_DRAIN == 0, &b, st))
        return false;
    int rc = mirror__row_bytes(f->m, f->c, &it->r, key, b->data, b->len, &f->err);
    rcache_blob_release(b);
    return rc == 0;
}

/* The row of entry i read from its file (its state into *st): 0 made, 1
 * skip it (a name too long to open, as the stream), STORH_ENOTFOUND
 * (deleted since the listing), else an error (f->err). */
static int from_file(mfeed *f, size_t i, const char *key, mfeed_item *it, struct stat *st)
{
    char path[PATH_MAX];
    /* opened relative to data/: two names walked, not the root's path */
    bool rel = f->datafd >= 0 && entry_rel(f, i, path) == 0;
    if (!rel && recfile_list_path(&f->l, i, path) != 0)
        return 1;
    int rc =
        mirror__row_file(f->m, f->c, &it->r, rel ? f->datafd : AT_FDCWD, path, key, st, &f->err);
    if (rc && rc != STORH_ENOTFOUND && rel) { /* the message names the file under data/ */
        char msg[sizeof f->err.msg];
        memcpy(msg, f->err.msg, sizeof msg);
        storh_err_set(&f->err, rc, "%s (under %s)", msg, f->data);
    }
    return rc;
}

/* The next item into it: a row, a record known unchanged, the end, or an
 * error (after which the walk ends). */
static void produce(mfeed *f, mfeed_item *it)
{
    it->rc = 0;
    if (!f->listed)
        list(f);
    if (f->list_rc) {
        it->kind = MFEED_ERR;
        it->rc = f->list_rc;
        f->err = f->list_err;
        return;
    }
    while (f->next < f->l.n) {
        size_t i = f->next++;
        const char *key = recfile_list_key(&f->l, i);
        bool uuid = f->l.e[i].klen == IDMAP_KEY && uuid7_is_valid(key, IDMAP_KEY);
        it->have = uuid ? idmap_get(f->rows, key) : NULL;
        if (it->have && f->memo && !f->complete) { /* else judged as listed */
            int k = known_unchanged(f, i, it->have);
            if (k < 0)
                continue;
            if (k > 0) { /* no item: the push never reads this row's seen */
                it->have->seen = true;
                f->unchanged++;
                continue;
            }
        }
        struct stat st;
        if (!from_cache(f, i, key, uuid, it, &st)) {
            int rc = from_file(f, i, key, it, &st);
            if (rc == 1 || rc == STORH_ENOTFOUND)
                continue; /* a name too long to open, or deleted since listed */
            if (rc) {
                it->kind = MFEED_ERR;
                it->rc = rc;
                f->next = f->l.n;
                return;
            }
        }
        if (uuid && f->memo)
            mmemo_put(f->memo, key, &st, it->r.hash);
        it->kind = MFEED_ROW;
        return;
    }
    if (f->memo)
        mmemo_walk_end(f->memo); /* the whole listing was walked */
    it->kind = MFEED_END;
}

static void *reader(void *p)
{
    mfeed *f = p;
    list(f);
    pthread_mutex_lock(&f->mu);
    while (!f->go && !f->stop) /* the row map is the push's until started */
        pthread_cond_wait(&f->freed, &f->mu);
    pthread_mutex_unlock(&f->mu);
    for (;;) {
        pthread_mutex_lock(&f->mu);
        if (f->head - f->tail >= RING) { /* full: wait until a quarter is free */
            f->rwait = true;
            while (!f->stop && f->head - f->tail > RING - RING / 4)
                pthread_cond_wait(&f->freed, &f->mu);
            f->rwait = false;
        }
        bool stop = f->stop;
        unsigned long at = f->head, room = RING - (f->head - f->tail);
        pthread_mutex_unlock(&f->mu);
        if (stop)
            return NULL;
        /* a run of items made outside the lock (the slots from head on are
         * the reader's until published), then published at once */
        unsigned long k = 0;
        bool last = false;
        while (k < room && k < FEED_RUN && !last) {
            mfeed_item *it = &f->ring[(at + k++) % RING];
            produce(f, it);
            last = it->kind == MFEED_END || it->kind == MFEED_ERR;
        }
        pthread_mutex_lock(&f->mu);
        f->head += k;
        if (f->pwait)
            pthread_cond_signal(&f->made);
        pthread_mutex_unlock(&f->mu);
        if (last)
            return NULL;
        reserve_memo(f);
    }
}

int mirror__feed_open(const mirror *m, const mirror_coll *c, docstore *ds, const idmap *rows,
                      bool complete, mmemo *memo, mfeed **out, storh_err *err)
{
    mfeed *f = calloc(1, sizeof *f);
    if (!f)
        return storh_err_oom(err);
    *f = (mfeed){
        .m = m, .c = c, .ds = ds, .rows = rows, .complete = complete, .memo = memo, .datafd = -1};
    int rc = fsx_pathf(f->data, err, "%s/data", docstore_dir(ds));
    if (rc) {
        free(f);
        return rc;
    }
    if (memo)
        mmemo_walk_begin(memo);
    pthread_mutex_init(&f->mu, NULL);
    pthread_cond_init(&f->made, NULL);
    pthread_cond_init(&f->freed, NULL);
    /* without a thread the push lists and reads inline */
    f->threaded = pthread_create(&f->th, NULL, reader, f) == 0;
    *out = f;
    return 0;
}

void mirror__feed_start(mfeed *f)
{
    if (!f->threaded)
        return;
    pthread_mutex_lock(&f->mu);
    f->go = true;
    pthread_cond_signal(&f->freed);
    pthread_mutex_unlock(&f->mu);
}

mfeed_item *mirror__feed_next(mfeed *f)
{
    if (!f->threaded) {
        if (f->done) /* past the end: the end again */
            return &f->ring[0];
        produce(f, &f->ring[0]);
        reserve_memo(f);
        f->done = f->ring[0].kind == MFEED_END || f->ring[0].kind == MFEED_ERR;
        return &f->ring[0];
    }
    if (f->done) /* past the end: the end again, still held */
        return &f->ring[f->at % RING];
    /* the next of the items taken, until a run of them is to be let go */
    if (f->holding && f->at + 1 < f->end && f->at + 1 - f->tail < FEED_RUN) {
        mfeed_item *it = &f->ring[++f->at % RING];
        f->done = it->kind == MFEED_END || it->kind == MFEED_ERR;
        return it;
    }
    pthread_mutex_lock(&f->mu);
    if (f->holding) { /* the items used so far are let go */
        f->tail = f->at + 1;
        if (f->rwait && f->head - f->tail <= RING - RING / 4)
            pthread_cond_signal(&f->freed);
    }
    if (f->holding && f->tail < f->end) { /* the rest of those taken */
        f->end = f->head;
        pthread_mutex_unlock(&f->mu);
        mfeed_item *it = &f->ring[++f->at % RING];
        f->done = it->kind == MFEED_END || it->kind == MFEED_ERR;
        return it;
    }
    if (f->head == f->tail) { /* empty: wait for the reader's next run */
        f->pwait = true;
        while (f->head == f->tail)
            pthread_cond_wait(&f->made, &f->mu);
        f->pwait = false;
    }
    f->at = f->tail; /* the items made so far are the push's */
    f->end = f->head;
    pthread_mutex_unlock(&f->mu);
    mfeed_item *it = &f->ring[f->at % RING];
    f->holding = true;
    f->done = it->kind == MFEED_END || it->kind == MFEED_ERR;
    return it;
}

size_t mirror__feed_listed(const mfeed *f)
{
    return f->l.n; /* made before the reader's first item is published */
}

const storh_err *mirror__feed_error(const mfeed *f)
{
    return &f->err;
}

long mirror__feed_close(mfeed *f)
{
    if (!f)
        return 0;
    if (f->threaded) {
        pthread_mutex_lock(&f->mu);
        f->stop = true;
        pthread_cond_signal(&f->freed);
        pthread_mutex_unlock(&f->mu);
        pthread_join(f->th, NULL);
    }
    pthread_mutex_destroy(&f->mu);
    pthread_cond_destroy(&f->made);
    pthread_cond_destroy(&f->freed);
    for (size_t i = 0; i < RING; i++)
        mirror__row_free(&f->ring[i].r);
    if (f->datafd >= 0)
        close(f->datafd);
    recfile_list_free(&f->l); /* empty when never listed, or on error */
    long unchanged = f->unchanged;
    free(f);
    return unchanged;
}
