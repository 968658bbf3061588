/* recpred: the byte predicate decides exactly as query_match (and
 * recquery_match_data) decide on the decoded tree, for many generated
 * records and operands; where it is not sure it says so. Each family of
 * operators is its own case. */
#include <jansson.h>
#include <stdint.h>

#include "../test.h"
#include "docstore.h"
#include "query.h"
#include "reccanon.h"
#include "recpred.h"
#include "recquery.h"
#include "sjson.h"

static const char *ID = "0190a0f3-5c1e-7a2b-8c3d-4e5f60718293";
#define HEAD 52 /* {"id":"<36>","data": */

static uint64_t seed = 0x9e3779b97f4a7c15ull;

static unsigned rnd(unsigned n)
{
    seed ^= seed << 13;
    seed ^= seed >> 7;
    seed ^= seed << 17;
    return (unsigned)(seed % n);
}

static const char *const keys[] = {"kind", "status", "a", "b", "id", "x\"y", "tab\t", "é", "n"};
#define NKEYS (sizeof keys / sizeof keys[0])

static json_t *gen(int depth, bool reals)
{
    static const long long ints[] = {0,
                                     1,
                                     -1,
                                     7,
                                     42,
                                     1700000000000,
                                     123456789012345678,
                                     9223372036854775807LL,
                                     -9223372036854775807LL - 1};
    static const double reals_v[] = {1.0, 0.0, -0.0, 1.5, 1e20, 7.0};
    static const char *const strs[] = {"",        "page",        "post", "pa",           "page\n",
                                       "q\"uote", "back\\slash", "é",    "\xe2\x80\xa8", "ctl\x01",
                                       "item-7",  "/slash",      "Page", "pagf"};
    unsigned k = rnd(depth < 2 ? 9 : 7);
    switch (k) {
    case 0:
        return json_null();
    case 1:
        return json_boolean(rnd(2));
    case 2:
    case 3:
        return json_integer(ints[rnd(sizeof ints / sizeof ints[0])]);
    case 4:
        if (reals)
            return json_real(reals_v[rnd(sizeof reals_v / sizeof reals_v[0])]);
        return json_integer((json_int_t)rnd(10));
    case 5:
    case 6:
        return json_string(strs[rnd(sizeof strs / sizeof strs[0])]);
    case 7: {
        json_t *a = json_array();
        for (unsigned i = rnd(4); i > 0; i--)
            json_array_append_new(a, gen(depth + 1, reals));
        return a;
    }
    default: {
        static const char *const nk[] = {"0", "1", "k", "kind", "z"};
        json_t *o = json_object();
        for (unsigned i = rnd(4); i > 0; i--)
            json_object_set_new(o, nk[rnd(5)], gen(depth + 1, reals));
        return o;
    }
    }
}

static json_t *gen_record(bool reals, bool nested)
{
    if (rnd(20) == 0) { /* a list as data now and then */
        json_t *a = json_array();
        json_array_append_new(a, gen(2, reals));
        return a;
    }
    json_t *o = json_object();
    for (unsigned i = rnd(6); i > 0; i--)
        json_object_set_new(o, keys[rnd(NKEYS)], gen(nested ? 0 : 2, reals));
    return o;
}

/* An operand: often the record's own value of the field, so rows match. */
static json_t *operand(const json_t *data, const char *field, bool nested)
{
    json_t *own = json_is_object(data) ? json_object_get(data, field) : NULL;
    if (own && rnd(2))
        return json_deep_copy(own);
    return gen(nested ? 0 : 2, rnd(8) == 0);
}

typedef struct tally {
    long decided, unsure, skipped, yes;
} tally;

/* Both byte paths against the tree, with the id and without. */
static void check_one(const json_t *where, const json_t *data, tally *t, bool never_unsure)
{
    query q;
    storh_err err;
    memset(&q, 0, sizeof q);
    if (query_parse_where(where, &q, &err) != 0) {
        t->skipped++;
        return;
    }
    buf rec = BUF_INIT;
    json_t *tree = NULL;
    CHECK(docstore_encode_record(&rec, ID, data, NULL) == 0);
    CHECK(docstore_decode_record(rec.data, rec.len, ID, &tree, NULL) == 0);
    recpred *p = recpred_from_query(&q);
    if (!p) {
        t->skipped++;
    } else {
        const char *d = rec.data + HEAD;
        size_t dl = rec.len - HEAD - 2;
        bool canon = reccanon_is_canonical(rec.data, rec.len, ID);
        for (int with_id = 0; with_id < 2; with_id++) {
            const char *id = with_id ? ID : NULL;
            int want = query_match(&q, id, tree);
            CHECK(query_match(&q, id, data) == want); /* the tree it was encoded from agrees */
            int got = recpred_match_data(p, id, d, dl);
            if (got == RECPRED_UNSURE) {
                t->unsure++;
                if (never_unsure) {
                    char *w = json_dumps(where, JSON_ENCODE_ANY);
                    fprintf(stderr, "unsure: %s on %.*s\n", w, (int)dl, d);
                    free(w);
                    CHECK(!"unsure");
                }
            } else {
                t->decided++;
                t->yes += got == RECPRED_YES;
                if (got != want) {
                    char *w = json_dumps(where, JSON_ENCODE_ANY);
                    fprintf(stderr, "where %s id %s on %.*s: bytes %d, tree %d\n", w, id ? id : "-",
                            (int)dl, d, got, want);
                    free(w);
                }
                CHECK_INT(got, want);
            }
            if (with_id) { /* the file path: query_match is given the id */
                int r = recpred_match_record(p, ID, rec.data, rec.len);
                CHECK(r == want || r == RECPRED_UNSURE);
                if (r == RECPRED_UNSURE && canon)
                    CHECK(got == RECPRED_UNSURE);
                if (!canon)
                    CHECK(r == RECPRED_UNSURE);
            }
        }
        recpred_free(p);
    }
    json_decref(tree);
    buf_free(&rec);
    query_free(&q);
}

static json_t *cond(const char *field, const char *op, json_t *value)
{
    json_t *c = json_pack("{ssss}", "field", field, "op", op);
    if (value)
        json_object_set_new(c, "value", value);
    return c;
}

static void family(const char *const *ops, size_t nops, bool nested, bool never_unsure, long rounds,
                   tally *t)
{
    for (long r = 0; r < rounds; r++) {
        json_t *data = gen_record(true, nested);
        const char *field = keys[rnd(NKEYS)];
        const char *op = ops[rnd((unsigned)nops)];
        json_t *v = NULL;
        if (!strcmp(op, "in") || !strcmp(op, "notIn")) {
            v = json_array();
            for (unsigned i = rnd(4); i > 0; i--)
                json_array_append_new(v, operand(data, field, nested));
        } else if (!strcmp(op, "between")) {
            v = json_pack("[oo]", operand(data, field, nested), operand(data, field, nested));
        } else if (!strcmp(op, "prefix")) {
            static const char *const pf[] = {"", "pa", "page", "item-", "é", "q\"", "x"};
            json_t *own = json_is_object(data) ? json_object_get(data, field) : NULL;
            if (json_is_string(own) && rnd(2))
                v = json_stringn(json_string_value(own),
                                 rnd((unsigned)json_string_length(own) + 1));
            else
                v = json_string(pf[rnd(7)]);
            if (!v)
                v = json_string("");
        } else if (strcmp(op, "exists") && strcmp(op, "missing")) {
            v = operand(data, field, nested);
        }
        json_t *where = json_pack("[o]", cond(field, op, v));
        check_one(where, data, t, never_unsure);
        json_decref(where);
        json_decref(data);
    }
}

#define ROUNDS 4000

/* The operators decided on bytes alone are never unsure on canonical data
 * (operands with floats are not compiled: skipped). */
static void sure_family(const char *const *ops, size_t n, bool nested)
{
    tally t = {0, 0, 0, 0};
    family(ops, n, nested, true, ROUNDS, &t);
    fprintf(stderr, "decided %ld (%ld true), unsure %ld, not compiled %ld\n", t.decided, t.yes,
            t.unsure, t.skipped);
    CHECK(t.decided > ROUNDS);
    CHECK(t.yes > t.decided / 10 && t.yes < t.decided - t.decided / 10);
}

TEST(eq_neq_scalars)
{
    static const char *const ops[] = {"eq", "neq"};
    sure_family(ops, 2, false);
}

TEST(eq_neq_nested)
{
    static const char *const ops[] = {"eq", "neq"};
    sure_family(ops, 2, true);
}

TEST(in_notin)
{
    static const char *const ops[] = {"in", "notIn"};
    sure_family(ops, 2, true);
}

TEST(exists_missing_prefix)
{
    static const char *const ops[] = {"exists", "missing", "prefix"};
    sure_family(ops, 3, true);
}

TEST(ranges)
{
    static const char *const ops[] = {"gt", "gte", "lt", "lte", "between"};
    tally t = {0, 0, 0, 0};
    family(ops, 5, false, false, ROUNDS, &t);
    fprintf(stderr, "decided %ld, unsure %ld, not compiled %ld\n", t.decided, t.unsure, t.skipped);
    CHECK(t.decided > t.unsure); /* containers, floats and escapes are left to the tree */
}

TEST(or_groups)
{
    static const char *const ops[] = {"eq", "neq", "in", "gt", "lte", "exists", "missing"};
    tally t = {0, 0, 0, 0};
    for (long r = 0; r < ROUNDS; r++) {
        json_t *data = gen_record(true, false);
        json_t *alts = json_array();
        for (unsigned g = 1 + rnd(3); g > 0; g--) {
            json_t *list = json_array();
            for (unsigned i = 1 + rnd(3); i > 0; i--) {
                const char *field = keys[rnd(NKEYS)], *op = ops[rnd(7)];
                json_t *v = NULL;
                if (!strcmp(op, "in"))
                    v = json_pack("[o]", operand(data, field, false));
                else if (strcmp(op, "exists") && strcmp(op, "missing"))
                    v = operand(data, field, false);
                json_array_append_new(list, cond(field, op, v));
            }
            json_array_append_new(alts, list);
        }
        json_t *where = json_pack("[{so}]", "or", alts);
        if (rnd(2))
            json_array_append_new(where, cond(keys[rnd(NKEYS)], "exists", NULL));
        check_one(where, data, &t, false);
        json_decref(where);
        json_decref(data);
    }
    fprintf(stderr, "decided %ld (%ld true), unsure %ld, not compiled %ld\n", t.decided, t.yes,
            t.unsure, t.skipped);
    CHECK(t.decided > ROUNDS);
    CHECK(t.yes > t.decided / 10 && t.yes < t.decided - t.decided / 10);
}

TEST(id_field)
{
    /* "id" is the record's id when query_match is given one, else a field */
    static const char *const ops[] = {"eq", "neq", "gt", "lt", "prefix", "exists", "missing"};
    tally t = {0, 0, 0, 0};
    for (long r = 0; r < ROUNDS; r++) {
        json_t *data = gen_record(false, false);
        const char *op = ops[rnd(7)];
        json_t *v = NULL;
        if (!strcmp(op, "prefix"))
            v = json_stringn(rnd(2) ? ID : "0190b0f3-5c1e", 1 + rnd(12));
        else if (strcmp(op, "exists") && strcmp(op, "missing"))
            v = rnd(2) ? json_string(rnd(2) ? ID : "0190a0f3-5c1e-7a2b-8c3d-4e5f60718200")
                       : operand(data, "id", false);
        json_t *where = json_pack("[o]", cond("id", op, v));
        check_one(where, data, &t, false);
        json_decref(where);
        json_decref(data);
    }
    CHECK(t.decided > ROUNDS);
}

TEST(recquery_equalities)
{
    tally t = {0, 0, 0, 0};
    for (long r = 0; r < ROUNDS; r++) {
        json_t *data = gen_record(true, false);
        recquery q;
        recquery_init(&q);
        bool ok = true;
        for (unsigned i = 1 + rnd(2); i > 0; i--) {
            const char *field = keys[rnd(NKEYS)];
            json_t *v = operand(data, field, false);
            if (json_is_object(v) || json_is_array(v)) {
                json_decref(v);
                v = json_string("page");
            }
            ok = ok && recquery_where_equal(&q, field, v, NULL) == 0;
            json_decref(v);
        }
        CHECK(ok);
        buf rec = BUF_INIT;
        json_t *tree = NULL;
        CHECK(docstore_encode_record(&rec, ID, data, NULL) == 0);
        CHECK(docstore_decode_record(rec.data, rec.len, ID, &tree, NULL) == 0);
        recpred *p = recpred_from_recquery(&q);
        if (!p) {
            t.skipped++;
        } else {
            int want = recquery_match_data(&q, tree);
            int got = recpred_match_data(p, ID, rec.data + HEAD, rec.len - HEAD - 2);
            CHECK_INT(got, want);
            t.decided++;
            int rr = recpred_match_record(p, ID, rec.data, rec.len);
            CHECK(rr == want ||
                  (rr == RECPRED_UNSURE && !reccanon_is_canonical(rec.data, rec.len, ID)));
            recpred_free(p);
        }
        json_decref(tree);
        buf_free(&rec);
        recquery_clear(&q);
        json_decref(data);
    }
    CHECK(t.decided > ROUNDS / 2);
}

/* Bytes that decode to the same data but are not what the encoder writes:
 * the file path must not decide on them (or decide as the tree does). */
TEST(noncanonical_records)
{
    static const char *const datas[] = {
        "{\"kind\": \"page\"}",
        "{\"kind\":\"p\\u0061ge\"}",
        "{\"k\\u0069nd\":\"post\"}",
        "{\"kind\":\"post\",\"kind\":\"page\"}",
        "{\"kind\":1.0}",
        "{\"kind\":1e0}",
        "{\"kind\":\"page\" }",
        "{\"kind\":[ ]}",
        "{\"kind\":{}}",
        "{\"kind\":{\"0\":\"page\"}}",
        "{\"kind\":\"page\",\"a\":-0}",
        "{\"kind\":\"page\\/x\"}",
    };
    static const char *const wheres[] = {
        "[{\"field\":\"kind\",\"op\":\"eq\",\"value\":\"page\"}]",
        "[{\"field\":\"kind\",\"op\":\"eq\",\"value\":1}]",
        "[{\"field\":\"kind\",\"op\":\"eq\",\"value\":[]}]",
        "[{\"field\":\"kind\",\"op\":\"eq\",\"value\":[\"page\"]}]",
        "[{\"field\":\"kind\",\"op\":\"neq\",\"value\":\"post\"}]",
        "[{\"field\":\"kind\",\"op\":\"prefix\",\"value\":\"pa\"}]",
        "[{\"field\":\"kind\",\"op\":\"missing\"}]",
    };
    for (size_t i = 0; i < sizeof datas / sizeof datas[0]; i++) {
        char rec[256];
        int n = snprintf(rec, sizeof rec, "{\"id\":\"%s\",\"data\":%s}\n", ID, datas[i]);
        json_t *tree = NULL;
        CHECK(docstore_decode_record(rec, (size_t)n, ID, &tree, NULL) == 0);
        for (size_t w = 0; w < sizeof wheres / sizeof wheres[0]; w++) {
            json_t *where = sjson_decode(wheres[w], strlen(wheres[w]), NULL);
            query q;
            memset(&q, 0, sizeof q);
            CHECK(query_parse_where(where, &q, NULL) == 0);
            recpred *p = recpred_from_query(&q);
            CHECK(p != NULL);
            int want = query_match(&q, ID, tree);
            int got = p ? recpred_match_record(p, ID, rec, (size_t)n) : RECPRED_UNSURE;
            if (got != RECPRED_UNSURE && got != want)
                fprintf(stderr, "%s on %s: bytes %d, tree %d\n", wheres[w], datas[i], got, want);
            CHECK(got == RECPRED_UNSURE || got == want);
            recpred_free(p);
            query_free(&q);
            json_decref(where);
        }
        json_decref(tree);
    }
}

TEST(what_is_not_compiled)
{
    static const char *const wheres[] = {
        "[{\"field\":\"kind\",\"op\":\"eq\",\"value\":1.0}]",
        "[{\"field\":\"kind\",\"op\":\"in\",\"value\":[\"a\",[0.5]]}]",
        "[{\"field\":\"0\",\"op\":\"eq\",\"value\":\"a\"}]",
        "[{\"field\":\"kind\",\"op\":\"prefix\",\"value\":\"a\\nb\"}]",
    };
    for (size_t w = 0; w < sizeof wheres / sizeof wheres[0]; w++) {
        json_t *where = sjson_decode(wheres[w], strlen(wheres[w]), NULL);
        query q;
        memset(&q, 0, sizeof q);
        CHECK(query_parse_where(where, &q, NULL) == 0);
        recpred *p = recpred_from_query(&q);
        CHECK(p == NULL);
        recpred_free(p);
        query_free(&q);
        json_decref(where);
    }
    query none;
    memset(&none, 0, sizeof none);
    CHECK(recpred_from_query(&none) == NULL);
    recquery rq;
    recquery_init(&rq);
    CHECK(recpred_from_recquery(&rq) == NULL);
}

/* Records long enough for the word and 16-byte lane paths, with keys and
 * values of every length around the lane sizes, escapes placed across the
 * lanes, and operands one byte off the value (shorter, longer, last byte
 * changed). */
TEST(long_records_every_offset)
{
    static const char *const pieces[] = {"a", "\"", "\\", "\n", "é", "bb", "/"};
    long decided = 0;
    for (unsigned r = 0; r < 3000; r++) {
        json_t *data = json_object();
        char keys_used[6][48];
        unsigned nk = 2 + rnd(5);
        for (unsigned k = 0; k < nk; k++) {
            char key[48] = "", val[64] = "";
            for (unsigned i = rnd(20); i > 0; i--)
                strcat(key, rnd(6) ? "k" : pieces[rnd(7)]);
            snprintf(keys_used[k], sizeof keys_used[k], "%s%u", key, k);
            for (unsigned i = rnd(40); i > 0 && strlen(val) < 60; i--)
                strcat(val, rnd(5) ? "v" : pieces[rnd(7)]);
            json_t *v = rnd(4) ? json_string(val) : json_integer((json_int_t)rnd(100000));
            json_object_set_new(data, keys_used[k], v);
        }
        const char *field = keys_used[rnd(nk)];
        json_t *own = json_object_get(data, field), *v;
        switch (rnd(4)) {
        case 0:
            v = json_deep_copy(own);
            break;
        case 1: { /* one byte longer */
            char b[80];
            if (json_is_string(own))
                snprintf(b, sizeof b, "%sv", json_string_value(own));
            v = json_is_string(own) ? json_string(b)
                                    : json_integer(json_integer_value(own) * 10 + 1);
            break;
        }
        case 2: /* one byte shorter */
            v = json_is_string(own) && json_string_length(own) > 0
                    ? json_stringn(json_string_value(own), json_string_length(own) - 1)
                    : json_integer(json_integer_value(own) / 10);
            break;
        default: /* the last byte changed */
            if (json_is_string(own) && json_string_length(own) > 0) {
                char b[80];
                snprintf(b, sizeof b, "%s", json_string_value(own));
                b[strlen(b) - 1] = b[strlen(b) - 1] == 'v' ? 'w' : 'v';
                v = json_string(b);
            } else {
                v = json_integer(json_integer_value(own) + 1);
            }
        }
        if (!v)
            v = json_string("v");
        json_t *where = json_pack("[o]", cond(field, rnd(2) ? "eq" : "neq", v));
        tally t = {0, 0, 0, 0};
        check_one(where, data, &t, true);
        decided += t.decided;
        json_decref(where);
        json_decref(data);
    }
    CHECK(decided > 3000);
}

/* One equality looks for its key among the first 16 bytes of the object
 * before walking the members: look-alikes there (a nested member, a key of
 * the same length and first byte, the key as a value or inside an escaped
 * string, containers before it) decide as the tree does, and the real key
 * right after them is still found. */
TEST(eq_key_lookalikes_near_the_start)
{
    static const char *const recs[] = {
        "{\"a\":{\"st\":\"v\"},\"st\":\"w\"}",
        "{\"a\":{\"st\":\"v\"}}",
        "{\"a\":[\"st\",1],\"st\":\"v\"}",
        "{\"a\":[{\"st\":\"v\"}]}",
        "{\"a\":\"st\",\"st\":\"v\"}",
        "{\"a\":\"\\\"st\\\":\\\"v\\\"\",\"st\":\"w\"}",
        "{\"a\\\\\":1,\"st\":\"v\"}",
        "{\"sx\":\"v\",\"st\":\"v\"}",
        "{\"sx\":\"v\",\"st\":\"w\"}",
        "{\"sx\":\"v\",\"b\":1}",
        "{\"st\":\"v\"}",
        "{\"st\":\"vv\"}",
        "{\"s\":\"v\",\"st\":\"v\"}",
        "{\"st\":{\"st\":\"v\"}}",
        "{\"b\":1,\"st\":\"v\"}",
        "{\"b\":null,\"st\":\"v\"}",
    };
    static const char *const ops[] = {"eq", "neq"};
    static const char *const vals[] = {"v", "w"};
    long decided = 0;
    for (size_t r = 0; r < sizeof recs / sizeof recs[0]; r++)
        for (int pad = 0; pad < 2; pad++) /* short, and long enough for the lanes */
            for (int o = 0; o < 2; o++)
                for (int v = 0; v < 2; v++) {
                    json_t *data = sjson_decode(recs[r], strlen(recs[r]), NULL);
                    CHECK(data != NULL);
                    if (pad)
                        json_object_set_new(data, "zz", json_string("padding-padding-padding-pad"));
                    json_t *where = json_pack("[o]", cond("st", ops[o], json_string(vals[v])));
                    tally t = {0, 0, 0, 0};
                    check_one(where, data, &t, true);
                    decided += t.decided;
                    json_decref(where);
                    json_decref(data);
                }
    CHECK(decided == (long)(sizeof recs / sizeof recs[0]) * 2 * 2 * 2 * 2);
}

static const test_case tests[] = {
    TEST_ENTRY(eq_neq_scalars),
    TEST_ENTRY(eq_neq_nested),
    TEST_ENTRY(in_notin),
    TEST_ENTRY(exists_missing_prefix),
    TEST_ENTRY(ranges),
    TEST_ENTRY(or_groups),
    TEST_ENTRY(id_field),
    TEST_ENTRY(recquery_equalities),
    TEST_ENTRY(noncanonical_records),
    TEST_ENTRY(what_is_not_compiled),
    TEST_ENTRY(long_records_every_offset),
    TEST_ENTRY(eq_key_lookalikes_near_the_start),
};
TEST_MAIN(tests)
