/* docindex: lookups the query planner asks for (see docindex_int.h). */
#include "docindex_int.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fsx.h"
#include "sjson.h"

/* ---------- lookups ---------- */

static bool range_op(qop op)
{
    return op == QOP_GT || op == QOP_GTE || op == QOP_LT || op == QOP_LTE || op == QOP_BETWEEN ||
           op == QOP_PREFIX;
}

bool docindex_serves(const docindex *ix, const qcond *c)
{
    const idxdef *d = docindex_def(ix, c->field);
    if (!d)
        return false;
    if (c->op == QOP_EQ)
        return docindex_indexable(c->value);
    if (c->op == QOP_IN) { /* arrays and objects have no entries: a scan finds them */
        size_t i;
        json_t *e;
        json_array_foreach (c->value, i, e)
            if (!docindex_indexable(e))
                return false;
        return true;
    }
    return d->range && range_op(c->op);
}

static int range_candidates(docindex *ix, const qcond *c, docindex_idset *out, storh_err *err)
{
    docindex_range *r;
    const rset *rs;
    int rc = docindex_range_get(ix, c->field, &r, &rs, err);
    if (rc)
        return rc;
    const idmap *ids = &rs->ids;
    size_t pos = 0;
    const char *k;
    void *v;
    if (c->op == QOP_EQ || c->op == QOP_IN) {
        size_t n = c->op == QOP_IN ? json_array_size(c->value) : 1;
        for (size_t i = 0; !rc && i < n; i++) {
            const json_t *want = c->op == QOP_IN ? json_array_get(c->value, i) : c->value;
            if (!docindex_indexable(want))
                continue;
            buf rk = BUF_INIT;
            docindex_range_key(want, &rk);
            pos = 0;
            while (!rc && idmap_next(ids, &pos, &k, &v)) {
                rentry *e = v;
                if (!strcmp(e->rk, rk.data) && query_strict_equal(e->value, want))
                    rc = docindex_idset_push(out, k, err);
            }
            buf_free(&rk);
        }
    } else {
        /* The range key orders only part of the values (negative numbers sort
         * after positive ones, floats tie at 6 decimals, types sort apart
         * from compare()'s cross-type order), so no key window is exact:
         * each entry's own value decides, as in a scan. */
        while (!rc && idmap_next(ids, &pos, &k, &v)) {
            rentry *e = v;
            if (query_cond_value(c, e->value))
                rc = docindex_idset_push(out, k, err);
        }
    }
    docindex_range_release(r);
    docindex_idset_sort(out);
    return rc;
}

int docindex_candidates(docindex *ix, const qcond *c, docindex_idset *out, storh_err *err)
{
    const idxdef *d = docindex_def(ix, c->field);
    if (!d)
        return storh_err_set(err, STORH_EINVAL, "No index on %s.", c->field);
    if (d->range)
        return range_candidates(ix, c, out, err);
    size_t n = c->op == QOP_IN ? json_array_size(c->value) : 1;
    int rc = 0;
    for (size_t i = 0; !rc && i < n; i++) {
        const json_t *want = c->op == QOP_IN ? json_array_get(c->value, i) : c->value;
        if (!docindex_indexable(want))
            continue; /* arrays are never indexed */
        buf vk = BUF_INIT;
        docindex_value_key(want, &vk);
        char p[PATH_MAX];
        dix_ids *part = NULL;
        rc = docindex_eq_path(ix, c->field, vk.data, p, err);
        if (!rc)
            rc = docindex_entry_ids(ix, p, vk.data, &part, err);
        if (!rc)
            rc = docindex_idset_add_entry(out, part, err);
        docindex_ids_release(part);
        buf_free(&vk);
    }
    docindex_idset_sort(out); /* a shared entry is sorted already */
    return rc;
}

int docindex_count(docindex *ix, const qcond *c, long long *count, bool *served, storh_err *err)
{
    *served = false;
    *count = 0;
    const idxdef *d = docindex_def(ix, c->field);
    if (!d || d->range || (c->op != QOP_EQ && c->op != QOP_IN))
        return 0;
    size_t n = c->op == QOP_IN ? json_array_size(c->value) : 1;
    /* in() with a repeated value counts once (eq has one value: no set) */
    json_t *seen = n > 1 ? json_object() : NULL;
    int rc = 0;
    for (size_t i = 0; !rc && i < n; i++) {
        const json_t *want = c->op == QOP_IN ? json_array_get(c->value, i) : c->value;
        if (!docindex_indexable(want))
            continue;
        buf vk = BUF_INIT;
        docindex_value_key(want, &vk);
        char p[PATH_MAX];
        long long k = 0;
        if (!seen || !json_object_get(seen, vk.data)) {
            if (seen)
                json_object_set_new(seen, vk.data, json_true());
            dix_ids *e = NULL;
            rc = docindex_eq_path(ix, c->field, vk.data, p, err);
            if (!rc)
                rc = docindex_entry_ids(ix, p, vk.data, &e, err);
            if (!rc)
                k = e->count;
            docindex_ids_release(e);
            *count += k;
        }
        buf_free(&vk);
    }
    json_decref(seen);
    *served = rc == 0;
    return rc;
}

int docindex_compound_ids(docindex *ix, const char *f1, const json_t *v1, const char *f2,
                          const json_t *v2, docindex_idset *ids, bool *served, storh_err *err)
{
    *served = false;
    const idxdef *d1 = docindex_def(ix, f1), *d2 = docindex_def(ix, f2);
    if (!d1 || !d2 || !docindex_is_plain(d1) || !docindex_is_plain(d2) || !strcmp(f1, f2) ||
        !docindex_indexable(v1) || !docindex_indexable(v2))
        return 0;
    if (strcmp(f1, f2) > 0) { /* the left field sorts first */
        const char *tf = f1;
        const json_t *tv = v1;
        f1 = f2;
        v1 = v2;
        f2 = tf;
        v2 = tv;
    }
    buf ck = BUF_INIT;
    docindex_compound_key(v1, v2, &ck);
    char p[PATH_MAX];
    dix_ids *e = NULL;
    int rc = docindex_compound_path(ix, f1, f2, ck.data, p, err);
    if (!rc)
        rc = docindex_entry_ids(ix, p, ck.data, &e, err);
    if (!rc)
        rc = docindex_idset_add_entry(ids, e, err);
    docindex_ids_release(e);
    buf_free(&ck);
    *served = rc == 0;
    return rc;
}
