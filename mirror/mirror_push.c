/* mirror_push: rows written to the SQL mirror: push (diff by hash in one
 * transaction per collection), flush(ids) and rebuild, with the counters
 * /metrics reads of each push. A push keeps the table's rows for the next
 * (mkept), built on a thread of their own while its COMMIT syncs. */
#include "mirror.h"

#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "buf.h"
#include "estats.h"
#include "fsx.h"
#include "idmap.h"
#include "mmemo.h"
#include "sjson.h"
#include "mirror_int.h"

/* ---- rows ---- */

static void insert_sql(const mirror *m, const mirror_coll *c, row_stmt *s)
{
    buf_printf(&s->sql, "INSERT INTO \"%s\" (\"id\", \"hash\"", c->table);
    s->ncols = 2;
    for (size_t i = 0; i < c->sch.n; i++)
        if (mirror__col_type(m, &c->sch.f[i])) {
            buf_printf(&s->sql, ", \"%s\"", c->sch.f[i].name);
            s->ncols++;
        }
    buf_appends(&s->sql, ", \"data\") VALUES (");
    s->ncols++;
    for (int i = 0; i < s->ncols; i++)
        buf_printf(&s->sql, mirror__is_pg(m) ? "%s$%d" : "%s?", i ? ", " : "", i + 1);
    buf_appendc(&s->sql, ')');
}

int mirror__collect_pair(void *ctx, int n, const char *const *v, const size_t *l)
{
    (void)l;
    if (n >= 2 && v[0] && v[1])
        json_object_set_new(ctx, v[0], json_string(v[1]));
    return 0;
}

/* ---- iteration over a source ---- */

int mirror__each_record(const mirror_source *src, each_fn fn, void *ctx, storh_err *err)
{
    int rc;
    const char *id;
    json_t *data;
    if (src->ds) {
        docstore_iter *it;
        if ((rc = docstore_iter_open(src->ds, NULL, &it, err)))
            return rc;
        while ((rc = docstore_iter_next(it, &id, &data, err)) == 1) {
            rc = fn(ctx, id, data, err);
            json_decref(data);
            if (rc)
                break;
        }
        docstore_iter_close(it);
    } else {
        logset_iter *it;
        if ((rc = logset_iter_open(&src->logs, NULL, &it, err)))
            return rc;
        while ((rc = logset_iter_next(it, &id, &data, err)) == 1) {
            rc = fn(ctx, id, data, err);
            json_decref(data);
            if (rc)
                break;
        }
        logset_iter_close(it);
    }
    return rc < 0 ? rc : 0;
}

int mirror__source_get(const mirror_source *src, const char *id, json_t **data, storh_err *err)
{
    return src->ds ? docstore_get(src->ds, id, data, NULL, err)
                   : logset_get(&src->logs, id, data, err);
}

typedef struct push_ctx {
    mirror *m;
    const mirror_coll *c;
    idmap rows;  /* id -> have_row, for the table's 36-byte ids */
    json_t *odd; /* id -> hash, for any other id */
    mmemo *memo; /* NULL: no memo (a log) */
    row_stmt ins;
    buf del;
    mrow *pend; /* INSERT_BATCH rows waiting for one multi-row INSERT */
    size_t npend;
    mparam *params; /* INSERT_BATCH * ncols */
    buf batch;      /* the multi-row INSERT of batch_n rows, made once */
    size_t batch_n;
    long inserted, updated, unchanged;
    buf wrote;     /* id and hash of each row written, for the kept rows */
    bool keepable; /* the rows may be kept (every row written has a 36-byte id) */
} push_ctx;

static int collect_row(void *ctx, int n, const char *const *v, const size_t *l)
{
    push_ctx *x = ctx;
    if (n < 2 || !v[0] || !v[1])
        return 0;
    if (l[0] != IDMAP_KEY || strlen(v[0]) != IDMAP_KEY) {
        /* an id no record can have; one that is not UTF-8 is left alone */
        json_object_set_new(x->odd, v[0], json_string(v[1]));
        return 0;
    }
    have_row *h = idmap_put(&x->rows, v[0], NULL);
    if (!h)
        return STORH_ENOMEM;
    h->ok = l[1] == 32;
    if (h->ok)
        memcpy(h->hash, v[1], 32);
    return 0;
}

/* The INSERT of n rows into x->batch (kept while n stays the same). */
static void batch_sql(push_ctx *x, size_t n)
{
    if (x->batch_n == n && x->batch.len)
        return;
    bool pg = mirror__is_pg(x->m);
    int cols = x->ins.ncols;
    buf_reset(&x->batch);
    const char *values = strstr(x->ins.sql.data, " VALUES (");
    buf_append(&x->batch, x->ins.sql.data, (size_t)(values - x->ins.sql.data));
    buf_appends(&x->batch, " VALUES ");
    for (size_t r = 0, k = 0; r < n; r++) {
        buf_appends(&x->batch, r ? ", (" : "(");
        for (int i = 0; i < cols; i++, k++) {
            if (i)
                buf_appends(&x->batch, ", ");
            if (pg)
                buf_printf(&x->batch, "$%zu", k + 1);
            else
                buf_appendc(&x->batch, '?');
        }
        buf_appendc(&x->batch, ')');
    }
    x->batch_n = n;
}

/* Inserts the pending rows with one statement. */
static int flush_inserts(push_ctx *x, storh_err *err)
{
    size_t n = x->npend;
    if (!n)
        return 0;
    int cols = x->ins.ncols;
    batch_sql(x, n);
    int rc = !buf_failed(&x->batch) ? 0 : storh_err_set(err, STORH_ENOMEM, "Out of memory.");
    for (size_t r = 0; !rc && r < n; r++)
        mirror__row_params(x->m, x->c, &x->pend[r], x->params + r * (size_t)cols);
    if (!rc)
        rc = mdriver_exec(x->m->db, x->batch.data, x->params, (int)n * cols, err);
    x->npend = 0;
    return rc;
}

/* The row in x->pend[x->npend], made from the current record: left out
 * when the table holds it already, else queued for the next INSERT (after
 * deleting the row it replaces). have: the table's row of that id, if
 * looked up already. */
static int consider(push_ctx *x, have_row *have, storh_err *err)
{
    mrow *r = &x->pend[x->npend];
    const char *id = r->id.data;
    json_t *odd = NULL;
    if (!have && r->id.len == IDMAP_KEY)
        have = idmap_get(&x->rows, id);
    else if (!have)
        odd = json_object_get(x->odd, id);
    if (have && have->ok && !memcmp(have->hash, r->hash, 32)) {
        have->seen = true;
        x->unchanged++;
        return 0;
    }
    int rc = 0;
    if (x->keepable && r->id.len == IDMAP_KEY) {
        buf_append(&x->wrote, id, IDMAP_KEY);
        buf_append(&x->wrote, r->hash, 32);
    } else {
        x->keepable = false;
    }
    if (have || odd) {
        mparam p1 = {MPARAM_TEXT, id, r->id.len, 0, 0};
        rc = mdriver_exec(x->m->db, x->del.data, &p1, 1, err);
        if (have)
            have->seen = true;
        else
            json_object_del(x->odd, id);
        x->updated++;
    } else {
        x->inserted++;
    }
    if (rc)
        return rc;
    x->npend++;
    /* SQLite binds at most 32766 parameters, PostgreSQL 65535 */
    if (x->npend >= INSERT_BATCH || (x->npend + 1) * (size_t)x->ins.ncols > 30000)
        return flush_inserts(x, err);
    return 0;
}

static int push_one(void *p, const char *id, const json_t *data, storh_err *err)
{
    push_ctx *x = p;
    int rc = mirror__row_data(&x->pend[x->npend], id, data, err);
    return rc ? rc : consider(x, NULL, err);
}

/* Every record of a docstore, in id order as its stream, read ahead by
 * the feed f (opened, its row map now complete): a record the memo and the
 * table both know as unchanged costs the reader a stat, any other comes
 * with its row made from its bytes. */
static int push_docs(push_ctx *x, mfeed *f, storh_err *err)
{
    int rc = 0;
    mirror__feed_start(f);
    for (bool first = true; !rc; first = false) {
        mfeed_item *it = mirror__feed_next(f);
        /* a first push or a rebuild writes every row listed: room made
         * once (doubling the buffer touched twice its size in fresh pages) */
        if (first && x->keepable && x->rows.len == 0)
            buf_reserve(&x->wrote, mirror__feed_listed(f) * (IDMAP_KEY + 32));
        if (it->kind == MFEED_END)
            break;
        if (it->kind == MFEED_ERR) {
            rc = it->rc;
            if (err)
                *err = *mirror__feed_error(f);
        } else {
            mrow tmp = x->pend[x->npend]; /* the row moves to pend, buffers and all */
            x->pend[x->npend] = it->r;
            it->r = tmp;
            rc = consider(x, it->have, err);
        }
    }
    return rc;
}

static int delete_chunk(mirror *m, const mirror_coll *c, const char **ids, size_t cnt,
                        storh_err *err)
{
    buf sql = BUF_INIT;
    buf_printf(&sql, "DELETE FROM \"%s\" WHERE \"id\" IN (", c->table);
    mparam p[DELETE_CHUNK];
    for (size_t j = 0; j < cnt; j++) {
        buf_printf(&sql, mirror__is_pg(m) ? "%s$%zu" : "%s?", j ? ", " : "", j + 1);
        p[j] = (mparam){MPARAM_TEXT, ids[j], strlen(ids[j]), 0, 0};
    }
    buf_appendc(&sql, ')');
    int rc =
        buf_failed(&sql) ? storh_err_oom(err) : mdriver_exec(m->db, sql.data, p, (int)cnt, err);
    buf_free(&sql);
    return rc;
}

/* Deletes the rows no record claimed. */
static int delete_rest(push_ctx *x, long *deleted, storh_err *err)
{
    const char *ids[DELETE_CHUNK];
    size_t k = 0, pos = 0;
    const char *id;
    void *v;
    int rc = 0;
    while (!rc && idmap_next(&x->rows, &pos, &id, &v)) {
        if (((have_row *)v)->seen)
            continue;
        ids[k++] = id; /* the map is not changed while these are used */
        if (k == DELETE_CHUNK) {
            rc = delete_chunk(x->m, x->c, ids, k, err);
            *deleted += (long)k;
            k = 0;
        }
    }
    json_t *h;
    json_object_foreach (x->odd, id, h) {
        if (rc)
            break;
        ids[k++] = id;
        if (k == DELETE_CHUNK) {
            rc = delete_chunk(x->m, x->c, ids, k, err);
            *deleted += (long)k;
            k = 0;
        }
    }
    if (!rc && k) {
        rc = delete_chunk(x->m, x->c, ids, k, err);
        *deleted += (long)k;
    }
    return rc;
}

void mirror__add_total(json_t *totals, const char *k, long v)
{
    json_t *c = json_object_get(totals, k);
    json_object_set_new(totals, k, json_integer((c ? json_integer_value(c) : 0) + v));
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static double epoch_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

unsigned long long mirror_writes(void)
{
    return (unsigned long long)(estats_get(ESTAT_DOC_PUT) + estats_get(ESTAT_DOC_DELETE) +
                                estats_get(ESTAT_LOG_APPEND));
}

void mirror_snapshot(mirror *m, mirror_stats *out)
{
    unsigned long long now = mirror_writes();
    pthread_mutex_lock(&m->mu);
    unsigned long long oldest = now;
    for (size_t i = 0; i < m->n; i++)
        if (m->c[i]->mark < oldest)
            oldest = m->c[i]->mark;
    if (m->n == 0)
        oldest = 0; /* nothing pushed yet */
    *out = (mirror_stats){m->rows_pushed,  m->pushes,       m->failures,     now - oldest,
                          m->push_seconds, m->last_push_at, m->last_good_at, m->last_push_ok};
    pthread_mutex_unlock(&m->mu);
}

/* Under mu: records how the push of c ended. */
static void push_outcome(mirror *m, const mirror_coll *c, bool ok, unsigned long long mark)
{
    m->last_push_ok = ok;
    m->last_push_at = epoch_s();
    if (!ok)
        return;
    m->last_good_at = m->last_push_at;
    for (size_t i = 0; i < m->n; i++)
        if (m->c[i] == c)
            m->c[i]->mark = mark;
}

static int version_row(void *ctx, int n, const char *const *v, const size_t *l)
{
    (void)l;
    if (n >= 1 && v[0])
        *(long long *)ctx = strtoll(v[0], NULL, 10);
    return 0;
}

/* Under the write lock: the database's version (*known false when the
 * driver tells none). */
static int db_version(mirror *m, long long *version, bool *known, storh_err *err)
{
    *known = m->db->ops->data_version_sql != NULL;
    *version = -1;
    if (!*known)
        return 0;
    return mdriver_query(m->db, m->db->ops->data_version_sql, NULL, 0, version_row, version, err);
}

void mirror__rows_unmark(const idmap *rows)
{
    size_t pos = 0;
    const char *id;
    void *v;
    while (idmap_next(rows, &pos, &id, &v))
        ((have_row *)v)->seen = ((have_row *)v)->listed = false;
}

/* The rows kept of c's table, taken out of c (NULL: none). When they are
 * still the table's at this version (*known), every row's seen and listed
 * are cleared; else they are emptied, their memory kept for the push. */
static mkept *kept_take(mirror *m, const mirror_coll *c, long long version, bool *known)
{
    mkept *k = NULL;
    for (size_t i = 0; i < m->n && !k; i++)
        if (m->c[i] == c) {
            k = m->c[i]->kept;
            m->c[i]->kept = NULL;
        }
    *known = k && k->valid && k->version == version;
    if (k && !*known)
        idmap_clear(&k->rows);
    if (*known)
        mirror__rows_unmark(&k->rows);
    return k;
}

/* x->rows made what the table holds once the push commits: the rows no
 * record claimed are gone, the rows written hold their new hash. False
 * when that fails (nothing is kept then). Runs while the COMMIT waits for
 * its sync (keeper below): it touches only x->rows, which delete_rest is
 * done with, and reads x->wrote. */
static bool kept_build(push_ctx *x)
{
    size_t pos = 0;
    const char *id;
    void *v;
    while (idmap_next(&x->rows, &pos, &id, &v))
        if (!((have_row *)v)->seen)
            idmap_del(&x->rows, id); /* a delete only marks its slot */
    /* the rows left are the unchanged and the updated: only the inserted
     * are new keys */
    bool ok = x->keepable && !buf_failed(&x->wrote) &&
              idmap_reserve(&x->rows, x->rows.len + (size_t)x->inserted) == 0;
    for (size_t at = 0; ok && at < x->wrote.len; at += IDMAP_KEY + 32) {
        char key[IDMAP_KEY + 1];
        memcpy(key, x->wrote.data + at, IDMAP_KEY);
        key[IDMAP_KEY] = '\0';
        have_row *h = idmap_put(&x->rows, key, NULL);
        if (!h) {
            ok = false;
            break;
        }
        memcpy(h->hash, x->wrote.data + at + IDMAP_KEY, 32);
        h->ok = true;
    }
    return ok && x->rows.len <= MMEMO_MAX;
}

/* After a good push whose kept_build succeeded: x->rows kept for c's next
 * push (the kept rows own its memory). */
static void kept_put(push_ctx *x, long long version)
{
    mkept *k = malloc(sizeof *k);
    if (!k)
        return;
    k->rows = x->rows;
    k->version = version;
    k->valid = true;
    memset(&x->rows, 0, sizeof x->rows);
    for (size_t i = 0; i < x->m->n; i++)
        if (x->m->c[i] == x->c)
            x->m->c[i]->kept = k;
}

/* Rows below this many are kept inline after the COMMIT: a thread costs
 * more than their map */
#define KEEPER_MIN 4096

/* The kept rows built on a thread of their own while the COMMIT waits for
 * its sync (a first push of 10,000 rows spent 3.7 ms building them, after
 * a 9 ms COMMIT; of 50,000, 30 ms after 77 ms), else inline after it. */
typedef struct keeper {
    push_ctx *x;
    bool threaded, ok;
    pthread_t th;
} keeper;

static void *keeper_run(void *p)
{
    keeper *k = p;
    k->ok = kept_build(k->x);
    return NULL;
}

static void keeper_start(keeper *k, push_ctx *x)
{
    k->x = x;
    k->ok = false;
    k->threaded = x->keepable && x->rows.len + (size_t)x->inserted >= KEEPER_MIN &&
                  pthread_create(&k->th, NULL, keeper_run, k) == 0;
}

/* Whether x->rows may be kept, once committed is known (a thread started
 * is joined either way). */
static bool keeper_finish(keeper *k, bool committed)
{
    if (k->threaded)
        pthread_join(k->th, NULL);
    else if (committed && k->x && k->x->keepable)
        k->ok = kept_build(k->x);
    return committed && k->ok;
}

/* Under mu: push in one transaction; any failure rolls it back. A rebuild
 * empties the table first, in that same transaction, so a rebuild that
 * fails leaves the mirror as it was. */
static int push_locked(mirror *m, const mirror_coll *c, const mirror_source *src, bool rebuild,
                       json_t *totals, storh_err *err)
{
    double t0 = now_s();
    unsigned long long mark = mirror_writes();
    int rc = mirror__connect_db(m, err);
    json_t *ddl = NULL;
    if (!rc)
        rc = mirror_ddl(m, c, &ddl, err);
    if (!rc)
        rc = mirror__exec_stmts(m, ddl, err); /* push works on a fresh database too */
    json_decref(ddl);
    if (!rc)
        rc = mdriver_begin_write(m->db, err);
    long long version = -1;
    bool versioned = false;
    if (!rc)
        rc = db_version(m, &version, &versioned, err);
    /* taken even by a rebuild: what is kept goes stale with this push */
    bool known = false;
    mkept *kept = kept_take(m, c, version, &known);
    if (rc) {
        if (kept)
            idmap_free(&kept->rows);
        free(kept);
        push_outcome(m, c, false, mark);
        return mirror__settle(m, rc);
    }
    push_ctx x = {.m = m, .c = c, .odd = json_object(), .memo = mirror__memo(m, c)};
    x.keepable = versioned;
    /* known: no other connection wrote since our last push, nor anything
     * else on ours, so the table holds what that push left */
    if (kept) {
        if (rebuild && known)
            idmap_clear(&kept->rows); /* the table is emptied below */
        known = known && !rebuild;
        x.rows = kept->rows; /* the rows, or emptied memory */
        free(kept);
    }
    insert_sql(m, c, &x.ins);
    x.pend = calloc(INSERT_BATCH, sizeof *x.pend);
    x.params = calloc(INSERT_BATCH * (size_t)x.ins.ncols, sizeof *x.params);
    if ((!kept && idmap_init(&x.rows, sizeof(have_row)) != 0) || !x.odd || !x.pend || !x.params ||
        buf_failed(&x.ins.sql) || (!c->is_log && !x.memo))
        rc = storh_err_set(err, STORH_ENOMEM, "Out of memory.");
    buf_printf(&x.del, "DELETE FROM \"%s\" WHERE \"id\" = %s", c->table,
               mirror__is_pg(m) ? "$1" : "?");
    /* the records are listed (under the write lock, as before) while the
     * table's rows are read or emptied */
    mfeed *feed = NULL;
    if (!rc && src->ds)
        rc = mirror__feed_open(m, c, src->ds, &x.rows, known, x.memo, &feed, err);
    char sel[256];
    if (rebuild) {
        snprintf(sel, sizeof sel, "DELETE FROM \"%s\"", c->table);
        if (!rc)
            rc = mdriver_exec(m->db, sel, NULL, 0, err); /* the table is empty: nothing to read */
    } else if (!known) {
        snprintf(sel, sizeof sel, "SELECT \"id\", \"hash\" FROM \"%s\"", c->table);
        if (!rc && (rc = mdriver_query(m->db, sel, NULL, 0, collect_row, &x, err)) == STORH_ENOMEM)
            storh_err_oom(err);
    }
    if (!rc)
        rc = feed ? push_docs(&x, feed, err) : mirror__each_record(src, push_one, &x, err);
    x.unchanged += mirror__feed_close(feed);
    if (!rc)
        rc = flush_inserts(&x, err);
    long deleted = 0;
    if (!rc)
        rc = delete_rest(&x, &deleted, err);
    keeper kp = {0};
    if (!rc)
        keeper_start(&kp, &x);
    if (!rc)
        rc = mdriver_exec(m->db, "COMMIT", NULL, 0, err);
    double done = now_s(); /* the push's time, as before the keeper */
    bool keep = keeper_finish(&kp, rc == 0);
    if (rc) {
        storh_err ignore;
        mdriver_exec(m->db, "ROLLBACK", NULL, 0, &ignore);
    } else {
        mirror__add_total(totals, "inserted", x.inserted);
        mirror__add_total(totals, "updated", x.updated);
        mirror__add_total(totals, "deleted", deleted);
        mirror__add_total(totals, "unchanged", x.unchanged);
        m->rows_pushed += (unsigned long long)(x.inserted + x.updated + deleted);
        m->pushes++;
        m->push_seconds += done - t0;
        if (keep)
            kept_put(&x, version);
    }
    push_outcome(m, c, rc == 0, mark);
    idmap_free(&x.rows);
    json_decref(x.odd);
    for (size_t r = 0; x.pend && r < INSERT_BATCH; r++)
        mirror__row_free(&x.pend[r]);
    free(x.pend);
    free(x.params);
    buf_free(&x.batch);
    buf_free(&x.ins.sql);
    buf_free(&x.del);
    buf_free(&x.wrote);
    return mirror__settle(m, rc);
}

int mirror_push(mirror *m, const mirror_coll *c, const mirror_source *src, json_t *totals,
                storh_err *err)
{
    pthread_mutex_lock(&m->mu);
    int rc = push_locked(m, c, src, false, totals, err);
    pthread_mutex_unlock(&m->mu);
    return rc;
}

int mirror_rebuild(mirror *m, const mirror_coll *c, const mirror_source *src, json_t *totals,
                   storh_err *err)
{
    pthread_mutex_lock(&m->mu);
    int rc = push_locked(m, c, src, true, totals, err);
    pthread_mutex_unlock(&m->mu);
    return rc;
}

/* The hash of the row of one id (empty when there is none). */
static int row_hash(void *ctx, int n, const char *const *v, const size_t *l)
{
    if (n >= 1 && v[0] && l[0] < 33)
        memcpy(ctx, v[0], l[0] + 1);
    return 0;
}

/* The record of id for a flush: *gone when there is none, *unchanged
 * when the memo knows its file as the row's hash have (nothing read), else
 * its row in r. */
static int flush_record(mirror *m, const mirror_coll *c, const mirror_source *src, const char *id,
                        const char *have, mrow *r, bool *gone, bool *unchanged, storh_err *err)
{
    *gone = *unchanged = false;
    if (!src->ds) {
        json_t *data = NULL;
        int g = mirror__source_get(src, id, &data, err);
        if (g == STORH_ENOTFOUND)
            *gone = true;
        else if (!g)
            g = mirror__row_data(r, id, data, err);
        json_decref(data);
        return g == STORH_ENOTFOUND ? 0 : g;
    }
    mmemo *memo = mirror__memo(m, c);
    char path[PATH_MAX];
    struct stat st;
    int rc =
        fsx_pathf(path, err, "%s/data/%c%c/%s.jsonc", docstore_dir(src->ds), id[24], id[25], id);
    if (rc)
        return rc;
    if (memo && have[0] && stat(path, &st) == 0) {
        const char *h = mmemo_hash(memo, id, &st);
        if (h && strlen(have) == 32 && !memcmp(h, have, 32)) {
            *unchanged = true;
            return 0;
        }
    }
    rc = mirror__row_file(m, c, r, AT_FDCWD, path, id, &st, err);
    if (rc == STORH_ENOTFOUND) {
        if (memo)
            mmemo_forget(memo, id);
        *gone = true;
        return 0;
    }
    if (!rc && memo)
        mmemo_put(memo, id, &st, r->hash);
    return rc;
}

/* One id of a flush: a row whose hash matches the record's is left as it
 * is (no write, so a flush of unchanged records commits nothing); any other
 * row is replaced, or deleted when the record is gone. */
static int flush_one(mirror *m, const mirror_coll *c, const mirror_source *src, const row_stmt *ins,
                     const char *sel, const char *del, const char *id, mrow *r, long *upserted,
                     long *deleted, storh_err *err)
{
    mparam p1 = {MPARAM_TEXT, id, strlen(id), 0, 0};
    char have[33] = "";
    bool gone, unchanged;
    int rc = mdriver_query(m->db, sel, &p1, 1, row_hash, have, err);
    if (!rc)
        rc = flush_record(m, c, src, id, have, r, &gone, &unchanged, err);
    if (rc)
        return rc;
    if (gone) {
        (*deleted)++;
        return have[0] ? mdriver_exec(m->db, del, &p1, 1, err) : 0;
    }
    (*upserted)++;
    if (unchanged || !strcmp(have, r->hash))
        return 0;
    if (have[0] && (rc = mdriver_exec(m->db, del, &p1, 1, err)))
        return rc;
    mparam p[FLUSH_COLS];
    if (ins->ncols > FLUSH_COLS)
        return storh_err_set(err, STORH_EINVAL, "Too many typed columns.");
    int np = mirror__row_params(m, c, r, p);
    return mdriver_exec(m->db, ins->sql.data, p, np, err);
}

int mirror_flush(mirror *m, const mirror_coll *c, const mirror_source *src, const json_t *ids,
                 json_t **out, storh_err *err)
{
    if (!json_is_array(ids))
        return storh_err_set(err, STORH_EINVAL, "ids must be an array of record ids.");
    size_t i;
    json_t *v;
    json_array_foreach (ids, i, v) {
        if (!json_is_string(v) || !uuid7_is_valid(json_string_value(v), json_string_length(v)))
            return storh_err_set(err, STORH_EINVAL, "ids[%zu]: Invalid UUIDv7 value.", i);
    }
    pthread_mutex_lock(&m->mu);
    int rc = mirror__connect_db(m, err);
    mirror__kept_drop(m, c); /* the flush writes the table */
    json_t *ddl = NULL;
    if (!rc)
        rc = mirror_ddl(m, c, &ddl, err);
    if (!rc)
        rc = mirror__exec_stmts(m, ddl, err);
    json_decref(ddl);
    if (!rc)
        rc = mdriver_begin_write(m->db, err);
    row_stmt ins = {BUF_INIT, 0};
    insert_sql(m, c, &ins);
    const char *ph = mirror__is_pg(m) ? "$1" : "?";
    buf del = BUF_INIT, sel = BUF_INIT;
    mrow row = {0};
    buf_printf(&del, "DELETE FROM \"%s\" WHERE \"id\" = %s", c->table, ph);
    buf_printf(&sel, "SELECT \"hash\" FROM \"%s\" WHERE \"id\" = %s", c->table, ph);
    json_t *seen = json_object();
    long upserted = 0, deleted = 0;
    json_array_foreach (ids, i, v) {
        const char *id = json_string_value(v);
        if (rc || json_object_get(seen, id))
            continue;
        json_object_set_new(seen, id, json_true());
        rc = flush_one(m, c, src, &ins, sel.data, del.data, id, &row, &upserted, &deleted, err);
    }
    if (!rc)
        rc = mdriver_exec(m->db, "COMMIT", NULL, 0, err);
    else if (m->db) {
        storh_err ignore;
        mdriver_exec(m->db, "ROLLBACK", NULL, 0, &ignore);
    }
    json_decref(seen);
    buf_free(&ins.sql);
    buf_free(&del);
    buf_free(&sel);
    mirror__row_free(&row);
    rc = mirror__settle(m, rc);
    pthread_mutex_unlock(&m->mu);
    if (!rc)
        *out =
            json_pack("{sIsI}", "upserted", (json_int_t)upserted, "deleted", (json_int_t)deleted);
    return rc;
}
