#include <dirent.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../test.h"
#include "../tmpdir.h"
#include "frame.h"
#include "fsx.h"
#include "queue.h"
#include "queue_int.h"
#include "sjson.h"
#include "../support/queuekit.h"

static char root[PATH_MAX];

static queue *open_q(const char *name)
{
    return queuekit_open(root, name);
}

#include "../support/js.h"

TEST(events_are_storh_bytes)
{
    queue *q = open_q("mail");
    json_t *jobs = js("[{\"id\":\"018bcfe5-6800-7000-8000-000000000000\",\"payload\":{\"to\":\"a@b/"
                      "c\"}},{\"id\":\"018bcfe5-6802-7000-8000-000000000002\",\"payload\":{}}]");
    json_t *ids;
    CHECK_INT(queue_enqueue_many(q, jobs, &ids, NULL), 0);
    CHECK_INT(json_array_size(ids), 2);
    json_decref(ids);
    json_decref(jobs);
    char *log = queuekit_log(root, "mail");
    /* same JSON as storh's example, with today's ts */
    CHECK(strstr(log, "\t{\"op\":\"enqueue\",\"id\":\"018bcfe5-6800-7000-8000-000000000000\","
                      "\"payload\":{\"to\":\"a@b/c\"},\"ts\":") != NULL);
    CHECK(strstr(log, "\"payload\":[],\"ts\":") != NULL);
    CHECK_PREFIX(log, "101\t");
    free(log);
    json_t *claimed;
    CHECK_INT(queue_claim(q, 1, &claimed, NULL), 0);
    CHECK_STR(json_string_value(json_object_get(json_array_get(claimed, 0), "id")),
              "018bcfe5-6800-7000-8000-000000000000");
    CHECK_STR(json_string_value(
                  json_object_get(json_object_get(json_array_get(claimed, 0), "payload"), "to")),
              "a@b/c");
    json_decref(claimed);
    json_t *cids = js("[\"018bcfe5-6800-7000-8000-000000000000\"]");
    size_t n;
    CHECK_INT(queue_complete_many(q, cids, true, &n, NULL), 0);
    CHECK_INT(n, 1);
    CHECK_INT(queue_complete_many(q, cids, true, &n, NULL), 0);
    CHECK_INT(n, 0); /* not processing any more: ignored, nothing written */
    json_decref(cids);
    log = queuekit_log(root, "mail");
    CHECK(strstr(log, "\t{\"op\":\"claim\",\"id\":\"018bcfe5-6800-7000-8000-000000000000\","
                      "\"ts\":") != NULL);
    CHECK(strstr(log, "{\"op\":\"complete\",\"id\":\"018bcfe5-6800-7000-8000-000000000000\","
                      "\"done\":true,\"ts\":") != NULL);
    free(log);
    CHECK_INT(queuekit_count(q, "pending"), 1);
    CHECK_INT(queuekit_count(q, "done"), 1);
    CHECK_INT(queue_purge_done(q, 0, &n, NULL), 0);
    CHECK_INT(n, 1);
    CHECK_INT(queuekit_count(q, "done"), 0);
    queue_close(q);
}

TEST(fifo_requeue_and_replay)
{
    queue *q = open_q("fifo");
    json_t *jobs = json_array();
    for (int i = 0; i < 10; i++)
        json_array_append_new(jobs, json_pack("{si}", "n", i));
    json_t *ids;
    CHECK_INT(queue_enqueue_many(q, jobs, &ids, NULL), 0);
    json_decref(jobs);
    json_t *c;
    CHECK_INT(queue_claim(q, 3, &c, NULL), 0);
    CHECK_INT(json_array_size(c), 3);
    for (int i = 0; i < 3; i++)
        CHECK_INT(json_integer_value(json_object_get(
                      json_object_get(json_array_get(c, (size_t)i), "payload"), "n")),
                  i);
    json_decref(c);
    size_t n;
    CHECK_INT(queue_requeue_timed_out(q, 0, &n, NULL), 0);
    CHECK_INT(n, 3);
    /* requeued jobs go to the back */
    CHECK_INT(queue_claim(q, 1, &c, NULL), 0);
    CHECK_INT(
        json_integer_value(json_object_get(json_object_get(json_array_get(c, 0), "payload"), "n")),
        3);
    json_decref(c);
    json_t *before;
    queue_counts(q, &before, NULL);
    queue_close(q);
    q = open_q("fifo");
    json_t *after;
    queue_counts(q, &after, NULL);
    CHECK(json_equal(before, after));
    json_decref(before);
    json_decref(after);
    CHECK_INT(queue_claim(q, 100, &c, NULL), 0);
    CHECK_INT(json_array_size(c), 9);
    CHECK_INT(
        json_integer_value(json_object_get(json_object_get(json_array_get(c, 8), "payload"), "n")),
        2);
    json_decref(c);
    CHECK_INT(queue_claim(q, 5, &c, NULL), 0);
    CHECK_INT(json_array_size(c), 0);
    json_decref(c);
    json_t *v;
    CHECK_INT(queue_verify(q, &v, NULL), 0);
    CHECK(json_is_true(json_object_get(v, "ok")));
    json_decref(v);
    json_decref(ids);
    queue_close(q);
}

/* Replay follows storh's rules for what left the queue: a complete with
 * "done":true puts the id in done even when it was gone or never seen, one
 * without takes it out of done; a worked-off job holds no state. */
TEST(complete_and_purge_replay_like_storh)
{
    const char *ids[] = {"01a23798-135b-7099-b12f-747a2712eae3",
                         "01a23798-135b-7099-b12f-747a2712eae4"};
    char ev[6][200];
    snprintf(ev[0], sizeof ev[0],
             "{\"op\":\"enqueue\",\"id\":\"%s\",\"payload\":{\"a\":1},\"ts\":1}", ids[0]);
    snprintf(ev[1], sizeof ev[1], "{\"op\":\"claim\",\"id\":\"%s\",\"ts\":2}", ids[0]);
    snprintf(ev[2], sizeof ev[2], "{\"op\":\"complete\",\"id\":\"%s\",\"done\":false,\"ts\":3}",
             ids[0]);
    /* after it left: done again (storh puts it in done) */
    snprintf(ev[3], sizeof ev[3], "{\"op\":\"complete\",\"id\":\"%s\",\"done\":true,\"ts\":4}",
             ids[0]);
    /* an id never enqueued, completed as done */
    snprintf(ev[4], sizeof ev[4], "{\"op\":\"complete\",\"id\":\"%s\",\"done\":true,\"ts\":5}",
             ids[1]);
    snprintf(ev[5], sizeof ev[5], "{\"op\":\"purge\",\"id\":\"%s\",\"ts\":6}", ids[0]);
    char dir[PATH_MAX], p[PATH_MAX];
    snprintf(dir, sizeof dir, "%s/replay", root);
    snprintf(p, sizeof p, "%s/queue.log", dir);
    fsx_mkdirs(dir, false, NULL);
    buf b = BUF_INIT;
    for (int i = 0; i < 6; i++)
        frame_encode(&b, ev[i], strlen(ev[i]));
    FILE *f = fopen(p, "w");
    fwrite(b.data, 1, b.len, f);
    fclose(f);
    buf_free(&b);
    queue *q = open_q("replay");
    CHECK_INT(queuekit_count(q, "pending"), 0);
    CHECK_INT(queuekit_count(q, "processing"), 0);
    CHECK_INT(queuekit_count(q, "done"), 1); /* ids[1], never enqueued; ids[0] was purged */
    json_t *v;
    CHECK_INT(queue_verify(q, &v, NULL), 0);
    CHECK(json_is_true(json_object_get(v, "ok")));
    json_decref(v);
    size_t n = 0;
    CHECK_INT(queue_purge_done(q, 0, &n, NULL), 0);
    CHECK_INT(n, 1);
    CHECK_INT(queuekit_count(q, "done"), 0);
    queue_close(q);
}

/* Two processes claim from one queue: every job exactly once. */
TEST(two_processes_never_claim_twice)
{
    enum { JOBS = 400 };
    queue *q = open_q("shared");
    json_t *jobs = json_array();
    for (int i = 0; i < JOBS; i++)
        json_array_append_new(jobs, json_pack("{si}", "n", i));
    json_t *ids;
    CHECK_INT(queue_enqueue_many(q, jobs, &ids, NULL), 0);
    json_decref(jobs);
    json_decref(ids);
    queue_close(q);
    int fds[2][2];
    pid_t pids[2];
    for (int w = 0; w < 2; w++) {
        if (pipe(fds[w]) != 0)
            return;
        pids[w] = fork();
        if (pids[w] == 0) {
            close(fds[w][0]);
            queue *cq = open_q("shared");
            FILE *out = fdopen(fds[w][1], "w");
            for (;;) {
                json_t *c;
                if (queue_claim(cq, 3, &c, NULL) != 0)
                    _exit(3);
                if (json_array_size(c) == 0) {
                    json_decref(c);
                    break;
                }
                size_t i;
                json_t *j;
                json_t *done = json_array();
                json_array_foreach (c, i, j) {
                    fprintf(out, "%s\n", json_string_value(json_object_get(j, "id")));
                    json_array_append(done, json_object_get(j, "id"));
                }
                size_t n;
                queue_complete_many(cq, done, true, &n, NULL);
                json_decref(done);
                json_decref(c);
            }
            fclose(out);
            queue_close(cq);
            _exit(0);
        }
        close(fds[w][1]);
    }
    char *seen[JOBS * 2];
    int nseen = 0, per[2] = {0, 0};
    for (int w = 0; w < 2; w++) {
        FILE *in = fdopen(fds[w][0], "r");
        char line[64];
        while (fgets(line, sizeof line, in) && nseen < JOBS * 2) {
            line[strcspn(line, "\n")] = '\0';
            seen[nseen++] = strdup(line);
            per[w]++;
        }
        fclose(in);
        int st;
        waitpid(pids[w], &st, 0);
        CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    }
    CHECK_INT(nseen, JOBS);
    int dups = 0;
    for (int i = 0; i < nseen; i++)
        for (int k = i + 1; k < nseen; k++)
            if (!strcmp(seen[i], seen[k]))
                dups++;
    CHECK_INT(dups, 0);
    for (int i = 0; i < nseen; i++)
        free(seen[i]);
    q = open_q("shared");
    CHECK_INT(queuekit_count(q, "done"), JOBS);
    CHECK_INT(queuekit_count(q, "pending"), 0);
    json_t *v;
    CHECK_INT(queue_verify(q, &v, NULL), 0);
    CHECK(json_is_true(json_object_get(v, "ok")));
    json_decref(v);
    queue_close(q);
    printf("claims per process: %d / %d\n", per[0], per[1]);
}

TEST(bad_input_changes_nothing)
{
    queue *q = open_q("strict");
    char *before = queuekit_log(root, "strict");
    json_t *jobs = js("[{\"a\":1},{\"id\":\"nope\",\"payload\":{}}]");
    json_t *ids = NULL;
    storh_err err;
    CHECK_INT(queue_enqueue_many(q, jobs, &ids, &err), STORH_EINVAL);
    CHECK(strstr(err.msg, "Job 1") != NULL);
    json_decref(jobs);
    jobs = js("[1]");
    CHECK_INT(queue_enqueue_many(q, jobs, &ids, &err), STORH_EINVAL);
    json_decref(jobs);
    json_t *c;
    CHECK_INT(queue_claim(q, 0, &c, &err), STORH_EINVAL);
    json_t *bad = js("[\"x\"]");
    size_t n;
    CHECK_INT(queue_complete_many(q, bad, true, &n, &err), STORH_EINVAL);
    json_decref(bad);
    char *after = queuekit_log(root, "strict");
    CHECK_STR(after, before);
    free(before);
    free(after);
    queue_close(q);
    CHECK_INT(queue_open(root, "absent", false, &q, &err), STORH_ENOTFOUND);
}

/* verify says why it could not read the log, not only that it could not. */
TEST(verify_reports_why_the_log_is_unreadable)
{
    queue *q = open_q("gone");
    json_t *jobs = js("[{}]"), *ids, *v;
    CHECK_INT(queue_enqueue_many(q, jobs, &ids, NULL), 0);
    json_decref(ids);
    json_decref(jobs);
    char p[PATH_MAX];
    snprintf(p, sizeof p, "%s/gone/queue.log", root);
    CHECK_INT(unlink(p), 0);
    CHECK_INT(queue_verify(q, &v, NULL), 0);
    CHECK(json_is_false(json_object_get(v, "ok")));
    const char *msg = json_string_value(json_array_get(json_object_get(v, "errors"), 0));
    CHECK(msg && strstr(msg, "gone/queue.log") != NULL);
    json_decref(v);
    queue_close(q);
}

/* jansson's allocator for the next test: after `jansson_budget` more
 * allocations, every one fails until the budget is reset to -1. */
static int jansson_budget = -1;

static void *budget_malloc(size_t n)
{
    if (jansson_budget == 0)
        return NULL;
    if (jansson_budget > 0)
        jansson_budget--;
    return malloc(n);
}

/* A claim that cannot build its answer claims nothing: with jansson out of
 * memory at each step of building the claimed jobs, queue_claim fails with
 * STORH_ENOMEM and every job is still pending (none is moved to processing
 * and lost to a caller that never saw it). */
TEST(claim_out_of_memory_claims_nothing)
{
    queue *q = open_q("oom");
    json_t *jobs = js("[{\"payload\":{\"n\":1}},{\"payload\":{\"n\":2}},{}]");
    json_t *ids;
    CHECK_INT(queue_enqueue_many(q, jobs, &ids, NULL), 0);
    json_decref(ids);
    json_decref(jobs);
    json_set_alloc_funcs(budget_malloc, free);
    for (int budget = 0; budget <= 2; budget++) {
        json_t *claimed = NULL;
        storh_err err;
        jansson_budget = budget;
        int rc = queue_claim(q, 3, &claimed, &err);
        jansson_budget = -1;
        CHECK_INT(rc, STORH_ENOMEM);
        CHECK(claimed == NULL);
        CHECK_INT(queuekit_count(q, "pending"), 3);
        CHECK_INT(queuekit_count(q, "processing"), 0);
    }
    json_set_alloc_funcs(malloc, free);
    json_t *claimed = NULL;
    CHECK_INT(queue_claim(q, 3, &claimed, NULL), 0);
    CHECK_INT(json_array_size(claimed), 3);
    json_decref(claimed);
    queue_close(q);
}

/* Events storh (PHP) wrote, byte for byte */
static const char php_queue_log[] =
    "125\t0603e6c5\t{\"op\":\"enqueue\",\"id\":\"018bcfe5-6800-7000-8000-00000000000a\","
    "\"payload\":{\"to\":\"a@b/c\",\"n\":1,\"r\":1.5,\"one\":1.0},\"ts\":1796305049}\n"
    "96\ted54c99f\t{\"op\":\"enqueue\",\"id\":\"018bcfe5-6801-7000-8000-00000000000b\",\"payload\":"
    "[\"a\",\"b\"],\"ts\":1796305049}\n"
    "109\tfb95eece\t{\"op\":\"enqueue\",\"id\":\"018bcfe5-6802-7000-8000-00000000000c\","
    "\"payload\":{\"7\":\"x\",\"k\":{\"a\":[]}},\"ts\":1796305049}\n";

static json_t *claim_all(queue *q)
{
    json_t *c = NULL;
    if (queue_claim(q, 100, &c, NULL))
        return json_array();
    return c;
}

/* The ids and encoded payloads of claimed, one a line; claimed's payloads
 * are appended to trees (to compare types, which encodings may hide). */
static char *payloads_of(json_t *claimed, json_t *trees)
{
    buf b = BUF_INIT;
    size_t i;
    json_t *e;
    json_array_foreach (claimed, i, e) {
        buf_appends(&b, json_string_value(json_object_get(e, "id")));
        buf_appendc(&b, ' ');
        sjson_encode(&b, json_object_get(e, "payload"), 0, NULL);
        buf_appendc(&b, '\n');
        json_array_append(trees, json_object_get(e, "payload"));
    }
    json_decref(claimed);
    return b.data ? b.data : strdup("");
}

/* What an enqueue keeps in memory (applied from its fields) is what a
 * replay of its line gives, and what replaying storh's lines gives. */
TEST(own_events_apply_as_their_replay)
{
    const char *jobs_json =
        "[{\"id\":\"018bcfe5-6800-7000-8000-00000000000a\",\"payload\":{\"to\":\"a@b/c\",\"n\":1,"
        "\"r\":1.5,\"one\":1.0}},"
        "{\"id\":\"018bcfe5-6801-7000-8000-00000000000b\",\"payload\":{\"0\":\"a\",\"1\":\"b\"}},"
        "{\"id\":\"018bcfe5-6802-7000-8000-00000000000c\",\"payload\":{\"7\":\"x\",\"k\":{\"a\":[]}"
        "}}]";
    const char *more_json =
        "[{\"id\":\"018bcfe5-6803-7000-8000-00000000000d\",\"payload\":{\"k\":{},\"l\":[]}},"
        "{\"id\":\"018bcfe5-6804-7000-8000-00000000000e\",\"payload\":{\"n\":[1.25,{\"0\":\"z\"}],"
        "\"s\":\"x\\u0000y\\n\\\"\"}},"
        "{\"id\":\"018bcfe5-6805-7000-8000-00000000000f\",\"payload\":[1,2]},"
        "{\"id\":\"018bcfe5-6806-7000-8000-000000000010\",\"payload\":{\"a\":{\"b\":{\"c\":true}},"
        "\"d\":null,\"e\":-7}},"
        "{\"id\":\"018bcfe5-6807-7000-8000-000000000011\",\"kind\":\"post\",\"bucket\":3}]";
    char p[PATH_MAX];
    snprintf(p, sizeof p, "%s/php", root);
    CHECK_INT(fsx_mkdirs(p, false, NULL), 0);
    snprintf(p, sizeof p, "%s/php/queue.log", root);
    CHECK_INT(fsx_write_file(p, php_queue_log, strlen(php_queue_log), false, NULL), 0);
    queue *php = open_q("php");
    json_t *t_php = json_array(), *t_own = json_array(), *t_all = json_array();
    char *from_php = payloads_of(claim_all(php), t_php);
    queue_close(php);

    json_t *jobs = js(jobs_json), *more = js(more_json), *ids;
    queue *direct = open_q("direct"), *replayed = open_q("replayed");
    CHECK_INT(queue_enqueue_many(direct, jobs, &ids, NULL), 0);
    json_decref(ids);
    CHECK_INT(queue_enqueue_many(replayed, jobs, &ids, NULL), 0);
    json_decref(ids);
    char *own = payloads_of(claim_all(direct), t_own);
    CHECK_STR(own, from_php);
    CHECK(json_equal(t_own, t_php));
    for (size_t i = 0; i < json_array_size(more); i++) { /* one event, then a batch */
        json_t *one = json_pack("[O]", json_array_get(more, i));
        CHECK_INT(queue_enqueue_many(direct, i ? more : one, &ids, NULL), 0);
        json_decref(ids);
        json_decref(one);
        if (i)
            break;
    }
    CHECK_INT(queue_enqueue_many(replayed, more, &ids, NULL), 0);
    json_decref(ids);
    char *own_more = payloads_of(claim_all(direct), t_own);
    queue_close(direct);
    queue_close(replayed);
    replayed = open_q("replayed");
    char *all = payloads_of(claim_all(replayed), t_all);
    queue_close(replayed);
    /* direct enqueued the first of more twice (the batch re-enqueues it) */
    buf want = BUF_INIT;
    buf_appends(&want, own);
    buf_appends(&want, own_more);
    CHECK_STR(all, want.data);
    CHECK(json_equal(t_all, t_own));
    buf_free(&want);
    json_decref(t_php);
    json_decref(t_own);
    json_decref(t_all);
    free(from_php);
    free(own);
    free(own_more);
    free(all);
    json_decref(jobs);
    json_decref(more);
}

static long lines_with(const char *log, const char *needle)
{
    long n = 0;
    for (const char *p = log; (p = strstr(p, needle)); p++)
        n++;
    return n;
}

/* An id named twice in one completeMany() is completed once (one event),
 * and an id already completed by an earlier batch is not processing any
 * more; a replay agrees. */
TEST(complete_many_counts_each_job_once)
{
    queue *q = open_q("dups");
    json_t *jobs = js("[{\"n\":1},{\"n\":2},{\"n\":3},{\"n\":4}]"), *ids, *c;
    CHECK_INT(queue_enqueue_many(q, jobs, &ids, NULL), 0);
    CHECK_INT(queue_claim(q, 4, &c, NULL), 0);
    json_decref(c);
    const char *a = json_string_value(json_array_get(ids, 0)),
               *b = json_string_value(json_array_get(ids, 1)),
               *d = json_string_value(json_array_get(ids, 2)),
               *e = json_string_value(json_array_get(ids, 3));
    json_t *batch = json_pack("[ssss]", a, a, b, a);
    size_t n = 99;
    CHECK_INT(queue_complete_many(q, batch, true, &n, NULL), 0);
    CHECK_INT(n, 2);
    json_decref(batch);
    batch = json_pack("[sssd]", a, d, d, e); /* a is done now; "d" is not a string */
    CHECK_INT(queue_complete_many(q, batch, false, &n, NULL), STORH_EINVAL);
    json_decref(batch);
    batch = json_pack("[ssss]", a, d, d, e);
    CHECK_INT(queue_complete_many(q, batch, false, &n, NULL), 0);
    CHECK_INT(n, 2);
    json_decref(batch);
    CHECK_INT(queuekit_count(q, "processing"), 0);
    CHECK_INT(queuekit_count(q, "done"), 2);
    char *log = queuekit_log(root, "dups");
    CHECK_INT(lines_with(log, "\"op\":\"complete\""), 4);
    CHECK_INT(lines_with(log, "\"done\":true"), 2);
    free(log);
    queue_close(q);
    q = open_q("dups");
    CHECK_INT(queuekit_count(q, "processing"), 0);
    CHECK_INT(queuekit_count(q, "done"), 2);
    CHECK_INT(queuekit_count(q, "pending"), 0);
    queue_close(q);
    json_decref(ids);
    json_decref(jobs);
}

/* ---- PHP storh reads the batches storhd wrote (STORH_PHP_DIR) ---- */

static const char php_claim[] =
    "<?php\n"
    "require getenv('STORH_PHP_DIR') . '/vendor/autoload.php';\n"
    "[, $root] = $argv;\n"
    "$q = new Storh\\Queue($root, 'interop');\n"
    "$out = [];\n"
    "foreach ($q->claimMany(1000) as $r) {\n"
    "    $out[] = ['id' => $r->id(), 'payload' => $r->data()];\n"
    "}\n"
    "echo json_encode($out, JSON_UNESCAPED_SLASHES | JSON_UNESCAPED_UNICODE), \"\\n\";\n";

TEST(php_reads_what_storhd_wrote)
{
    if (!getenv("STORH_PHP_DIR")) {
        CHECK(!"STORH_PHP_DIR names the PHP storh checkout");
        return;
    }
    /* strings with and without bytes to escape (quote, backslash, controls,
     * U+2028, other non-ASCII), integer keys, nesting, batches */
    json_t *jobs = json_array();
    for (int i = 0; i < 60; i++)
        json_array_append_new(
            jobs, json_pack("{sssisss[si]s{ss}}", "kind", i % 2 ? "post" : "page", "n", i, "s",
                            i % 3 ? "a\"b\\c\n\x01 \xe2\x80\xa8 \xe2\x82\xac/" : "plain", "l", "x",
                            i, "o", "7", "seven"));
    queue *q = open_q("interop");
    json_t *ids, *c;
    CHECK_INT(queue_enqueue_many(q, jobs, &ids, NULL), 0);
    CHECK_INT(queue_claim(q, 20, &c, NULL), 0);
    json_t *done = json_array();
    for (size_t i = 0; i < 10; i++)
        json_array_append(done, json_object_get(json_array_get(c, i), "id"));
    json_array_append(done, json_object_get(json_array_get(c, 0), "id"));
    size_t n;
    CHECK_INT(queue_complete_many(q, done, true, &n, NULL), 0);
    CHECK_INT(n, 10);
    json_decref(done);
    json_decref(c);
    queue_close(q);
    char script[PATH_MAX], out[PATH_MAX], cmd[PATH_MAX * 4];
    snprintf(script, sizeof script, "%s/claim.php", root);
    snprintf(out, sizeof out, "%s/claim.json", root);
    FILE *f = fopen(script, "w");
    CHECK(f != NULL);
    if (!f)
        return;
    fputs(php_claim, f);
    fclose(f);
    snprintf(cmd, sizeof cmd, "php '%s' '%s' > '%s'", script, root, out);
    CHECK_INT(system(cmd), 0);
    json_t *got = json_load_file(out, 0, NULL);
    CHECK_INT(json_array_size(got), 40); /* the 40 never claimed, in order */
    /* what storhd itself hands out for the same jobs */
    q = open_q("mirror");
    json_t *ids2;
    CHECK_INT(queue_enqueue_many(q, jobs, &ids2, NULL), 0);
    CHECK_INT(queue_claim(q, 1000, &c, NULL), 0);
    for (size_t i = 0; i < json_array_size(got); i++) {
        json_t *g = json_array_get(got, i);
        CHECK_STR(json_string_value(json_object_get(g, "id")),
                  json_string_value(json_array_get(ids, 20 + i)));
        CHECK(json_equal(json_object_get(g, "payload"),
                         json_object_get(json_array_get(c, 20 + i), "payload")));
    }
    json_decref(c);
    json_decref(ids2);
    queue_close(q);
    json_decref(got);
    json_decref(ids);
    json_decref(jobs);
}

/* Jobs claimed by another process leave stale entries in this one's claim
 * order (its state learns of the claims from the log). A claim here that
 * finds nothing walks past them, and the next one starts after them: the
 * cursor moves even when nothing was claimed (a long-poll claim that
 * wakes up again and again would otherwise walk them every time). */
TEST(empty_claim_moves_the_cursor_past_jobs_claimed_elsewhere)
{
    queue *a = open_q("elsewhere"), *b = open_q("elsewhere");
    json_t *jobs = json_array(), *ids = NULL;
    for (int i = 0; i < 100; i++)
        json_array_append_new(jobs, json_pack("{si}", "n", i));
    CHECK_INT(queue_enqueue_many(a, jobs, &ids, NULL), 0);
    json_decref(jobs);
    json_decref(ids);
    buf out = BUF_INIT;
    size_t n = 0;
    CHECK_INT(queue_claim_bytes(b, 100, &out, &n, NULL), 0);
    CHECK_INT((long)n, 100);
    buf_reset(&out);
    CHECK_INT(queue_claim_bytes(a, 10, &out, &n, NULL), 0);
    CHECK_INT((long)n, 0);
    CHECK_INT((long)a->st.head, (long)a->st.n);
    CHECK_INT(queuekit_count(a, "processing"), 100);
    buf_free(&out);
    queue_close(a);
    queue_close(b);
}

static const test_case tests[] = {
    TEST_ENTRY(events_are_storh_bytes),
    TEST_ENTRY(fifo_requeue_and_replay),
    TEST_ENTRY(complete_and_purge_replay_like_storh),
    TEST_ENTRY(two_processes_never_claim_twice),
    TEST_ENTRY(bad_input_changes_nothing),
    TEST_ENTRY(claim_out_of_memory_claims_nothing),
    TEST_ENTRY(verify_reports_why_the_log_is_unreadable),
    TEST_ENTRY(own_events_apply_as_their_replay),
    TEST_ENTRY(complete_many_counts_each_job_once),
    TEST_ENTRY(empty_claim_moves_the_cursor_past_jobs_claimed_elsewhere),
};

/* run only when named: registered with -DSTORH_PHP_DIR */
static const test_case named[] = {
    TEST_ENTRY(php_reads_what_storhd_wrote),
};

TMPDIR_TEST_MAIN_WITH_NAMED(root, tests, named)
