/* test_queue_faults: a queue across crashes and failures: a torn tail and
 * a bad line in the middle, repair (and a repair whose rewrite's sync
 * fails), batches staged for all or nothing rolled forward whole, and a
 * batch whose stage's sync fails, a large claim whose lines cannot all be
 * appended. The queue's events and states:
 * test_queue. */
#include <dirent.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../test.h"
#include "../tmpdir.h"
#include "frame.h"
#include "fsx.h"
#include "qstage.h"
#include "queue.h"
#include "../support/damage.h"
#include "../support/queuekit.h"

static char root[PATH_MAX];

static queue *open_q(const char *name)
{
    return queuekit_open(root, name);
}

#include "../support/js.h"

TEST(torn_tail_and_bad_middle_line)
{
    queue *q = open_q("bad");
    json_t *jobs = js("[{\"a\":1},{\"a\":2},{\"a\":3}]");
    json_t *ids;
    queue_enqueue_many(q, jobs, &ids, NULL);
    json_decref(jobs);
    json_decref(ids);
    queue_close(q);
    char p[PATH_MAX];
    snprintf(p, sizeof p, "%s/bad/queue.log", root);
    buf b = BUF_INIT;
    fsx_read_all(p, &b, NULL);
    char *second = strchr(b.data, '\n') + 1;
    strstr(second, "\"a\":2")[4] = '9'; /* checksum mismatch in the middle */
    FILE *f = fopen(p, "w");
    fwrite(b.data, 1, b.len, f);
    fputs("77\tdeadbeef\t{\"op\":\"enq", f); /* and a torn tail */
    fclose(f);
    q = open_q("bad");
    CHECK_INT(queuekit_count(q, "pending"), 2); /* the third job survives the bad second line */
    struct stat st;
    stat(p, &st);
    CHECK_INT(st.st_size, (off_t)b.len); /* only the torn tail was cut */
    json_t *v;
    CHECK_INT(queue_verify(q, &v, NULL), 0);
    CHECK(json_is_false(json_object_get(v, "ok")));
    CHECK(strncmp(json_string_value(json_array_get(json_object_get(v, "errors"), 0)),
                  "line 2: Corrupt log queue line.", 31) == 0);
    json_decref(v);
    CHECK_INT(queue_repair(q, 3600, &v, NULL), 0);
    CHECK_INT(json_integer_value(json_object_get(v, "quarantined")), 1);
    json_decref(v);
    CHECK_INT(queue_verify(q, &v, NULL), 0);
    CHECK(json_is_true(json_object_get(v, "ok")));
    json_decref(v);
    json_t *more = js("[{\"a\":4}]");
    CHECK_INT(queue_enqueue_many(q, more, &ids, NULL), 0);
    json_decref(more);
    json_decref(ids);
    CHECK_INT(queuekit_count(q, "pending"), 3);
    queue_close(q);
    buf_free(&b);
}

/* A repair that replaced queue.log but whose directory's sync failed
 * refuses later writes (they would go to the replaced file): whatever it
 * acknowledges after it is there when the queue is opened again. */
TEST(repair_whose_rewrite_sync_fails_loses_nothing)
{
    queue *q = open_q("badsync");
    json_t *jobs = js("[{\"a\":1},{\"a\":2},{\"a\":3}]"), *ids;
    CHECK_INT(queue_enqueue_many(q, jobs, &ids, NULL), 0);
    json_decref(jobs);
    json_decref(ids);
    queue_close(q);
    char p[PATH_MAX];
    snprintf(p, sizeof p, "%s/badsync/queue.log", root);
    CHECK_INT(damage_second_line(p, "\"a\":2", '9'), 0); /* a bad second line */
    q = open_q("badsync");
    setenv("STORH_FAULT_FAIL", "logsync:badsync", 1);
    json_t *v = NULL;
    storh_err err = {0};
    CHECK(queue_repair(q, 3600, &v, &err) != 0);
    unsetenv("STORH_FAULT_FAIL");
    CHECK(v == NULL && strstr(err.msg, "sync") != NULL);
    json_t *more = js("[{\"a\":4}]");
    ids = NULL;
    int acked = queue_enqueue_many(q, more, &ids, NULL) == 0;
    CHECK(!acked); /* refused: the queue was poisoned */
    json_decref(ids);
    json_decref(more);
    queue_close(q);
    q = open_q("badsync");
    CHECK_INT(queuekit_count(q, "pending"),
              2 + acked); /* the bad line quarantined, the rest kept */
    CHECK_INT(queue_verify(q, &v, NULL), 0);
    CHECK(json_is_true(json_object_get(v, "ok")));
    json_decref(v);
    queue_close(q);
}

/* A queue dir holding queue.log = prefix + tail and the stage of ev at
 * offset strlen(prefix). */
static void staged_case(const char *name, const char *prefix, const char *ev, const char *tail)
{
    char dir[PATH_MAX], p[PATH_MAX], stage[PATH_MAX];
    snprintf(dir, sizeof dir, "%s/%s", root, name);
    snprintf(p, sizeof p, "%s/queue.log", dir);
    CHECK_INT(fsx_mkdirs(dir, false, NULL), 0);
    FILE *f = fopen(p, "w");
    fputs(prefix, f);
    fputs(tail, f);
    fclose(f);
    CHECK_INT(qstage_write(dir, strlen(prefix), ev, strlen(ev), stage, NULL), 0);
}

static int stages_in(const char *name)
{
    char dir[PATH_MAX];
    snprintf(dir, sizeof dir, "%s/%s", root, name);
    DIR *d = opendir(dir);
    int n = 0;
    struct dirent *de;
    while (d && (de = readdir(d)))
        n += strstr(de->d_name, "queue.batch-") != NULL;
    if (d)
        closedir(d);
    return n;
}

/* A batch whose stage is durable ends up whole, whatever part of it a
 * crash let into the log (a prefix cut mid-line, a torn tail, pages kept
 * with a hole between them), and even when another process (storh, after
 * cutting the torn tail) appended events after a part of it. */
TEST(staged_batches_roll_forward)
{
    queue *q = open_q("pre");
    json_t *jobs = js("[{\"a\":1},{\"a\":2}]"), *ids;
    CHECK_INT(queue_enqueue_many(q, jobs, &ids, NULL), 0);
    json_decref(ids);
    json_decref(jobs);
    queue_close(q);
    CHECK_INT(stages_in("pre"), 0); /* an acknowledged batch leaves no stage */
    q = open_q("src");
    jobs = js("[{\"b\":1},{\"b\":2},{\"b\":3},{\"b\":4},{\"b\":5},{\"b\":6}]");
    CHECK_INT(queue_enqueue_many(q, jobs, &ids, NULL), 0);
    json_decref(jobs);
    queue_close(q);
    char *pre = queuekit_log(root, "pre"), *ev = queuekit_log(root, "src");
    size_t len = strlen(ev);
    const char *line2 = strchr(ev, '\n') + 1, *line3 = strchr(line2, '\n') + 1;
    char cut[4096], torn[4096], foreign[4096], holes[4096];
    snprintf(cut, sizeof cut, "%.*s", (int)(len * 45 / 100), ev);
    snprintf(torn, sizeof torn, "%.*s\x01garbage", (int)(len * 30 / 100), ev);
    /* a power cut kept a later page of the append but not the one before */
    snprintf(holes, sizeof holes, "%.*s%s%s", (int)(len * 20 / 100), ev, "\x01\x01\x01\x01",
             ev + len * 60 / 100);
    /* two whole lines, then storh claims the first job */
    buf claim = BUF_INIT;
    char ev_json[128];
    snprintf(ev_json, sizeof ev_json, "{\"op\":\"claim\",\"id\":\"%s\",\"ts\":1796211590}",
             json_string_value(json_array_get(ids, 0)));
    frame_encode(&claim, ev_json, strlen(ev_json));
    snprintf(foreign, sizeof foreign, "%.*s%.*s", (int)(line3 - ev), ev, (int)claim.len,
             claim.data);
    struct {
        const char *name, *tail;
        long long pending, processing;
    } cases[] = {
        {"none", "", 8, 0},  {"cut", cut, 8, 0},         {"torn", torn, 8, 0},
        {"whole", ev, 8, 0}, {"foreign", foreign, 7, 1}, {"holes", holes, 8, 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        staged_case(cases[i].name, pre, ev, cases[i].tail);
        for (int round = 0; round < 2; round++) { /* and again: nothing repeats */
            q = open_q(cases[i].name);
            CHECK_INT(queuekit_count(q, "pending"), cases[i].pending);
            CHECK_INT(queuekit_count(q, "processing"), cases[i].processing);
            json_t *v = NULL;
            CHECK_INT(queue_verify(q, &v, NULL), 0);
            if (!json_is_true(json_object_get(v, "ok")))
                fprintf(stderr, "case %s not clean\n", cases[i].name);
            CHECK(json_is_true(json_object_get(v, "ok")));
            json_decref(v);
            queue_close(q);
            CHECK_INT(stages_in(cases[i].name), 0);
        }
    }
    /* a stage never published (its temp) means its batch never began */
    char p[PATH_MAX];
    snprintf(p, sizeof p, "%s/pre/.queue.batch-0011223344556677.0a0b0c0d0e0f.tmp", root);
    FILE *f = fopen(p, "w");
    fputs(ev, f);
    fclose(f);
    q = open_q("pre");
    CHECK_INT(queuekit_count(q, "pending"), 2);
    queue_close(q);
    CHECK(access(p, F_OK) != 0);
    buf_free(&claim);
    json_decref(ids);
    free(pre);
    free(ev);
}

/* An enqueue of an array whose stage was renamed into place but whose
 * directory's sync failed is answered with an error. Its stage is unlinked
 * and the directory synced, so no later open rolls the refused batch
 * forward (behind the next one); when that second sync fails too (the
 * unlink may not be durable: a power cut could bring the stage back), the
 * queue refuses writes until it is opened again. */
TEST(batch_whose_stage_sync_fails_is_not_rolled_forward)
{
    for (int every = 0; every < 2; every++) {
        const char *name = every ? "stagesync-every" : "stagesync";
        queue *q = open_q(name);
        json_t *jobs = js("[{\"a\":1},{\"a\":2},{\"a\":3}]"), *ids = NULL;
        char fail[64];
        snprintf(fail, sizeof fail, "stagesync:%s%s", name, every ? "" : "@1");
        setenv("STORH_FAULT_FAIL", fail, 1);
        storh_err err = {0};
        CHECK(queue_enqueue_many(q, jobs, &ids, &err) != 0);
        unsetenv("STORH_FAULT_FAIL");
        CHECK(strstr(err.msg, "sync") != NULL);
        json_decref(ids);
        ids = NULL;
        CHECK_INT(stages_in(name), 0);
        if (!every)
            CHECK_INT(queuekit_count(q, "pending"), 0);
        json_t *next = js("[{\"b\":1},{\"b\":2}]");
        CHECK_INT(queue_enqueue_many(q, next, &ids, NULL) == 0, !every);
        json_decref(ids);
        json_decref(next);
        json_decref(jobs);
        queue_close(q);
        for (int round = 0; round < 2; round++) {
            q = open_q(name);
            CHECK_INT(queuekit_count(q, "pending"), every ? 0 : 2);
            queue_close(q);
            CHECK_INT(stages_in(name), 0);
        }
    }
}

/* A claim of thousands of jobs appends its lines while it encodes the rest
 * (queue__spill). When the file takes no more (RLIMIT_FSIZE here, a full
 * disk in life), the claim fails whole: what it appended is cut away,
 * nothing is claimed, and the same claim later succeeds and replays. */
TEST(large_claim_whose_append_fails_changes_nothing)
{
    enum { JOBS = 6000 };
    queue *q = open_q("spill");
    json_t *jobs = json_array(), *ids = NULL;
    for (int i = 0; i < JOBS; i++)
        json_array_append_new(jobs, json_pack("{si}", "n", i));
    CHECK_INT(queue_enqueue_many(q, jobs, &ids, NULL), 0);
    json_decref(jobs);
    json_decref(ids);
    char *before = queuekit_log(root, "spill");
    size_t size = strlen(before);
    struct rlimit was, small;
    CHECK_INT(getrlimit(RLIMIT_FSIZE, &was), 0);
    small = was;
    small.rlim_cur = size + 100000; /* the claim's lines are about 530 kB */
    signal(SIGXFSZ, SIG_IGN);
    CHECK_INT(setrlimit(RLIMIT_FSIZE, &small), 0);
    buf out = BUF_INIT;
    size_t n = 0;
    storh_err err = {0};
    int rc = queue_claim_bytes(q, JOBS, &out, &n, &err);
    CHECK_INT(setrlimit(RLIMIT_FSIZE, &was), 0);
    signal(SIGXFSZ, SIG_DFL);
    CHECK(rc != 0);
    CHECK(strstr(err.msg, "append") != NULL);
    CHECK_INT((long)n, 0);
    CHECK_INT((long)out.len, 0);
    char *after = queuekit_log(root, "spill");
    CHECK_STR(after, before);
    CHECK_INT(queuekit_count(q, "pending"), JOBS);
    CHECK_INT(queuekit_count(q, "processing"), 0);
    CHECK_INT(queue_claim_bytes(q, JOBS, &out, &n, NULL), 0);
    CHECK_INT((long)n, JOBS);
    queue_close(q);
    q = open_q("spill");
    CHECK_INT(queuekit_count(q, "pending"), 0);
    CHECK_INT(queuekit_count(q, "processing"), JOBS);
    queue_close(q);
    buf_free(&out);
    free(before);
    free(after);
}

static const test_case tests[] = {
    TEST_ENTRY(torn_tail_and_bad_middle_line),
    TEST_ENTRY(repair_whose_rewrite_sync_fails_loses_nothing),
    TEST_ENTRY(staged_batches_roll_forward),
    TEST_ENTRY(batch_whose_stage_sync_fails_is_not_rolled_forward),
    TEST_ENTRY(large_claim_whose_append_fails_changes_nothing),
};

TMPDIR_TEST_MAIN(root, tests)
