/* docwrite: the DocStore's write path (docstore.h): stages whose rows wait
 * in temp files, their commit under the collection lock (unique checks,
 * renames, index updates, directory syncs), single puts published through
 * the group (docgroup.h) and deletes. */
#include "docstore.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <malloc.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "docjournal.h"
#include "docstore_int.h"
#include "estats.h"
#include "fault.h"
#include "fsx.h"
#include "query.h"
#include "reccanon.h"
#include "sjson.h"

/* A staged row keeps what its commit needs, not the row: the record path
 * follows from the id, a bulk's temp from the id and the row number, and
 * the decoded data only while the collection has indexes (a commit that
 * finds indexes defined since decodes the row's temp again). */
typedef struct stage_row {
    char *tmp; /* a single put's temp; NULL in a bulk (docjournal_row_path) */
    char id[UUID7_LEN + 1];
    json_t *data; /* decoded, for indexes and unique checks; may be NULL */
} stage_row;

/* A bulk row whose bytes go to the record cache once it is published (its
 * canonical encoding, and what identifies the file written with them). */
typedef struct stage_kept {
    size_t row;
    rcache_blob *blob;
    dev_t dev;
    ino_t ino;
    off_t size;
    struct timespec mtim;
} stage_kept;

struct docstore_stage {
    docstore *ds;
    stage_row *rows;
    size_t n, cap;
    buf enc;
    /* bulk stages write temps without fsync and make them all durable with
     * one syncfs(2) before the renames */
    bool bulk;
    /* a single put's temp is written without fsync too: its group makes it
     * durable (docgroup.h) */
    bool grouped;
    int sync_fd;   /* a descriptor on the collection's filesystem, opened at the
                      first row so syncfs reports every writeback error since */
    docjournal *j; /* bulk: the stage its rows wait in, and its commit record */
    /* bulk, with a record cache: the first rows' bytes, as many as a
     * bulk's share of the cache holds, for the cache once they are published (as a
     * single put's are), so a bulk's records are read back without their
     * files (a mirror's push, a listing) */
    stage_kept *kept;
    size_t nkept, capkept, kept_bytes;
    bool kept_full;     /* the share is used up: no more rows are kept */
    rcache_share share; /* taken at the first row keep_row sees (rcache_bulk_share) */
    bool keep;          /* committed but not finished: the next open finishes it */
};

int docstore_delete(docstore *ds, const char *id, bool *existed, storh_err *err)
{
    *existed = false;
    if (!uuid7_is_valid(id, strlen(id)))
        return storh_err_set(err, STORH_EINVAL, "Invalid UUIDv7 value.");
    struct stat st;
    if (stat(ds->dir, &st) != 0)
        return 0;
    docgroup_op op = {.del = true, .id = id, .err = err};
    docstore_record_path(ds, id, op.final);
    int rc = docgroup_commit(ds, &op);
    *existed = op.existed;
    return rc;
}

int docstore_stage_begin(docstore *ds, docstore_stage **out, storh_err *err)
{
    docstore_stage *st = calloc(1, sizeof *st);
    if (!st)
        return storh_err_oom(err);
    st->ds = ds;
    st->bulk = true;
    st->sync_fd = -1;
    *out = st;
    return 0;
}

size_t docstore_stage_count(const docstore_stage *st)
{
    return st ? st->n : 0;
}

/* Bulk row st->n, just written as st->enc (written: its file's fstat):
 * its bytes kept for the record cache while the bulk's share of the cache
 * (rcache_bulk_share, taken at its first row) holds them and they are its
 * canonical encoding (what a cache entry's bytes are). */
static void keep_row(docstore_stage *st, const char *id, const struct stat *written)
{
    rcache *c = st->ds->cache;
    if (!c || st->kept_full || !written->st_ino)
        return;
    if (!st->share.cache)
        st->share = rcache_bulk_share(c);
    if (!rcache_share_fits(&st->share, st->nkept + 1, st->kept_bytes + st->enc.len)) {
        st->kept_full = true;
        return;
    }
    if (!reccanon_is_canonical(st->enc.data, st->enc.len, id))
        return;
    if (st->nkept == st->capkept) {
        size_t cap = st->capkept ? st->capkept * 2 : 64;
        stage_kept *k = realloc(st->kept, cap * sizeof *k);
        if (!k)
            return;
        st->kept = k;
        st->capkept = cap;
    }
    rcache_blob *b = rcache_blob_new(st->enc.data, st->enc.len);
    if (!b)
        return;
    st->kept[st->nkept++] = (stage_kept){
        st->n, b, written->st_dev, written->st_ino, written->st_size, written->st_mtim};
    st->kept_bytes += st->enc.len;
}

/* Under the lock, rows 0..done-1 renamed and durable: the kept rows' bytes
 * to the record cache, checked against their paths (rcache_put_published),
 * in runs. */
static void remember_kept(docstore_stage *st, size_t done)
{
    enum { RUN = 64 };
    rcache_pub pub[RUN];
    char(*paths)[PATH_MAX] = malloc(RUN * sizeof *paths);
    size_t n = 0;
    for (size_t k = 0; k < st->nkept; k++) {
        stage_kept *q = &st->kept[k];
        if (q->row >= done || !paths)
            continue; /* released with the stage */
        docstore_record_path(st->ds, st->rows[q->row].id, paths[n]);
        pub[n] = (rcache_pub){.id = st->rows[q->row].id, .path = paths[n], .blob = q->blob};
        pub[n].written.st_dev = q->dev;
        pub[n].written.st_ino = q->ino;
        pub[n].written.st_size = q->size;
        pub[n].written.st_mtim = q->mtim;
        q->blob = NULL;
        if (++n == RUN) {
            rcache_put_published(st->ds->cache, pub, n);
            n = 0;
        }
    }
    if (n)
        rcache_put_published(st->ds->cache, pub, n);
    free(paths);
}

/* A bulk's row staged in a shard the record cache watches queues three
 * events (create, write, close), and its rename two: the cache's watch is
 * read every BULK_DRAIN rows of each, so that a big bulk does not overflow
 * its queue (16,384 events by default), which would make every cached
 * record of the collection stat again. */
#define BULK_DRAIN 2048

static void bulk_drain(docstore_stage *st, size_t row)
{
    if (st->ds->cache && row % BULK_DRAIN == BULK_DRAIN - 1)
        rcache_drain(st->ds->cache);
}

/* Writes st->enc to a fresh temp in the record's shard dir: fsynced for a
 * single put (unless grouped), made durable by the commit's syncfs in a
 * bulk. */
static int stage_bytes(docstore_stage *st, const char *id, const json_t *data, storh_err *err)
{
    docstore *ds = st->ds;
    if (!ds->ready) { /* the collection is created by its first staged row */
        pthread_mutex_lock(&ds->mu);
        int rc = docstore_prepare_locked(ds, err);
        pthread_mutex_unlock(&ds->mu);
        if (rc)
            return rc;
    }
    if (st->n == st->cap) {
        size_t cap = st->cap ? st->cap * 2 : 16;
        stage_row *r = realloc(st->rows, cap * sizeof *r);
        if (!r)
            return storh_err_oom(err);
        st->rows = r;
        st->cap = cap;
    }
    char final[PATH_MAX], tmp[PATH_MAX], shard[PATH_MAX];
    docstore_record_path(ds, id, final);
    fsx_dirname(final, shard, sizeof shard);
    unsigned long seq = atomic_fetch_add(&ds->tmp_seq, 1) + 1;
    int rc = 0;
    if (st->bulk && !st->j && (rc = docjournal_begin(ds->dir, ds->identity, seq, &st->j, err)))
        return rc;
    if (st->bulk)
        rc = docjournal_row_path(st->j, st->n, id, tmp, err);
    else
        rc = fsx_pathf(tmp, err, "%s/.%s.%lu.tmp", shard, ds->identity, seq);
    if (!rc && st->bulk && st->sync_fd < 0 &&
        (st->sync_fd = open(ds->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0)
        rc = storh_err_sys(err, errno, "Could not open %s", ds->dir);
    struct stat written = {0};
    if (!rc && st->bulk)
        rc = docjournal_write_row(st->j, st->n, id, st->enc.data, st->enc.len, &written, err);
    else if (!rc)
        rc = fsx_write_file(tmp, st->enc.data, st->enc.len, !st->grouped, err);
    if (rc && rc != STORH_ENOSPC) {
        /* most likely a shard dir not made yet (perhaps by a racing thread
         * right now): make it, then try once more */
        /* bulk: the commit's syncfs makes the new directory durable too */
        if (st->bulk)
            fsx_dirname(tmp, shard, sizeof shard); /* the stage's shard */
        if (fsx_mkdirs(shard, !st->bulk, NULL) == 0)
            rc = fsx_write_file(tmp, st->enc.data, st->enc.len, !st->bulk && !st->grouped, err);
    }
    if (rc)
        return rc;
    if (st->bulk) {
        keep_row(st, id, &written);
        bulk_drain(st, st->n);
    }
    stage_row *row = &st->rows[st->n];
    row->tmp = st->bulk ? NULL : strdup(tmp);
    pthread_rwlock_rdlock(&ds->ixlock);
    bool indexed = docindex_active(&ds->ix);
    pthread_rwlock_unlock(&ds->ixlock);
    row->data = indexed || !st->bulk ? json_incref((json_t *)data) : NULL;
    memcpy(row->id, id, UUID7_LEN + 1);
    if (!st->bulk && !row->tmp) {
        unlink(tmp);
        json_decref(row->data);
        return storh_err_oom(err);
    }
    st->n++;
    return 0;
}

/* Row i's temp and record paths. */
static int row_paths(docstore_stage *st, size_t i, char *tmp, char *final, storh_err *err)
{
    stage_row *r = &st->rows[i];
    if (final)
        docstore_record_path(st->ds, r->id, final);
    if (!tmp)
        return 0;
    if (r->tmp)
        return fsx_pathf(tmp, err, "%s", r->tmp);
    if (!st->j)
        return storh_err_set(err, STORH_EINVAL, "No staged rows.");
    return docjournal_row_path(st->j, i, r->id, tmp, err);
}

/* Indexes defined after a row was staged: its data again, from its temp. */
static int row_data(docstore_stage *st, size_t i, storh_err *err)
{
    stage_row *r = &st->rows[i];
    if (r->data)
        return 0;
    char tmp[PATH_MAX];
    buf b = BUF_INIT;
    int rc = row_paths(st, i, tmp, NULL, err);
    if (!rc)
        rc = fsx_read_all(tmp, &b, err);
    if (!rc)
        rc = docstore_decode_record(b.data, b.len, r->id, &r->data, err);
    buf_free(&b);
    return rc;
}

static int resolve_id(const char *id, char out_id[UUID7_LEN + 1], storh_err *err)
{
    if (!id)
        return uuid7_generate(out_id, -1, err);
    if (!uuid7_is_valid(id, strlen(id)))
        return storh_err_set(err, STORH_EINVAL, "Invalid UUIDv7 value.");
    memcpy(out_id, id, UUID7_LEN + 1);
    return 0;
}

static int validate(docstore *ds, const json_t *data, storh_err *err)
{
    pthread_rwlock_rdlock(&ds->ixlock);
    int rc = schema_validate(&ds->sch, data, err);
    pthread_rwlock_unlock(&ds->ixlock);
    return rc;
}

int docstore_stage_put(docstore_stage *st, const char *id, json_t *data, char out_id[UUID7_LEN + 1],
                       storh_err *err)
{
    if (!json_is_object(data) && !json_is_array(data))
        return storh_err_set(err, STORH_EINVAL, "Record data must be a JSON object.");
    int rc = validate(st->ds, data, err);
    if (!rc)
        rc = resolve_id(id, out_id, err);
    if (rc)
        return rc;
    buf_reset(&st->enc);
    if ((rc = docstore_encode_record(&st->enc, out_id, data, err)))
        return rc;
    return stage_bytes(st, out_id, data, err);
}

int docstore_stage_element(docstore_stage *st, json_t *elem, char out_id[UUID7_LEN + 1],
                           storh_err *err)
{
    if (!json_is_object(elem))
        return storh_err_set(err, STORH_EINVAL, "Bulk rows must be JSON objects.");
    json_t *id = json_object_get(elem, "id");
    json_t *data = json_object_get(elem, "data");
    if (!json_is_object(data) && !json_is_array(data))
        data = elem;
    return docstore_stage_put(st, json_is_string(id) ? json_string_value(id) : NULL, data, out_id,
                              err);
}

/* An import line that is already the canonical record of its id (what
 * exportJsonl writes) becomes its record file as it is, without a decode,
 * when nothing needs its data now: no schema to validate it against and no
 * index (one defined before the commit decodes the row's temp, row_data).
 * 1: not such a line (or a schema or index), decode it. */
static int import_canonical(docstore_stage *st, const char *line, size_t len,
                            char out_id[UUID7_LEN + 1], storh_err *err)
{
    static const char pre[] = "{\"id\":\"", mid[] = "\",\"data\":";
    size_t pl = sizeof pre - 1, ml = sizeof mid - 1;
    if (!st->bulk || len < pl + UUID7_LEN + ml + 2 || memcmp(line, pre, pl) ||
        memcmp(line + pl + UUID7_LEN, mid, ml))
        return 1;
    char c = line[pl + UUID7_LEN + ml];
    if ((c != '{' && c != '[') || !uuid7_is_valid(line + pl, UUID7_LEN))
        return 1;
    docstore *ds = st->ds;
    pthread_rwlock_rdlock(&ds->ixlock);
    bool plain = ds->sch.n == 0 && !docindex_active(&ds->ix);
    pthread_rwlock_unlock(&ds->ixlock);
    if (!plain)
        return 1;
    char id[UUID7_LEN + 1];
    memcpy(id, line + pl, UUID7_LEN);
    id[UUID7_LEN] = '\0';
    buf_reset(&st->enc);
    buf_append(&st->enc, line, len);
    buf_appendc(&st->enc, '\n');
    if (!reccanon_is_canonical(st->enc.data, st->enc.len, id))
        return 1;
    memcpy(out_id, id, UUID7_LEN + 1);
    return stage_bytes(st, out_id, NULL, err);
}

int docstore_stage_import_line(docstore_stage *st, const char *line, size_t len,
                               char out_id[UUID7_LEN + 1], storh_err *err)
{
    out_id[0] = '\0';
    while (len && (line[len - 1] == '\n' || line[len - 1] == '\r'))
        len--;
    size_t i = 0;
    while (i < len && (line[i] == ' ' || line[i] == '\t' || line[i] == '\v' || line[i] == '\f' ||
                       line[i] == '\r' || line[i] == '\0'))
        i++;
    if (i == len)
        return 0; /* blank lines are skipped */
    int rc = import_canonical(st, line, len, out_id, err);
    if (rc != 1)
        return rc;
    storh_err jerr;
    json_t *row = sjson_decode(line, len, &jerr);
    if (!row)
        return storh_err_set(err, STORH_EINVAL, "%s", jerr.msg);
    if (json_is_array(row)) {
        json_t *empty = json_object();
        rc = empty ? docstore_stage_put(st, NULL, empty, out_id, err) : storh_err_oom(err);
        json_decref(empty);
    } else if (!json_is_object(row)) {
        rc = storh_err_set(err, STORH_EINVAL, "JSONL import rows must be objects.");
    } else {
        json_t *id = json_object_get(row, "id");
        json_t *data = json_object_get(row, "data");
        if (json_object_size(row) == 2 && json_is_string(id) &&
            (json_is_object(data) || json_is_array(data))) {
            rc = validate(st->ds, data, err);
            if (!rc)
                rc = resolve_id(json_string_value(id), out_id, err);
            if (!rc) { /* the row's own bytes become the record file */
                buf_reset(&st->enc);
                buf_append(&st->enc, line, len);
                buf_appendc(&st->enc, '\n');
                rc = stage_bytes(st, out_id, data, err);
            }
        } else {
            /* integer keys are dropped before the putMany element rule */
            json_t *kept = json_object();
            const char *k;
            size_t kl;
            json_t *v;
            json_object_keylen_foreach (row, k, kl, v) {
                if (kept && !sjson_is_int_key(k, kl))
                    json_object_setn(kept, k, kl, v);
            }
            rc = kept ? docstore_stage_element(st, kept, out_id, err) : storh_err_oom(err);
            json_decref(kept);
        }
    }
    json_decref(row);
    return rc;
}

#define STAGE_TRIM_ROWS 4096

static void stage_free(docstore_stage *st, size_t from_row)
{
    for (size_t i = 0; i < st->n; i++) {
        char tmp[PATH_MAX];
        if (i >= from_row && !st->keep && row_paths(st, i, tmp, NULL, NULL) == 0) {
            unlink(tmp);
            fault_point("docstore.bulk.dropped");
        }
        free(st->rows[i].tmp);
        json_decref(st->rows[i].data);
    }
    free(st->rows);
    for (size_t k = 0; k < st->nkept; k++)
        rcache_blob_release(st->kept[k].blob);
    free(st->kept);
    /* handed over (remember_kept) or dropped: the pledge goes (to the
     * cache that made it, if still the store's) */
    if (st->share.cache)
        rcache_bulk_unshare(st->ds->cache, &st->share);
    buf_free(&st->enc);
    if (st->sync_fd >= 0)
        close(st->sync_fd);
    if (st->keep)
        docjournal_release(st->j);
    else
        docjournal_end(st->j);
    bool big = st->n >= STAGE_TRIM_ROWS;
    free(st);
    if (big) /* what a big bulk's requests freed goes back to the system */
        malloc_trim(0);
}

void docstore_stage_abort(docstore_stage *st)
{
    if (st)
        stage_free(st, 0);
}

/* Unique constraints of every staged row, against the index and against
 * each other, before anything is renamed. */
static int check_unique(docstore_stage *st, storh_err *err)
{
    docindex *ix = &st->ds->ix;
    for (size_t i = 0; i < st->n; i++) {
        int rc = row_data(st, i, err);
        if (!rc)
            rc = docindex_check_unique(ix, st->rows[i].id, st->rows[i].data, err);
        if (rc)
            return rc;
    }
    for (size_t f = 0; f < ix->n; f++) {
        if (!ix->defs[f].unique)
            continue;
        const char *field = ix->defs[f].field;
        for (size_t i = 0; i < st->n; i++) {
            json_t *a = json_object_get(st->rows[i].data, field);
            if (!docindex_indexable(a))
                continue;
            for (size_t j = i + 1; j < st->n; j++) {
                json_t *b = json_object_get(st->rows[j].data, field);
                if (docindex_indexable(b) && strcmp(st->rows[i].id, st->rows[j].id) &&
                    query_strict_equal(a, b))
                    return storh_err_set(err, STORH_ECONFLICT,
                                         "Unique index violation on field: %s", field);
            }
        }
    }
    return 0;
}

static void commit_row(void *ctx, size_t i, const char **id, char *final)
{
    docstore_stage *st = ctx;
    *id = st->rows[i].id;
    docstore_record_path(st->ds, st->rows[i].id, final);
}

/* Under the lock, every staged row durable: the bulk's commit record. A
 * failure after it (or one that could not take it back) leaves the stage
 * for the next open to finish (stage_commit poisons the store). */
static int commit_record(docstore_stage *st, storh_err *err)
{
    bool keep;
    int rc = docjournal_commit(st->j, st->n, commit_row, st, &keep, err);
    st->keep = rc == 0 || keep;
    return rc;
}

#define COMMIT_MAX_DIRS 258 /* 256 shards, plus room for odd layouts */

/* Under the lock: unique checks, then for each row the rename and its
 * index update; then one fsync per touched directory. existed0 reports
 * whether row 0 replaced a record. *done = rows renamed. */
static int stage_commit(docstore_stage *st, size_t *done, bool *existed0, storh_err *err)
{
    docstore *ds = st->ds;
    *done = 0;
    if (st->n == 0)
        return 0;
    /* every temp durable before any rename: one barrier for the batch */
    if (st->bulk && syncfs(st->sync_fd) != 0)
        return storh_err_sys(err, errno, "Could not sync staged records of %s", ds->dir);
    if (st->bulk)
        estats_add(ESTAT_FSYNC_FS, 1);
    size_t cap = st->n < COMMIT_MAX_DIRS ? st->n : COMMIT_MAX_DIRS;
    char(*dirs)[PATH_MAX] = malloc(sizeof *dirs * cap);
    if (!dirs)
        return storh_err_oom(err);
    fsx_lock l;
    int rc = docstore_lock(ds, &l, err);
    if (rc) {
        free(dirs);
        return rc;
    }
    bool indexed = docindex_active(&ds->ix);
    if (indexed)
        rc = check_unique(st, err);
    if (!rc && st->bulk) /* the commit point: from here the bulk is whole */
        rc = commit_record(st, err);
    size_t ndirs = 0;
    for (size_t i = 0; !rc && i < st->n; i++) {
        stage_row *r = &st->rows[i];
        char tmp[PATH_MAX], final[PATH_MAX];
        tmp[0] = '\0';
        /* a bulk's row is renamed by its journal, which knows its temp */
        if ((rc = row_paths(st, i, st->bulk ? NULL : tmp, final, err)))
            break;
        json_t *old = NULL;
        if (indexed && (rc = docstore_old_record(ds, r->id, &old, err)))
            break;
        if (i == 0 && existed0)
            *existed0 = access(final, F_OK) == 0;
        if ((rc = st->bulk ? docjournal_rename_row(st->j, i, r->id, final, err)
                           : fsx_rename(tmp, final, false, err))) {
            json_decref(old);
            break;
        }
        (*done)++;
        if (st->bulk)
            fault_point("docstore.bulk.renamed");
        if (ds->cache)
            rcache_forget(ds->cache, r->id);
        if (st->bulk)
            bulk_drain(st, i);
        if (indexed)
            rc = docindex_update(&ds->ix, r->id, old, r->data, err);
        json_decref(old);
        if (st->bulk) /* its directories are synced by the syncfs below */
            continue;
        char d[PATH_MAX];
        fsx_dirname(final, d, sizeof d);
        size_t j = 0;
        while (j < ndirs && strcmp(dirs[j], d) != 0)
            j++;
        if (j < ndirs || rc)
            continue;
        if (ndirs < cap)
            memcpy(dirs[ndirs++], d, PATH_MAX);
        else
            rc = fsx_fsync_dir(d, err);
    }
    if (st->bulk && *done) { /* one barrier for every directory the renames touched */
        if (syncfs(st->sync_fd) != 0 && !rc)
            rc = storh_err_sys(err, errno, "Could not sync renamed records of %s", ds->dir);
        else
            estats_add(ESTAT_FSYNC_FS, 1);
    } else {
        for (size_t j = 0; j < ndirs; j++) {
            int frc = fsx_fsync_dir(dirs[j], rc ? NULL : err);
            if (frc && !rc)
                rc = frc;
        }
    }
    if (st->bulk && st->keep && rc) /* left for the next open: no write may touch its records */
        docgroup_poison(&ds->grp, ds->dir, EIO);
    if (st->bulk && st->nkept && !rc)
        remember_kept(st, *done);
    if (st->bulk && st->keep && !rc) { /* durable: the commit record goes */
        docjournal_end(st->j);
        st->j = NULL;
        st->keep = false;
    }
    docstore_unlock(ds, &l);
    free(dirs);
    if (*done)
        estats_add(ESTAT_DOC_PUT, *done);
    return rc;
}

int docstore_stage_commit(docstore_stage *st, size_t *written, storh_err *err)
{
    size_t done = 0;
    int rc = docgroup_check(&st->ds->grp, err);
    if (!rc)
        rc = stage_commit(st, &done, NULL, err);
    if (written)
        *written = done;
    stage_free(st, done);
    return rc;
}

int docstore_put(docstore *ds, const char *id, json_t *data, char out_id[UUID7_LEN + 1],
                 bool *existed, storh_err *err)
{
    docstore_stage *st = NULL;
    int rc = docstore_stage_begin(ds, &st, err);
    if (rc)
        return rc;
    /* one row, published in a group with its neighbours: the group makes
     * its temp durable (docgroup.h), so it is written without fsync here */
    st->bulk = false;
    st->grouped = true;
    if ((rc = docgroup_check(&ds->grp, err))) {
        docstore_stage_abort(st);
        return rc;
    }
    if ((rc = docgroup_arrive(&ds->grp, ds->dir, err))) {
        docstore_stage_abort(st);
        return rc;
    }
    if ((rc = docstore_stage_put(st, id, data, out_id, err))) {
        docgroup_leave(&ds->grp);
        docstore_stage_abort(st);
        return rc;
    }
    /* the bytes the cache keeps once published: the encoder's, so they are
     * the record's answer bytes too */
    bool canon = ds->cache && reccanon_is_canonical(st->enc.data, st->enc.len, out_id);
    docgroup_op op = {.id = st->rows[0].id,
                      .tmp = st->rows[0].tmp,
                      .data = st->rows[0].data,
                      .bytes = canon ? st->enc.data : NULL,
                      .len = canon ? st->enc.len : 0,
                      .err = err,
                      .arrived = true};
    docstore_record_path(ds, out_id, op.final);
    rc = docgroup_commit(ds, &op);
    stage_free(st, op.applied ? 1 : 0);
    if (existed)
        *existed = op.existed;
    return rc;
}

void docstore_set_group_sync(docstore *ds, int mode)
{
    ds->grp.mode = mode == DOCGROUP_SYNC_FS     ? DOCGROUP_SYNC_FS
                   : mode == DOCGROUP_SYNC_AUTO ? DOCGROUP_SYNC_AUTO
                                                : DOCGROUP_SYNC_EACH;
}
