/* mirror_rows: one record's row as push and flush write it (id, hash,
 * typed columns, data). A record file that holds exactly its canonical
 * encoding (reccanon) gives its row straight from its bytes: the data
 * column is the file's data text as it is, the hash is taken over it and
 * the typed columns are the data's own members, so no tree is built; any
 * other file is decoded and encoded as before. Both give the same row. */
#include "mirror.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "fsx.h"
#include "reccanon.h"
#include "sjson.h"
#include "mirror_int.h"

void mirror__row_free(mrow *r)
{
    buf_free(&r->id);
    buf_free(&r->raw);
    buf_free(&r->text);
    json_decref(r->data);
    memset(r, 0, sizeof *r);
}

/* Ready for another record; its buffers are kept. */
static void row_reset(mrow *r, const char *id)
{
    json_decref(r->data);
    r->data = NULL;
    buf_reset(&r->id);
    buf_appends(&r->id, id);
    buf_reset(&r->raw);
    buf_reset(&r->text);
    r->doff = r->dlen = 0;
}

typedef struct typed_ctx {
    const mirror *m;
    const mirror_coll *c;
    mrow *r;
    const char *base;
    bool bad;
} typed_ctx;

/* A member of a canonical record's data: the span of the typed column of
 * that name, if any. A string with escapes is left to the decoder. */
static void typed_member(const char *k, size_t kl, const char *v, size_t vl, void *p)
{
    typed_ctx *t = p;
    for (size_t i = 0, j = 0; i < t->c->sch.n; i++) {
        const schema_field *f = &t->c->sch.f[i];
        if (!mirror__col_type(t->m, f))
            continue;
        if (strlen(f->name) == kl && !memcmp(f->name, k, kl)) {
            if (f->type == SCHEMA_STRING && v[0] == '"' && memchr(v, '\\', vl))
                t->bad = true;
            t->r->voff[j] = (uint32_t)(v - t->base);
            t->r->vlen[j] = (uint32_t)vl;
            return;
        }
        j++;
    }
}

static int typed_count(const mirror *m, const mirror_coll *c)
{
    int n = 0;
    for (size_t i = 0; i < c->sch.n; i++)
        if (mirror__col_type(m, &c->sch.f[i]))
            n++;
    return n;
}

/* The row of a canonical file in r->raw; false when it is not one (or a
 * typed string holds escapes). */
static bool row_canonical(const mirror *m, const mirror_coll *c, mrow *r)
{
    const char *id = r->id.data;
    int nt = typed_count(m, c);
    if (nt > MROW_TYPED || r->raw.len > UINT32_MAX)
        return false;
    memset(r->vlen, 0, (size_t)nt * sizeof r->vlen[0]);
    typed_ctx t = {m, c, r, r->raw.data, false};
    if (!reccanon_members(r->raw.data, r->raw.len, id, typed_member, &t) || t.bad)
        return false;
    r->doff = 7 + strlen(id) + 9; /* {"id":"<id>","data": */
    r->dlen = r->raw.len - r->doff - 2;
    mirror__hash_text(r->raw.data + r->doff, r->dlen, r->hash);
    return true;
}

int mirror__row_data(mrow *r, const char *id, const json_t *data, storh_err *err)
{
    row_reset(r, id);
    r->data = json_incref((json_t *)data);
    int rc = sjson_encode(&r->text, data, 0, err);
    if (!rc && (buf_failed(&r->id) || buf_failed(&r->text)))
        rc = storh_err_oom(err);
    if (rc)
        return rc;
    r->dlen = r->text.len;
    mirror__hash_text(r->text.data, r->text.len, r->hash);
    return 0;
}

/* The row of the record file's bytes in r->raw. */
static int row_raw(const mirror *m, const mirror_coll *c, mrow *r, const char *id, storh_err *err)
{
    int rc;
    if (strlen(id) == UUID7_LEN && uuid7_is_valid(id, UUID7_LEN) && row_canonical(m, c, r))
        return 0;
    json_t *data = NULL;
    if ((rc = docstore_decode_record(r->raw.data, r->raw.len, id, &data, err)))
        return rc;
    rc = mirror__row_data(r, id, data, err);
    json_decref(data);
    return rc;
}

int mirror__row_file(const mirror *m, const mirror_coll *c, mrow *r, int dirfd, const char *path,
                     const char *id, struct stat *st, storh_err *err)
{
    row_reset(r, id);
    if (buf_failed(&r->id))
        return storh_err_oom(err);
    int rc = fsx_read_all_statat(dirfd, path, &r->raw, st, err);
    return rc ? rc : row_raw(m, c, r, id, err);
}

int mirror__row_bytes(const mirror *m, const mirror_coll *c, mrow *r, const char *id,
                      const char *bytes, size_t len, storh_err *err)
{
    row_reset(r, id);
    buf_append(&r->raw, bytes, len);
    if (buf_failed(&r->id) || buf_failed(&r->raw))
        return storh_err_oom(err);
    return row_raw(m, c, r, id, err);
}

/* A typed value from a canonical member's bytes, as row_params would bind
 * the decoded value. */
static mparam canonical_param(const schema_field *f, const char *v, size_t n)
{
    mparam q = {MPARAM_NULL, NULL, 0, 0, 0};
    if (!n)
        return q;
    bool num = v[0] == '-' || (v[0] >= '0' && v[0] <= '9'); /* integers only */
    if (f->type == SCHEMA_STRING && v[0] == '"')
        q = (mparam){MPARAM_TEXT, v + 1, n - 2, 0, 0};
    else if (f->type == SCHEMA_INT && num)
        q = (mparam){MPARAM_INT, NULL, 0, strtoll(v, NULL, 10), 0};
    else if (f->type == SCHEMA_FLOAT && num)
        q = (mparam){MPARAM_REAL, NULL, 0, 0, (double)strtoll(v, NULL, 10)};
    else if (f->type == SCHEMA_BOOL && (v[0] == 't' || (v[0] == 'f' && n == 5)))
        q = (mparam){MPARAM_BOOL, NULL, 0, v[0] == 't', 0};
    return q;
}

int mirror__row_params(const mirror *m, const mirror_coll *c, const mrow *r, mparam *p)
{
    int k = 0;
    p[k++] = (mparam){MPARAM_TEXT, r->id.data, r->id.len, 0, 0};
    p[k++] = (mparam){MPARAM_TEXT, r->hash, 32, 0, 0};
    for (size_t i = 0, j = 0; i < c->sch.n; i++) {
        const schema_field *f = &c->sch.f[i];
        if (!mirror__col_type(m, f))
            continue;
        if (!r->data) {
            p[k++] = canonical_param(f, r->raw.data + r->voff[j], r->vlen[j]);
            j++;
            continue;
        }
        json_t *v = json_is_object(r->data) ? json_object_get(r->data, f->name) : NULL;
        mparam q = {MPARAM_NULL, NULL, 0, 0, 0};
        if (f->type == SCHEMA_STRING && json_is_string(v))
            q = (mparam){MPARAM_TEXT, json_string_value(v), json_string_length(v), 0, 0};
        else if (f->type == SCHEMA_INT && json_is_integer(v))
            q = (mparam){MPARAM_INT, NULL, 0, json_integer_value(v), 0};
        else if (f->type == SCHEMA_FLOAT && json_is_number(v))
            q = (mparam){MPARAM_REAL, NULL, 0, 0, json_number_value(v)};
        else if (f->type == SCHEMA_BOOL && json_is_boolean(v))
            q = (mparam){MPARAM_BOOL, NULL, 0, json_is_true(v), 0};
        p[k++] = q;
    }
    const char *text = r->data ? r->text.data : r->raw.data + r->doff;
    p[k++] = (mparam){MPARAM_TEXT, text ? text : "", r->dlen, 0, 0};
    return k;
}
