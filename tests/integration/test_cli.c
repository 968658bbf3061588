/* The storh maintenance CLI against a storage root. */
#include <sys/wait.h>

#include "../test.h"
#include "../tmpdir.h"
#include "docstore.h"
#include "seglog.h"
#include "sjson.h"

static char root[PATH_MAX];

/* Runs storh with args; its stdout into out (cap bytes); returns the exit code. */
static int storh(const char *args, char *out, size_t cap)
{
    char cmd[PATH_MAX * 2];
    snprintf(cmd, sizeof cmd, "%s %s 2>/dev/null", STORH_CLI, args);
    FILE *p = popen(cmd, "r");
    size_t n = p ? fread(out, 1, cap - 1, p) : 0;
    out[n] = '\0';
    int st = p ? pclose(p) : -1;
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

TEST(verify_exits_non_zero_on_drift_and_repair_fixes_it)
{
    docstore *ds;
    CHECK_INT(docstore_open(root, "pages", &ds, NULL), 0);
    const char *defs = "{\"fields\":[{\"field\":\"kind\"}]}";
    json_t *ix = sjson_decode(defs, strlen(defs), NULL), *o;
    CHECK_INT(docstore_define_indexes(ds, ix, true, &o, NULL), 0);
    json_decref(o);
    json_decref(ix);
    for (int i = 0; i < 5; i++) {
        json_t *d = json_pack("{ss}", "kind", i % 2 ? "a" : "b");
        char id[37];
        docstore_put(ds, NULL, d, id, NULL, NULL);
        json_decref(d);
    }
    docstore_close(ds);
    char out[4096], args[PATH_MAX + 64];
    snprintf(args, sizeof args, "verify %s pages", root);
    CHECK_INT(storh(args, out, sizeof out), 0);
    CHECK_PREFIX(out, "{\n    \"ok\": true,\n    \"errors\": [],\n    \"stats\": {\n        "
                      "\"records\": 5,");
    char p[PATH_MAX];
    snprintf(p, sizeof p, "%s/pages/.storh/indexes/entries/eq/6b696e64/s-61.jsonc", root);
    FILE *f = fopen(p, "w");
    fputs("{\"field\":\"kind\",\"key\":\"s-61\",\"count\":0,\"value\":\"a\",\"ids\":[]}\n", f);
    fclose(f);
    CHECK_INT(storh(args, out, sizeof out), 1);
    CHECK(strstr(out, "Index mismatch (equality): kind s-61") != NULL);
    snprintf(args, sizeof args, "repair %s pages", root);
    CHECK_INT(storh(args, out, sizeof out), 0);
    snprintf(args, sizeof args, "verify %s pages", root);
    CHECK_INT(storh(args, out, sizeof out), 0);
    snprintf(args, sizeof args, "stats %s pages", root);
    CHECK_INT(storh(args, out, sizeof out), 0);
    CHECK(strstr(out, "\"indexes\": 1") != NULL);
    CHECK_INT(storh("frobnicate x", out, sizeof out), 2);
    snprintf(args, sizeof args, "stats %s nolog log", root);
    CHECK_INT(storh(args, out, sizeof out), 1);
}

/* A daily stream is its partitions: the CLI reads them all, as the
 * service does (it used to open <root>/<name> alone and find no log). */
TEST(log_commands_see_every_partition)
{
    int64_t day = 86400000, t0 = (int64_t)1700000000000;
    for (int p = 0; p < 3; p++) {
        seglog_opts o;
        seglog_opts_default(&o);
        o.partition = SEGLOG_PART_DAILY;
        o.partition_ts_ms = t0 + p * day;
        seglog *s;
        CHECK_INT(seglog_open(root, "daily", &o, true, &s, NULL), 0);
        for (int i = 0; i <= p; i++) {
            json_t *d = json_pack("{si}", "i", i);
            char id[37];
            CHECK_INT(seglog_put(s, NULL, d, id, NULL), 0);
            json_decref(d);
        }
        seglog_close(s);
    }
    char out[8192], args[PATH_MAX + 64];
    snprintf(args, sizeof args, "stats %s daily log", root);
    CHECK_INT(storh(args, out, sizeof out), 0);
    CHECK(strstr(out, "\"records\": 6") != NULL);
    CHECK(strstr(out, "\"partitions\": 3") != NULL);
    snprintf(args, sizeof args, "verify %s daily log", root);
    CHECK_INT(storh(args, out, sizeof out), 0);
    CHECK_PREFIX(out, "{\n    \"ok\": true,");
    snprintf(args, sizeof args, "compact %s daily log", root);
    CHECK_INT(storh(args, out, sizeof out), 0);
    CHECK(strstr(out, "\"records\": 6") != NULL);
    snprintf(args, sizeof args, "repair %s daily log", root);
    CHECK_INT(storh(args, out, sizeof out), 0);
    CHECK(strstr(out, "\"2023-11-14\"") != NULL); /* one result per partition */
}

static const test_case tests[] = {
    {"verify_exits_non_zero_on_drift_and_repair_fixes_it",
     verify_exits_non_zero_on_drift_and_repair_fixes_it},
    {"log_commands_see_every_partition", log_commands_see_every_partition},
};

TMPDIR_TEST_MAIN(root, tests)
