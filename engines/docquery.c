/* docquery: QueryBuilder execution on a DocStore (FORMAT.md 5.6). Candidate
 * ids come from the index files only if every group can produce them (a
 * compound bucket for two eq conditions on plain fields, else the
 * intersection of the group's indexable conditions; groups are unioned);
 * otherwise the whole query is a full scan in id order. Candidates are
 * always re-checked with the full predicate. */
#include <stdlib.h>
#include <string.h>

#include "docstore.h"
#include "docstore_int.h"
#include "query.h"
#include "recpred.h"
#include "sjson.h"

static bool id_lookup(const qcond *c)
{
    return !strcmp(c->field, "id") && (c->op == QOP_EQ || c->op == QOP_IN);
}

static bool servable(const qcond *c, void *ctx)
{
    return id_lookup(c) || docindex_serves(ctx, c);
}

static int cond_ids(docstore *ds, const qcond *c, docindex_idset *ids, storh_err *err)
{
    if (id_lookup(c)) {
        size_t n = c->op == QOP_IN ? json_array_size(c->value) : 1;
        int rc = 0;
        for (size_t i = 0; !rc && i < n; i++) {
            json_t *v = c->op == QOP_IN ? json_array_get(c->value, i) : c->value;
            if (json_is_string(v) && json_string_length(v) == DOCINDEX_ID &&
                uuid7_is_valid(json_string_value(v), json_string_length(v)))
                rc = docindex_idset_push(ids, json_string_value(v), err);
        }
        docindex_idset_sort(ids);
        return rc;
    }
    return docindex_candidates(&ds->ix, c, ids, err);
}

/* Candidate ids of one group (out empty on entry). */
static int group_ids(docstore *ds, const qgroup *g, docindex_idset *out, storh_err *err)
{
    if (g->n == 2 && g->c[0].op == QOP_EQ && g->c[1].op == QOP_EQ) {
        bool served;
        int rc = docindex_compound_ids(&ds->ix, g->c[0].field, g->c[0].value, g->c[1].field,
                                       g->c[1].value, out, &served, err);
        if (rc || served)
            return rc;
    }
    bool first = true;
    for (size_t i = 0; i < g->n; i++) {
        if (!servable(&g->c[i], &ds->ix))
            continue;
        if (first) {
            first = false;
            int rc = cond_ids(ds, &g->c[i], out, err);
            if (rc)
                return rc;
            continue;
        }
        docindex_idset ids = DOCINDEX_IDSET_INIT;
        int rc = cond_ids(ds, &g->c[i], &ids, err);
        if (!rc)
            rc = docindex_idset_intersect(out, &ids, err);
        docindex_idset_free(&ids);
        if (rc)
            return rc;
    }
    return 0;
}

/* The candidates of q from the index files, *indexed true, if every group
 * can produce them; else *indexed false (a full scan decides), also when
 * an index file is damaged (the records decide; verify reports it). Under
 * ixlock. */
static int candidates(docstore *ds, const query *q, docindex_idset *cand, bool *indexed,
                      storh_err *err)
{
    *indexed = false;
    if (!docindex_active(&ds->ix) || !query_every_group(q, servable, &ds->ix))
        return 0;
    *indexed = true;
    int rc = 0;
    for (size_t g = 0; !rc && g < q->ngroups; g++) {
        if (g == 0) { /* one group: its ids are sorted already */
            rc = group_ids(ds, &q->groups[g], cand, err);
            continue;
        }
        docindex_idset ids = DOCINDEX_IDSET_INIT;
        if (!(rc = group_ids(ds, &q->groups[g], &ids, err)))
            rc = docindex_idset_union(cand, &ids, err);
        docindex_idset_free(&ids);
    }
    if (rc == STORH_ECORRUPT) {
        docindex_idset_free(cand);
        *indexed = false;
        rc = 0;
    }
    return rc;
}

static json_t *explain(docstore *ds, const query *q)
{
    json_t *used = json_array();
    for (size_t g = 0; g < q->ngroups; g++)
        for (size_t i = 0; i < q->groups[g].n; i++) {
            const qcond *c = &q->groups[g].c[i];
            if (docindex_serves(&ds->ix, c)) {
                json_array_append_new(
                    used, json_pack("{ssss}", "field", c->field, "operator", query_op_name(c->op)));
                break; /* the first such condition of each group */
            }
        }
    bool index = json_array_size(used) > 0;
    bool all = query_every_group(q, servable, &ds->ix);
    return json_pack("{sssssosisb}", "store", "Storh\\DocPerFileStore", "plan",
                     index ? "index_scan" : "full_scan", "indexes", used, "groups",
                     (int)(q->ngroups ? q->ngroups : 1), "index_used", index && all);
}

static bool after_cursor(const query *q, const char *id)
{
    return !q->has_cursor || strcmp(id, q->cursor) > 0;
}

/* Candidate i as a string into id; false when the cursor skips it. */
static bool candidate(const query *q, const docindex_idset *cand, size_t i,
                      char id[DOCINDEX_ID + 1])
{
    memcpy(id, cand->id[i], DOCINDEX_ID);
    id[DOCINDEX_ID] = '\0';
    return after_cursor(q, id);
}

/* Count fast path: one condition, eq/in on an equality field (or the
 * compound pair) -> the entry files alone. */
static bool count_from_index(docstore *ds, const query *q)
{
    if (q->ngroups != 1 || q->has_cursor)
        return false;
    const qgroup *g = &q->groups[0];
    if (g->n == 1 && (g->c[0].op == QOP_EQ || g->c[0].op == QOP_IN)) {
        const idxdef *d = docindex_def(&ds->ix, g->c[0].field);
        return id_lookup(&g->c[0]) || (d && !d->range);
    }
    return false;
}

int docstore_query(docstore *ds, const query *q, json_t **out, storh_err *err)
{
    pthread_rwlock_rdlock(&ds->ixlock);
    int rc = 0;
    if (q->explain) {
        *out = explain(ds, q);
        pthread_rwlock_unlock(&ds->ixlock);
        return 0;
    }
    /* count fast path: one eq/in condition on an equality field */
    if (q->count && count_from_index(ds, q) && !id_lookup(&q->groups[0].c[0])) {
        long long n;
        bool served;
        rc = docindex_count(&ds->ix, &q->groups[0].c[0], &n, &served, err);
        if (rc == STORH_ECORRUPT)
            rc = 0; /* counted below from candidates or a scan */
        if (!rc && served) {
            pthread_rwlock_unlock(&ds->ixlock);
            if (q->limit && n > (long long)q->limit)
                n = (long long)q->limit;
            *out = sjson_count(n);
            return *out ? 0 : storh_err_set(err, STORH_ENOMEM, "Out of memory.");
        }
    }
    docindex_idset cand = DOCINDEX_IDSET_INIT;
    bool indexed = false;
    if (!rc)
        rc = candidates(ds, q, &cand, &indexed, err);
    pthread_rwlock_unlock(&ds->ixlock);
    if (rc) {
        docindex_idset_free(&cand);
        return rc;
    }
    /* without an orderBy the result is in id order, so a limit can stop the
     * scan early */
    bool early =
        q->limit && (!q->order_field || (!strcmp(q->order_field, "id") && !q->desc)) && !q->count;
    json_t *rows = json_array();
    if (indexed) {
        docstore_batch_begin(ds); /* the candidates as of now: one drain */
        for (size_t i = 0; i < cand.n; i++) {
            char id[DOCINDEX_ID + 1];
            if (!candidate(q, &cand, i, id))
                continue;
            json_t *data;
            int r = docstore_batch_get(ds, id, &data, err);
            if (r == STORH_ENOTFOUND)
                continue; /* an index entry left by a crash; verify reports it */
            if (r) {
                rc = r;
                break;
            }
            if (query_match(q, id, data))
                json_array_append_new(rows, sjson_row(id, data));
            else
                json_decref(data);
            if (early && json_array_size(rows) >= q->limit)
                break;
        }
        docindex_idset_free(&cand);
    } else {
        recquery rq;
        recquery_init(&rq);
        if (q->has_cursor)
            recquery_after(&rq, q->cursor, UUID7_LEN, NULL);
        docstore_iter *it = NULL;
        recpred *pre = recpred_from_query(q); /* rows it rejects are not decoded */
        rc = docstore_iter_open(ds, &rq, &it, err);
        if (!rc)
            docstore_iter_prefilter(it, pre);
        const char *id;
        json_t *data;
        while (!rc) {
            int r = docstore_iter_next(it, &id, &data, err);
            if (r == 0)
                break;
            if (r < 0) {
                rc = r;
                break;
            }
            if (query_match(q, id, data))
                json_array_append_new(rows, sjson_row(id, data));
            else
                json_decref(data);
            if (early && json_array_size(rows) >= q->limit)
                break;
        }
        docstore_iter_close(it);
        recpred_free(pre);
        recquery_clear(&rq);
    }
    if (rc) {
        json_decref(rows);
        return rc;
    }
    *out = query_result(q, rows, early);
    return 0;
}

/* Whether a candidate's answer bytes (a canonical record) pass q: decided
 * on the bytes where pre can, else on the decoded record (a decode error
 * goes to *rc and answers false). */
static bool answer_matches(const query *q, const recpred *pre, const char *id, const rcache_blob *b,
                           int *rc, storh_err *err)
{
    int m = pre ? recpred_match_canonical(pre, id, b->data, b->len) : RECPRED_UNSURE;
    if (m != RECPRED_UNSURE)
        return m == RECPRED_YES;
    json_t *data;
    if ((*rc = docstore_decode_record(b->data, b->len, id, &data, err)) != 0)
        return false;
    bool ok = query_match(q, id, data);
    json_decref(data);
    return ok;
}

int docstore_query_answer(docstore *ds, const query *q, buf *out, bool *served, storh_err *err)
{
    *served = false;
    /* in candidate order (ids ascending) and from the index alone: the rest
     * is docstore_query's */
    if (q->explain || q->count || q->order_field)
        return 0;
    docindex_idset cand = DOCINDEX_IDSET_INIT;
    bool indexed;
    pthread_rwlock_rdlock(&ds->ixlock);
    int rc = candidates(ds, q, &cand, &indexed, err);
    pthread_rwlock_unlock(&ds->ixlock);
    if (rc || !indexed) {
        docindex_idset_free(&cand);
        return rc;
    }
    recpred *pre = recpred_from_query(q);
    size_t rows = 0, start = out->len;
    char last[DOCINDEX_ID + 1] = "";
    buf_append(out, "{\"records\":[", 12);
    docstore_batch_begin(ds); /* the candidates as of now: one drain */
    for (size_t i = 0; !rc && i < cand.n && !(q->limit && rows >= q->limit); i++) {
        char id[DOCINDEX_ID + 1];
        if (!candidate(q, &cand, i, id))
            continue;
        rcache_blob *b;
        int r = docstore_batch_get_answer(ds, id, &b, err);
        if (r == STORH_ENOTFOUND)
            continue; /* an index entry left by a crash; verify reports it */
        if (r) {
            rc = r;
            break;
        }
        if (answer_matches(q, pre, id, b, &rc, err)) {
            size_t len = b->len;
            if (len && b->data[len - 1] == '\n') /* the record file's newline */
                len--;
            if (rows++)
                buf_appendc(out, ',');
            buf_append(out, b->data, len);
            memcpy(last, id, sizeof last);
        }
        rcache_blob_release(b);
    }
    docindex_idset_free(&cand);
    recpred_free(pre);
    /* the cursor as query_result gives it: a full page's last id */
    buf_append(out, "],\"next_cursor\":", 16);
    if (q->limit && rows == q->limit) {
        buf_appendc(out, '"');
        buf_appends(out, last);
        buf_appendc(out, '"');
    } else {
        buf_append(out, "null", 4);
    }
    buf_appendc(out, '}');
    if (!rc && buf_failed(out))
        rc = storh_err_oom(err);
    if (rc) {
        out->len = start;
        if (out->data)
            out->data[start] = '\0';
    } else
        *served = true;
    return rc;
}
