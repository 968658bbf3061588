/* mirrorkit: what the mirror's unit tests share: a SQLite mirror of given
 * collections under a test root, a put that reports its failure, and a
 * figure of a push's totals. Header-only, as js.h. */
#ifndef STORHD_TEST_MIRRORKIT_H
#define STORHD_TEST_MIRRORKIT_H

#include <limits.h>
#include <stdio.h>

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

/* One figure of a push's totals ("inserted", "updated", ...). */
static inline long long mirrorkit_total(json_t *t, const char *k)
{
    return json_integer_value(json_object_get(t, k));
}

#endif
