#include "query.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "buf.h"
#include "sjson.h"

static const struct {
    const char *name;
    qop op;
} ops[] = {
    {"eq", QOP_EQ},         {"neq", QOP_NEQ},         {"in", QOP_IN},
    {"notIn", QOP_NOTIN},   {"gt", QOP_GT},           {"gte", QOP_GTE},
    {"lt", QOP_LT},         {"lte", QOP_LTE},         {"between", QOP_BETWEEN},
    {"exists", QOP_EXISTS}, {"missing", QOP_MISSING}, {"prefix", QOP_PREFIX},
};

const char *query_op_name(qop op)
{
    for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++)
        if (ops[i].op == op)
            return ops[i].name;
    return "?";
}

/* ---- semantics ---- */

bool query_strict_equal(const json_t *a, const json_t *b)
{
    bool ca = json_is_object(a) || json_is_array(a), cb = json_is_object(b) || json_is_array(b);
    if (ca || cb) {
        if (!ca || !cb)
            return false;
        /* canonical SJSON is one-to-one on PHP values (types, key order, lists) */
        buf x = BUF_INIT, y = BUF_INIT;
        bool eq = sjson_encode(&x, a, 0, NULL) == 0 && sjson_encode(&y, b, 0, NULL) == 0 &&
                  x.len == y.len && memcmp(x.data, y.data, x.len) == 0;
        buf_free(&x);
        buf_free(&y);
        return eq;
    }
    if (json_typeof(a) != json_typeof(b))
        return false;
    return json_equal((json_t *)a, (json_t *)b);
}

static int cmp_bytes(const char *a, size_t al, const char *b, size_t bl)
{
    int c = memcmp(a, b, al < bl ? al : bl);
    if (c)
        return c < 0 ? -1 : 1;
    return al < bl ? -1 : al > bl;
}

/* The rank of a scalar's type in the byte order of the first character of
 * its encoding ('"' < digits and '-' < 'f' < 'n' < 't'), which is what the
 * pretty-encoding comparison below decides for two scalars of different
 * types; -1 for arrays and objects. */
static int scalar_rank(const json_t *v)
{
    switch (json_typeof(v)) {
    case JSON_STRING:
        return 0;
    case JSON_INTEGER:
    case JSON_REAL:
        return 1;
    case JSON_FALSE:
        return 2;
    case JSON_NULL:
        return 3;
    case JSON_TRUE:
        return 4;
    default:
        return -1;
    }
}

int query_compare(const json_t *a, const json_t *b)
{
    static json_t *null_value;
    if (!null_value)
        null_value = json_null(); /* a static singleton in jansson */
    if (!a)
        a = null_value;
    if (!b)
        b = null_value;
    bool na = json_is_number(a), nb = json_is_number(b);
    if (na && nb) {
        if (json_is_integer(a) && json_is_integer(b)) {
            json_int_t x = json_integer_value(a), y = json_integer_value(b);
            return x < y ? -1 : x > y;
        }
        double x = json_number_value(a), y = json_number_value(b);
        return x < y ? -1 : x > y;
    }
    if (json_is_string(a) && json_is_string(b))
        return cmp_bytes(json_string_value(a), json_string_length(a), json_string_value(b),
                         json_string_length(b));
    if (json_is_boolean(a) && json_is_boolean(b))
        return (int)json_is_true(a) - (int)json_is_true(b);
    if (json_is_null(a) && json_is_null(b))
        return 0;
    int ra = scalar_rank(a), rb = scalar_rank(b);
    if (ra >= 0 && rb >= 0) /* different scalar types: decided by their first byte */
        return ra < rb ? -1 : ra > rb;
    /* mixed types: compare the pretty encodings of {"value": x} */
    buf x = BUF_INIT, y = BUF_INIT;
    json_t *wa = json_pack("{sO}", "value", a), *wb = json_pack("{sO}", "value", b);
    sjson_encode_doc(&x, wa, SJSON_PRETTY, NULL);
    sjson_encode_doc(&y, wb, SJSON_PRETTY, NULL);
    json_decref(wa);
    json_decref(wb);
    int c = cmp_bytes(x.data ? x.data : "", x.len, y.data ? y.data : "", y.len);
    buf_free(&x);
    buf_free(&y);
    return c;
}

/* c on the value v of its field, NULL when the field is missing. */
static bool cond_value(const qcond *c, const json_t *v)
{
    bool exists = v != NULL;
    bool r = false;
    switch (c->op) {
    case QOP_EQ:
        r = exists && query_strict_equal(v, c->value);
        break;
    case QOP_NEQ:
        r = !exists || !query_strict_equal(v, c->value);
        break;
    case QOP_IN:
    case QOP_NOTIN: {
        bool any = false;
        size_t i;
        json_t *e;
        if (exists)
            json_array_foreach (c->value, i, e)
                any = any || query_strict_equal(v, e);
        r = c->op == QOP_IN ? (exists && any) : (!exists || !any);
        break;
    }
    case QOP_GT:
        r = exists && query_compare(v, c->value) > 0;
        break;
    case QOP_GTE:
        r = exists && query_compare(v, c->value) >= 0;
        break;
    case QOP_LT:
        r = exists && query_compare(v, c->value) < 0;
        break;
    case QOP_LTE:
        r = exists && query_compare(v, c->value) <= 0;
        break;
    case QOP_BETWEEN:
        r = exists && query_compare(v, json_array_get(c->value, 0)) >= 0 &&
            query_compare(v, json_array_get(c->value, 1)) <= 0;
        break;
    case QOP_EXISTS:
        r = exists;
        break;
    case QOP_MISSING:
        r = !exists;
        break;
    case QOP_PREFIX: {
        size_t pl = json_string_length(c->value);
        r = exists && json_is_string(v) && json_string_length(v) >= pl &&
            memcmp(json_string_value(v), json_string_value(c->value), pl) == 0;
        break;
    }
    }
    return r;
}

bool query_cond_value(const qcond *c, const json_t *v)
{
    return cond_value(c, v);
}

static bool cond_true(const qcond *c, const char *id, const json_t *data)
{
    if (id && !strcmp(c->field, "id")) {
        json_t *idv = json_string(id);
        bool r = cond_value(c, idv);
        json_decref(idv);
        return r;
    }
    return cond_value(c, json_is_object(data) ? json_object_get(data, c->field) : NULL);
}

bool query_match(const query *q, const char *id, const json_t *data)
{
    if (q->ngroups == 0)
        return true;
    for (size_t g = 0; g < q->ngroups; g++) {
        bool all = true;
        for (size_t i = 0; i < q->groups[g].n && all; i++)
            all = cond_true(&q->groups[g].c[i], id, data);
        if (all)
            return true;
    }
    return false;
}

bool query_every_group(const query *q, bool (*pred)(const qcond *c, void *ctx), void *ctx)
{
    if (q->ngroups == 0)
        return false;
    for (size_t g = 0; g < q->ngroups; g++) {
        bool any = false;
        for (size_t i = 0; i < q->groups[g].n && !any; i++)
            any = pred(&q->groups[g].c[i], ctx);
        if (!any)
            return false;
    }
    return true;
}

/* ---- ordering ---- */

static const json_t *sort_key(const query *q, const json_t *row)
{
    if (!strcmp(q->order_field, "id"))
        return json_object_get(row, "id");
    return json_object_get(json_object_get(row, "data"), q->order_field);
}

static void merge_sort(const query *q, json_t **v, json_t **tmp, size_t n)
{
    if (n < 2)
        return;
    size_t h = n / 2;
    merge_sort(q, v, tmp, h);
    merge_sort(q, v + h, tmp, n - h);
    size_t i = 0, j = h, k = 0;
    while (i < h && j < n) {
        int c = query_compare(sort_key(q, v[j]), sort_key(q, v[i]));
        if (q->desc)
            c = -c;
        tmp[k++] = c < 0 ? v[j++] : v[i++]; /* ties keep incoming order */
    }
    while (i < h)
        tmp[k++] = v[i++];
    while (j < n)
        tmp[k++] = v[j++];
    memcpy(v, tmp, n * sizeof *v);
}

void query_sort(const query *q, json_t *rows)
{
    size_t n = json_array_size(rows);
    if (!q->order_field || n < 2)
        return;
    json_t **v = malloc(n * sizeof *v), **tmp = malloc(n * sizeof *tmp);
    if (v && tmp) {
        for (size_t i = 0; i < n; i++)
            v[i] = json_incref(json_array_get(rows, i));
        merge_sort(q, v, tmp, n);
        json_array_clear(rows);
        for (size_t i = 0; i < n; i++)
            json_array_append_new(rows, v[i]);
    }
    free(v);
    free(tmp);
}

json_t *query_result(const query *q, json_t *rows, bool cursor_ok)
{
    if (q->count) {
        size_t n = json_array_size(rows);
        if (q->limit && n > q->limit)
            n = q->limit;
        json_decref(rows);
        return sjson_count((long long)n);
    }
    query_sort(q, rows);
    while (q->limit && json_array_size(rows) > q->limit)
        json_array_remove(rows, json_array_size(rows) - 1);
    json_t *next = json_null();
    if (cursor_ok && q->limit && json_array_size(rows) == q->limit)
        next = json_incref(json_object_get(json_array_get(rows, q->limit - 1), "id"));
    return json_pack("{soso}", "records", rows, "next_cursor", next);
}

/* ---- parsing ---- */

void query_free(query *q)
{
    for (size_t g = 0; g < q->ngroups; g++) {
        for (size_t i = 0; i < q->groups[g].n; i++) {
            free(q->groups[g].c[i].field);
            json_decref(q->groups[g].c[i].value);
        }
        free(q->groups[g].c);
    }
    free(q->groups);
    free(q->order_field);
    memset(q, 0, sizeof *q);
}

typedef struct clist {
    qcond *v;
    size_t n, cap;
} clist;

/* A query in disjunctive normal form while it is parsed: each group a list
 * of indices into the condition pool, with its count at [0]. */
typedef struct glist {
    size_t **g;
    size_t n;
} glist;

static void glist_free(glist *l)
{
    for (size_t i = 0; i < l->n; i++)
        free(l->g[i]);
    free(l->g);
    l->g = NULL;
    l->n = 0;
}

static size_t *group_new(const size_t *a, const size_t *b)
{
    size_t na = a ? a[0] : 0, nb = b ? b[0] : 0;
    size_t *g = malloc((na + nb + 1) * sizeof *g);
    if (!g)
        return NULL;
    g[0] = na + nb;
    if (na)
        memcpy(g + 1, a + 1, na * sizeof *g);
    if (nb)
        memcpy(g + 1 + na, b + 1, nb * sizeof *g);
    return g;
}

/* out = a AND b (cross product of groups). */
static int dnf_and(glist *a, glist *b, glist *out, storh_err *err)
{
    if (a->n * b->n > QUERY_MAX_GROUPS)
        return storh_err_set(err, STORH_EINVAL, "where: expands to more than %d OR groups.",
                             QUERY_MAX_GROUPS);
    size_t n = a->n * b->n;
    out->g = calloc(n > 0 ? n : 1, sizeof *out->g);
    out->n = 0;
    for (size_t i = 0; i < a->n; i++)
        for (size_t j = 0; j < b->n; j++)
            out->g[out->n++] = group_new(a->g[i], b->g[j]);
    return 0;
}

static int parse_list(const json_t *arr, clist *pool, glist *out, const char *where,
                      storh_err *err);

static int parse_cond(const json_t *c, clist *pool, size_t *index, const char *where,
                      storh_err *err)
{
    json_t *f = json_object_get(c, "field"), *o = json_object_get(c, "op");
    json_t *v = json_object_get(c, "value");
    if (!json_is_string(f) || strspn(json_string_value(f), " \t\n\r\v") == json_string_length(f))
        return storh_err_set(err, STORH_EINVAL, "%s.field: Query field cannot be empty.", where);
    if (!json_is_string(o))
        return storh_err_set(err, STORH_EINVAL, "%s.op: must be a string.", where);
    const char *on = json_string_value(o);
    size_t k = 0;
    while (k < sizeof ops / sizeof ops[0] && strcmp(ops[k].name, on))
        k++;
    if (k == sizeof ops / sizeof ops[0])
        return storh_err_set(err, STORH_EINVAL, "%s.op: Unsupported query operator: %.40s", where,
                             on);
    qop op = ops[k].op;
    bool needs = op != QOP_EXISTS && op != QOP_MISSING;
    if (needs && !v)
        return storh_err_set(err, STORH_EINVAL, "%s.value: operator %s needs a value.", where, on);
    if ((op == QOP_IN || op == QOP_NOTIN) && !json_is_array(v))
        return storh_err_set(err, STORH_EINVAL, "%s.value: %s needs an array.", where, on);
    if (op == QOP_BETWEEN && (!json_is_array(v) || json_array_size(v) != 2))
        return storh_err_set(err, STORH_EINVAL, "%s.value: between needs [low, high].", where);
    if (op == QOP_PREFIX && !json_is_string(v))
        return storh_err_set(err, STORH_EINVAL, "%s.value: prefix needs a string.", where);
    if (pool->n == pool->cap) {
        size_t cap = pool->cap ? pool->cap * 2 : 8;
        qcond *nv = realloc(pool->v, cap * sizeof *nv);
        if (!nv)
            return storh_err_set(err, STORH_ENOMEM, "Out of memory.");
        pool->v = nv;
        pool->cap = cap;
    }
    qcond *qc = &pool->v[pool->n];
    qc->field = strdup(json_string_value(f));
    qc->op = op;
    qc->value = needs ? json_incref(v) : NULL;
    *index = pool->n++;
    return 0;
}

/* An item: a condition or {"or":[list, list...]}; out = its DNF. */
static int parse_item(const json_t *it, clist *pool, glist *out, const char *where, storh_err *err)
{
    if (!json_is_object(it))
        return storh_err_set(err, STORH_EINVAL, "%s: must be a condition object.", where);
    json_t *alts = json_object_get(it, "or");
    if (!alts) {
        size_t idx = 0;
        int rc = parse_cond(it, pool, &idx, where, err);
        if (rc)
            return rc;
        size_t one[2] = {1, idx};
        out->g = malloc(sizeof *out->g);
        out->g[0] = group_new(one, NULL);
        out->n = 1;
        return 0;
    }
    if (!json_is_array(alts) || json_array_size(alts) == 0)
        return storh_err_set(err, STORH_EINVAL, "%s.or: must be a non-empty array of lists.",
                             where);
    out->g = NULL;
    out->n = 0;
    size_t i;
    json_t *alt;
    json_array_foreach (alts, i, alt) {
        char sub[96];
        snprintf(sub, sizeof sub, "%.60s.or[%zu]", where, i);
        glist part = {0};
        int rc = parse_list(alt, pool, &part, sub, err);
        if (rc || out->n + part.n > QUERY_MAX_GROUPS) {
            glist_free(&part);
            return rc ? rc
                      : storh_err_set(err, STORH_EINVAL,
                                      "where: expands to more than %d OR groups.",
                                      QUERY_MAX_GROUPS);
        }
        size_t **g = realloc(out->g, (out->n + part.n) * sizeof *g);
        if (!g) {
            glist_free(&part);
            return storh_err_set(err, STORH_ENOMEM, "Out of memory.");
        }
        out->g = g;
        memcpy(out->g + out->n, part.g, part.n * sizeof *g);
        out->n += part.n;
        free(part.g);
    }
    return 0;
}

/* A list of items, ANDed. */
static int parse_list(const json_t *arr, clist *pool, glist *out, const char *where, storh_err *err)
{
    if (!json_is_array(arr))
        return storh_err_set(err, STORH_EINVAL, "%s: must be an array of conditions.", where);
    /* start from one empty group: true */
    out->g = malloc(sizeof *out->g);
    out->g[0] = group_new(NULL, NULL);
    out->n = 1;
    size_t i;
    json_t *it;
    json_array_foreach (arr, i, it) {
        char sub[96];
        snprintf(sub, sizeof sub, "%.60s[%zu]", where, i);
        glist item = {0}, next = {0};
        int rc = parse_item(it, pool, &item, sub, err);
        if (!rc)
            rc = dnf_and(out, &item, &next, err);
        glist_free(&item);
        if (rc) {
            glist_free(&next);
            return rc;
        }
        glist_free(out);
        *out = next;
    }
    return 0;
}

int query_parse_where(const json_t *where, query *q, storh_err *err)
{
    clist pool = {0};
    glist dnf = {0};
    int rc = parse_list(where, &pool, &dnf, "where", err);
    if (!rc) {
        q->groups = calloc(dnf.n ? dnf.n : 1, sizeof *q->groups);
        q->ngroups = dnf.n;
        for (size_t g = 0; g < dnf.n; g++) {
            size_t n = dnf.g[g][0];
            q->groups[g].c = calloc(n ? n : 1, sizeof(qcond));
            q->groups[g].n = n;
            for (size_t i = 0; i < n; i++) {
                const qcond *src = &pool.v[dnf.g[g][i + 1]];
                qcond *dst = &q->groups[g].c[i];
                dst->field = strdup(src->field);
                dst->op = src->op;
                dst->value = src->value ? json_incref(src->value) : NULL;
            }
        }
        /* one empty group matches everything: same as no groups */
        if (q->ngroups == 1 && q->groups[0].n == 0) {
            free(q->groups[0].c);
            free(q->groups);
            q->groups = NULL;
            q->ngroups = 0;
        }
    }
    for (size_t i = 0; i < pool.n; i++) {
        free(pool.v[i].field);
        json_decref(pool.v[i].value);
    }
    free(pool.v);
    glist_free(&dnf);
    return rc;
}

int query_parse(const json_t *body, query *q, storh_err *err)
{
    memset(q, 0, sizeof *q);
    if (!json_is_object(body))
        return storh_err_set(err, STORH_EINVAL, "Query body must be a JSON object.");
    const char *k;
    json_t *v;
    json_object_foreach ((json_t *)body, k, v) {
        if (strcmp(k, "where") && strcmp(k, "orderBy") && strcmp(k, "limit") &&
            strcmp(k, "cursor") && strcmp(k, "count") && strcmp(k, "explain"))
            return storh_err_set(err, STORH_EINVAL,
                                 "Unknown query key '%.40s' (where, orderBy, limit, cursor, "
                                 "count, explain).",
                                 k);
    }
    int rc = 0;
    json_t *w = json_object_get(body, "where");
    if (w && (rc = query_parse_where(w, q, err)))
        goto fail;
    json_t *ob = json_object_get(body, "orderBy");
    if (ob) {
        json_t *first = json_is_array(ob) ? json_array_get(ob, 0) : ob;
        json_t *f = json_object_get(first, "field"), *dir = json_object_get(first, "dir");
        if (!json_is_string(f) || (json_is_array(ob) && json_array_size(ob) != 1)) {
            rc = storh_err_set(err, STORH_EINVAL,
                               "orderBy: one {\"field\",\"dir\"} object is supported.");
            goto fail;
        }
        const char *d = dir ? json_string_value(dir) : "asc";
        if (!d || (strcasecmp(d, "asc") && strcasecmp(d, "desc"))) {
            rc = storh_err_set(err, STORH_EINVAL,
                               "orderBy[0].dir: Query order direction must be asc or desc.");
            goto fail;
        }
        q->order_field = strdup(json_string_value(f));
        q->desc = !strcasecmp(d, "desc");
    }
    json_t *lim = json_object_get(body, "limit");
    if (lim) {
        if (!json_is_integer(lim) || json_integer_value(lim) < 1) {
            rc = storh_err_set(err, STORH_EINVAL, "limit: Query limit must be at least 1.");
            goto fail;
        }
        q->limit = (size_t)json_integer_value(lim);
    }
    json_t *cur = json_object_get(body, "cursor");
    if (cur && !json_is_null(cur)) {
        if (!json_is_string(cur) ||
            !uuid7_is_valid(json_string_value(cur), json_string_length(cur))) {
            rc = storh_err_set(err, STORH_EINVAL, "cursor: Invalid UUIDv7 value.");
            goto fail;
        }
        memcpy(q->cursor, json_string_value(cur), UUID7_LEN + 1);
        q->has_cursor = true;
    }
    json_t *cnt = json_object_get(body, "count"), *ex = json_object_get(body, "explain");
    if ((cnt && !json_is_boolean(cnt)) || (ex && !json_is_boolean(ex))) {
        rc = storh_err_set(err, STORH_EINVAL, "count and explain must be true or false.");
        goto fail;
    }
    q->count = json_is_true(cnt);
    q->explain = json_is_true(ex);
    return 0;
fail:
    query_free(q);
    return rc;
}
