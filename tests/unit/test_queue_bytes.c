/* The queue's byte path (queue_bytes.c) against its tree path (queue.c):
 * the same bodies give the same log lines, ids, state and claim answers,
 * live and after a replay; bodies the byte path does not take are left to
 * the tree path. */
#include <sys/stat.h>
#include <unistd.h>

#include "../test.h"
#include "../tmpdir.h"
#include "frame.h"
#include "fsx.h"
#include "queue.h"
#include "sjson.h"
#include "../support/queuekit.h"

static char root[PATH_MAX];

#include "../support/js.h"

static queue *open_q(const char *name)
{
    return queuekit_open(root, name);
}

/* The JSON of each event of a queue's log, its ts cut (the two paths may
 * run a second apart), one a line; NULL when a frame does not check. */
static char *events_of(const char *name)
{
    char p[PATH_MAX];
    snprintf(p, sizeof p, "%s/%s/queue.log", root, name);
    buf b = BUF_INIT, out = BUF_INIT;
    fsx_read_all(p, &b, NULL);
    for (size_t at = 0; at < b.len;) {
        char *nl = memchr(b.data + at, '\n', b.len - at);
        const char *j;
        size_t jl;
        if (!nl || frame_decode(b.data + at, (size_t)(nl - b.data) - at, true, &j, &jl, NULL)) {
            buf_free(&b);
            buf_free(&out);
            return NULL;
        }
        const char *ts = strstr(j, ",\"ts\":");
        buf_append(&out, j, ts && ts < j + jl ? (size_t)(ts - j) : jl);
        buf_appendc(&out, '\n');
        at = (size_t)(nl - b.data) + 1;
    }
    buf_free(&b);
    return out.data ? out.data : strdup("");
}

/* s with every id ("id":"<36>") masked: ids made on each side differ
 * (enqueue_both compares the given ones). */
static char *masked(char *s)
{
    for (char *p = s; p && (p = strstr(p, "\"id\":\"")) != NULL;) {
        p += 6;
        for (int i = 0; i < UUID7_LEN && p[i] && p[i] != '"'; i++)
            p[i] = 'x';
    }
    return s;
}

/* The tree path's answer to a claim of n, as HTTP encoded it. */
static char *claim_tree(queue *q, size_t n)
{
    json_t *jobs = NULL;
    if (queue_claim(q, n, &jobs, NULL))
        return NULL;
    buf b = BUF_INIT;
    for (size_t i = 0; i < json_array_size(jobs); i++) {
        if (i)
            buf_appendc(&b, ',');
        sjson_encode(&b, json_array_get(jobs, i), 0, NULL);
    }
    json_decref(jobs);
    return b.data ? b.data : strdup("");
}

static char *claim_bytes(queue *q, size_t n, size_t *got)
{
    buf b = BUF_INIT;
    if (queue_claim_bytes(q, n, &b, got, NULL)) {
        buf_free(&b);
        return NULL;
    }
    return b.data ? b.data : strdup("");
}

/* Enqueues body through both paths, into queues tree and bytes. */
static void enqueue_both(queue *tree, queue *bytes, const char *body)
{
    queue_jobs qj = QUEUE_JOBS_INIT;
    CHECK(queue_jobs_read(body, strlen(body), &qj));
    char(*ids)[UUID7_LEN + 1] = calloc(qj.n + 1, sizeof *ids);
    CHECK_INT(queue_enqueue_jobs(bytes, &qj, ids, NULL), 0);
    json_t *jobs = js(body), *tids = NULL;
    if (json_is_object(jobs))
        jobs = json_pack("[o]", jobs);
    CHECK_INT(queue_enqueue_many(tree, jobs, &tids, NULL), 0);
    CHECK_INT(json_array_size(tids), qj.n);
    for (size_t i = 0; i < qj.n; i++) {
        const char *t = json_string_value(json_array_get(tids, i));
        /* given ids are kept; made ones are new on each side */
        if (qj.v[i].id)
            CHECK_STR(ids[i], t);
        else
            CHECK(uuid7_is_valid(ids[i], strlen(ids[i])));
    }
    json_decref(tids);
    json_decref(jobs);
    free(ids);
    queue_jobs_free(&qj);
}

static const char *const bodies[] = {
    "[{\"id\":\"018bcfe5-6800-7000-8000-00000000000a\",\"payload\":{\"to\":\"a@b/c\",\"n\":1}},"
    "{\"id\":\"018bcfe5-6801-7000-8000-00000000000b\",\"payload\":[\"a\",\"b\"]},"
    "{\"id\":\"018bcfe5-6802-7000-8000-00000000000c\",\"kind\":\"post\",\"bucket\":3},"
    "{\"id\":\"018bcfe5-6803-7000-8000-00000000000d\",\"payload\":{\"s\":\"\\\"q\\\\ \\n\","
    "\"u\":\"caf\xc3\xa9 \xf0\x9f\x98\x80\",\"deep\":{\"a\":[1,{\"b\":null}],\"t\":true}}},"
    "{\"id\":7,\"payload\":\"not an object\",\"x\":-12},"
    "{\"payload\":{\"made\":\"id\"}}]",
    /* one job, not in a list */
    "{\"id\":\"018bcfe5-6804-7000-8000-00000000000e\",\"payload\":{\"one\":1}}",
    /* a known id again: pending again with the new payload */
    "[{\"id\":\"018bcfe5-6800-7000-8000-00000000000a\",\"payload\":{\"to\":\"again\"}}]",
    "[]",
};

TEST(byte_path_writes_and_answers_as_the_tree_path)
{
    queue *tree = open_q("tree"), *bytes = open_q("bytes");
    for (size_t i = 0; i < sizeof bodies / sizeof *bodies; i++)
        enqueue_both(tree, bytes, bodies[i]);
    /* the same lines, but for the ids each path made */
    char *te = masked(events_of("tree")), *be = masked(events_of("bytes"));
    CHECK(te && be);
    CHECK_STR(be, te);
    size_t lines = 0;
    for (char *p = be; p && (p = strchr(p, '\n')) != NULL; p++)
        lines++;
    CHECK_INT(lines, 8);
    free(te);
    free(be);
    /* claims, two then the rest, give the same bytes (made ids aside) */
    size_t n;
    char *t1 = claim_tree(tree, 2), *b1 = claim_bytes(bytes, 2, &n);
    CHECK_INT(n, 2);
    CHECK_STR(b1, t1);
    /* a list payload: the state keeps what storh's does, [] */
    CHECK(strstr(b1, "\"018bcfe5-6801-7000-8000-00000000000b\",\"payload\":[]}") != NULL);
    char *t2 = masked(claim_tree(tree, 100)), *b2 = masked(claim_bytes(bytes, 100, &n));
    CHECK_INT(n, 5);
    CHECK_STR(b2, t2);
    CHECK(strstr(b2, "\"payload\":{\"made\":\"id\"}") != NULL);
    CHECK(strstr(b2, "\"payload\":{\"to\":\"again\"}") != NULL);
    char *t3 = claim_bytes(bytes, 5, &n);
    CHECK_INT(n, 0);
    CHECK_STR(t3, "");
    free(t1);
    free(b1);
    free(t2);
    free(b2);
    free(t3);
    queue_close(tree);
    queue_close(bytes);
}

/* The state a replay builds from the byte path's lines (payloads kept as
 * their bytes) answers claims as the live state did, both as bytes and as
 * trees, and verifies. */
TEST(replayed_payload_bytes_answer_as_trees_did)
{
    queue *tree = open_q("tree"), *bytes = open_q("bytes");
    enqueue_both(tree, bytes, bodies[0]);
    enqueue_both(tree, bytes, bodies[1]);
    queue_close(bytes);
    bytes = open_q("bytes");
    json_t *v = NULL;
    CHECK_INT(queue_verify(bytes, &v, NULL), 0);
    CHECK(json_is_true(json_object_get(v, "ok")));
    json_decref(v);
    json_t *tj = NULL, *bj = NULL;
    CHECK_INT(queue_claim(tree, 3, &tj, NULL), 0);
    CHECK_INT(queue_claim(bytes, 3, &bj, NULL), 0);
    CHECK(json_equal(tj, bj)); /* the first three have given ids */
    json_decref(tj);
    json_decref(bj);
    size_t n;
    char *t = masked(claim_tree(tree, 100)), *b = masked(claim_bytes(bytes, 100, &n));
    CHECK_INT(n, 4);
    CHECK_STR(b, t);
    free(t);
    free(b);
    /* completed and kept done: the bytes go with the payload */
    json_t *ids = js("[\"018bcfe5-6800-7000-8000-00000000000a\"]");
    CHECK_INT(queue_complete_many(bytes, ids, true, &n, NULL), 0);
    CHECK_INT(n, 1);
    json_decref(ids);
    queue_close(bytes);
    bytes = open_q("bytes");
    CHECK_INT(queue_verify(bytes, &v, NULL), 0);
    CHECK(json_is_true(json_object_get(v, "ok")));
    json_decref(v);
    queue_close(bytes);
    queue_close(tree);
}

/* What the byte path does not take, the tree path gets: not canonical
 * bytes, jobs that are not objects, ids that are not valid. */
TEST(bodies_not_in_canonical_form_are_left_to_the_tree_path)
{
    static const char *const no[] = {
        "[ {\"a\":1}]",                /* whitespace */
        "[{\"a\":1.5}]",               /* a float */
        "[{\"a\":\"\\u00e9\"}]",       /* a \u escape */
        "[{\"a\":\"x\\/y\"}]",         /* an escape the encoder does not write */
        "[{\"id\":\"nope\",\"a\":1}]", /* an invalid id */
        "[1]",                         /* a job that is not an object */
        "[{}]",                        /* {} is written [] */
        "[{\"0\":1}]",                 /* an integer key */
        "[{\"a\":1,\"a\":2}]",         /* a duplicate key */
        "[{\"a\":1}",                  /* cut */
        "",
        "\"job\"",
    };
    for (size_t i = 0; i < sizeof no / sizeof *no; i++) {
        queue_jobs qj = QUEUE_JOBS_INIT;
        if (queue_jobs_read(no[i], strlen(no[i]), &qj))
            CHECK_STR(no[i], "(taken by the byte path)");
        queue_jobs_free(&qj);
    }
    static const char *const yes[] = {"[]", "{\"a\":1}", "[{\"payload\":[1,2]},{\"b\":[]}]"};
    static const size_t nyes[] = {0, 1, 2};
    for (size_t i = 0; i < sizeof yes / sizeof *yes; i++) {
        queue_jobs qj = QUEUE_JOBS_INIT;
        CHECK(queue_jobs_read(yes[i], strlen(yes[i]), &qj));
        CHECK_INT(qj.n, nyes[i]);
        queue_jobs_free(&qj);
    }
}

/* A complete's ids read from its body's bytes complete what the decoded
 * body's do, with the same lines; other bodies are left to the tree path. */
TEST(complete_ids_read_from_the_body_as_decoded)
{
    queue *tree = open_q("tree"), *bytes = open_q("bytes");
    enqueue_both(tree, bytes, bodies[0]);
    size_t n;
    char *t = claim_tree(tree, 100), *b = claim_bytes(bytes, 100, &n);
    free(t);
    free(b);
    static const char body[] = "{\"ids\":[\"018bcfe5-6800-7000-8000-00000000000a\","
                               "\"018bcfe5-6802-7000-8000-00000000000c\","
                               "\"018bcfe5-6800-7000-8000-00000000000a\","
                               "\"018bcfe5-6900-7000-8000-00000000000f\"],\"other\":1}";
    queue_ids qi = QUEUE_IDS_INIT;
    CHECK(queue_ids_read(body, strlen(body), &qi));
    CHECK_INT(qi.n, 4);
    size_t bn = 9, tn = 9;
    CHECK_INT(queue_complete_ids(bytes, &qi, true, &bn, NULL), 0);
    json_t *dec = js(body);
    CHECK_INT(queue_complete_many(tree, json_object_get(dec, "ids"), true, &tn, NULL), 0);
    CHECK_INT(bn, 2); /* twice named, counted once; unknown: not counted */
    CHECK_INT(tn, bn);
    json_decref(dec);
    queue_ids_free(&qi);
    char *te = masked(events_of("tree")), *be = masked(events_of("bytes"));
    CHECK(te && be);
    CHECK_STR(be, te);
    free(te);
    free(be);
    static const char *const no[] = {
        "{\"ids\": [\"018bcfe5-6800-7000-8000-00000000000a\"]}", /* whitespace */
        "{\"ids\":[\"nope\"]}",
        "{\"ids\":[7]}",
        "{\"ids\":\"018bcfe5-6800-7000-8000-00000000000a\"}",
        "{\"other\":[]}",
        "[\"018bcfe5-6800-7000-8000-00000000000a\"]",
        "",
    };
    for (size_t i = 0; i < sizeof no / sizeof *no; i++) {
        if (queue_ids_read(no[i], strlen(no[i]), &qi))
            CHECK_STR(no[i], "(taken by the byte path)");
        queue_ids_free(&qi);
    }
    CHECK(queue_ids_read("{\"ids\":[]}", 10, &qi));
    CHECK_INT(qi.n, 0);
    queue_ids_free(&qi);
    queue_close(tree);
    queue_close(bytes);
}

/* The counts of a queue, as JSON text. */
static char *counts_of(queue *q)
{
    json_t *c = NULL;
    if (queue_counts(q, &c, NULL))
        return NULL;
    char *t = json_dumps(c, JSON_SORT_KEYS | JSON_COMPACT);
    json_decref(c);
    return t;
}

/* Checks that a second handle, which reads the log, sees what q sees. */
static void same_as_replay(queue *q, const char *name)
{
    queue *r = open_q(name);
    char *a = counts_of(q), *b = counts_of(r);
    CHECK(a && b);
    if (a && b)
        CHECK_STR(b, a);
    free(a);
    free(b);
    queue_close(r);
}

/* The claimed jobs of a claim_bytes answer, as a JSON array. */
static json_t *claimed(queue *q, size_t n)
{
    size_t got;
    char *b = claim_bytes(q, n, &got);
    buf all = BUF_INIT;
    buf_appendc(&all, '[');
    buf_appends(&all, b ? b : "");
    buf_appendc(&all, ']');
    json_t *v = js(all.data);
    CHECK_INT(json_array_size(v), got);
    free(b);
    buf_free(&all);
    return v;
}

/* Batches longer than the walk's look-ahead (QUEUE_AHEAD), with stale
 * claim-order entries in the walk, duplicate and unknown ids in a
 * complete, jobs forgotten and kept done: the state each operation applies
 * from its own notes is the state a reader of its lines replays. */
TEST(big_batches_apply_as_their_replay)
{
    enum { N = 300, AGAIN = 40, FIRST = 100 };
    char(*given)[UUID7_LEN + 1] = calloc(N, sizeof *given);
    CHECK_INT(uuid7_generate_many(given, N, NULL), 0);
    /* every 7th job gives its id; the others get one made, in runs */
    buf body = BUF_INIT;
    buf_appendc(&body, '[');
    for (int i = 0; i < N; i++)
        buf_printf(&body, "%s{%s%s%s\"payload\":{\"n\":%d}}", i ? "," : "",
                   i % 7 ? "" : "\"id\":\"", i % 7 ? "" : given[i], i % 7 ? "" : "\",", i);
    buf_appendc(&body, ']');
    queue *q = open_q("big");
    queue_jobs qj = QUEUE_JOBS_INIT;
    CHECK(queue_jobs_read(body.data, body.len, &qj));
    CHECK_INT(qj.n, N);
    char(*ids)[UUID7_LEN + 1] = calloc(N, sizeof *ids);
    CHECK_INT(queue_enqueue_jobs(q, &qj, ids, NULL), 0);
    queue_jobs_free(&qj);
    for (int i = 0; i < N; i++) {
        CHECK(uuid7_is_valid(ids[i], UUID7_LEN));
        if (i % 7 == 0)
            CHECK_STR(ids[i], given[i]);
        else if (i % 7 > 1) /* made ids of one run come in order */
            CHECK(strcmp(ids[i - 1], ids[i]) < 0);
    }
    same_as_replay(q, "big");
    /* AGAIN of the first jobs enqueued again: their first order entries
     * turn stale inside the first claim's walk */
    buf_reset(&body);
    buf_appendc(&body, '[');
    for (int i = 0; i < AGAIN; i++)
        buf_printf(&body, "%s{\"id\":\"%s\",\"payload\":{\"again\":%d}}", i ? "," : "", ids[2 * i],
                   i);
    buf_appendc(&body, ']');
    CHECK(queue_jobs_read(body.data, body.len, &qj));
    char(*ids2)[UUID7_LEN + 1] = calloc(AGAIN, sizeof *ids2);
    CHECK_INT(queue_enqueue_jobs(q, &qj, ids2, NULL), 0);
    queue_jobs_free(&qj);
    same_as_replay(q, "big");
    json_t *first = claimed(q, FIRST), *rest = claimed(q, 10 * N);
    CHECK_INT(json_array_size(first), FIRST);
    CHECK_INT(json_array_size(rest), N - FIRST);
    same_as_replay(q, "big");
    /* each job once; the ones enqueued again come last, with their new payload */
    for (int i = 0; i < AGAIN; i++) {
        json_t *j = json_array_get(rest, N - FIRST - AGAIN + (size_t)i);
        CHECK_STR(json_string_value(json_object_get(j, "id")), ids[2 * i]);
        CHECK_INT(json_integer_value(json_object_get(json_object_get(j, "payload"), "again")), i);
    }
    json_t *seen = json_object();
    json_t *both[2] = {first, rest};
    for (int k = 0; k < 2; k++)
        for (size_t i = 0; i < json_array_size(both[k]); i++)
            json_object_set_new(
                seen, json_string_value(json_object_get(json_array_get(both[k], i), "id")),
                json_true());
    CHECK_INT(json_object_size(seen), N);
    json_decref(seen);
    /* complete: the first half forgotten, the rest kept done; each named
     * twice in its batch, with an id never enqueued */
    for (int half = 0; half < 2; half++) {
        buf_reset(&body);
        buf_appends(&body, "{\"ids\":[");
        for (int i = half * N / 2; i < (half + 1) * N / 2; i++)
            buf_printf(&body, "\"%s\",\"%s\",", ids[i], ids[i]);
        buf_appends(&body, "\"018bcfe5-6900-7000-8000-00000000000f\"]}");
        queue_ids qi = QUEUE_IDS_INIT;
        CHECK(queue_ids_read(body.data, body.len, &qi));
        size_t n = 0;
        CHECK_INT(queue_complete_ids(q, &qi, half == 1, &n, NULL), 0);
        CHECK_INT(n, N / 2);
        queue_ids_free(&qi);
        same_as_replay(q, "big");
    }
    char *c = counts_of(q);
    CHECK_STR(c, "{\"done\":150,\"pending\":0,\"processing\":0}");
    free(c);
    queue_close(q);
    json_decref(first);
    json_decref(rest);
    buf_free(&body);
    free(given);
    free(ids);
    free(ids2);
}

/* One job at a time, a claim after every third: the claim order is
 * reserved a job at a time and its consumed front reclaimed as the queue
 * runs (queue__qstate_reserve), and the jobs still come out in order, as a
 * replay of the log has them. */
TEST(one_job_at_a_time_keeps_its_order_as_the_replay)
{
    enum { N = 3000 };
    queue *q = open_q("drip");
    long next = 0;
    for (int i = 0; i < N; i++) {
        char body[64];
        snprintf(body, sizeof body, "{\"payload\":{\"n\":%d}}", i);
        queue_jobs qj = QUEUE_JOBS_INIT;
        CHECK(queue_jobs_read(body, strlen(body), &qj));
        char ids[1][UUID7_LEN + 1];
        CHECK_INT(queue_enqueue_jobs(q, &qj, ids, NULL), 0);
        queue_jobs_free(&qj);
        if (i % 3 == 2) {
            json_t *c = claimed(q, 2);
            for (size_t k = 0; k < json_array_size(c); k++, next++) {
                json_t *p = json_object_get(json_array_get(c, k), "payload");
                if (json_integer_value(json_object_get(p, "n")) != next)
                    CHECK_INT(json_integer_value(json_object_get(p, "n")), next);
            }
            json_decref(c);
        }
    }
    same_as_replay(q, "drip");
    queue *r = open_q("drip");
    json_t *rest = claimed(r, 10 * N);
    CHECK_INT(json_array_size(rest), N - next);
    for (size_t k = 0; k < json_array_size(rest); k++) {
        json_t *p = json_object_get(json_array_get(rest, k), "payload");
        if (json_integer_value(json_object_get(p, "n")) != next + (long)k)
            CHECK_INT(json_integer_value(json_object_get(p, "n")), next + (long)k);
    }
    json_decref(rest);
    queue_close(r);
    queue_close(q);
}

/* ---- PHP storh's lines (STORH_PHP_DIR) ---- */

static const char php_script[] =
    "<?php\n"
    "require getenv('STORH_PHP_DIR') . '/vendor/autoload.php';\n"
    "[, $root, $name, $what] = $argv;\n"
    "$q = new Storh\\Queue($root, $name);\n"
    "const F = JSON_UNESCAPED_SLASHES | JSON_UNESCAPED_UNICODE | JSON_PRESERVE_ZERO_FRACTION;\n"
    "if ($what === 'enqueue') {\n"
    "    $q->enqueue(['to' => 'a/b', 'n' => 1, 'neg' => -7, 't' => true, 'z' => null]);\n"
    "    $q->enqueue(['s' => \"q\\\"b\\\\s\\n\\t\\x01\", 'u' => 'caf\xc3\xa9 \xe2\x80\xa8 "
    "\xf0\x9f\x98\x80']);\n"
    "    $q->enqueue(['deep' => ['a' => [1, ['b' => [true]]]], 'e' => [], 'l' => ['x', 'y']]);\n"
    "    $q->enqueue(['r' => 1.5, 'one' => 1.0]);\n"
    "    $q->enqueue([7 => 'x', 'k' => 'v']);\n"
    "    $q->enqueue(['a', 'b']);\n"
    "    $q->enqueueMany([['n' => 1], ['n' => 2], ['payload' => ['p' => 3]]]);\n"
    "} else {\n"
    "    $out = [];\n"
    "    foreach ($q->claimMany(1000) as $r) {\n"
    "        $out[] = ['id' => $r->id(), 'payload' => $r->data()];\n"
    "    }\n"
    "    echo json_encode($out, F);\n"
    "}\n";

static int php(const char *name, const char *what, const char *out)
{
    char script[PATH_MAX], cmd[PATH_MAX * 4];
    snprintf(script, sizeof script, "%s/q.php", root);
    FILE *f = fopen(script, "w");
    if (!f)
        return -1;
    fputs(php_script, f);
    fclose(f);
    snprintf(cmd, sizeof cmd, "php '%s' '%s' '%s' '%s' > '%s'", script, root, name, what,
             out ? out : "/dev/null");
    return system(cmd);
}

/* PHP storh claims a copy of queue name, storhd claims the queue itself:
 * storhd's answer must be byte for byte PHP's json_encode of its own. */
static void claims_as_php(const char *name, size_t want_n)
{
    char out[PATH_MAX], cmd[PATH_MAX * 3], copy[128];
    snprintf(copy, sizeof copy, "%s-php", name);
    snprintf(out, sizeof out, "%s/%s.json", root, copy);
    snprintf(cmd, sizeof cmd, "cp -r '%s/%s' '%s/%s'", root, name, root, copy);
    CHECK_INT(system(cmd), 0);
    CHECK_INT(php(copy, "claim", out), 0);
    buf want = BUF_INIT, all = BUF_INIT;
    CHECK_INT(fsx_read_all(out, &want, NULL), 0);
    queue *q = open_q(name);
    size_t n;
    char *got = claim_bytes(q, 1000, &n);
    CHECK_INT(n, want_n);
    buf_appendc(&all, '[');
    buf_appends(&all, got ? got : "");
    buf_appendc(&all, ']');
    CHECK_STR(all.data, want.data ? want.data : "");
    free(got);
    buf_free(&all);
    buf_free(&want);
    queue_close(q);
}

/* PHP storh enqueues (its lines: payloads kept as bytes where canonical)
 * and storhd's claim answers as PHP's; and the same for what storhd's byte
 * path enqueued. */
TEST(php_storh_lines_claimed_as_php_claims_them)
{
    if (!getenv("STORH_PHP_DIR")) {
        CHECK(!"STORH_PHP_DIR names the PHP storh checkout");
        return;
    }
    CHECK_INT(php("fromphp", "enqueue", NULL), 0);
    claims_as_php("fromphp", 9);
    queue *q = open_q("fromstorhd"), *t = open_q("tree");
    enqueue_both(t, q, bodies[0]);
    queue_close(t);
    queue_close(q);
    claims_as_php("fromstorhd", 6);
}

static const test_case tests[] = {
    TEST_ENTRY(byte_path_writes_and_answers_as_the_tree_path),
    TEST_ENTRY(replayed_payload_bytes_answer_as_trees_did),
    TEST_ENTRY(bodies_not_in_canonical_form_are_left_to_the_tree_path),
    TEST_ENTRY(complete_ids_read_from_the_body_as_decoded),
    TEST_ENTRY(big_batches_apply_as_their_replay),
    TEST_ENTRY(one_job_at_a_time_keeps_its_order_as_the_replay),
};

/* run only when named: registered with -DSTORH_PHP_DIR */
static const test_case named[] = {
    TEST_ENTRY(php_storh_lines_claimed_as_php_claims_them),
};

TMPDIR_TEST_MAIN_WITH_NAMED(root, tests, named)
