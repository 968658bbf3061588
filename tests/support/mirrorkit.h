/* mirrorkit: what the mirror's unit tests share: a SQLite mirror of given
 * collections under a test root, a put that reports its failure, and a
 * figure of a push's totals. Header-only, as js.h. */
#ifndef STORHD_TEST_MIRRORKIT_H
#define STORHD_TEST_MIRRORKIT_H

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>

#include "docstore.h"
#include "js.h"
#include "mirror.h"

/* A mirror "test" on dir/mirror.sqlite (tables prefixed t_) of the
 * collections JSON; NULL (reported) when it cannot be made. */
static inline mirror *mirrorkit_sqlite(const char *dir, const char *collections)
{
    char cfg[4096];
    snprintf(cfg, sizeof cfg,
             "{\"driver\":\"sqlite\",\"path\":\"%s/mirror.sqlite\",\"prefix\":\"t_\","
             "\"collections\":%s}",
             dir, collections);
    json_t *c = js(cfg);
    mirror *m = NULL;
    storh_err err;
    if (mirror_new("test", c, &m, &err))
        fprintf(stderr, "mirror: %s\n", err.msg);
    json_decref(c);
    return m;
}

/* docstore_put of a JSON literal under id; a failure is reported. */
static inline void mirrorkit_put(docstore *ds, const char *id, const char *data)
{
    json_t *d = js(data);
    char out[37];
    storh_err err;
    if (docstore_put(ds, id, d, out, NULL, &err))
        fprintf(stderr, "put: %s\n", err.msg);
    json_decref(d);
}

/* The integer a one-value SQL statement on m answers; -1 (reported) when it
 * fails. */
static inline long long mirrorkit_scalar(mirror *m, const char *sql)
{
    char *v = NULL;
    storh_err err;
    if (mirror_scalar(m, sql, NULL, 0, &v, &err)) {
        fprintf(stderr, "%s: %s\n", sql, err.msg);
        return -1;
    }
    long long n = v ? atoll(v) : -1;
    free(v);
    return n;
}

/* mirror_verify of c against the records of ds: the records it compared,
 * or -1 when it fails or finds the table missing, stale or orphaned rows
 * (each finding reported). */
static inline long long mirrorkit_verify(mirror *m, const mirror_coll *c, docstore *ds)
{
    mirror_source src = {.ds = ds};
    json_t *stats = NULL, *errors = json_array();
    storh_err err;
    long long n = -1;
    if (mirror_verify(m, c, &src, &stats, errors, &err) != 0)
        fprintf(stderr, "verify: %s\n", err.msg);
    else if (json_array_size(errors) == 0)
        n = json_integer_value(json_object_get(stats, "records"));
    for (size_t i = 0; i < json_array_size(errors); i++)
        fprintf(stderr, "verify: %s\n", json_string_value(json_array_get(errors, i)));
    json_decref(stats);
    json_decref(errors);
    return n;
}

/* One figure of a push's totals ("inserted", "updated", ...). */
static inline long long mirrorkit_total(json_t *t, const char *k)
{
    return json_integer_value(json_object_get(t, k));
}

#endif
