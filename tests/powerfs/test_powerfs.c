/* test_powerfs: the forgetful filesystem's own tests. Each case writes
 * through a fresh powerfs mount, cuts power, and looks at what is left: a
 * file written without fsync vanishes, a rename or unlink without its
 * directory's fsync reverts, a directory made without its parent's fsync
 * goes with everything in it, a syncfs (relayed from a real syncfs(2)
 * call) makes everything durable, and randomized cuts only leave states
 * the model allows (pages old or new, appends cut at a page boundary,
 * directory operations kept or dropped). */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../test.h"
#include "../tmpdir.h"
#include "pfmount.h"
#include "pfsyncfs.h"

static char scratch[PATH_MAX];
static pfmount m;

static void mount_fresh(void)
{
    char dir[PATH_MAX];
    snprintf(dir, sizeof dir, "%s/m%d", scratch, (int)m.pid + rand() % 100000);
    mkdir(dir, 0755);
    CHECK_INT(pfmount_start(&m, dir), 0);
}

static void path(char out[PATH_MAX], const char *rel)
{
    snprintf(out, PATH_MAX, "%s/%s", m.mnt, rel);
}

/* Writes data to rel (created or truncated); fsyncs it when sync. */
static void put(const char *rel, const char *data, bool sync)
{
    char p[PATH_MAX];
    path(p, rel);
    int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    CHECK(fd >= 0);
    CHECK(write(fd, data, strlen(data)) == (ssize_t)strlen(data));
    if (sync)
        CHECK_INT(fsync(fd), 0);
    close(fd);
}

static void sync_dir(const char *rel)
{
    char p[PATH_MAX];
    path(p, rel);
    int fd = open(p, O_RDONLY | O_DIRECTORY);
    CHECK(fd >= 0);
    CHECK_INT(fsync(fd), 0);
    close(fd);
}

/* The content of rel, or "(none)". */
static const char *get(const char *rel)
{
    static char b[65536];
    char p[PATH_MAX];
    path(p, rel);
    int fd = open(p, O_RDONLY);
    if (fd < 0)
        return "(none)";
    ssize_t n = read(fd, b, sizeof b - 1);
    close(fd);
    b[n < 0 ? 0 : n] = '\0';
    return b;
}

static bool exists(const char *rel)
{
    char p[PATH_MAX];
    path(p, rel);
    return access(p, F_OK) == 0;
}

static void cut(const char *how)
{
    CHECK_INT(pfmount_cmd(&m, how), 0);
}

static void done(void)
{
    CHECK_INT(pfmount_stop(&m), 0);
}

TEST(file_without_fsync_vanishes)
{
    mount_fresh();
    put("a", "data", false);
    put("b", "data", false);
    sync_dir(".");
    CHECK_STR(get("a"), "data");
    cut("cut strict");
    /* the directory knew both names; neither file's bytes were synced */
    CHECK_STR(get("a"), "");
    CHECK_STR(get("b"), "");
    put("c", "data", true); /* synced, but its name never was */
    cut("cut strict");
    CHECK(!exists("c"));
    CHECK(exists("a"));
    done();
}

TEST(fsynced_file_and_directory_survive)
{
    mount_fresh();
    put("a", "v1", true);
    sync_dir(".");
    put("a", "v2 longer", false); /* truncate + write, no fsync */
    cut("cut strict");
    CHECK_STR(get("a"), "v1");
    done();
}

/* A real disk keeps the inode (and the synced mtime) of a file whose entry
 * survives; storhd's bulk recovery compares them. */
TEST(durable_file_keeps_inode_and_mtime)
{
    mount_fresh();
    put("a", "v1", true);
    sync_dir(".");
    char p[PATH_MAX];
    struct stat before, after;
    path(p, "a");
    CHECK(stat(p, &before) == 0);
    cut("cut strict");
    CHECK(stat(p, &after) == 0);
    CHECK(after.st_ino == before.st_ino);
    CHECK(after.st_mtim.tv_sec == before.st_mtim.tv_sec &&
          after.st_mtim.tv_nsec == before.st_mtim.tv_nsec);
    cut("cut strict"); /* a file untouched since the last cut, too */
    CHECK(stat(p, &after) == 0);
    CHECK(after.st_ino == before.st_ino);
    CHECK_STR(get("a"), "v1");
    done();
}

TEST(rename_without_directory_fsync_reverts)
{
    mount_fresh();
    put("rec", "v1", true);
    sync_dir(".");
    put(".tmp", "v2", true);
    char a[PATH_MAX], b[PATH_MAX];
    path(a, ".tmp");
    path(b, "rec");
    CHECK_INT(rename(a, b), 0);
    CHECK_STR(get("rec"), "v2");
    cut("cut strict");
    CHECK_STR(get("rec"), "v1");
    CHECK(!exists(".tmp"));
    put(".tmp", "v3", true);
    CHECK_INT(rename(a, b), 0);
    sync_dir(".");
    cut("cut strict");
    CHECK_STR(get("rec"), "v3");
    done();
}

TEST(unlink_without_directory_fsync_comes_back)
{
    mount_fresh();
    put("gone", "here", true);
    sync_dir(".");
    char p[PATH_MAX];
    path(p, "gone");
    CHECK_INT(unlink(p), 0);
    put("gone", "new", true); /* a new file under the old name, not synced in */
    cut("cut strict");
    CHECK_STR(get("gone"), "here");
    done();
}

TEST(directory_without_parent_fsync_vanishes)
{
    mount_fresh();
    char p[PATH_MAX];
    path(p, "d");
    CHECK_INT(mkdir(p, 0755), 0);
    put("d/f", "x", true);
    sync_dir("d");
    cut("cut strict");
    CHECK(!exists("d"));
    CHECK_INT(mkdir(p, 0755), 0);
    put("d/f", "x", true);
    sync_dir("d");
    sync_dir(".");
    cut("cut strict");
    CHECK_STR(get("d/f"), "x");
    done();
}

/* syncfs(2) itself: in a child whose syncfs the relay stops and forwards. */
TEST(syncfs_makes_everything_durable)
{
    mount_fresh();
    pfsync_relay r;
    CHECK_INT(pfsync_relay_start(&r, &m), 0);
    long before = pfmount_stat(&m, "syncfs");
    char p[PATH_MAX];
    path(p, "sub");
    CHECK_INT(mkdir(p, 0755), 0);
    put("sub/f", "all of it", false);
    put("top", "too", false);
    /* a syncfs(2) nobody relays: the kernel does not send it to FUSE */
    int fd = open(m.mnt, O_RDONLY | O_DIRECTORY);
    CHECK_INT(syncfs(fd), 0);
    printf("syncfs(2) delivered to the FUSE server by this kernel: %s\n",
           pfmount_stat(&m, "syncfs") > before ? "yes" : "no");
    pid_t c = fork();
    if (c == 0) {
        if (pfsync_child_install(&r) != 0)
            _exit(3);
        _exit(syncfs(fd) == 0 ? 0 : 4);
    }
    int st = 0;
    waitpid(c, &st, 0);
    close(fd);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    CHECK_INT(atomic_load(&r.relayed), 1);
    pfsync_relay_stop(&r);
    put("after", "late", false);
    cut("cut strict");
    CHECK_STR(get("sub/f"), "all of it");
    CHECK_STR(get("top"), "too");
    CHECK(!exists("after"));
    done();
}

/* Randomized cuts: every result is one the model allows, and over the
 * seeds pages are torn and operations both kept and dropped. */
TEST(randomized_cuts_leave_allowed_states)
{
    static char oldb[3 * 4096 + 1], newb[3 * 4096 + 1], app[4096 * 3 + 100 + 1];
    memset(oldb, 'o', sizeof oldb - 1);
    memset(newb, 'n', sizeof newb - 1);
    memset(app, 'a', sizeof app - 1);
    int torn = 0, kept = 0, dropped = 0, cut_appends = 0;
    mount_fresh();
    for (int seed = 1; seed <= 24; seed++) {
        put("pages", oldb, true);
        put("log", "head\n", true);
        sync_dir(".");
        char p[PATH_MAX];
        path(p, "pages");
        int fd = open(p, O_WRONLY);
        CHECK(pwrite(fd, newb, strlen(newb), 0) == (ssize_t)strlen(newb));
        close(fd);
        path(p, "log");
        fd = open(p, O_WRONLY | O_APPEND);
        CHECK(write(fd, app, strlen(app)) == (ssize_t)strlen(app));
        close(fd);
        put("newfile", "n", true);
        char cmd[32];
        snprintf(cmd, sizeof cmd, "cut %d", seed);
        cut(cmd);
        const char *g = get("pages");
        CHECK_INT(strlen(g), 3 * 4096);
        int news = 0;
        for (int pg = 0; pg < 3; pg++) {
            char c = g[pg * 4096];
            CHECK(c == 'o' || c == 'n');
            for (int i = 1; i < 4096; i++)
                if (g[pg * 4096 + i] != c) {
                    CHECK(!"a page is neither old nor new");
                    break;
                }
            news += c == 'n';
        }
        torn += news > 0 && news < 3;
        g = get("log");
        size_t len = strlen(g);
        CHECK(!strncmp(g, "head\n", 5));
        CHECK(len == 5 || len == 4096 || len == 8192 || len == 12288 || len == 5 + strlen(app));
        cut_appends += len > 5 && len < 5 + strlen(app);
        if (exists("newfile")) {
            kept++;
            CHECK_STR(get("newfile"), "n");
        } else {
            dropped++;
        }
        path(p, "newfile");
        unlink(p);
    }
    printf("randomized: %d torn, %d appends cut at a page, created file kept %d / dropped %d\n",
           torn, cut_appends, kept, dropped);
    CHECK(torn > 0);
    CHECK(cut_appends > 0);
    CHECK(kept > 0 && dropped > 0);
    done();
}

/* A replacing rename the cut undoes brings back the old file itself, as a
 * real disk does: same inode, same mtime (storhd's bulk recovery compares
 * them to tell its own renames from another writer's). */
TEST(undone_replace_keeps_old_inode_and_mtime)
{
    mount_fresh();
    put("rec", "v1", true);
    sync_dir(".");
    char a[PATH_MAX], b[PATH_MAX];
    struct stat before, after;
    path(a, ".tmp");
    path(b, "rec");
    CHECK(stat(b, &before) == 0);
    put(".tmp", "v2", true);
    CHECK_INT(rename(a, b), 0);
    cut("cut strict");
    CHECK_STR(get("rec"), "v1");
    CHECK(stat(b, &after) == 0);
    CHECK(after.st_ino == before.st_ino);
    CHECK(after.st_mtim.tv_sec == before.st_mtim.tv_sec &&
          after.st_mtim.tv_nsec == before.st_mtim.tv_nsec);
    CHECK_INT(unlink(b), 0); /* an unlink the cut undoes, too */
    cut("cut strict");
    CHECK(stat(b, &after) == 0);
    CHECK(after.st_ino == before.st_ino);
    CHECK_STR(get("rec"), "v1");
    done();
}

/* src/x renamed into dst, a directory made after the last sync: the
 * rename is atomic, so a cut leaves x under exactly one of its names. */
static void rename_into_new_dir(void)
{
    char a[PATH_MAX], b[PATH_MAX];
    path(a, "src");
    CHECK_INT(mkdir(a, 0755), 0);
    put("src/x", "x", true);
    sync_dir("src");
    sync_dir(".");
    path(a, "dst");
    CHECK_INT(mkdir(a, 0755), 0);
    path(a, "src/x");
    path(b, "dst/x");
    CHECK_INT(rename(a, b), 0);
}

/* Strict: the rename is durable in both of its directories, but dst's own
 * entry is not: dst goes, and x is back in src (not lost with dst). */
TEST(rename_into_dropped_directory_keeps_old_name)
{
    mount_fresh();
    rename_into_new_dir();
    sync_dir("src");
    sync_dir("dst");
    cut("cut strict");
    CHECK(!exists("dst"));
    CHECK_STR(get("src/x"), "x");
    done();
}

/* Randomized: nothing synced after the rename; over the seeds dst is both
 * kept and dropped, and x is always under exactly one name. */
TEST(randomized_rename_into_new_directory_is_atomic)
{
    int dst_dropped = 0, moved = 0;
    mount_fresh();
    for (int seed = 1; seed <= 32; seed++) {
        char p[PATH_MAX], cmd[32];
        rename_into_new_dir();
        snprintf(cmd, sizeof cmd, "cut %d", seed);
        cut(cmd);
        bool in_src = exists("src/x"), in_dst = exists("dst/x");
        CHECK(in_src != in_dst);
        CHECK_STR(get(in_src ? "src/x" : "dst/x"), "x");
        dst_dropped += !exists("dst");
        moved += in_dst;
        path(p, in_src ? "src/x" : "dst/x");
        CHECK_INT(unlink(p), 0);
        path(p, "dst");
        rmdir(p);
        path(p, "src");
        CHECK_INT(rmdir(p), 0);
        sync_dir(".");
    }
    printf("randomized rename into a new directory: dst dropped %d, x moved %d of 32\n",
           dst_dropped, moved);
    CHECK(dst_dropped > 0 && moved > 0);
    done();
}

static const test_case cases[] = {
    TEST_ENTRY(file_without_fsync_vanishes),
    TEST_ENTRY(fsynced_file_and_directory_survive),
    TEST_ENTRY(durable_file_keeps_inode_and_mtime),
    TEST_ENTRY(rename_without_directory_fsync_reverts),
    TEST_ENTRY(unlink_without_directory_fsync_comes_back),
    TEST_ENTRY(directory_without_parent_fsync_vanishes),
    TEST_ENTRY(syncfs_makes_everything_durable),
    TEST_ENTRY(randomized_cuts_leave_allowed_states),
    TEST_ENTRY(undone_replace_keeps_old_inode_and_mtime),
    TEST_ENTRY(rename_into_dropped_directory_keeps_old_name),
    {"randomized_rename_into_new_directory_is_atomic",
     randomized_rename_into_new_directory_is_atomic},
};

static int run_cases(int argc, char **argv);

int main(int argc, char **argv)
{
    TEST_LIST_EXIT(argc, argv, cases);
    if (!pfmount_scratch(scratch))
        return 2;
    int rc = run_cases(argc, argv);
    tmpdir_remove(scratch);
    return rc;
}

TEST_MAIN_NAMED(run_cases, cases)
