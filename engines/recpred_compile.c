/* recpred_compile: queries compiled into a recpred (recpred.h): each
 * field's key and each operand in their canonical encodings, so that
 * recpred.c decides on record bytes without decoding them. */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "recpred.h"
#include "recpred_int.h"
#include "sjson.h"

/* ---- compiling ---- */

static bool has_real(const json_t *v)
{
    size_t i;
    const char *k;
    json_t *e;
    switch (json_typeof(v)) {
    case JSON_REAL:
        return true;
    case JSON_ARRAY:
        json_array_foreach ((json_t *)v, i, e)
            if (has_real(e))
                return true;
        return false;
    case JSON_OBJECT:
        json_object_foreach ((json_t *)v, k, e)
            if (has_real(e))
                return true;
        return false;
    default:
        return false;
    }
}

static bool val_init(pval *pv, const json_t *v)
{
    if (!v || has_real(v))
        return false; /* -0.0 === 0.0 in PHP though their encodings differ */
    buf b = BUF_INIT;
    if (sjson_encode(&b, v, 0, NULL) != 0 || buf_failed(&b) || b.len == 0) {
        buf_free(&b);
        return false;
    }
    pv->p = b.data; /* the buffer is taken over */
    pv->n = b.len;
    pv->rank = rank_of(b.data[0]);
    pv->i = 0;
    if (pv->rank == 1 && !int_of(pv->p, pv->n, &pv->i))
        pv->rank = -2; /* a 19-digit integer: compares are left to the tree */
    return true;
}

static int field_index(recpred *p, const char *name, bool id_special)
{
    for (size_t i = 0; i < p->nf; i++)
        if (!strcmp(p->f[i].raw, name))
            return (int)i;
    if (p->nf == MAX_FIELDS || sjson_is_int_key(name, strlen(name)))
        return -1; /* PHP's integer keys: lists and maps meet there */
    pfield *f = &p->f[p->nf];
    buf b = BUF_INIT;
    sjson_encode_string(&b, name, strlen(name));
    if (buf_failed(&b) || !(f->raw = strdup(name))) {
        buf_free(&b);
        return -1;
    }
    f->enc = b.data;
    f->enclen = b.len;
    f->rawlen = strlen(name);
    f->is_id = id_special && !strcmp(name, "id");
    p->has_id = p->has_id || f->is_id;
    return (int)p->nf++;
}

static bool cond_init(recpred *p, pcond *pc, const qcond *c, bool id_special)
{
    int fi = field_index(p, c->field, id_special);
    if (fi < 0)
        return false;
    pc->field = (size_t)fi;
    pc->op = c->op;
    size_t nv = 1;
    switch (c->op) {
    case QOP_EXISTS:
    case QOP_MISSING:
        return true;
    case QOP_IN:
    case QOP_NOTIN:
        if (!json_is_array(c->value))
            return false;
        nv = json_array_size(c->value);
        break;
    case QOP_BETWEEN:
        if (!json_is_array(c->value) || json_array_size(c->value) != 2)
            return false;
        nv = 2;
        break;
    case QOP_PREFIX:
        if (!json_is_string(c->value))
            return false;
        break;
    default:
        break;
    }
    if (!(pc->v = calloc(nv ? nv : 1, sizeof *pc->v)))
        return false;
    for (size_t i = 0; i < nv; i++) {
        const json_t *v = c->op == QOP_IN || c->op == QOP_NOTIN || c->op == QOP_BETWEEN
                              ? json_array_get(c->value, i)
                              : c->value;
        if (!val_init(&pc->v[i], v))
            return false;
        pc->nv++;
    }
    /* a prefix with escapes in it would need the value unescaped */
    if (c->op == QOP_PREFIX && memchr(pc->v[0].p, '\\', pc->v[0].n))
        return false;
    return true;
}

void recpred_free(recpred *p)
{
    if (!p)
        return;
    for (size_t i = 0; i < p->nf; i++) {
        free(p->f[i].enc);
        free(p->f[i].raw);
    }
    size_t nc = p->ng ? p->gend[p->ng - 1] : 0;
    for (size_t i = 0; p->c && i < nc; i++) {
        for (size_t j = 0; j < p->c[i].nv; j++)
            free(p->c[i].v[j].p);
        free(p->c[i].v);
    }
    free(p->c);
    free(p->gend);
    free(p->needle);
    free(p);
}

static bool eq1_init(recpred *p)
{
    const pfield *f = &p->f[0];
    const pval *w = &p->c[0].v[0];
    p->klen1 = f->enclen + 1;
    p->nlen = p->klen1 + w->n;
    if (!(p->needle = malloc(p->nlen)))
        return false;
    memcpy(p->needle, f->enc, f->enclen);
    p->needle[f->enclen] = ':';
    memcpy(p->needle + p->klen1, w->p, w->n);
    unsigned char m[8] = {0}, k[8] = {0};
    for (size_t i = 0; i < 8 && i < p->klen1; i++) {
        m[i] = 0xFF;
        k[i] = (unsigned char)p->needle[i];
    }
    memcpy(&p->km, m, 8); /* loaded as the record's bytes will be */
    memcpy(&p->kw, k, 8);
    p->n32ok = p->nlen <= 32 && p->klen1 <= 16;
    if (p->n32ok) {
        memcpy(p->n32, p->needle, p->nlen);
        p->kbits = (1u << p->klen1) - 1;
        p->nbits0 = p->nlen >= 16 ? 0xFFFFu : (1u << p->nlen) - 1;
        p->nbits1 = p->nlen > 16 ? (1u << (p->nlen - 16)) - 1 : 0;
        p->f16ok = p->klen1 >= 4 && !strchr("\":,}]", p->needle[1]);
        memset(p->c1, p->needle[1], sizeof p->c1);
    }
    p->eq1 = true;
    return true;
}

recpred *recpred_from_query(const query *q)
{
    if (!q || q->ngroups == 0)
        return NULL;
    size_t nc = 0;
    for (size_t g = 0; g < q->ngroups; g++)
        nc += q->groups[g].n;
    recpred *p = calloc(1, sizeof *p);
    if (!p)
        return NULL;
    p->c = calloc(nc ? nc : 1, sizeof *p->c);
    p->gend = calloc(q->ngroups, sizeof *p->gend);
    if (!p->c || !p->gend) {
        recpred_free(p);
        return NULL;
    }
    size_t k = 0;
    for (size_t g = 0; g < q->ngroups; g++) {
        for (size_t i = 0; i < q->groups[g].n; i++) {
            bool ok = cond_init(p, &p->c[k], &q->groups[g].c[i], true);
            k++;
            p->gend[g] = k; /* what was set up so far is freed on failure */
            p->ng = g + 1;
            if (!ok) {
                recpred_free(p);
                return NULL;
            }
        }
        p->gend[g] = k;
        p->ng = g + 1;
    }
    if (p->ng == 1 && p->gend[0] == 1 && p->c[0].op == QOP_EQ && !p->has_id && !eq1_init(p)) {
        recpred_free(p);
        return NULL;
    }
    return p;
}

recpred *recpred_from_recquery(const recquery *q)
{
    size_t n = q ? json_object_size(q->where) : 0;
    if (n == 0)
        return NULL;
    recpred *p = calloc(1, sizeof *p);
    if (!p)
        return NULL;
    p->c = calloc(n, sizeof *p->c);
    p->gend = calloc(1, sizeof *p->gend);
    if (!p->c || !p->gend) {
        recpred_free(p);
        return NULL;
    }
    p->ng = 1;
    const char *key;
    json_t *want;
    json_object_foreach (q->where, key, want) {
        qcond c = {(char *)key, QOP_EQ, want};
        bool ok = cond_init(p, &p->c[p->gend[0]], &c, false);
        p->gend[0]++;
        if (!ok) {
            recpred_free(p);
            return NULL;
        }
    }
    if (p->gend[0] == 1 && !eq1_init(p)) {
        recpred_free(p);
        return NULL;
    }
    return p;
}
