/* test_diskfull: storhd on a small filesystem of its own (a tmpfs, or with
 * STORHD_DISKFULL_FS=ext4 a loop-mounted ext4) in a private mount namespace.
 * Documents, log records and jobs are written until the disk is full: every
 * answer is 2xx or 507 (never a 500 or a dropped connection), everything
 * acknowledged stays readable while the disk is full, writes succeed again
 * once the filesystem grows, and after a SIGKILL and a restart everything
 * acknowledged is there and every store verifies clean. */
#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <sched.h>
#include <stdbool.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "client.h"
#include "../support/daemon.h"
#include "../test.h"
#include "../tmpdir.h"
#include "uuid7.h"

#define MAX_ACKED 200000

static daemon_proc d;
static char base[PATH_MAX], mnt[PATH_MAX], root[PATH_MAX];
static const char *fs_type = "tmpfs";

typedef struct acked {
    char kind; /* d, l, q */
    char id[UUID7_LEN + 1];
    long n;
} acked;

static acked *acks;
static size_t nacks;
static long counts[3][3]; /* [doc, log, queue][2xx, 507, other] */
static long long bad_answers;

static int write_file(const char *path, const char *text)
{
    int fd = open(path, O_WRONLY);
    if (fd < 0)
        return -1;
    ssize_t n = write(fd, text, strlen(text));
    close(fd);
    return n == (ssize_t)strlen(text) ? 0 : -1;
}

/* A mount namespace of our own: as root directly, else as root of a new
 * user namespace (which may mount a tmpfs). */
static int private_mounts(void)
{
    if (unshare(CLONE_NEWNS) != 0) {
        uid_t uid = getuid();
        gid_t gid = getgid();
        if (unshare(CLONE_NEWUSER | CLONE_NEWNS) != 0) {
            fprintf(stderr,
                    "test_diskfull needs a mount namespace to mount a small "
                    "filesystem: run it as root or allow user namespaces (%s)\n",
                    strerror(errno));
            return -1;
        }
        char map[64];
        write_file("/proc/self/setgroups", "deny");
        snprintf(map, sizeof map, "0 %d 1", (int)uid);
        write_file("/proc/self/uid_map", map);
        snprintf(map, sizeof map, "0 %d 1", (int)gid);
        write_file("/proc/self/gid_map", map);
    }
    /* nothing mounted here leaks to the host */
    return mount("none", "/", "none", MS_REC | MS_PRIVATE, NULL); /* type: ignored */
}

static int sh(const char *fmt, const char *a, const char *b)
{
    char cmd[3 * PATH_MAX];
    snprintf(cmd, sizeof cmd, fmt, a, b);
    return system(cmd);
}

static int mount_small(void)
{
    if (!strcmp(fs_type, "ext4")) {
        char img[PATH_MAX];
        snprintf(img, sizeof img, "%s/fs.img", base);
        if (sh("truncate -s 64M '%s' && mkfs.ext4 -q -F '%s'", img, img) ||
            sh("mount -o loop '%s' '%s'", img, mnt))
            return -1;
        /* a ballast file leaves 3 MiB free; grow() deletes it */
        struct statvfs fs;
        if (statvfs(mnt, &fs) != 0)
            return -1;
        char ballast[PATH_MAX];
        snprintf(ballast, sizeof ballast, "%s/ballast", mnt);
        int fd = open(ballast, O_WRONLY | O_CREAT, 0644);
        off_t len = (off_t)(fs.f_bavail * fs.f_frsize) - 3 * 1024 * 1024;
        int rc = fd >= 0 && len > 0 && posix_fallocate(fd, 0, len) == 0 && fsync(fd) == 0 ? 0 : -1;
        if (fd >= 0)
            close(fd);
        return rc;
    }
    return mount("tmpfs", mnt, "tmpfs", 0, "size=6m");
}

/* More room: grow the tmpfs, or drop the ext4 ballast. */
static int grow(void)
{
    if (!strcmp(fs_type, "ext4"))
        return sh("rm -f '%s/ballast' && sync -f '%s'", mnt, mnt);
    return mount("tmpfs", mnt, "tmpfs", MS_REMOUNT, "size=64m");
}

static long call(const char *method, const char *path, const char *body, json_t **out)
{
    json_t *reply = NULL;
    long st = client_json(d.base, method, path, body, &reply);
    if (st >= 500 && st != 507) {
        char *text = json_dumps(reply, JSON_COMPACT);
        fprintf(stderr, "%s %s -> %ld %s\n", method, path, st, text ? text : "");
        free(text);
    }
    if (out)
        *out = reply;
    else
        json_decref(reply);
    return st;
}

static void tally(int kind, long st)
{
    int k = (st >= 200 && st < 300) ? 0 : st == 507 ? 1 : 2;
    counts[kind][k]++;
    if (k == 2) {
        bad_answers++;
        fprintf(stderr, "a write got %ld: neither 2xx nor 507\n", st);
    }
}

/* One write of each kind; true when all three were acknowledged. */
static int round_of_writes(long n)
{
    char body[1400], path[128];
    snprintf(body, sizeof body, "{\"n\":%ld,\"pad\":\"%01000d\"}", n, 0);
    int ok = 0;
    acked a = {'d', "", n};
    uuid7_generate(a.id, -1, NULL);
    snprintf(path, sizeof path, "/v1/docs/full/%s", a.id);
    long st = call("PUT", path, body, NULL);
    tally(0, st);
    if (st == 201 && nacks < MAX_ACKED) {
        acks[nacks++] = a;
        ok++;
    }
    json_t *r = NULL;
    st = call("POST", "/v1/logs/full", body, &r);
    tally(1, st);
    const char *id = json_string_value(json_object_get(r, "id"));
    if (st == 201 && id && nacks < MAX_ACKED) {
        acks[nacks] = (acked){'l', "", n};
        snprintf(acks[nacks++].id, UUID7_LEN + 1, "%s", id);
        ok++;
    }
    json_decref(r);
    st = call("POST", "/v1/queues/full/jobs", body, &r);
    tally(2, st);
    id = json_string_value(json_array_get(json_object_get(r, "ids"), 0));
    if (st == 201 && id && nacks < MAX_ACKED) {
        acks[nacks] = (acked){'q', "", n};
        snprintf(acks[nacks++].id, UUID7_LEN + 1, "%s", id);
        ok++;
    }
    json_decref(r);
    return ok;
}

/* Every acknowledged document and log record reads back; the queue holds
 * every acknowledged job (it is never claimed here). */
static void check_acked(void)
{
    long jobs = 0;
    for (size_t i = 0; i < nacks; i++) {
        const acked *a = &acks[i];
        if (a->kind == 'q') {
            jobs++;
            continue;
        }
        char path[128];
        snprintf(path, sizeof path, "/v1/%s/full/%s", a->kind == 'd' ? "docs" : "logs", a->id);
        json_t *r = NULL;
        long st = call("GET", path, NULL, &r);
        long n = (long)json_integer_value(json_object_get(json_object_get(r, "data"), "n"));
        json_decref(r);
        if (st != 200 || n != a->n)
            fprintf(stderr, "%s: status %ld n %ld, want %ld\n", path, st, n, a->n);
        CHECK(st == 200 && n == a->n);
    }
    json_t *r = NULL;
    CHECK_INT(call("GET", "/v1/queues/full", NULL, &r), 200);
    CHECK_INT(json_integer_value(json_object_get(r, "pending")), jobs);
    json_decref(r);
}

/* A bulk write on a full disk: 507, and the store's stats unchanged. */
static void bulk_refused(const char *kind, int rows)
{
    char stats[64], bulk[64];
    snprintf(stats, sizeof stats, "/v1/%s/full/_stats", kind);
    snprintf(bulk, sizeof bulk, "/v1/%s/full/_bulk", kind);
    client_resp before, after, r;
    client_do(d.base, "GET", stats, NULL, NULL, 0, NULL, 0, &before);
    size_t cap = (size_t)rows * 1100;
    char *body = malloc(cap), *p = body;
    for (int i = 0; i < rows; i++)
        p += sprintf(p, "{\"bulk\":%d,\"pad\":\"%01000d\"}\n", i, 0);
    client_do(d.base, "POST", bulk, "application/x-ndjson", body, (size_t)(p - body), NULL, 0, &r);
    CHECK_INT(r.status, 507);
    client_do(d.base, "GET", stats, NULL, NULL, 0, NULL, 0, &after);
    CHECK_INT(before.status, 200);
    CHECK_STR(after.body, before.body);
    client_free(&before);
    client_free(&after);
    client_free(&r);
    free(body);
}

static void check_verify(void)
{
    static const char *const paths[] = {"/v1/docs/full/_verify", "/v1/logs/full/_verify",
                                        "/v1/queues/full/_verify"};
    for (size_t i = 0; i < 3; i++) {
        client_resp r;
        client_do(d.base, "GET", paths[i], NULL, NULL, 0, NULL, 0, &r);
        CHECK_PREFIX(r.body, "{\"ok\":true,\"errors\":[]");
        client_free(&r);
    }
}

static const char *const extra[] = {"--log-segment-bytes", "16384", NULL};

TEST(writes_fail_with_507_and_recover)
{
    CHECK_INT(daemon_start(&d, root, extra), 0);
    long n = 0;
    /* fill: until every kind has been refused many times over */
    int refused_rounds = 0;
    while (refused_rounds < 30 && n < 100000)
        refused_rounds = round_of_writes(++n) == 0 ? refused_rounds + 1 : 0;
    CHECK_INT(refused_rounds, 30);
    for (int k = 0; k < 3; k++)
        CHECK(counts[k][1] > 0); /* each kind saw 507 */
    long before = (long)nacks;
    check_acked();              /* reads work on a full disk */
    bulk_refused("logs", 3000); /* 3 MiB: more than one chunk, all or nothing */
    bulk_refused("docs", 200);
    /* a bulk into a stream not created yet: opening it is what fails, with
     * the opener's 507 (it used to be masked as a 500) */
    client_resp nb;
    client_do(d.base, "POST", "/v1/logs/newstream/_bulk", "application/x-ndjson", "{\"a\":1}\n", 8,
              NULL, 0, &nb);
    if (nb.status != 507)
        fprintf(stderr, "bulk into a new stream: %ld %s\n", nb.status, nb.body);
    CHECK_INT(nb.status, 507);
    client_free(&nb);
    /* still full: a new collection cannot even be created */
    long st = call("POST", "/v1/docs/newcoll", "{\"a\":1}", NULL);
    CHECK(st == 507);
    CHECK_INT(grow(), 0);
    int ok_rounds = 0;
    for (int i = 0; i < 50; i++)
        ok_rounds += round_of_writes(++n) == 3;
    CHECK_INT(ok_rounds, 50); /* recovered without a restart */
    CHECK(call("POST", "/v1/docs/newcoll", "{\"a\":1}", NULL) == 201);
    check_acked();
    check_verify();
    daemon_kill(&d);
    CHECK_INT(daemon_start(&d, root, extra), 0);
    check_acked();
    check_verify();
    CHECK_INT(daemon_stop(&d), 0);
    CHECK_INT(bad_answers, 0);
    printf("disk full (%s): %ld rounds; documents %ld acknowledged / %ld refused with 507, "
           "log %ld / %ld, queue %ld / %ld; %ld acknowledged before the disk filled, %zu in "
           "all, all read back after a restart\n",
           fs_type, n, counts[0][0], counts[0][1], counts[1][0], counts[1][1], counts[2][0],
           counts[2][1], before, nacks);
}

static const test_case cases[] = {
    TEST_ENTRY(writes_fail_with_507_and_recover),
};

static int run_cases(int argc, char **argv);

int main(int argc, char **argv)
{
    TEST_LIST_EXIT(argc, argv, cases);
    if (getenv("STORHD_DISKFULL_FS"))
        fs_type = getenv("STORHD_DISKFULL_FS");
    if (private_mounts() != 0 || !tmpdir_make(base))
        return 1;
    snprintf(mnt, sizeof mnt, "%s/fs", base);
    snprintf(root, sizeof root, "%s/root", mnt);
    mkdir(mnt, 0755);
    if (mount_small() != 0) {
        fprintf(stderr, "could not mount a small %s at %s: %s\n", fs_type, mnt, strerror(errno));
        return 1;
    }
    mkdir(root, 0755);
    acks = calloc(MAX_ACKED, sizeof *acks);
    curl_global_init(CURL_GLOBAL_DEFAULT);
    int rc = run_cases(argc, argv);
    curl_global_cleanup();
    free(acks);
    umount2(mnt, MNT_DETACH);
    tmpdir_remove(base);
    return rc;
}

TEST_MAIN_NAMED(run_cases, cases)
