#include "logquery.h"

#include <string.h>

#include "sjson.h"

static int count_result(size_t n, json_t **out, storh_err *err)
{
    *out = sjson_count((long long)n);
    return *out ? 0 : storh_err_set(err, STORH_ENOMEM, "Out of memory.");
}

int logquery_run(const logset *ls, const query *q, json_t **out, storh_err *err)
{
    if (q->explain) {
        *out = json_pack("{sssss[]si}", "store", "Storh\\SegmentedLogStore", "plan", "full_scan",
                         "indexes", "groups", (int)(q->ngroups ? q->ngroups : 1));
        return 0;
    }
    if (q->count && q->ngroups == 0 && !q->has_cursor) {
        size_t n;
        int rc = logset_count(ls, &n, err);
        if (rc)
            return rc;
        if (q->limit && n > q->limit)
            n = q->limit;
        return count_result(n, out, err);
    }
    if (q->count && q->ngroups == 1 && q->groups[0].n == 1 && !q->has_cursor &&
        q->groups[0].c[0].op == QOP_EQ && strcmp(q->groups[0].c[0].field, "id") != 0) {
        size_t n;
        bool served;
        int rc =
            logset_count_eq(ls, q->groups[0].c[0].field, q->groups[0].c[0].value, &n, &served, err);
        if (rc)
            return rc;
        if (served) {
            if (q->limit && n > q->limit)
                n = q->limit;
            return count_result(n, out, err);
        }
    }
    bool by_id = q->order_field && !strcmp(q->order_field, "id") && !q->desc;
    bool early = q->limit && !q->order_field && !q->count;
    recquery rq;
    recquery_init(&rq);
    if (q->has_cursor)
        recquery_after(&rq, q->cursor, UUID7_LEN, NULL);
    logset_iter *it = NULL;
    int rc = logset_iter_open(ls, &rq, &it, err);
    json_t *rows = json_array();
    while (!rc) {
        const char *id;
        json_t *data;
        int r = logset_iter_next(it, &id, &data, err);
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
    logset_iter_close(it);
    recquery_clear(&rq);
    if (rc) {
        json_decref(rows);
        return rc;
    }
    *out = query_result(q, rows, by_id);
    return 0;
}
