#include "reqparse.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "http.h"
#include "sjson.h"

bool reqparse_ll(const char *v, long long *out)
{
    char *end;
    errno = 0;
    long long n = strtoll(v, &end, 10);
    if (errno || end == v || *end)
        return false;
    *out = n;
    return true;
}

int reqparse_int(http_req *req, const char *key, long long dflt, long long min, long long max,
                 long long *out, storh_err *err)
{
    const char *v = http_query(req, key);
    if (!v) {
        *out = dflt;
        return 0;
    }
    if (!reqparse_ll(v, out) || *out < min || *out > max)
        return storh_err_set(err, STORH_EINVAL,
                             "Query parameter %s: must be an integer from %lld to %lld.", key, min,
                             max);
    return 0;
}

int reqparse_bool(http_req *req, const char *key, bool dflt, bool *out, storh_err *err)
{
    const char *v = http_query(req, key);
    if (!v)
        *out = dflt;
    else if (!strcmp(v, "true") || !strcmp(v, "1"))
        *out = true;
    else if (!strcmp(v, "false") || !strcmp(v, "0"))
        *out = false;
    else
        return storh_err_set(err, STORH_EINVAL, "Query parameter %s: must be true or false.", key);
    return 0;
}

typedef struct parse_ctx {
    recquery *q;
    char *msg;
    size_t cap;
    bool bad;
} parse_ctx;

static void parse_arg(void *cp, const char *k, const char *v)
{
    parse_ctx *c = cp;
    if (c->bad)
        return;
    storh_err err;
    long long n;
    if (!strcmp(k, "after")) {
        if (recquery_after(c->q, v, strlen(v), &err))
            snprintf(c->msg, c->cap, "Query parameter after: %.200s", err.msg), c->bad = true;
    } else if (!strcmp(k, "limit")) {
        if (!reqparse_ll(v, &n) || recquery_limit(c->q, n, &err))
            snprintf(c->msg, c->cap, "Query parameter limit: must be an integer >= 1."),
                c->bad = true;
    } else if (!strcmp(k, "from_ms") || !strcmp(k, "until_ms")) {
        if (!reqparse_ll(v, &n))
            snprintf(c->msg, c->cap, "Query parameter %s: must be an integer.", k), c->bad = true;
    } else if (!strncmp(k, "eq.", 3)) {
        /* a JSON scalar when it parses as one (1, 2.5, true, null, "x"), else text */
        json_t *val = sjson_decode(v, strlen(v), NULL);
        if (!val || json_is_object(val) || json_is_array(val)) {
            json_decref(val);
            val = json_string(v);
        }
        if (!val || recquery_where_equal(c->q, k + 3, val, &err)) {
            snprintf(c->msg, c->cap, "Query parameter %.64s: %.200s", k,
                     val ? err.msg : "not valid UTF-8");
            c->bad = true;
        }
        json_decref(val);
    } else {
        snprintf(c->msg, c->cap,
                 "Unknown query parameter '%.64s' (use after, limit, from_ms, until_ms, "
                 "eq.FIELD).",
                 k);
        c->bad = true;
    }
}

int reqparse_recquery(http_req *req, recquery *q, storh_err *err)
{
    char msg[400];
    parse_ctx c = {q, msg, sizeof msg, false};
    http_query_each(req, parse_arg, &c);
    if (c.bad)
        return storh_err_set(err, STORH_EINVAL, "%s", msg);
    const char *f = http_query(req, "from_ms"), *u = http_query(req, "until_ms");
    long long fv = 0, uv = 0;
    if (f)
        reqparse_ll(f, &fv);
    if (u)
        reqparse_ll(u, &uv);
    storh_err terr;
    if ((f || u) && recquery_time_range(q, f != NULL, fv, u != NULL, uv, &terr))
        return storh_err_set(err, STORH_EINVAL, "Time range: %.200s", terr.msg);
    return 0;
}
