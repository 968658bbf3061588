/* docindex: index maintenance of one record's writes (see docindex_int.h). */
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

/* ---------- maintenance ---------- */

int docindex_check_unique(docindex *ix, const char *id, const json_t *data, storh_err *err)
{
    for (size_t i = 0; i < ix->n; i++) {
        const idxdef *d = &ix->defs[i];
        json_t *v = json_is_object(data) ? json_object_get(data, d->field) : NULL;
        if (!d->unique || !docindex_indexable(v))
            continue;
        docindex_idset ids = DOCINDEX_IDSET_INIT;
        qcond c = {d->field, QOP_EQ, v};
        int rc = docindex_candidates(ix, &c, &ids, err);
        if (rc) {
            docindex_idset_free(&ids);
            return rc;
        }
        bool clash = false;
        for (size_t k = 0; k < ids.n; k++)
            clash = clash || strlen(id) != DOCINDEX_ID || memcmp(ids.id[k], id, DOCINDEX_ID) != 0;
        docindex_idset_free(&ids);
        if (clash)
            return storh_err_set(err, STORH_ECONFLICT, "Unique index violation on field: %s",
                                 d->field);
    }
    return 0;
}

int docindex_record_changes(docindex *ix, const char *id, const json_t *data, bool add,
                            const docindex_sink *sink, storh_err *err)
{
    if (!json_is_object(data))
        return 0;
    int rc = 0;
    for (size_t i = 0; !rc && i < ix->n; i++) {
        const idxdef *d = &ix->defs[i];
        json_t *v = json_object_get(data, d->field);
        if (!docindex_indexable(v))
            continue;
        char p[PATH_MAX];
        buf k = BUF_INIT;
        if (d->range) {
            docindex_range_key(v, &k);
            buf line = BUF_INIT;
            docindex_range_line(&line, k.data, v, add ? id : NULL, add ? NULL : id);
            rc = docindex_range_path(ix, d->field, ".delta.jsonl", p, err);
            if (!rc)
                rc = sink->delta(sink->ctx, d->field, p, &line, err);
            buf_free(&line);
        } else {
            docindex_value_key(v, &k);
            rc = docindex_eq_path(ix, d->field, k.data, p, err);
            if (!rc)
                rc = sink->entry(sink->ctx, p, d->field, k.data, v, id, add, err);
        }
        buf_free(&k);
        /* compound buckets: every pair of plain fields present */
        if (rc || !docindex_is_plain(d))
            continue;
        for (size_t j = i + 1; !rc && j < ix->n; j++) {
            const idxdef *d2 = &ix->defs[j];
            json_t *v2 = json_object_get(data, d2->field);
            if (!docindex_is_plain(d2) || !docindex_indexable(v2))
                continue;
            buf ck = BUF_INIT, field = BUF_INIT;
            docindex_compound_key(v, v2, &ck);
            buf_appends(&field, d->field);
            buf_appendc(&field, '\t');
            buf_appends(&field, d2->field);
            rc = docindex_compound_path(ix, d->field, d2->field, ck.data, p, err);
            if (!rc)
                rc = sink->entry(sink->ctx, p, field.data, ck.data, NULL, id, add, err);
            buf_free(&ck);
            buf_free(&field);
        }
    }
    return rc;
}

/* A single write's changes, each made durable as it is made. */
static int delta_synced(void *ctx, const char *field, const char *path, const buf *line,
                        storh_err *err)
{
    return docindex_append_synced(path, line->data, line->len, err);
}

static int entry_synced(void *ctx, const char *path, const char *field, const char *key,
                        const json_t *value, const char *id, bool add, storh_err *err)
{
    char dir[PATH_MAX];
    fsx_dirname(path, dir, sizeof dir);
    int rc = fsx_mkdirs(dir, true, err);
    return rc ? rc : docindex_entry_change(path, field, key, value, id, add, err);
}

static const docindex_sink synced = {.delta = delta_synced, .entry = entry_synced};

int docindex_update(docindex *ix, const char *id, const json_t *old, const json_t *nw,
                    storh_err *err)
{
    int rc = old ? docindex_record_changes(ix, id, old, false, &synced, err) : 0;
    return rc ? rc : (nw ? docindex_record_changes(ix, id, nw, true, &synced, err) : 0);
}
