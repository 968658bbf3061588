/* test_pubset: many files published as one durable step (pubset.h): with
 * syncfs and with an fsync each, new files appear and replaced ones change
 * whole, no temp is left; an abort, or a failed add, leaves the old files
 * and no temp. */
#include <dirent.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "../test.h"
#include "../tmpdir.h"
#include "buf.h"
#include "fsx.h"
#include "pubset.h"

static char root[PATH_MAX];

/* The content of root/dir/name ("" when absent). */
static const char *content(const char *dir, const char *name)
{
    static char out[256];
    char p[PATH_MAX];
    snprintf(p, sizeof p, "%s/%s/%s", root, dir, name);
    buf b = BUF_INIT;
    out[0] = '\0';
    if (fsx_read_all(p, &b, NULL) == 0)
        snprintf(out, sizeof out, "%.*s", (int)b.len, b.data);
    buf_free(&b);
    return out;
}

/* Entries of root/dir/sub whose name ends in ".tmp". */
static int temps(const char *dir, const char *sub)
{
    char p[PATH_MAX];
    snprintf(p, sizeof p, "%s/%s/%s", root, dir, sub);
    DIR *d = opendir(p);
    int n = 0;
    struct dirent *de;
    while (d && (de = readdir(d))) {
        size_t l = strlen(de->d_name);
        n += l > 4 && !strcmp(de->d_name + l - 4, ".tmp");
    }
    if (d)
        closedir(d);
    return n;
}

/* dir/a/x holds "old"; dir/a and dir/b exist. */
static void setup(const char *dir)
{
    char p[PATH_MAX];
    snprintf(p, sizeof p, "%s/%s/a", root, dir);
    fsx_mkdirs(p, false, NULL);
    snprintf(p, sizeof p, "%s/%s/b", root, dir);
    fsx_mkdirs(p, false, NULL);
    snprintf(p, sizeof p, "%s/%s/a/x", root, dir);
    fsx_publish(p, "old", 3, NULL);
}

static void add(pubset *s, const char *dir, const char *rel, const char *text, int want)
{
    char p[PATH_MAX];
    snprintf(p, sizeof p, "%s/%s/%s", root, dir, rel);
    CHECK_INT(pubset_add(s, p, text, strlen(text), NULL), want);
}

static void publishes(const char *dir, bool use_syncfs)
{
    setup(dir);
    char d[PATH_MAX];
    snprintf(d, sizeof d, "%s/%s", root, dir);
    pubset *s = NULL;
    CHECK_INT(pubset_begin(d, use_syncfs, &s, NULL), 0);
    add(s, dir, "a/x", "new x", 0);
    add(s, dir, "a/y", "new y", 0);
    add(s, dir, "b/z", "new z", 0);
    CHECK_STR(content(dir, "a/x"), "old"); /* nothing in place before the commit */
    CHECK_STR(content(dir, "a/y"), "");
    CHECK_INT(temps(dir, "a"), 2);
    CHECK_INT(pubset_commit(s, NULL), 0);
    CHECK_STR(content(dir, "a/x"), "new x");
    CHECK_STR(content(dir, "a/y"), "new y");
    CHECK_STR(content(dir, "b/z"), "new z");
    CHECK_INT(temps(dir, "a") + temps(dir, "b"), 0);
}

TEST(commit_publishes_every_file_with_syncfs)
{
    publishes("fs", true);
}

TEST(commit_publishes_every_file_with_an_fsync_each)
{
    publishes("each", false);
}

TEST(abort_leaves_the_old_files_and_no_temp)
{
    setup("abort");
    char d[PATH_MAX];
    snprintf(d, sizeof d, "%s/abort", root);
    pubset *s = NULL;
    CHECK_INT(pubset_begin(d, true, &s, NULL), 0);
    add(s, "abort", "a/x", "new x", 0);
    add(s, "abort", "b/z", "new z", 0);
    add(s, "abort", "missing/w", "w", STORH_EIO); /* its directory is not there */
    pubset_abort(s);
    CHECK_STR(content("abort", "a/x"), "old");
    CHECK_STR(content("abort", "b/z"), "");
    CHECK_INT(temps("abort", "a") + temps("abort", "b"), 0);
}

TEST(an_empty_set_commits)
{
    pubset *s = NULL;
    CHECK_INT(pubset_begin(root, true, &s, NULL), 0);
    CHECK_INT(pubset_commit(s, NULL), 0);
}

static const test_case tests[] = {
    TEST_ENTRY(commit_publishes_every_file_with_syncfs),
    TEST_ENTRY(commit_publishes_every_file_with_an_fsync_each),
    TEST_ENTRY(abort_leaves_the_old_files_and_no_temp),
    TEST_ENTRY(an_empty_set_commits),
};

TMPDIR_TEST_MAIN(root, tests)
