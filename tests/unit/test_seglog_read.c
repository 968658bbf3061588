/* test_seglog_read: reading the segmented log: catching up with another
 * writer, storh's lines, chunk boundaries, sealed segments read to their
 * size, and the raw path against the decoded one. */
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../test.h"
#include "../tmpdir.h"
#include "frame.h"
#include "fsx.h"
#include "seglog.h"

static char root[PATH_MAX];

#include "../support/js.h"
#include "../support/logkit.h"

/* A reader catches up with lines another process appends without reopening,
 * and never applies a line that is still being written (here: its first
 * half, then the rest). */
TEST(reads_catch_up_and_skip_a_line_being_written)
{
    seglog *s = logkit_open(root, "tail", 0);
    char ids[3][37];
    logkit_fill(s, 3, ids);
    CHECK_INT(logkit_live(s), 3);
    char id[UUID7_LEN + 1], env[128];
    uuid7_generate(id, -1, NULL);
    snprintf(env, sizeof env, "{\"op\":\"put\",\"id\":\"%s\",\"data\":{\"late\":true}}", id);
    buf line = BUF_INIT;
    frame_encode(&line, env, strlen(env));
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/tail/segments/seg-000001.ndjson", root);
    int fd = open(path, O_WRONLY | O_APPEND);
    size_t half = line.len / 2;
    CHECK(write(fd, line.data, half) == (ssize_t)half);
    CHECK_INT(logkit_live(s), 3); /* half a line: not a record yet, not an error */
    json_t *d = NULL;
    CHECK_INT(seglog_get(s, id, &d, NULL), STORH_ENOTFOUND);
    CHECK(write(fd, line.data + half, line.len - half) == (ssize_t)(line.len - half));
    close(fd);
    CHECK_INT(logkit_live(s), 4);
    CHECK_INT(seglog_get(s, id, &d, NULL), 0);
    CHECK(json_is_true(json_object_get(d, "late")));
    json_decref(d);
    json_t *v = NULL;
    CHECK_INT(seglog_verify(s, &v, NULL), 0);
    CHECK(json_is_true(json_object_get(v, "ok")));
    json_decref(v);
    char more[1][37];
    logkit_fill(s, 1, more); /* its own append lands after the other's line */
    CHECK_INT(logkit_live(s), 5);
    seglog_close(s);
    s = logkit_open(root, "tail", 0);
    CHECK_INT(logkit_live(s), 5);
    seglog_close(s);
    buf_free(&line);
}

/* Lines storh (PHP) wrote: a manifest and one segment, byte for byte */
static const char php_manifest[] =
    "{\"nextSegment\":2,\"sealed\":[],\"active\":{\"file\":\"seg-000001.ndjson\",\"max\":null,"
    "\"min\":null,\"records\":0,\"ordered\":true}}";
static const char php_segment[] =
    "126\t741dce8f\t{\"op\":\"put\",\"id\":\"018bcfe5-6800-7000-8000-000000000001\",\"data\":{"
    "\"kind\":\"post\",\"n\":1,\"r\":1.5,\"big\":1.0e+20,\"s\":\"a/\\\"b\\\\c\\né\"}}\n"
    "123\tae1c85ac\t{\"op\":\"put\",\"id\":\"018bcfe5-6801-7000-8000-000000000002\",\"data\":{"
    "\"nested\":{\"x\":[1,2,{\"y\":null}],\"e\":[]},\"t\":true,\"f\":false}}\n"
    "73\t6ff40df0\t{\"op\":\"put\",\"id\":\"018bcfe5-6802-7000-8000-000000000003\",\"data\":[\"a\","
    "\"b\"]}\n"
    "66\t531ff24f\t{\"op\":\"put\",\"id\":\"018bcfe5-6803-7000-8000-000000000004\",\"data\":[]}\n"
    "95\t7af50238\t{\"op\":\"put\",\"id\":\"018bcfe5-6804-7000-8000-000000000005\",\"data\":{\"5\":"
    "\"int key\",\"k\":\"v\",\"f\":0.1}}\n";

/* Log name as storh writes it: storh's segment above, then lines (framed
 * as storh frames them), and its manifest. seg gets the segment's bytes. */
static void write_storh_log(const char *name, const char *const *lines, size_t n, buf *seg)
{
    char p[PATH_MAX];
    snprintf(p, sizeof p, "%s/%s/segments", root, name);
    CHECK_INT(fsx_mkdirs(p, false, NULL), 0);
    buf_appends(seg, php_segment);
    for (size_t i = 0; i < n; i++)
        frame_encode(seg, lines[i], strlen(lines[i]));
    snprintf(p, sizeof p, "%s/%s/segments/seg-000001.ndjson", root, name);
    CHECK_INT(fsx_write_file(p, seg->data, seg->len, false, NULL), 0);
    snprintf(p, sizeof p, "%s/%s/manifest.jsonc", root, name);
    CHECK_INT(fsx_write_file(p, php_manifest, strlen(php_manifest), false, NULL), 0);
}

/* The data of every record of a log storh wrote, and of lines that are not
 * in the canonical spelling, is what decoding the whole envelope gives. */
TEST(storh_lines_decode_as_the_whole_envelope)
{
    /* a key after data, and data twice (the last one counts) */
    const char *odd[] = {
        "{\"op\":\"put\",\"id\":\"018bcfe5-6805-7000-8000-000000000006\",\"data\":{\"a\":1},"
        "\"x\":2}",
        "{\"op\":\"put\",\"id\":\"018bcfe5-6806-7000-8000-000000000007\",\"data\":{\"a\":1},"
        "\"data\":{\"b\":2}}",
    };
    buf seg = BUF_INIT;
    write_storh_log("php", odd, 2, &seg);
    seglog *s = logkit_open(root, "php", 0);
    CHECK(s != NULL);
    seglog_iter *it;
    CHECK_INT(seglog_iter_open(s, NULL, &it, NULL), 0);
    const char *id;
    json_t *d;
    int n = 0;
    const char *line = seg.data;
    while (seglog_iter_next(it, &id, &d, NULL) == 1) {
        const char *j = strchr(strchr(line, '\t') + 1, '\t') + 1, *nl = strchr(j, '\n');
        json_t *env = sjson_decode(j, (size_t)(nl - j), NULL);
        json_t *want = seglog_envelope_data(env);
        CHECK_STR(id, json_string_value(json_object_get(env, "id")));
        buf a = BUF_INIT, b = BUF_INIT;
        sjson_encode(&a, d, 0, NULL);
        sjson_encode(&b, want, 0, NULL);
        CHECK_STR(a.data, b.data);
        CHECK(json_equal(d, want));
        json_t *g = NULL;
        CHECK_INT(seglog_get(s, id, &g, NULL), 0);
        CHECK(json_equal(g, want));
        json_decref(g);
        buf_free(&a);
        buf_free(&b);
        json_decref(want);
        json_decref(env);
        json_decref(d);
        line = nl + 1;
        n++;
    }
    seglog_iter_close(it);
    CHECK_INT(n, 7);
    seglog_close(s);
    buf_free(&seg);
}

/* A segment several read chunks long, with a record longer than a chunk:
 * reads in chunks see every record once, in order, from any cursor. */
TEST(reads_cross_chunk_boundaries)
{
    seglog *s = logkit_open(root, "chunks", 8 * 1024 * 1024);
    CHECK(s != NULL);
    enum { N = 3000, BIG = 1500 };
    static char ids[N][37];
    char *pad = malloc(400 * 1024 + 1);
    memset(pad, 'x', 400 * 1024);
    pad[400 * 1024] = '\0';
    seglog_batch *b;
    CHECK_INT(seglog_batch_begin(s, &b, NULL), 0);
    for (int i = 0; i < N; i++) {
        json_t *d = json_pack("{siss}", "i", i, "p", i == BIG ? pad : "0123456789abcdef");
        json_t *row = json_pack("{so}", "data", d);
        CHECK_INT(seglog_batch_element(b, row, ids[i], NULL), 0);
        json_decref(row);
    }
    CHECK_INT(seglog_batch_commit(b, NULL, NULL), 0);
    free(pad);
    static char got[N][37];
    CHECK_INT(logkit_count(s, NULL, got, N), N);
    int inorder = 0;
    for (int i = 0; i < N; i++)
        inorder += !strcmp(got[i], ids[i]);
    CHECK_INT(inorder, N);
    int froms[] = {0, 700, BIG - 1, BIG, 2990};
    for (size_t k = 0; k < sizeof froms / sizeof *froms; k++) {
        recquery q;
        recquery_init(&q);
        recquery_after(&q, ids[froms[k]], 36, NULL);
        recquery_limit(&q, 5, NULL);
        seglog_iter *it;
        CHECK_INT(seglog_iter_open(s, &q, &it, NULL), 0);
        const char *id;
        json_t *d;
        int n = 0;
        while (seglog_iter_next(it, &id, &d, NULL) == 1) {
            CHECK_STR(id, ids[froms[k] + 1 + n]);
            CHECK_INT(json_integer_value(json_object_get(d, "i")), froms[k] + 1 + n);
            json_decref(d);
            n++;
        }
        seglog_iter_close(it);
        CHECK_INT(n, froms[k] + 6 <= N ? 5 : N - froms[k] - 1);
        recquery_clear(&q);
    }
    seglog_close(s);
}

/* Reads s with q through both iterators side by side: the same records in
 * the same order, and a record handed out as bytes is exactly what
 * encoding the decoded read's data writes (so the HTTP row built from the
 * bytes is the row built from the tree). Counts what came raw and what as
 * a tree; returns the number of records, -1 on a mismatch. */
static int raw_matches_tree(seglog *s, const recquery *q, int *nraw, int *ntree)
{
    seglog_iter *a, *b;
    if (seglog_iter_open(s, q, &a, NULL) || seglog_iter_open(s, q, &b, NULL))
        return -1;
    int n = 0, bad = 0;
    for (;;) {
        const char *ida, *idb, *raw;
        size_t rawlen;
        json_t *da = NULL, *db = NULL;
        int ra = seglog_iter_next(a, &ida, &da, NULL);
        int rb = seglog_iter_next_raw(b, &idb, &raw, &rawlen, &db, NULL);
        if (ra != rb) {
            bad++;
            break;
        }
        if (ra != 1)
            break;
        buf want = BUF_INIT, got = BUF_INIT;
        json_t *row = json_pack("{sssO}", "id", ida, "data", da);
        sjson_encode(&want, row, 0, NULL);
        json_decref(row);
        if (raw) {
            (*nraw)++;
            bad += db != NULL;
            buf_appends(&got, "{\"id\":\"");
            buf_appends(&got, idb);
            buf_appends(&got, "\",\"data\":");
            buf_append(&got, raw, rawlen);
            buf_appendc(&got, '}');
        } else {
            (*ntree)++;
            bad += !db || !json_equal(da, db);
            row = json_pack("{sssO}", "id", idb, "data", db);
            sjson_encode(&got, row, 0, NULL);
            json_decref(row);
        }
        if (strcmp(ida, idb) || got.len != want.len || memcmp(got.data, want.data, got.len)) {
            fprintf(stderr, "raw read differs:\n  %.*s\n  %.*s\n", (int)want.len, want.data,
                    (int)got.len, got.data);
            bad++;
        }
        buf_free(&want);
        buf_free(&got);
        json_decref(da);
        json_decref(db);
        n++;
    }
    seglog_iter_close(a);
    seglog_iter_close(b);
    return bad ? -1 : n;
}

/* Every form a record takes in a segment reads the same through the raw
 * iterator as through the decoded one: storhd's canonical lines (handed
 * out as bytes), data the encoder would not write back as it is (floats,
 * escapes it does not use, integer keys, {} and lists, U+2028, integers
 * beyond int64, many keys), deletes and re-puts, and storh's and odd
 * writers' lines; with a cursor, a time range, a limit and a field
 * condition. */
/* Sealed segments are read up to the size the state has for them, the
 * rest of a segment in one read when it is near: every record once, in
 * order, from any cursor, with segment sizes on both sides of the first
 * read's 16 KiB and bytes no line of the state covers (another writer's
 * torn tail) after a sealed segment's last line. */
TEST(sealed_segments_are_read_to_their_size)
{
    seglog *s = logkit_open(root, "sealed", 17 * 1024);
    CHECK(s != NULL);
    enum { N = 900 };
    static char ids[N][37];
    for (int i = 0; i < N; i++) {
        json_t *d = json_pack("{sisi}", "i", i, "pad", i % 7 ? 12345 : 1234567);
        CHECK_INT(seglog_put(s, NULL, d, ids[i], NULL), 0);
        json_decref(d);
    }
    char p[PATH_MAX];
    snprintf(p, sizeof p, "%s/sealed/segments/seg-000001.ndjson", root);
    int fd = open(p, O_WRONLY | O_APPEND);
    CHECK(fd >= 0);
    if (fd >= 0) {
        CHECK_INT(write(fd, "99\tdeadbeef\t{\"op\":\"put\",\"id\":\"", 31), 31);
        close(fd);
    }
    static char got[N][37];
    CHECK_INT(logkit_count(s, NULL, got, N), N);
    int inorder = 0;
    for (int i = 0; i < N; i++)
        inorder += !strcmp(got[i], ids[i]);
    CHECK_INT(inorder, N);
    int froms[] = {0, 150, 151, 299, 450, N - 2};
    for (size_t k = 0; k < sizeof froms / sizeof *froms; k++) {
        recquery q;
        recquery_init(&q);
        recquery_after(&q, ids[froms[k]], 36, NULL);
        CHECK_INT(logkit_count(s, &q, got, N), N - 1 - froms[k]);
        CHECK_STR(got[0], ids[froms[k] + 1]);
        recquery_clear(&q);
    }
    seglog_close(s);
}

TEST(raw_reads_match_the_decoded_path)
{
    seglog *s = logkit_open(root, "raw", 4096); /* several segments */
    CHECK(s != NULL);
    buf many = BUF_INIT;
    buf_appendc(&many, '{');
    for (int i = 0; i < 70; i++)
        buf_printf(&many, "%s\"k%d\":%d", i ? "," : "", i, i);
    buf_appendc(&many, '}');
    const char *forms[] = {
        "{\"kind\":\"post\",\"status\":\"published\",\"n\":1}",
        "{\"a\":{\"b\":[1,2,{\"c\":null}],\"e\":[]},\"t\":true,\"f\":false,\"neg\":-7}",
        "{\"s\":\"tab\\tq\\\"b\\\\s/ é 😀\",\"nl\":\"a\\nb\\r\\f\\b\"}",
        "{\"r\":1.5,\"status\":\"published\"}",
        "{\"u\":\"\\u00e9\\u2028\"}",
        "{\"0\":\"int key\",\"k\":\"v\"}",
        "{\"nested\":{\"0\":\"a\",\"1\":\"b\"},\"status\":\"draft\"}",
        "{}",
        "{\"big\":12345678901234567890,\"max\":123456789012345678}",
        "{\"empty\":{},\"z\":0}",
        "{\"ctl\":\"\\u0001\"}",
        many.data,
    };
    enum { NF = sizeof forms / sizeof *forms, ROUNDS = 6 };
    char ids[NF * ROUNDS][UUID7_LEN + 1];
    for (int r = 0; r < ROUNDS; r++)
        for (int i = 0; i < NF; i++) {
            json_t *d = sjson_decode(forms[i], strlen(forms[i]), NULL);
            CHECK(d != NULL);
            CHECK_INT(seglog_put(s, NULL, d, ids[r * NF + i], NULL), 0);
            json_decref(d);
        }
    buf_free(&many);
    bool ex;
    CHECK_INT(seglog_delete(s, ids[3], &ex, NULL), 0);
    CHECK_INT(seglog_delete(s, ids[NF + 1], &ex, NULL), 0);
    json_t *again = json_pack("{ss}", "again", "yes");
    CHECK_INT(seglog_put(s, ids[2], again, ids[2], NULL), 0); /* a re-put */
    json_decref(again);
    int nraw = 0, ntree = 0;
    CHECK_INT(raw_matches_tree(s, NULL, &nraw, &ntree), NF * ROUNDS - 2);
    CHECK(nraw >= 3 * ROUNDS);  /* the canonical forms came as bytes */
    CHECK(ntree >= 6 * ROUNDS); /* the others as trees */
    recquery q;
    recquery_init(&q);
    recquery_after(&q, ids[NF + 2], UUID7_LEN, NULL);
    recquery_limit(&q, 25, NULL);
    CHECK_INT(raw_matches_tree(s, &q, &nraw, &ntree), 25);
    json_t *v = json_string("published");
    recquery_where_equal(&q, "status", v, NULL);
    json_decref(v);
    CHECK_INT(raw_matches_tree(s, &q, &nraw, &ntree), 2 * (ROUNDS - 1) - 1);
    recquery_clear(&q);
    recquery_init(&q);
    int64_t lo = 0;
    uuid7_timestamp(ids[5], UUID7_LEN, &lo, NULL);
    recquery_time_range(&q, true, lo, true, lo + 100000, NULL);
    CHECK(raw_matches_tree(s, &q, &nraw, &ntree) > 0);
    recquery_clear(&q);
    CHECK_INT(seglog_compact(s, &v, NULL), 0); /* compacted lines read the same */
    json_decref(v);
    CHECK_INT(raw_matches_tree(s, NULL, &nraw, &ntree), NF * ROUNDS - 2);
    seglog_close(s);

    /* storh's lines and odd writers' (a key after data, data twice) */
    const char *odd[] = {
        "{\"op\":\"put\",\"id\":\"018bcfe5-6805-7000-8000-000000000006\",\"data\":{\"a\":1},"
        "\"x\":2}",
        "{\"op\":\"put\",\"id\":\"018bcfe5-6806-7000-8000-000000000007\",\"data\":{\"a\":1},"
        "\"data\":{\"b\":2}}",
        "{\"id\":\"018bcfe5-6807-7000-8000-000000000008\",\"op\":\"put\",\"data\":{\"a\":1}}",
        "{\"op\":\"put\",\"id\":\"018bcfe5-6808-7000-8000-000000000009\",\"data\":{\"a\":1} }",
        "{\"op\":\"put\",\"id\":\"018bcfe5-6809-7000-8000-00000000000a\",\"data\":{\"a\":\"x\"}}",
        "{\"op\":\"delete\",\"id\":\"018bcfe5-6809-7000-8000-00000000000a\"}",
        "{\"op\":\"put\",\"id\":\"018bcfe5-680a-7000-8000-00000000000b\",\"data\":{\"a\":\"\\/\"}}",
    };
    buf seg = BUF_INIT;
    write_storh_log("phpraw", odd, sizeof odd / sizeof *odd, &seg);
    buf_free(&seg);
    s = logkit_open(root, "phpraw", 0);
    CHECK(s != NULL);
    nraw = ntree = 0;
    CHECK_INT(raw_matches_tree(s, NULL, &nraw, &ntree), 10);
    CHECK_INT(nraw, 1); /* 018...0002: storh's spelling of a canonical put */
    seglog_close(s);
}

static const test_case tests[] = {
    TEST_ENTRY(reads_catch_up_and_skip_a_line_being_written),
    TEST_ENTRY(storh_lines_decode_as_the_whole_envelope),
    TEST_ENTRY(reads_cross_chunk_boundaries),
    TEST_ENTRY(sealed_segments_are_read_to_their_size),
    TEST_ENTRY(raw_reads_match_the_decoded_path),
};

TMPDIR_TEST_MAIN(root, tests)
