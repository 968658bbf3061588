#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../support/snapshot.h"
#include "../test.h"
#include "../tmpdir.h"
#include "docindex.h"
#include "docstore.h"
#include "fsx.h"
#include "query.h"
#include "rcache.h"
#include "sjson.h"

static char root[PATH_MAX];

#include "../support/cachekit.h"
#include "../support/js.h"

static const char *vkey(const char *json)
{
    static buf b;
    buf_reset(&b);
    json_t *v = sjson_decode(json, strlen(json), NULL);
    docindex_value_key(v, &b);
    json_decref(v);
    return b.data;
}

static const char *rkey(const char *json)
{
    static buf b;
    buf_reset(&b);
    json_t *v = sjson_decode(json, strlen(json), NULL);
    docindex_range_key(v, &b);
    json_decref(v);
    return b.data;
}

TEST(value_and_range_keys_match_storh)
{
    CHECK_STR(vkey("0"), "i-0");
    CHECK_STR(vkey("42"), "i-42");
    CHECK_STR(vkey("-7"), "i-m7");
    CHECK_STR(vkey("\"\""), "s-");
    CHECK_STR(vkey("\"home\""), "s-686f6d65");
    CHECK_STR(vkey("\"\\u00dcn\\u00ef\""), "s-c39c6ec3af");
    char long97[110] = "\"";
    memset(long97 + 1, 'a', 97);
    strcpy(long97 + 98, "\"");
    CHECK_STR(vkey(long97), "s-2af12eadb36689a2fdb2c1451b691f4c");
    CHECK_STR(vkey("true"), "b-1");
    CHECK_STR(vkey("false"), "b-0");
    CHECK_STR(vkey("1.5"), "f-1d5");
    CHECK_STR(vkey("-2.25"), "f-m2d25");
    CHECK_STR(vkey("2.0"), "f-2");
    CHECK_STR(vkey("0.1"), "f-0d10000000000000001");
    CHECK_STR(vkey("1e20"), "f-1d0Ep20");
    CHECK_STR(vkey("1e-5"), "f-1d0000000000000001Em5");
    CHECK_STR(vkey("-0.0"), "f-m0");
    CHECK_STR(vkey("null"), "n");
    CHECK_STR(rkey("42"), "n-00000000000000042d000000");
    CHECK_STR(rkey("123456789012345678"), "n-123456789012345678d000000");
    CHECK_STR(rkey("1.5"), "n-00000000000000001d500000");
    CHECK_STR(rkey("-7"), "n-m0000000000000007d000000");
    CHECK_STR(rkey("-2.25"), "n-m0000000000000002d250000");
    CHECK_STR(rkey("0.1"), "n-00000000000000000d100000");
    CHECK_STR(rkey("1e20"), "n-100000000000000000000d000000");
    CHECK_STR(rkey("-0.0"), "n-00000000000000000d000000");
    CHECK_STR(rkey("-1.5e-10"), "n-m0000000000000000d000000");
    CHECK_STR(rkey("\"home\""), "s-686f6d65");
    CHECK_STR(rkey("null"), "z-n");
    buf b = BUF_INIT;
    json_t *page = json_string("page"), *x = json_string("x");
    docindex_compound_key(page, x, &b);
    CHECK_STR(b.data, "c-97e2ae8da5521ecbfcc18a3480d4b272");
    json_decref(page);
    json_decref(x);
    buf_free(&b);
}

static docstore *open_store(const char *name, const char *indexes)
{
    docstore *ds = NULL;
    docstore_open(root, name, &ds, NULL);
    if (indexes) {
        json_t *b = js(indexes), *out = NULL;
        storh_err err;
        if (docstore_define_indexes(ds, b, true, &out, &err))
            fprintf(stderr, "indexes: %s\n", err.msg);
        json_decref(out);
        json_decref(b);
    }
    return ds;
}

static void put(docstore *ds, const char *id, const char *data)
{
    json_t *d = js(data);
    char out[37];
    storh_err err;
    if (docstore_put(ds, id, d, out, NULL, &err))
        fprintf(stderr, "put %s: %s\n", id, err.msg);
    json_decref(d);
}

static char *file(const char *rel)
{
    char p[PATH_MAX];
    snprintf(p, sizeof p, "%s/%s", root, rel);
    buf b = BUF_INIT;
    if (fsx_read_all(p, &b, NULL))
        return NULL;
    return b.data;
}

static json_t *run(docstore *ds, const char *body)
{
    json_t *b = js(body), *out = NULL;
    query q;
    storh_err err;
    if (query_parse(b, &q, &err) == 0) {
        if (docstore_query(ds, &q, &out, &err))
            fprintf(stderr, "query: %s\n", err.msg);
        query_free(&q);
    } else {
        fprintf(stderr, "parse: %s\n", err.msg);
    }
    json_decref(b);
    return out;
}

#define A "018bcfe5-6800-7000-8000-2d5dba6274da"
#define B "018bcfe5-6801-7000-8000-aa5dba6274db"

TEST(entry_files_are_storh_bytes)
{
    docstore *ds = open_store("files", "{\"fields\":[{\"field\":\"kind\"},{\"field\":\"tag\"},"
                                       "{\"field\":\"r\",\"range\":true}]}");
    put(ds, A, "{\"kind\":\"page\",\"tag\":\"x\",\"r\":5}");
    put(ds, B, "{\"kind\":\"page\",\"tag\":\"x\",\"r\":7}");
    char *eq = file("files/.storh/indexes/entries/eq/6b696e64/s-70616765.jsonc");
    CHECK_STR(eq,
              "{\"field\":\"kind\",\"key\":\"s-70616765\",\"count\":2,\"value\":\"page\",\"ids\":"
              "[\"" A "\",\"" B "\"]}\n");
    free(eq);
    char *cp = file("files/.storh/indexes/entries/compound/6b696e64-746167/"
                    "c-97e2ae8da5521ecbfcc18a3480d4b272.jsonc");
    CHECK_STR(cp, "{\"field\":\"kind\\ttag\",\"key\":\"c-97e2ae8da5521ecbfcc18a3480d4b272\","
                  "\"count\":2,\"value\":null,\"ids\":[\"" A "\",\"" B "\"]}\n");
    free(cp);
    put(ds, A, "{\"kind\":\"post\",\"tag\":\"x\",\"r\":7}"); /* an update moves A */
    char *delta = file("files/.storh/indexes/entries/range/72.delta.jsonl");
    CHECK(strstr(delta,
                 "{\"key\":\"n-00000000000000005d000000\",\"value\":5,\"count\":-1,\"ids\":[],"
                 "\"remove\":[\"" A "\"]}\n") != NULL);
    free(delta);
    json_t *re;
    CHECK_INT(docstore_reindex(ds, &re, NULL), 0);
    char *text = json_dumps(re, JSON_COMPACT);
    CHECK_STR(text, "{\"fields\":3,\"entries\":2}");
    free(text);
    json_decref(re);
    char *main = file("files/.storh/indexes/entries/range/72.jsonl");
    CHECK_STR(main, "{\"key\":\"n-00000000000000007d000000\",\"value\":7,\"count\":1,\"ids\":[\"" A
                    "\"],\"remove\":[]}\n{\"key\":\"n-00000000000000007d000000\",\"value\":7,"
                    "\"count\":1,\"ids\":[\"" B "\"],\"remove\":[]}\n");
    free(main);
    char *cps = file("files/.storh/indexes/entries/range/72.idx.jsonc");
    CHECK_STR(cps, "{\"stride\":256,\"checkpoints\":[{\"key\":\"n-00000000000000007d000000\","
                   "\"offset\":0}]}\n");
    free(cps);
    CHECK(file("files/.storh/indexes/entries/range/72.delta.jsonl") == NULL); /* folded */
    docstore_close(ds);
}

/* A rebuild writes every equality and compound entry file with the bytes
 * the writes themselves left (strings with escapes and non-ASCII text, a
 * unique field, many keys in one field, records put out of id order). */
TEST(rebuild_writes_the_entry_bytes_the_writes_wrote)
{
    docstore *ds = open_store("rebuilt", "{\"fields\":[{\"field\":\"kind\"},{\"field\":\"n\"},"
                                         "{\"field\":\"u\",\"unique\":true},{\"field\":\"b\"},"
                                         "{\"field\":\"r\",\"range\":true}]}");
    static const char *const kinds[] = {"\"page\"",   "\"a/b\"",        "\"\\u00e9 \\\"q\\\"\"",
                                        "\"x\\\\y\"", "\"\\u4e2d\\t\"", "\"\"",
                                        "1.5",        "null",           "true"};
    for (int k = 0; k < 120; k++) {
        int i = (k * 37) % 120; /* not in id order */
        char id[40], body[256];
        snprintf(id, sizeof id, "018bcfe5-6800-7000-8000-%012d", i);
        snprintf(body, sizeof body, "{\"kind\":%s,\"n\":%d,\"u\":\"u%d\",\"b\":%s,\"r\":%d}",
                 kinds[i % 9], i % 40, i, i % 3 ? "false" : "true", i % 7);
        put(ds, id, body);
    }
    char dir[PATH_MAX];
    snprintf(dir, sizeof dir, "%s/rebuilt/.storh/indexes/entries", root);
    char eqd[PATH_MAX + 8], cpd[PATH_MAX + 16];
    snprintf(eqd, sizeof eqd, "%s/eq", dir);
    snprintf(cpd, sizeof cpd, "%s/compound", dir);
    char *eq = snapshot_tree(eqd), *cp = snapshot_tree(cpd);
    CHECK(eq && strlen(eq) > 100 && cp && strlen(cp) > 100);
    json_t *re;
    CHECK_INT(docstore_reindex(ds, &re, NULL), 0);
    json_decref(re);
    char *eq2 = snapshot_tree(eqd), *cp2 = snapshot_tree(cpd);
    CHECK_STR(eq2, eq);
    CHECK_STR(cp2, cp);
    free(eq);
    free(cp);
    free(eq2);
    free(cp2);
    docstore_close(ds);
}

TEST(unique_conflict_leaves_the_store_unchanged)
{
    docstore *ds = open_store("uniq", "{\"fields\":[{\"field\":\"slug\",\"unique\":true},"
                                      "{\"field\":\"n\",\"unique\":true,\"range\":true}]}");
    put(ds, A, "{\"slug\":\"a\",\"n\":1}");
    char dir[PATH_MAX];
    snprintf(dir, sizeof dir, "%s/uniq", root);
    char *before = snapshot_tree(dir);
    json_t *d = js("{\"slug\":\"a\"}");
    char id[37];
    storh_err err;
    CHECK_INT(docstore_put(ds, NULL, d, id, NULL, &err), STORH_ECONFLICT);
    CHECK_STR(err.msg, "Unique index violation on field: slug");
    json_decref(d);
    d = js("{\"slug\":\"z\",\"n\":1}");
    CHECK_INT(docstore_put(ds, NULL, d, id, NULL, &err), STORH_ECONFLICT); /* via range files */
    json_decref(d);
    /* a batch whose rows clash with each other writes nothing */
    docstore_stage *st;
    docstore_stage_begin(ds, &st, NULL);
    json_t *r1 = js("{\"slug\":\"q\"}"), *r2 = js("{\"slug\":\"q\"}");
    docstore_stage_put(st, NULL, r1, id, NULL);
    docstore_stage_put(st, NULL, r2, id, NULL);
    CHECK_INT(docstore_stage_commit(st, NULL, &err), STORH_ECONFLICT);
    json_decref(r1);
    json_decref(r2);
    char *after = snapshot_tree(dir);
    CHECK_STR(after, before);
    free(before);
    free(after);
    d = js("{\"slug\":\"a\",\"n\":1,\"more\":true}"); /* the same id may keep its value */
    CHECK_INT(docstore_put(ds, A, d, id, NULL, &err), 0);
    json_decref(d);
    docstore_close(ds);
}

TEST(queries_use_indexes_and_agree_with_scans)
{
    docstore *ds = open_store("q", "{\"fields\":[{\"field\":\"kind\"},{\"field\":\"tag\"},"
                                   "{\"field\":\"at\",\"range\":true}]}");
    for (int i = 0; i < 40; i++) {
        char id[37], data[128];
        uuid7_generate(id, INT64_C(1700000000000) + i, NULL);
        snprintf(data, sizeof data, "{\"kind\":\"%s\",\"tag\":\"%s\",\"at\":%d,\"n\":%d}",
                 i % 2 ? "page" : "post", i % 3 ? "x" : "y", i, i % 5);
        put(ds, id, data);
    }
    json_t *ex = run(ds, "{\"where\":[{\"field\":\"kind\",\"op\":\"eq\",\"value\":\"page\"}],"
                         "\"explain\":true}");
    CHECK_STR(json_string_value(json_object_get(ex, "plan")), "index_scan");
    json_decref(ex);
    ex = run(ds, "{\"where\":[{\"field\":\"n\",\"op\":\"eq\",\"value\":1}],\"explain\":true}");
    CHECK_STR(json_string_value(json_object_get(ex, "plan")), "full_scan");
    json_decref(ex);
    const char *pairs[][2] = {
        {"{\"field\":\"kind\",\"op\":\"eq\",\"value\":\"page\"}", "20"},
        {"{\"field\":\"kind\",\"op\":\"in\",\"value\":[\"page\",\"page\"]}", "20"},
        {"{\"field\":\"kind\",\"op\":\"in\",\"value\":[\"page\",\"post\",\"page\"]}", "40"},
        {"{\"field\":\"kind\",\"op\":\"eq\",\"value\":\"page\"},{\"field\":\"tag\",\"op\":\"eq\","
         "\"value\":\"y\"}",
         "7"},
        {"{\"field\":\"at\",\"op\":\"gte\",\"value\":30}", "10"},
        {"{\"field\":\"at\",\"op\":\"between\",\"value\":[5,9]}", "5"},
        {"{\"field\":\"kind\",\"op\":\"in\",\"value\":[\"page\",\"post\"]},{\"field\":\"at\","
         "\"op\":\"lt\",\"value\":10}",
         "10"},
        {"{\"or\":[[{\"field\":\"kind\",\"op\":\"eq\",\"value\":\"page\"}],[{\"field\":\"at\","
         "\"op\":\"lt\",\"value\":2}]]}",
         "21"},
    };
    for (size_t i = 0; i < sizeof pairs / sizeof pairs[0]; i++) {
        char body[512];
        snprintf(body, sizeof body, "{\"where\":[%s],\"count\":true}", pairs[i][0]);
        json_t *c = run(ds, body);
        CHECK_INT(json_integer_value(json_object_get(c, "count")), atoi(pairs[i][1]));
        json_decref(c);
    }
    json_t *r = run(ds, "{\"where\":[{\"field\":\"at\",\"op\":\"gte\",\"value\":35}],"
                        "\"orderBy\":[{\"field\":\"at\",\"dir\":\"desc\"}],\"limit\":2}");
    json_t *recs = json_object_get(r, "records");
    CHECK_INT(json_array_size(recs), 2);
    CHECK_INT(
        json_integer_value(json_object_get(json_object_get(json_array_get(recs, 0), "data"), "at")),
        39);
    json_decref(r);
    /* keyset pagination with the cursor */
    r = run(ds, "{\"where\":[{\"field\":\"kind\",\"op\":\"eq\",\"value\":\"post\"}],\"limit\":15}");
    const char *cur = json_string_value(json_object_get(r, "next_cursor"));
    CHECK(cur != NULL);
    char body[256];
    snprintf(body, sizeof body,
             "{\"where\":[{\"field\":\"kind\",\"op\":\"eq\",\"value\":\"post\"}],\"limit\":15,"
             "\"cursor\":\"%s\"}",
             cur ? cur : "");
    json_t *r2 = run(ds, body);
    CHECK_INT(json_array_size(json_object_get(r2, "records")), 5);
    json_decref(r);
    json_decref(r2);
    docstore_close(ds);
}

TEST(verify_catches_corruption_and_repair_fixes_it)
{
    docstore *ds = open_store("vr", "{\"fields\":[{\"field\":\"kind\"}]}");
    put(ds, A, "{\"kind\":\"page\"}");
    put(ds, B, "{\"kind\":\"post\"}");
    json_t *h;
    CHECK_INT(docstore_health(ds, &h, NULL), 0);
    CHECK(json_is_true(json_object_get(h, "ok")));
    json_decref(h);
    /* a hand-edited index file */
    char p[PATH_MAX];
    snprintf(p, sizeof p, "%s/vr/.storh/indexes/entries/eq/6b696e64/s-70616765.jsonc", root);
    FILE *f = fopen(p, "w");
    fputs("{\"field\":\"kind\",\"key\":\"s-70616765\",\"count\":1,\"value\":\"page\",\"ids\":[\"" B
          "\"]}\n",
          f);
    fclose(f);
    CHECK_INT(docstore_health(ds, &h, NULL), 0);
    CHECK(json_is_false(json_object_get(h, "ok")));
    CHECK_STR(json_string_value(json_array_get(json_object_get(h, "errors"), 0)),
              "Index mismatch (equality): kind s-70616765");
    json_decref(h);
    json_t *rep;
    CHECK_INT(docstore_repair(ds, &rep, NULL), 0);
    json_decref(rep);
    CHECK_INT(docstore_health(ds, &h, NULL), 0);
    CHECK(json_is_true(json_object_get(h, "ok")));
    json_decref(h);
    /* a hand-corrupted record file */
    snprintf(p, sizeof p, "%s/vr/data/aa/" B ".jsonc", root);
    f = fopen(p, "w");
    fputs("{\"id\":\"" B "\",\"data\":{\"kind\":", f);
    fclose(f);
    CHECK_INT(docstore_health(ds, &h, NULL), 0);
    CHECK_STR(json_string_value(json_array_get(json_object_get(h, "errors"), 0)),
              "Corrupt records: 1");
    json_decref(h);
    CHECK_INT(docstore_repair(ds, &rep, NULL), 0);
    CHECK_INT(json_integer_value(json_object_get(rep, "quarantined")), 1);
    json_decref(rep);
    snprintf(p, sizeof p, "%s/vr/.storh/corrupt/" B ".jsonc", root);
    CHECK(access(p, F_OK) == 0);
    CHECK_INT(docstore_health(ds, &h, NULL), 0);
    CHECK(json_is_true(json_object_get(h, "ok")));
    json_decref(h);
    docstore_close(ds);
}

/* Rewrites a record file out of band, keeping its size and mtime. */
static void edit_same_size(const char *id, const char *from, const char *to)
{
    char p[PATH_MAX];
    snprintf(p, sizeof p, "%s/cache/data/%c%c/%s.jsonc", root, id[24], id[25], id);
    cachekit_edit_same_size(p, from, to);
}

static const char *title(docstore *ds, const char *id)
{
    static char out[64];
    json_t *d = NULL;
    docstore_get(ds, id, &d, NULL, NULL);
    snprintf(out, sizeof out, "%s", json_string_value(json_object_get(d, "t")));
    json_decref(d);
    return out;
}

TEST(cache_validation_modes)
{
    docstore *ds = open_store("cache", NULL);
    put(ds, A, "{\"t\":\"aaaa\"}");
    docstore_set_cache(ds, RCACHE_STAT, 100, 1 << 20, NULL);
    CHECK_STR(title(ds, A), "aaaa");
    edit_same_size(A, "aaaa", "bbbb");
    CHECK_STR(title(ds, A), "bbbb"); /* STAT sees a same-size, same-mtime edit by its ctime */
    docstore_set_cache(ds, RCACHE_HASH, 100, 1 << 20, NULL);
    CHECK_STR(title(ds, A), "bbbb");
    edit_same_size(A, "bbbb", "cccc");
    CHECK_STR(title(ds, A), "cccc"); /* HASH catches it */
    docstore_set_cache(ds, RCACHE_TRUST, 100, 1 << 20, NULL);
    CHECK_STR(title(ds, A), "cccc");
    char p[PATH_MAX];
    snprintf(p, sizeof p, "%s/cache/data/2d/" A ".jsonc", root);
    FILE *f = fopen(p, "w");
    fputs("{\"id\":\"" A "\",\"data\":{\"t\":\"a much longer title\"}}\n", f);
    fclose(f);
    CHECK_STR(title(ds, A), "cccc"); /* TRUST ignores out-of-band edits */
    put(ds, A, "{\"t\":\"dddd\"}");  /* writes through storhd are always seen */
    CHECK_STR(title(ds, A), "dddd");
    /* negative lookups are cached too, and a put replaces them */
    json_t *d;
    CHECK_INT(docstore_get(ds, B, &d, NULL, NULL), STORH_ENOTFOUND);
    CHECK_INT(docstore_get(ds, B, &d, NULL, NULL), STORH_ENOTFOUND);
    put(ds, B, "{\"t\":\"eeee\"}");
    CHECK_STR(title(ds, B), "eeee");
    /* bounded by entries */
    docstore_set_cache(ds, RCACHE_STAT, 1, 1 << 20, NULL);
    title(ds, A);
    title(ds, B);
    rcache_stats cs;
    rcache_totals(&cs);
    CHECK(cs.evictions >= 1);
    docstore_close(ds);
}

/* The ids of a query's records, comma-separated ("" for none), or the
 * count of a count query. */
static const char *answer(docstore *ds, const char *where, bool count)
{
    static char out[256];
    char body[512];
    snprintf(body, sizeof body, "{\"where\":[%s]%s}", where, count ? ",\"count\":true" : "");
    json_t *r = run(ds, body);
    out[0] = '\0';
    if (count) {
        snprintf(out, sizeof out, "%lld",
                 (long long)json_integer_value(json_object_get(r, "count")));
    } else {
        size_t i;
        json_t *e;
        json_array_foreach (json_object_get(r, "records"), i, e) {
            if (i)
                strcat(out, ",");
            strncat(out, json_string_value(json_object_get(e, "id")), 40);
        }
    }
    json_decref(r);
    return out;
}

#define KIND_PAGE "{\"field\":\"kind\",\"op\":\"eq\",\"value\":\"page\"}"
#define KIND_POST "{\"field\":\"kind\",\"op\":\"eq\",\"value\":\"post\"}"
#define AT_GTE_5 "{\"field\":\"at\",\"op\":\"gte\",\"value\":5}"
#define PAGE_X KIND_PAGE ",{\"field\":\"tag\",\"op\":\"eq\",\"value\":\"x\"}"

/* The entry files are kept in memory between queries (docindex_mem.c):
 * a write by another process, and an out-of-band edit that keeps the
 * file's size and mtime, are seen by the next query. */
TEST(index_memory_sees_other_processes)
{
    docstore *ds = open_store("shx", "{\"fields\":[{\"field\":\"kind\"},{\"field\":\"tag\"},"
                                     "{\"field\":\"at\",\"range\":true}]}");
    put(ds, A, "{\"kind\":\"page\",\"tag\":\"x\",\"at\":7}");
    for (int round = 0; round < 2; round++) { /* the second round answers from memory */
        CHECK_STR(answer(ds, AT_GTE_5, false), A);
        CHECK_STR(answer(ds, KIND_PAGE, false), A);
        CHECK_STR(answer(ds, KIND_PAGE, true), "1");
        CHECK_STR(answer(ds, PAGE_X, false), A);
    }
    pid_t pid = fork();
    if (pid == 0) { /* another storhd engine on the same files */
        docstore *other = NULL;
        if (docstore_open(root, "shx", &other, NULL))
            _exit(2);
        put(other, B, "{\"kind\":\"page\",\"tag\":\"x\",\"at\":9}");
        put(other, A, "{\"kind\":\"post\",\"tag\":\"x\",\"at\":1}");
        docstore_close(other);
        _exit(0);
    }
    int status = -1;
    CHECK(pid > 0 && waitpid(pid, &status, 0) == pid);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    CHECK_STR(answer(ds, KIND_PAGE, false), B);
    CHECK_STR(answer(ds, AT_GTE_5, false), B); /* the range delta grew in place */
    CHECK_STR(answer(ds, KIND_PAGE, true), "1");
    CHECK_STR(answer(ds, PAGE_X, false), B);
    CHECK_STR(answer(ds, KIND_POST, true), "1");
    /* an edit in place that keeps size and mtime (only the ctime tells):
     * the kind=post entry is made to list B (a page) instead of A, so the
     * query, which re-checks every candidate, finds nothing */
    CHECK_STR(answer(ds, KIND_POST, false), A);
    char p[PATH_MAX];
    snprintf(p, sizeof p, "%s/shx/.storh/indexes/entries/eq/6b696e64/s-706f7374.jsonc", root);
    char *before = cachekit_slurp(p);
    CHECK(before != NULL && strstr(before, A) != NULL);
    free(before);
    cachekit_edit_same_size(p, A, B);
    CHECK_STR(answer(ds, KIND_POST, false), "");
    /* and this process's own writes, as before */
    put(ds, A, "{\"kind\":\"page\",\"tag\":\"y\",\"at\":8}");
    CHECK_STR(answer(ds, KIND_PAGE, false), A "," B);
    CHECK_STR(answer(ds, AT_GTE_5, false), A "," B);
    CHECK_STR(answer(ds, KIND_PAGE, true), "2");
    CHECK_STR(answer(ds, PAGE_X, false), B);
    docstore_close(ds);
}

TEST(schema_validation)
{
    docstore *ds = open_store("sch", NULL);
    json_t *s = js("{\"fields\":{\"title\":{\"type\":\"string\",\"required\":true},"
                   "\"n\":{\"type\":\"float\",\"index\":true},\"ok\":{\"type\":\"bool\"}}}");
    json_t *out;
    CHECK_INT(docstore_set_schema(ds, s, &out, NULL), 0);
    json_decref(out);
    json_decref(s);
    struct {
        const char *data, *msg;
    } bad[] = {
        {"{\"n\":1}", "Missing required schema field: title"},
        {"{\"title\":5}", "Schema field title must be string."},
        {"{\"title\":\"x\",\"n\":\"1\"}", "Schema field n must be float."},
        {"{\"title\":\"x\",\"ok\":1}", "Schema field ok must be bool."},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        json_t *d = js(bad[i].data);
        char id[37];
        storh_err err;
        CHECK_INT(docstore_put(ds, NULL, d, id, NULL, &err), STORH_ESCHEMA);
        CHECK_STR(err.msg, bad[i].msg);
        json_decref(d);
    }
    json_t *d = js("{\"title\":null,\"n\":3}"); /* null satisfies required; int passes float */
    char id[37];
    CHECK_INT(docstore_put(ds, NULL, d, id, NULL, NULL), 0);
    json_decref(d);
    json_t *ix = docstore_indexes(ds);
    CHECK_STR(json_string_value(
                  json_object_get(json_array_get(json_object_get(ix, "fields"), 0), "field")),
              "n");
    json_decref(ix);
    docstore_close(ds);
}

/* The encoded answer of docstore_query for body, and what
 * docstore_query_answer gives (NULL when it does not serve it). */
static void answers(docstore *ds, const char *body, char **tree, char **bytes)
{
    json_t *b = js(body), *out = NULL;
    query q;
    storh_err err;
    buf t = BUF_INIT, a = BUF_INIT;
    bool served = false;
    *tree = *bytes = NULL;
    if (query_parse(b, &q, &err) == 0) {
        if (docstore_query_answer(ds, &q, &a, &served, &err))
            fprintf(stderr, "answer: %s\n", err.msg);
        if (docstore_query(ds, &q, &out, &err) == 0 && sjson_encode(&t, out, 0, &err) == 0)
            *tree = t.data;
        query_free(&q);
    }
    if (served)
        *bytes = a.data ? a.data : strdup("");
    else
        buf_free(&a);
    json_decref(out);
    json_decref(b);
}

static void hand_write(const char *coll, const char *id, const char *bytes)
{
    char p[PATH_MAX], tmp[PATH_MAX + 8];
    snprintf(p, sizeof p, "%s/%s/data/%c%c", root, coll, id[24], id[25]);
    mkdir(p, 0777);
    snprintf(p, sizeof p, "%s/%s/data/%c%c/%s.jsonc", root, coll, id[24], id[25], id);
    snprintf(tmp, sizeof tmp, "%s.hand", p);
    FILE *f = fopen(tmp, "w");
    fputs(bytes, f);
    fclose(f);
    rename(tmp, p);
}

TEST(query_answer_is_the_query_encoded)
{
    docstore *ds = open_store("qa", NULL);
    char ids[32][37];
    for (int i = 0; i < 30; i++) {
        char data[256];
        uuid7_generate(ids[i], INT64_C(1700000000000) + i, NULL);
        /* floats, escapes, U+2028, nesting and empty objects: records
         * recpred or reccanon cannot decide on bytes */
        snprintf(data, sizeof data, "{\"kind\":\"%s\",\"tag\":\"%s\",\"at\":%d,\"n\":%d%s%s%s}",
                 i % 2 ? "page" : "post", i % 3 ? "x" : "y", i, i % 5, i % 4 ? "" : ",\"f\":1.5",
                 i % 5 ? "" : ",\"s\":\"a\\nb \\\"q\\\" \\u00e9 \\u2028\"",
                 i % 7 ? "" : ",\"o\":{\"a\":[1,{\"b\":null}],\"e\":{}}");
        put(ds, ids[i], data);
    }
    /* two files as another writer may leave them: pretty, spaced */
    char pretty[256];
    snprintf(pretty, sizeof pretty,
             "{\n    \"id\": \"%s\",\n    \"data\": {\n        \"kind\": \"page\",\n"
             "        \"tag\": \"y\",\n        \"at\": 100,\n        \"n\": 1.0\n    }\n}\n",
             A);
    hand_write("qa", A, pretty);
    snprintf(pretty, sizeof pretty, "{ \"id\" : \"%s\", \"data\" : { \"kind\" : \"post\" } }", B);
    hand_write("qa", B, pretty);
    docstore_close(ds);
    ds = open_store("qa", "{\"fields\":[{\"field\":\"kind\"},{\"field\":\"tag\"},"
                          "{\"field\":\"at\",\"range\":true}]}");
    char q_id[160], q_in[200];
    snprintf(q_id, sizeof q_id, "{\"where\":[{\"field\":\"id\",\"op\":\"eq\",\"value\":\"%s\"}]}",
             A);
    snprintf(q_in, sizeof q_in,
             "{\"where\":[{\"field\":\"id\",\"op\":\"in\",\"value\":[\"%s\",\"%s\",\"%s\"]}]}",
             ids[3], B, ids[9]);
    const char *served[] = {
        "{\"where\":[{\"field\":\"kind\",\"op\":\"eq\",\"value\":\"page\"}]}",
        "{\"where\":[{\"field\":\"kind\",\"op\":\"eq\",\"value\":\"page\"}],\"limit\":4}",
        "{\"where\":[{\"field\":\"kind\",\"op\":\"eq\",\"value\":\"page\"}],\"limit\":400}",
        "{\"where\":[{\"field\":\"kind\",\"op\":\"eq\",\"value\":\"nothing\"}],\"limit\":4}",
        "{\"where\":[{\"field\":\"kind\",\"op\":\"in\",\"value\":[\"page\",\"post\"]}]}",
        "{\"where\":[{\"field\":\"kind\",\"op\":\"eq\",\"value\":\"page\"},"
        "{\"field\":\"tag\",\"op\":\"eq\",\"value\":\"y\"}]}",
        "{\"where\":[{\"field\":\"at\",\"op\":\"between\",\"value\":[3,20]},"
        "{\"field\":\"n\",\"op\":\"eq\",\"value\":1}]}",
        "{\"where\":[{\"field\":\"kind\",\"op\":\"eq\",\"value\":\"post\"},"
        "{\"field\":\"f\",\"op\":\"eq\",\"value\":1.5}]}",
        "{\"where\":[{\"field\":\"kind\",\"op\":\"eq\",\"value\":\"page\"},"
        "{\"field\":\"n\",\"op\":\"eq\",\"value\":1}]}",
        "{\"where\":[{\"or\":[[{\"field\":\"tag\",\"op\":\"eq\",\"value\":\"y\"}],"
        "[{\"field\":\"at\",\"op\":\"lt\",\"value\":4}]]}],\"limit\":6}",
        q_id,
        q_in,
    };
    const char *not_served[] = {
        "{\"where\":[{\"field\":\"kind\",\"op\":\"eq\",\"value\":\"page\"}],\"count\":true}",
        "{\"where\":[{\"field\":\"kind\",\"op\":\"eq\",\"value\":\"page\"}],\"explain\":true}",
        "{\"where\":[{\"field\":\"kind\",\"op\":\"eq\",\"value\":\"page\"}],"
        "\"orderBy\":[{\"field\":\"at\",\"dir\":\"desc\"}]}",
        "{\"where\":[{\"field\":\"n\",\"op\":\"eq\",\"value\":1}]}",
    };
    for (int round = 0; round < 2; round++) {
        for (size_t i = 0; i < sizeof served / sizeof served[0]; i++) {
            char *tree, *bytes;
            answers(ds, served[i], &tree, &bytes);
            CHECK(bytes != NULL);
            CHECK_STR(bytes, tree);
            free(tree);
            free(bytes);
        }
        /* another writer: a record gone behind the index, one rewritten
         * so it matches no more, one now matching */
        if (round == 0) {
            char p[PATH_MAX];
            snprintf(p, sizeof p, "%s/qa/data/%c%c/%s.jsonc", root, ids[1][24], ids[1][25], ids[1]);
            CHECK_INT(unlink(p), 0);
            snprintf(pretty, sizeof pretty, "{\"id\":\"%s\",\"data\":{\"kind\":\"post\"}}\n",
                     ids[3]);
            hand_write("qa", ids[3], pretty);
            snprintf(pretty, sizeof pretty,
                     "{\"id\":\"%s\",\"data\":{\"kind\":\"page\",\"n\":1}}\n", ids[2]);
            hand_write("qa", ids[2], pretty);
        }
    }
    char *tree, *bytes;
    answers(ds, served[0], &tree, &bytes);
    CHECK(bytes && !strstr(bytes, ids[1]) && !strstr(bytes, ids[3])); /* gone, and no page now */
    CHECK(bytes && strstr(bytes, A));
    free(tree);
    free(bytes);
    for (size_t i = 0; i < sizeof not_served / sizeof not_served[0]; i++) {
        answers(ds, not_served[i], &tree, &bytes);
        CHECK(bytes == NULL);
        CHECK(tree != NULL);
        free(tree);
        free(bytes);
    }
    docstore_close(ds);
}

/* A define that rebuilds publishes its manifest after the entries: killed
 * before either entry file's rename or once the new tree is swapped in, the
 * store has no definitions (a reader never sees them before their
 * entries), its queries scan, and the define done again builds. */
TEST(define_cut_by_a_crash_leaves_no_definitions)
{
    static const char *const cuts[] = {"pubset.rename@1", "pubset.rename@2", "docindex.swapped"};
    for (int cut = 1; cut <= 3; cut++) {
        char name[16];
        snprintf(name, sizeof name, "cut%d", cut);
        docstore *ds = open_store(name, NULL);
        put(ds, A, "{\"kind\":\"page\"}");
        put(ds, B, "{\"kind\":\"post\"}");
        docstore_close(ds);
        pid_t pid = fork();
        if (pid == 0) {
            setenv("STORH_FAULT", cuts[cut - 1], 1);
            docstore *c = open_store(name, "{\"fields\":[{\"field\":\"kind\"}]}");
            docstore_close(c);
            _exit(0); /* the fault point was not reached */
        }
        int status = -1;
        CHECK(pid > 0 && waitpid(pid, &status, 0) == pid);
        CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 86);
        char rel[64];
        snprintf(rel, sizeof rel, "%s/.storh/indexes/manifest.jsonc", name);
        char *m = file(rel);
        CHECK(m == NULL);
        free(m);
        ds = open_store(name, NULL);
        json_t *defs = docstore_indexes(ds);
        CHECK_INT((long)json_array_size(json_object_get(defs, "fields")), 0);
        json_decref(defs);
        const char *q = "{\"where\":[{\"field\":\"kind\",\"op\":\"eq\",\"value\":\"post\"}]}";
        json_t *r = run(ds, q);
        json_t *recs = json_object_get(r, "records");
        CHECK_INT((long)json_array_size(recs), 1);
        CHECK_STR(json_string_value(json_object_get(json_array_get(recs, 0), "id")), B);
        json_decref(r);
        json_t *b = js("{\"fields\":[{\"field\":\"kind\"}]}"), *out = NULL;
        CHECK_INT(docstore_define_indexes(ds, b, true, &out, NULL), 0);
        CHECK(json_is_true(json_object_get(out, "changed")));
        json_decref(out);
        json_decref(b);
        m = file(rel);
        CHECK(m != NULL && strstr(m, "\"kind\"") != NULL);
        free(m);
        r = run(ds, q);
        recs = json_object_get(r, "records");
        CHECK_INT((long)json_array_size(recs), 1);
        CHECK_STR(json_string_value(json_object_get(json_array_get(recs, 0), "id")), B);
        json_decref(r);
        json_t *h = NULL;
        CHECK_INT(docstore_health(ds, &h, NULL), 0);
        CHECK(json_is_true(json_object_get(h, "ok")));
        json_decref(h);
        docstore_close(ds);
    }
}

static const test_case tests[] = {
    TEST_ENTRY(value_and_range_keys_match_storh),
    TEST_ENTRY(entry_files_are_storh_bytes),
    TEST_ENTRY(rebuild_writes_the_entry_bytes_the_writes_wrote),
    TEST_ENTRY(unique_conflict_leaves_the_store_unchanged),
    TEST_ENTRY(queries_use_indexes_and_agree_with_scans),
    {"verify_catches_corruption_and_repair_fixes_it",
     verify_catches_corruption_and_repair_fixes_it},
    TEST_ENTRY(cache_validation_modes),
    TEST_ENTRY(schema_validation),
    TEST_ENTRY(index_memory_sees_other_processes),
    TEST_ENTRY(query_answer_is_the_query_encoded),
    TEST_ENTRY(define_cut_by_a_crash_leaves_no_definitions),
};

TMPDIR_TEST_MAIN(root, tests)
