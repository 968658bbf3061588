/* A log's reads kept fresh by its watch (logwatch): counts and gets see
 * another process's appends and rolls at once, counts with nothing changed
 * are answered without a stat, and without the watch (or once its dir is
 * gone) every read stats as before. */
#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../test.h"
#include "../tmpdir.h"
#include "fsx.h"
#include "logwatch.h"
#include "seglog.h"
#include "storh_err.h"
#include "uuid7.h"

static char root[PATH_MAX];

#include "../support/js.h"
#include "../support/logkit.h"

static long eq_count(seglog *s, const char *kind)
{
    json_t *v = json_string(kind);
    size_t n = 0;
    bool served = false;
    int rc = seglog_count_eq(s, "kind", v, &n, &served, NULL);
    json_decref(v);
    return rc == 0 && served ? (long)n : -1;
}

static int put_kind(seglog *s, const char *kind, char id[UUID7_LEN + 1])
{
    json_t *d = json_pack("{ss}", "kind", kind);
    char tmp[UUID7_LEN + 1];
    int rc = seglog_put(s, NULL, d, id ? id : tmp, NULL);
    json_decref(d);
    return rc;
}

/* Another process (a child without a watch of its own, which would share
 * the parent's inotify instance) appends n records of kind; its last id
 * into last. Returns when the child has exited: its appends returned. */
static void other_process_puts(const char *name, size_t seg_bytes, int n, const char *kind,
                               char last[UUID7_LEN + 1])
{
    int p[2];
    CHECK_INT(pipe(p), 0);
    pid_t pid = fork();
    if (pid == 0) {
        close(p[0]);
        logwatch_set_enabled(false);
        seglog *s = logkit_open(root, name, seg_bytes);
        char id[UUID7_LEN + 1] = "";
        int rc = s ? 0 : 1;
        for (int i = 0; i < n && !rc; i++)
            rc = put_kind(s, kind, id);
        seglog_close(s);
        if (write(p[1], id, sizeof id) != (ssize_t)sizeof id)
            rc = 1;
        _exit(rc ? 1 : 0);
    }
    close(p[1]);
    char id[UUID7_LEN + 1] = "";
    CHECK_INT(read(p[0], id, sizeof id), sizeof id);
    close(p[0]);
    int st;
    CHECK_INT(waitpid(pid, &st, 0), pid);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    if (last)
        memcpy(last, id, sizeof id);
}

static uint64_t quiet_now(void)
{
    logwatch_stats st;
    logwatch_totals(&st);
    return st.quiet;
}

/* Freshness checks since *from that found a change (a read or an append
 * then stats the manifest and the active segment; the check that settles
 * the watch after an own append does not); *from moves on. */
static uint64_t changed_since(logwatch_stats *from)
{
    logwatch_stats now;
    logwatch_totals(&now);
    uint64_t n = (now.checks - from->checks) - (now.quiet - from->quiet);
    *from = now;
    return n;
}

TEST(a_count_with_nothing_changed_needs_no_stat)
{
    seglog *s = logkit_open(root, "quiet", 0);
    CHECK_INT(logkit_live(s), 0); /* the first read after the open: by stat */
    logwatch_stats at;
    logwatch_totals(&at);
    uint64_t q0 = at.quiet;
    for (int i = 0; i < 10; i++) {
        CHECK_INT(eq_count(s, "a"), 0);
        CHECK_INT(logkit_live(s), 0);
    }
    CHECK(quiet_now() - q0 >= 20);
    CHECK_INT(changed_since(&at), 0);
    /* its own appends leave it validated: no stat at the next put or read */
    for (int i = 0; i < 3; i++)
        CHECK_INT(put_kind(s, "a", NULL), 0);
    CHECK_INT(eq_count(s, "a"), 3);
    CHECK_INT(logkit_live(s), 3);
    CHECK_INT(changed_since(&at), 3); /* the settling drain after each put */
    seglog_close(s);
}

TEST(another_processes_append_is_counted_at_once)
{
    seglog *s = logkit_open(root, "appends", 0);
    CHECK_INT(put_kind(s, "a", NULL), 0);
    CHECK_INT(eq_count(s, "a"), 1);
    CHECK_INT(eq_count(s, "a"), 1); /* quiet now */
    char last[UUID7_LEN + 1];
    uint64_t q0 = quiet_now();
    other_process_puts("appends", 0, 3, "a", last);
    CHECK_INT(eq_count(s, "a"), 4);
    CHECK_INT(logkit_live(s), 4);
    CHECK_INT(quiet_now() - q0, 1); /* the count after the catch-up */
    json_t *d = NULL;
    CHECK_INT(seglog_get(s, last, &d, NULL), 0);
    json_decref(d);
    other_process_puts("appends", 0, 1, "b", NULL);
    CHECK_INT(eq_count(s, "b"), 1);
    CHECK_INT(logkit_live(s), 5);
    seglog_close(s);
}

TEST(another_processes_roll_is_counted_at_once)
{
    seglog *s = logkit_open(root, "rolls", 256);
    CHECK_INT(put_kind(s, "a", NULL), 0);
    CHECK_INT(logkit_live(s), 1);
    CHECK_INT(logkit_live(s), 1);
    char last[UUID7_LEN + 1];
    other_process_puts("rolls", 256, 12, "a", last); /* several rolls */
    CHECK_INT(logkit_live(s), 13);
    CHECK_INT(eq_count(s, "a"), 13);
    json_t *d = NULL;
    CHECK_INT(seglog_get(s, last, &d, NULL), 0);
    json_decref(d);
    json_t *st = NULL;
    CHECK_INT(seglog_stats(s, &st, NULL), 0);
    CHECK(json_integer_value(json_object_get(st, "segments")) > 2);
    json_decref(st);
    seglog_close(s);
}

TEST(two_instances_of_one_log_share_a_watch)
{
    seglog *a = logkit_open(root, "shared", 0), *b = logkit_open(root, "shared", 0);
    CHECK_INT(logkit_live(a), 0);
    CHECK_INT(logkit_live(a), 0);
    CHECK_INT(put_kind(b, "a", NULL), 0);
    CHECK_INT(logkit_live(a), 1);
    seglog_close(b); /* a keeps its watch */
    CHECK_INT(logkit_live(a), 1);
    uint64_t q0 = quiet_now();
    CHECK_INT(logkit_live(a), 1);
    CHECK_INT(quiet_now() - q0, 1);
    other_process_puts("shared", 0, 2, "a", NULL);
    CHECK_INT(logkit_live(a), 3);
    seglog_close(a);
}

TEST(without_the_watch_every_count_stats)
{
    logwatch_set_enabled(false);
    seglog *s = logkit_open(root, "off", 0);
    logwatch_set_enabled(true);
    CHECK_INT(put_kind(s, "a", NULL), 0);
    uint64_t q0 = quiet_now();
    CHECK_INT(eq_count(s, "a"), 1);
    CHECK_INT(eq_count(s, "a"), 1);
    other_process_puts("off", 256, 5, "a", NULL);
    CHECK_INT(eq_count(s, "a"), 6);
    CHECK_INT(logkit_live(s), 6);
    CHECK_INT(quiet_now() - q0, 0);
    seglog_close(s);
}

TEST(a_moved_segments_dir_falls_back_to_stats)
{
    seglog *s = logkit_open(root, "moved", 0);
    CHECK_INT(put_kind(s, "a", NULL), 0);
    CHECK_INT(logkit_live(s), 1);
    CHECK_INT(logkit_live(s), 1);
    char segs[PATH_MAX], away[PATH_MAX];
    snprintf(segs, sizeof segs, "%s/moved/segments", root);
    snprintf(away, sizeof away, "%s/moved/segments.away", root);
    CHECK_INT(rename(segs, away), 0);
    CHECK_INT(rename(away, segs), 0);
    CHECK_INT(logkit_live(s), 1);
    uint64_t q0 = quiet_now();
    other_process_puts("moved", 0, 2, "a", NULL);
    CHECK_INT(logkit_live(s), 3);
    CHECK_INT(logkit_live(s), 3);
    CHECK_INT(quiet_now() - q0, 0); /* its watch is gone: stats */
    seglog_close(s);
}

/* More events than the queue holds (writes alternating between two files
 * in segments/ whose names do not concern the log, so none coalesce): the
 * events of what comes next are lost. */
static void flood(const char *name)
{
    long max = 16384;
    FILE *f = fopen("/proc/sys/fs/inotify/max_queued_events", "r");
    if (f) {
        if (fscanf(f, "%ld", &max) != 1)
            max = 16384;
        fclose(f);
    }
    char a[PATH_MAX], b[PATH_MAX];
    snprintf(a, sizeof a, "%s/%s/segments/flood1.tmp", root, name);
    snprintf(b, sizeof b, "%s/%s/segments/flood2.tmp", root, name);
    int fa = open(a, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
    int fb = open(b, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
    CHECK(fa >= 0 && fb >= 0);
    for (long i = 0; i < max + 64; i++)
        CHECK_INT(pwrite(i & 1 ? fb : fa, "x", 1, 0), 1);
    close(fa);
    close(fb);
    unlink(a);
    unlink(b);
}

TEST(an_overflow_falls_back_to_stats)
{
    seglog *s = logkit_open(root, "ovf", 0);
    CHECK_INT(put_kind(s, "a", NULL), 0);
    CHECK_INT(logkit_live(s), 1);
    logwatch_stats at;
    logwatch_totals(&at);
    flood("ovf");
    other_process_puts("ovf", 0, 2, "a", NULL); /* its events lost */
    CHECK_INT(logkit_live(s), 3);
    CHECK_INT(eq_count(s, "a"), 3);
    logwatch_stats now;
    logwatch_totals(&now);
    CHECK(now.overflows > at.overflows);
    changed_since(&at);
    CHECK_INT(logkit_live(s), 3); /* validated again: quiet */
    CHECK_INT(changed_since(&at), 0);
    seglog_close(s);
}

/* ---- PHP storh's appends are counted at once (STORH_PHP_DIR) ---- */

static const char php_put[] = "<?php\n"
                              "require getenv('STORH_PHP_DIR') . '/vendor/autoload.php';\n"
                              "[, $root, $n] = $argv;\n"
                              "$s = new Storh\\SegmentedLogStore($root, 'php', 256);\n"
                              "for ($i = 0; $i < (int)$n; $i++) { $s->put(['kind' => 'a']); }\n";

static void php(int n)
{
    char script[PATH_MAX], cmd[PATH_MAX * 3];
    snprintf(script, sizeof script, "%s/put.php", root);
    FILE *f = fopen(script, "w");
    fputs(php_put, f);
    fclose(f);
    snprintf(cmd, sizeof cmd, "php8.2 '%s' '%s' %d", script, root, n);
    CHECK_INT(system(cmd), 0);
}

TEST(php_storh_appends_are_counted)
{
    if (!getenv("STORH_PHP_DIR")) {
        CHECK(!"STORH_PHP_DIR names the PHP storh checkout");
        return;
    }
    seglog *s = logkit_open(root, "php", 256);
    CHECK_INT(put_kind(s, "a", NULL), 0);
    CHECK_INT(eq_count(s, "a"), 1);
    CHECK_INT(eq_count(s, "a"), 1);
    php(1);
    CHECK_INT(eq_count(s, "a"), 2);
    php(6); /* rolls */
    CHECK_INT(eq_count(s, "a"), 8);
    CHECK_INT(logkit_live(s), 8);
    seglog_close(s);
}

static const test_case tests[] = {
    TEST_ENTRY(a_count_with_nothing_changed_needs_no_stat),
    TEST_ENTRY(another_processes_append_is_counted_at_once),
    TEST_ENTRY(another_processes_roll_is_counted_at_once),
    TEST_ENTRY(two_instances_of_one_log_share_a_watch),
    TEST_ENTRY(without_the_watch_every_count_stats),
    TEST_ENTRY(a_moved_segments_dir_falls_back_to_stats),
    TEST_ENTRY(an_overflow_falls_back_to_stats),
};

/* run only when named: registered with -DSTORH_PHP_DIR */
static const test_case named[] = {
    TEST_ENTRY(php_storh_appends_are_counted),
};

TMPDIR_TEST_MAIN_WITH_NAMED(root, tests, named)
