/* The watch over a directory (dirwatch) and the index's entry files kept
 * fresh by it (docindex_mem.c): a stamp moves on with every change in the
 * dir and dies with the dir; an equality count with nothing changed is
 * answered without a stat, and another writer's put, delete or rebuild
 * (another storhd, PHP storh) is counted at once. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../test.h"
#include "../tmpdir.h"
#include "dirwatch.h"
#include "docindex.h"
#include "docstore.h"
#include "query.h"

static char root[PATH_MAX];

#include "../support/js.h"

#define A "018bcfe5-6800-7000-8000-2d5dba6274da"
#define B "018bcfe5-6801-7000-8000-aa5dba6274db"
#define C "018bcfe5-6802-7000-8000-bb5dba6274dc"
#define KINDS "{\"fields\":[{\"field\":\"kind\"}]}"

static char *dir(const char *name)
{
    static char p[PATH_MAX];
    snprintf(p, sizeof p, "%s/%s", root, name);
    return p;
}

static void touch(const char *path)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    CHECK(fd >= 0);
    if (fd >= 0) {
        CHECK_INT(write(fd, "x", 1), 1);
        close(fd);
    }
}

TEST(a_stamp_holds_until_the_dir_changes)
{
    char d[PATH_MAX], f[PATH_MAX], g[PATH_MAX];
    snprintf(d, sizeof d, "%s", dir("w1"));
    snprintf(f, sizeof f, "%s/f", d);
    snprintf(g, sizeof g, "%s/g", root);
    CHECK_INT(mkdir(d, 0755), 0);
    dirwatch *w = dirwatch_add(d, NULL);
    CHECK(w != NULL);
    if (!w)
        return;
    uint64_t s = dirwatch_stamp(w);
    CHECK(s != 0);
    CHECK(dirwatch_stamp(w) == s);
    touch(f); /* created, written */
    uint64_t s2 = dirwatch_stamp(w);
    CHECK(s2 != 0 && s2 != s);
    CHECK(dirwatch_stamp(w) == s2);
    touch(g); /* outside: no change */
    CHECK(dirwatch_stamp(w) == s2);
    CHECK_INT(rename(g, f), 0); /* renamed in over f */
    uint64_t s3 = dirwatch_stamp(w);
    CHECK(s3 != s2 && s3 != 0);
    CHECK_INT(unlink(f), 0);
    uint64_t s4 = dirwatch_stamp(w);
    CHECK(s4 != s3 && s4 != 0);
    /* a second watcher of the dir shares the watch; one let go, the
     * other still sees changes */
    dirwatch *w2 = dirwatch_add(d, NULL);
    CHECK(w2 == w);
    dirwatch_release(w2);
    touch(f);
    CHECK(dirwatch_stamp(w) != s4);
    dirwatch_release(w);
}

TEST(a_removed_dir_kills_the_stamp_and_a_new_one_is_watched_again)
{
    char d[PATH_MAX], f[PATH_MAX];
    snprintf(d, sizeof d, "%s", dir("w2"));
    snprintf(f, sizeof f, "%s/f", d);
    CHECK_INT(mkdir(d, 0755), 0);
    dirwatch *w = dirwatch_add(d, NULL);
    CHECK(w != NULL);
    if (!w)
        return;
    uint64_t s = dirwatch_stamp(w);
    CHECK_INT(rmdir(d), 0);
    CHECK(dirwatch_stamp(w) == 0);
    CHECK_INT(mkdir(d, 0755), 0);
    CHECK(dirwatch_stamp(w) == 0); /* the old watch stays dead */
    dirwatch *again = dirwatch_add(d, NULL);
    CHECK(again != NULL && again != w);
    uint64_t s2 = again ? dirwatch_stamp(again) : 0;
    CHECK(s2 != 0 && s2 != s);
    touch(f);
    CHECK(again && dirwatch_stamp(again) != s2);
    dirwatch_release(again);
    dirwatch_release(w);
    errno = 0;
    CHECK(dirwatch_add(dir("absent"), NULL) == NULL);
    CHECK_INT(errno, ENOENT);
    dirwatch_set_enabled(false);
    CHECK(dirwatch_add(d, NULL) == NULL);
    dirwatch_set_enabled(true);
}

/* ---------- the index's entry files ---------- */

static docstore *open_store(const char *name)
{
    docstore *ds = NULL;
    storh_err err;
    if (docstore_open(root, name, &ds, &err)) {
        fprintf(stderr, "open %s: %s\n", name, err.msg);
        return NULL;
    }
    return ds;
}

static void define(docstore *ds, bool rebuild)
{
    json_t *b = js(KINDS), *out = NULL;
    storh_err err;
    if (docstore_define_indexes(ds, b, rebuild, &out, &err))
        fprintf(stderr, "indexes: %s\n", err.msg);
    json_decref(out);
    json_decref(b);
}

static void put(docstore *ds, const char *id, const char *kind)
{
    json_t *d = json_pack("{ss}", "kind", kind);
    char out[37];
    storh_err err;
    if (docstore_put(ds, id, d, out, NULL, &err))
        fprintf(stderr, "put %s: %s\n", id, err.msg);
    json_decref(d);
}

/* The indexed count of kind = k (-1 on error). */
static long count(docstore *ds, const char *k)
{
    char body[160];
    snprintf(body, sizeof body,
             "{\"where\":[{\"field\":\"kind\",\"op\":\"eq\",\"value\":\"%s\"}],\"count\":true}", k);
    json_t *b = js(body), *out = NULL;
    query q;
    long n = -1;
    if (b && query_parse(b, &q, NULL) == 0) {
        if (docstore_query(ds, &q, &out, NULL) == 0)
            n = (long)json_integer_value(json_object_get(out, "count"));
        query_free(&q);
    }
    json_decref(out);
    json_decref(b);
    return n;
}

/* Lookups answered on the watch since *from; *from moves on. */
static uint64_t watched_since(docindex_mem_stats *from)
{
    docindex_mem_stats now;
    docindex_mem_totals(&now);
    uint64_t n = now.watched - from->watched;
    *from = now;
    return n;
}

/* Runs fn(name) in another process (another storhd engine on the same
 * files) and waits for it. */
static void elsewhere(void (*fn)(const char *name), const char *name)
{
    pid_t pid = fork();
    if (pid == 0) {
        dirwatch_set_enabled(false);
        fn(name);
        _exit(0);
    }
    int st = -1;
    CHECK(pid > 0 && waitpid(pid, &st, 0) == pid);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
}

static void put_b_page(const char *name)
{
    docstore *ds = open_store(name);
    put(ds, B, "page");
    docstore_close(ds);
}

static void move_a_to_post(const char *name)
{
    docstore *ds = open_store(name);
    put(ds, A, "post");
    docstore_close(ds);
}

static void rebuild_and_put_c(const char *name)
{
    docstore *ds = open_store(name);
    define(ds, true); /* entries/ removed and written again */
    put(ds, C, "page");
    docstore_close(ds);
}

TEST(counts_with_nothing_changed_need_no_stat)
{
    docstore *ds = open_store("ix");
    define(ds, true);
    put(ds, A, "page");
    CHECK_INT(count(ds, "page"), 1); /* the first: stat and read */
    CHECK_INT(count(ds, "none"), 0);
    docindex_mem_stats at;
    docindex_mem_totals(&at);
    for (int i = 0; i < 5; i++) {
        CHECK_INT(count(ds, "page"), 1);
        CHECK_INT(count(ds, "none"), 0); /* an absent entry is remembered too */
    }
    CHECK_INT(watched_since(&at), 10);
    put(ds, B, "page"); /* this process's own write */
    watched_since(&at); /* (the put's own lookups) */
    CHECK_INT(count(ds, "page"), 2);
    CHECK_INT(watched_since(&at), 0);
    CHECK_INT(count(ds, "page"), 2);
    CHECK_INT(watched_since(&at), 1);
    docstore_close(ds);
}

TEST(another_writers_changes_are_counted_at_once)
{
    docstore *ds = open_store("ox");
    define(ds, true);
    put(ds, A, "page");
    CHECK_INT(count(ds, "page"), 1);
    CHECK_INT(count(ds, "post"), 0);
    CHECK_INT(count(ds, "page"), 1);
    elsewhere(put_b_page, "ox");
    CHECK_INT(count(ds, "page"), 2);
    elsewhere(move_a_to_post, "ox");
    CHECK_INT(count(ds, "page"), 1);
    CHECK_INT(count(ds, "post"), 1);
    /* the entry dirs removed and made again by another process: the
     * dead watch is armed again on the new dir */
    elsewhere(rebuild_and_put_c, "ox");
    CHECK_INT(count(ds, "page"), 2);
    CHECK_INT(count(ds, "post"), 1);
    docindex_mem_stats at;
    docindex_mem_totals(&at);
    CHECK_INT(count(ds, "page"), 2);
    CHECK_INT(watched_since(&at), 1);
    elsewhere(put_b_page, "ox"); /* B was a page already: no change */
    CHECK_INT(count(ds, "page"), 2);
    docstore_close(ds);
}

TEST(without_the_watch_every_count_stats)
{
    dirwatch_set_enabled(false);
    docstore *ds = open_store("nw");
    define(ds, true);
    put(ds, A, "page");
    docindex_mem_stats at;
    docindex_mem_totals(&at);
    for (int i = 0; i < 3; i++)
        CHECK_INT(count(ds, "page"), 1);
    elsewhere(put_b_page, "nw");
    CHECK_INT(count(ds, "page"), 2);
    CHECK_INT(watched_since(&at), 0);
    docstore_close(ds);
    dirwatch_set_enabled(true);
}

/* ---------- PHP storh on the same collection ---------- */

static const char php_put[] = "<?php\n"
                              "require getenv('STORH_PHP_DIR') . '/vendor/autoload.php';\n"
                              "[, $root, $op, $id, $kind] = $argv;\n"
                              "$s = new Storh\\DocPerFileStore($root, 'php');\n"
                              "if ($op === 'put') { $s->put(['kind' => $kind], $id); }\n"
                              "elseif ($op === 'delete') { $s->delete($id); }\n"
                              "else { $s->reindex(); }\n";

static void php(const char *op, const char *id, const char *kind)
{
    char script[PATH_MAX], cmd[PATH_MAX * 3];
    snprintf(script, sizeof script, "%s/put.php", root);
    FILE *f = fopen(script, "w");
    CHECK(f != NULL);
    if (!f)
        return;
    fputs(php_put, f);
    fclose(f);
    snprintf(cmd, sizeof cmd, "php8.2 '%s' '%s' %s %s %s", script, root, op, id, kind);
    CHECK_INT(system(cmd), 0);
}

TEST(php_storh_index_writes_are_counted)
{
    if (!getenv("STORH_PHP_DIR")) {
        CHECK(!"STORH_PHP_DIR names the PHP storh checkout");
        return;
    }
    docstore *ds = open_store("php");
    define(ds, true);
    put(ds, A, "page");
    CHECK_INT(count(ds, "page"), 1);
    CHECK_INT(count(ds, "page"), 1);
    php("put", B, "page");
    CHECK_INT(count(ds, "page"), 2);
    php("put", A, "post");
    CHECK_INT(count(ds, "page"), 1);
    CHECK_INT(count(ds, "post"), 1);
    php("delete", A, "-");
    CHECK_INT(count(ds, "post"), 0);
    php("reindex", "-", "-"); /* storh's rebuild: entries/ removed and written */
    CHECK_INT(count(ds, "page"), 1);
    php("put", C, "page");
    CHECK_INT(count(ds, "page"), 2);
    CHECK_INT(count(ds, "page"), 2);
    docstore_close(ds);
}

static const test_case tests[] = {
    TEST_ENTRY(a_stamp_holds_until_the_dir_changes),
    TEST_ENTRY(a_removed_dir_kills_the_stamp_and_a_new_one_is_watched_again),
    TEST_ENTRY(counts_with_nothing_changed_need_no_stat),
    TEST_ENTRY(another_writers_changes_are_counted_at_once),
    TEST_ENTRY(without_the_watch_every_count_stats),
};

/* run only when named: registered with -DSTORH_PHP_DIR */
static const test_case named[] = {
    TEST_ENTRY(php_storh_index_writes_are_counted),
};

TMPDIR_TEST_MAIN_WITH_NAMED(root, tests, named)
