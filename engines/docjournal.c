#include "docjournal.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "buf.h"
#include "estats.h"
#include "fault.h"
#include "fsx.h"
#include "idmap.h"

struct docjournal {
    char coll[PATH_MAX];
    char dir[PATH_MAX];
    int lock_fd;
};

static int64_t mtime_ns(const struct stat *st)
{
    return (int64_t)st->st_mtim.tv_sec * 1000000000 + st->st_mtim.tv_nsec;
}

/* The flock on <dir>.lock, which sits beside the stage directory and is
 * taken before that directory exists, so an opener that sees a stage and
 * can lock it knows its writer is gone. A lock file unlinked by such an
 * opener between our open and flock is not ours anymore: then again. */
static int lock_stage(const char *dir, bool wait, int *fd, storh_err *err)
{
    char p[PATH_MAX];
    int rc = fsx_pathf(p, err, "%s.lock", dir);
    if (rc)
        return rc;
    for (;;) {
        *fd = open(p, O_RDWR | O_CREAT | O_CLOEXEC, 0666);
        if (*fd < 0)
            return storh_err_sys(err, errno, "Could not open bulk stage lock %s", p);
        if (flock(*fd, LOCK_EX | (wait ? 0 : LOCK_NB)) != 0) {
            int e = errno;
            close(*fd);
            *fd = -1;
            return e == EWOULDBLOCK ? STORH_ECONFLICT
                                    : storh_err_sys(err, e, "Could not lock bulk stage %s", p);
        }
        struct stat a, b;
        if (fstat(*fd, &a) == 0 && stat(p, &b) == 0 && a.st_ino == b.st_ino)
            return 0;
        close(*fd);
    }
}

/* Drops a stage's lock file, then its descriptor (and so the flock). */
static void unlock_stage(const char *dir, int fd)
{
    char p[PATH_MAX];
    if (!fsx_pathf(p, NULL, "%s.lock", dir))
        unlink(p);
    if (fd >= 0)
        close(fd);
}

int docjournal_begin(const char *coll, const char *identity, unsigned long n, docjournal **out,
                     storh_err *err)
{
    docjournal *j = calloc(1, sizeof *j);
    if (!j)
        return storh_err_set(err, STORH_ENOMEM, "Out of memory.");
    j->lock_fd = -1;
    snprintf(j->coll, sizeof j->coll, "%s", coll);
    char bulk[PATH_MAX];
    int rc = fsx_pathf(j->dir, err, "%s/.storh/bulk/%s.%lu", coll, identity, n);
    if (!rc)
        rc = fsx_pathf(bulk, err, "%s/.storh/bulk", coll);
    if (!rc) /* durable with the rows' syncfs */
        rc = fsx_mkdirs(bulk, false, err);
    if (!rc)
        rc = lock_stage(j->dir, true, &j->lock_fd, err);
    if (!rc && mkdir(j->dir, 0777) != 0)
        rc = storh_err_sys(err, errno, "Could not create bulk stage %s", j->dir);
    if (rc) {
        docjournal_end(j);
        return rc;
    }
    *out = j;
    return 0;
}

int docjournal_row_path(const docjournal *j, size_t i, const char *id, char *out, storh_err *err)
{
    return fsx_pathf(out, err, "%s/%.2s/%zu", j->dir, id + 24, i);
}

int docjournal_commit(docjournal *j, const char *const *finals, const char *const *ids, size_t n,
                      storh_err *err)
{
    size_t cl = strlen(j->coll);
    json_t *rows = json_array();
    idmap last; /* id -> 1 + the latest row of this bulk that writes it */
    int rc = rows && idmap_init(&last, sizeof(size_t)) == 0
                 ? 0
                 : storh_err_set(err, STORH_ENOMEM, "Out of memory.");
    if (rc) {
        json_decref(rows);
        return rc;
    }
    for (size_t i = 0; !rc && i < n; i++) {
        char staged[PATH_MAX];
        struct stat sst, tst;
        if ((rc = docjournal_row_path(j, i, ids[i], staged, err)))
            break;
        if (stat(staged, &sst) != 0) {
            rc = storh_err_sys(err, errno, "Could not stat staged row %s", staged);
            break;
        }
        /* what the record path holds when the renames begin: the file an
         * earlier row of this bulk puts there, or the one on disk now */
        bool fresh = false;
        size_t *prev = idmap_put(&last, ids[i], &fresh);
        if (!prev) {
            rc = storh_err_set(err, STORH_ENOMEM, "Out of memory.");
            break;
        }
        char pp[PATH_MAX];
        json_t *pre = json_null();
        if (!fresh && !(rc = docjournal_row_path(j, *prev - 1, ids[i], pp, err)) &&
            stat(pp, &tst) == 0)
            pre = json_pack("[II]", (json_int_t)tst.st_ino, (json_int_t)mtime_ns(&tst));
        else if (fresh && stat(finals[i], &tst) == 0)
            pre = json_pack("[II]", (json_int_t)tst.st_ino, (json_int_t)mtime_ns(&tst));
        *prev = i + 1;
        if (strncmp(finals[i], j->coll, cl) != 0 || finals[i][cl] != '/')
            rc = storh_err_set(err, STORH_EINVAL, "Record path outside the collection.");
        if (!rc && json_array_append_new(rows, json_pack("[soI]", finals[i] + cl + 1, pre,
                                                         (json_int_t)sst.st_ino)) != 0)
            rc = storh_err_set(err, STORH_ENOMEM, "Out of memory.");
    }
    idmap_free(&last);
    json_t *doc = rc ? NULL : json_pack("{so}", "rows", rows);
    if (rc)
        json_decref(rows);
    char *text = doc ? json_dumps(doc, JSON_COMPACT) : NULL;
    json_decref(doc);
    if (!rc && !text)
        rc = storh_err_set(err, STORH_ENOMEM, "Out of memory.");
    char path[PATH_MAX];
    if (!rc)
        rc = fsx_pathf(path, err, "%s/journal.jsonc", j->dir);
    if (!rc)
        rc = fsx_publish(path, text, strlen(text), err);
    free(text);
    if (!rc)
        fault_point("docstore.bulk.committed");
    return rc;
}

int docjournal_rename(const char *from, const char *to, storh_err *err)
{
    if (rename(from, to) != 0 && errno == ENOENT) {
        char d[PATH_MAX];
        fsx_dirname(to, d, sizeof d);
        if (fsx_mkdirs(d, false, NULL) == 0 && rename(from, to) == 0)
            goto done;
        errno = ENOENT;
    } else {
        goto done;
    }
    return storh_err_sys(err, errno, "Could not atomically replace storage file: %s", to);
done:
    estats_add(ESTAT_RENAME, 1);
    return 0;
}

/* Removes dir and what it holds, depth levels of directories deep. */
static void remove_tree(const char *dir, int depth)
{
    DIR *d = opendir(dir);
    if (d) {
        struct dirent *de;
        char p[PATH_MAX];
        while ((de = readdir(d)))
            if (strcmp(de->d_name, ".") && strcmp(de->d_name, "..") &&
                !fsx_pathf(p, NULL, "%s/%s", dir, de->d_name) && unlink(p) != 0 && depth > 0)
                remove_tree(p, depth - 1);
        closedir(d);
    }
    rmdir(dir);
}

/* Removes a stage directory (rows in shard subdirectories), its commit
 * record first. */
static void remove_stage(const char *dir)
{
    char p[PATH_MAX];
    if (!fsx_pathf(p, NULL, "%s/journal.jsonc", dir))
        unlink(p);
    remove_tree(dir, 1);
}

void docjournal_end(docjournal *j)
{
    if (!j)
        return;
    if (j->dir[0])
        remove_stage(j->dir);
    if (j->lock_fd >= 0)
        unlock_stage(j->dir, j->lock_fd);
    j->lock_fd = -1;
    docjournal_release(j);
}

void docjournal_release(docjournal *j)
{
    if (!j)
        return;
    if (j->lock_fd >= 0)
        close(j->lock_fd);
    free(j);
}

/* Replays the commit record of a dead writer's stage. */
static int roll_forward(const char *coll, const char *dir, const json_t *doc, storh_err *err)
{
    json_t *rows = json_object_get(doc, "rows"), *r;
    if (!json_is_array(rows))
        return storh_err_set(err, STORH_ECORRUPT, "Malformed bulk journal in %s", dir);
    size_t i;
    int rc = 0;
    json_array_foreach(rows, i, r)
    {
        const char *rel = json_string_value(json_array_get(r, 0));
        json_t *pre = json_array_get(r, 1);
        json_t *ino = json_array_get(r, 2);
        if (!rel || strncmp(rel, "data/", 5) != 0 || strlen(rel) < 9 || rel[7] != '/' ||
            strstr(rel, "..") || !json_is_integer(ino))
            return storh_err_set(err, STORH_ECORRUPT, "Malformed bulk journal in %s", dir);
        char staged[PATH_MAX], target[PATH_MAX];
        if ((rc = fsx_pathf(staged, err, "%s/%.2s/%zu", dir, rel + 5, i)) ||
            (rc = fsx_pathf(target, err, "%s/%s", coll, rel)))
            return rc;
        struct stat sst, tst;
        if (stat(staged, &sst) != 0)
            continue; /* renamed before the crash */
        bool exists = stat(target, &tst) == 0;
        if (exists && tst.st_ino == sst.st_ino) { /* renamed, the old name kept too */
            unlink(staged);
            continue;
        }
        bool same =
            json_is_null(pre)
                ? !exists
                : exists && json_is_array(pre) &&
                      (json_int_t)tst.st_ino == json_integer_value(json_array_get(pre, 0)) &&
                      mtime_ns(&tst) == json_integer_value(json_array_get(pre, 1));
        if (!same) { /* another writer replaced it since: theirs is newer */
            unlink(staged);
            continue;
        }
        if ((rc = docjournal_rename(staged, target, err)))
            return rc;
        fault_point("docstore.bulk.recovering");
    }
    return 0;
}

int docjournal_recover(const char *coll, bool *rolled, storh_err *err)
{
    *rolled = false;
    char bulk[PATH_MAX];
    int rc = fsx_pathf(bulk, err, "%s/.storh/bulk", coll);
    if (rc)
        return rc;
    DIR *d = opendir(bulk);
    if (!d)
        return errno == ENOENT ? 0 : storh_err_sys(err, errno, "Could not list %s", bulk);
    struct dirent *de;
    char(*done)[PATH_MAX] = NULL;
    size_t ndone = 0;
    while (!rc && (de = readdir(d))) {
        if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
            continue;
        char dir[PATH_MAX], jp[PATH_MAX];
        if ((rc = fsx_pathf(dir, err, "%s/%s", bulk, de->d_name)) ||
            (rc = fsx_pathf(jp, err, "%s/journal.jsonc", dir)))
            break;
        struct stat st;
        size_t nl = strlen(dir);
        if (nl > 5 && !strcmp(dir + nl - 5, ".lock")) { /* a lock without its stage */
            dir[nl - 5] = '\0';
            int fd;
            if (stat(dir, &st) != 0 && lock_stage(dir, false, &fd, NULL) == 0)
                unlock_stage(dir, fd);
            continue;
        }
        if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode))
            continue;
        int fd;
        int lrc = lock_stage(dir, false, &fd, NULL);
        if (lrc == STORH_ECONFLICT)
            continue; /* its writer is alive */
        if (lrc) {
            rc = storh_err_sys(err, errno, "Could not lock bulk stage %s", dir);
            break;
        }
        buf b = BUF_INIT;
        int jrc = fsx_read_all(jp, &b, err);
        if (jrc == 0) {
            json_t *doc = json_loadb(b.data, b.len, 0, NULL);
            rc = doc ? roll_forward(coll, dir, doc, err)
                     : storh_err_set(err, STORH_ECORRUPT, "Malformed bulk journal in %s", dir);
            json_decref(doc);
            *rolled = true;
        } else if (jrc != STORH_ENOTFOUND) {
            rc = jrc;
        }
        buf_free(&b);
        /* the stage goes once the renames are durable, the lock after it */
        if (!rc) {
            char(*nd)[PATH_MAX] = realloc(done, (ndone + 1) * sizeof *done);
            if (nd) {
                done = nd;
                memcpy(done[ndone++], dir, PATH_MAX);
            }
        }
        close(fd);
    }
    closedir(d);
    /* the renames durable before any commit record goes */
    if (!rc && *rolled) {
        int fd = open(coll, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0 || syncfs(fd) != 0)
            rc = storh_err_sys(err, errno, "Could not sync %s", coll);
        else
            estats_add(ESTAT_FSYNC_FS, 1);
        if (fd >= 0)
            close(fd);
    }
    for (size_t i = 0; !rc && i < ndone; i++) {
        remove_stage(done[i]);
        unlock_stage(done[i], -1);
    }
    free(done);
    return rc;
}
