/* recfile: the listing of a store's record files, walked in one go
 * (recfile_list_open_keep) or by two threads, half the shards each
 * (recfile_list_open_split). The two give the same listing: the same keys
 * in the same order, the same file for a key found twice (the later one
 * walked), the same files a keep leaves out; and the split one falls back
 * to one walk where datadir holds anything but shards. Keys that are all
 * lowercase UUIDs (a store's) are sorted by their packed digits, in the
 * same byte order. */
#include <dirent.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../test.h"
#include "../tmpdir.h"
#include "recfile.h"

static char root[PATH_MAX];

static void touch(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    CHECK(f != NULL);
    if (f) {
        fputs(text, f);
        fclose(f);
    }
}

/* datadir with 256 shards of per files each (keys k<shard><n>), and
 * files that are not records beside them. */
static void fill(const char *datadir, int per)
{
    CHECK_INT(mkdir(datadir, 0755), 0);
    char p[PATH_MAX];
    for (int s = 0; s < 256; s++) {
        snprintf(p, sizeof p, "%s/%02x", datadir, s);
        CHECK_INT(mkdir(p, 0755), 0);
        for (int i = 0; i < per; i++) {
            snprintf(p, sizeof p, "%s/%02x/k%02x%04d.jsonc", datadir, s, s, i);
            touch(p, "{}");
        }
        snprintf(p, sizeof p, "%s/%02x/.k%02x.tmp", datadir, s, s);
        touch(p, "");
        snprintf(p, sizeof p, "%s/%02x/notes.txt", datadir, s);
        touch(p, "");
    }
}

/* Every entry of a and b the same: key, and path of the file listed. */
static void same(const recfile_list *a, const recfile_list *b)
{
    CHECK_INT((long long)a->n, (long long)b->n);
    for (size_t i = 0; i < a->n && i < b->n; i++) {
        char pa[PATH_MAX], pb[PATH_MAX];
        CHECK_STR(recfile_list_key(a, i), recfile_list_key(b, i));
        CHECK_INT(recfile_list_path(a, i, pa), 0);
        CHECK_INT(recfile_list_path(b, i, pb), 0);
        CHECK_STR(pa, pb);
        if (strcmp(pa, pb))
            break;
    }
    for (size_t i = 1; i < a->n; i++)
        CHECK(strcmp(recfile_list_key(a, i - 1), recfile_list_key(a, i)) < 0);
}

TEST(split_listing_is_the_one_walk_listing)
{
    char dir[PATH_MAX];
    snprintf(dir, sizeof dir, "%s/big", root);
    fill(dir, 20); /* 5,120 files: halved */
    /* a key in two shards: the one walked later wins, in both */
    char p[PATH_MAX];
    snprintf(p, sizeof p, "%s/07/k2a0003.jsonc", dir);
    touch(p, "{}");
    recfile_list one, two;
    CHECK_INT(recfile_list_open_keep(dir, &one, NULL, NULL), 0);
    CHECK_INT(recfile_list_open_split(dir, &two, NULL, NULL), 0);
    CHECK_INT((long long)one.n, 256 * 20);
    CHECK_INT((long long)two.found, 256 * 20 + 1);
    same(&one, &two);
    recfile_list_free(&one);
    recfile_list_free(&two);
}

/* keep: counts calls (from both threads) and leaves out every key whose
 * last digit is 3. */
static atomic_long calls;
static bool keep_not_3(void *ctx, int dirfd, const char *dir, const char *name, size_t klen)
{
    (void)ctx;
    struct stat st;
    CHECK_INT(fstatat(dirfd, name, &st, 0), 0); /* dirfd is name's directory */
    CHECK(strlen(dir) > 3 && !strncmp(dir + strlen(dir) - 2, name + 1, 2));
    atomic_fetch_add(&calls, 1);
    return name[klen - 1] != '3';
}

TEST(split_listing_keeps_what_keep_keeps)
{
    char dir[PATH_MAX];
    snprintf(dir, sizeof dir, "%s/kept", root);
    fill(dir, 20);
    recfile_list one, two;
    atomic_store(&calls, 0);
    CHECK_INT(recfile_list_open_keep(dir, &one, keep_not_3, NULL), 0);
    CHECK_INT(atomic_load(&calls), 256 * 20);
    atomic_store(&calls, 0);
    CHECK_INT(recfile_list_open_split(dir, &two, keep_not_3, NULL), 0);
    CHECK_INT(atomic_load(&calls), 256 * 20);
    CHECK_INT((long long)one.n, 256 * 18);
    CHECK_INT((long long)two.found, 256 * 20);
    same(&one, &two);
    recfile_list_free(&one);
    recfile_list_free(&two);
}

TEST(split_listing_falls_back_to_one_walk)
{
    char dir[PATH_MAX], p[PATH_MAX];
    recfile_list one, two;
    /* small: a few files a shard */
    snprintf(dir, sizeof dir, "%s/small", root);
    fill(dir, 2);
    CHECK_INT(recfile_list_open_keep(dir, &one, NULL, NULL), 0);
    CHECK_INT(recfile_list_open_split(dir, &two, NULL, NULL), 0);
    CHECK_INT((long long)two.n, 512);
    same(&one, &two);
    recfile_list_free(&one);
    recfile_list_free(&two);
    /* a record file beside the shards, and one a level deeper */
    snprintf(dir, sizeof dir, "%s/mixed", root);
    fill(dir, 20);
    snprintf(p, sizeof p, "%s/top.jsonc", dir);
    touch(p, "{}");
    snprintf(p, sizeof p, "%s/3c/deep", dir);
    CHECK_INT(mkdir(p, 0755), 0);
    snprintf(p, sizeof p, "%s/3c/deep/k3c0001.jsonc", dir);
    touch(p, "{}");
    CHECK_INT(recfile_list_open_keep(dir, &one, NULL, NULL), 0);
    CHECK_INT(recfile_list_open_split(dir, &two, NULL, NULL), 0);
    CHECK_INT((long long)two.n, 256 * 20 + 1);
    same(&one, &two);
    recfile_list_free(&one);
    recfile_list_free(&two);
    /* none at all, and an empty one */
    snprintf(dir, sizeof dir, "%s/none", root);
    CHECK_INT(recfile_list_open_split(dir, &two, NULL, NULL), 0);
    CHECK_INT((long long)two.n, 0);
    recfile_list_free(&two);
    CHECK_INT(mkdir(dir, 0755), 0);
    CHECK_INT(recfile_list_open_split(dir, &two, NULL, NULL), 0);
    CHECK_INT((long long)two.n, 0);
    recfile_list_free(&two);
}

/* The i-th key of the uuids test: UUID-shaped, its hex digits taken from
 * a sequence that crosses the digit/letter boundary at every place. */
static void uuid_key(char out[37], unsigned i)
{
    unsigned long long x = (i + 1) * 0x9e3779b97f4a7c15ull;
    snprintf(out, 37, "0190%04llx-%04llx-7%03llx-%04llx-%012llx", x >> 48, (x >> 32) & 0xffff,
             (x >> 20) & 0xfff, 0x8000 | ((x >> 4) & 0x3fff), (x * 31) & 0xffffffffffffull);
}

/* datadir/sh/key.jsonc */
static void put_key(const char *datadir, const char *sh, const char *key)
{
    char p[PATH_MAX];
    snprintf(p, sizeof p, "%s/%s", datadir, sh);
    (void)mkdir(p, 0755);
    snprintf(p, sizeof p, "%s/%s/%s.jsonc", datadir, sh, key);
    touch(p, "{}");
}

/* Which of shards a and b datadir's readdir (the walk's order) gives later. */
static const char *walked_later(const char *datadir, const char *a, const char *b)
{
    DIR *d = opendir(datadir);
    CHECK(d != NULL);
    const char *later = NULL;
    struct dirent *de;
    while (d && (de = readdir(d)))
        if (!strcmp(de->d_name, a))
            later = a;
        else if (!strcmp(de->d_name, b))
            later = b;
    if (d)
        closedir(d);
    return later;
}

/* The listing of keys every one a lowercase UUID (sorted by their packed
 * digits) is in byte order as any other, the later walked of a key found
 * twice kept; with a name beside them that is not one (sorted by bytes),
 * the same. */
TEST(uuid_names_sort_as_their_bytes)
{
    char dir[PATH_MAX], key[37], p[PATH_MAX];
    snprintf(dir, sizeof dir, "%s/uuids", root);
    CHECK_INT(mkdir(dir, 0755), 0);
    enum { N = 600 };
    for (unsigned i = 0; i < N; i++) {
        char sh[3];
        uuid_key(key, i);
        snprintf(sh, sizeof sh, "%02u", i % 20);
        put_key(dir, sh, key);
    }
    /* keys that differ in their last digit only, across 9/a */
    put_key(dir, "00", "0190aaaa-bbbb-7ccc-8ddd-000000000009");
    put_key(dir, "00", "0190aaaa-bbbb-7ccc-8ddd-00000000000a");
    put_key(dir, "00", "0190aaaa-bbbb-7ccc-8ddd-000000000010");
    /* one key in two shards */
    uuid_key(key, 7); /* in shard 07 */
    put_key(dir, "13", key);
    const char *later = walked_later(dir, "07", "13");
    for (int round = 0; round < 2; round++) {
        recfile_list l;
        CHECK_INT(recfile_list_open_keep(dir, &l, NULL, NULL), 0);
        CHECK_INT((long long)l.n, N + 3 + round * 2);
        int unordered = 0, found = 0;
        for (size_t i = 0; i < l.n; i++) {
            unordered += i && strcmp(recfile_list_key(&l, i - 1), recfile_list_key(&l, i)) >= 0;
            if (!strcmp(recfile_list_key(&l, i), key)) {
                found++;
                CHECK_INT(recfile_list_path(&l, i, p), 0);
                CHECK(later && strstr(p, later) == p + strlen(dir) + 1);
            }
        }
        CHECK_INT(unordered, 0);
        CHECK_INT(found, 1);
        recfile_list_free(&l);
        /* then names that are not lowercase UUIDs beside them */
        put_key(dir, "05", "0190AAAA-BBBB-7CCC-8DDD-000000000001");
        put_key(dir, "05", "0190aaaa-bbbb-7ccc-8ddd-00000000000");
    }
}

static const test_case tests[] = {
    TEST_ENTRY(uuid_names_sort_as_their_bytes),
    TEST_ENTRY(split_listing_is_the_one_walk_listing),
    TEST_ENTRY(split_listing_keeps_what_keep_keeps),
    TEST_ENTRY(split_listing_falls_back_to_one_walk),
};

TMPDIR_TEST_MAIN(root, tests)
