/* pubset: see pubset.h. */
#include "pubset.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "estats.h"
#include "fault.h"
#include "fsx.h"

typedef struct pfile {
    char *tmp, *path; /* owned */
} pfile;

struct pubset {
    int sync_fd; /* syncfs(2) through it; -1: an fsync per file and directory */
    char token[9];
    unsigned seq;
    pfile *f;
    size_t n, cap;
};

int pubset_begin(const char *dir, bool use_syncfs, pubset **out, storh_err *err)
{
    pubset *p = calloc(1, sizeof *p);
    if (!p)
        return storh_err_oom(err);
    p->sync_fd = -1;
    int rc = fsx_random_hex(p->token, 4, err);
    /* opened before the first write: the syncfs reports every writeback
     * error since */
    if (!rc && use_syncfs && (p->sync_fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0)
        rc = storh_err_sys(err, errno, "Could not open %s", dir);
    if (rc) {
        free(p);
        return rc;
    }
    *out = p;
    return 0;
}

int pubset_add(pubset *p, const char *path, const void *data, size_t len, storh_err *err)
{
    if (p->n == p->cap) {
        size_t cap = p->cap ? p->cap * 2 : 32;
        pfile *f = realloc(p->f, cap * sizeof *f);
        if (!f)
            return storh_err_oom(err);
        p->f = f;
        p->cap = cap;
    }
    char dir[PATH_MAX], tmp[PATH_MAX];
    fsx_dirname(path, dir, sizeof dir);
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    if (snprintf(tmp, sizeof tmp, "%s/.%s.%s%04x.tmp", dir, base, p->token, p->seq++ & 0xffff) >=
        (int)sizeof tmp)
        return storh_err_set(err, STORH_EINVAL, "Path too long: %s", path);
    pfile f = {strdup(tmp), strdup(path)};
    if (!f.tmp || !f.path) {
        free(f.tmp);
        free(f.path);
        return storh_err_oom(err);
    }
    int rc = fsx_write_file(tmp, data, len, p->sync_fd < 0, err);
    if (rc) {
        free(f.tmp);
        free(f.path);
        return rc;
    }
    p->f[p->n++] = f;
    return 0;
}

static void free_set(pubset *p)
{
    for (size_t i = 0; i < p->n; i++) {
        free(p->f[i].tmp);
        free(p->f[i].path);
    }
    free(p->f);
    if (p->sync_fd >= 0)
        close(p->sync_fd);
    free(p);
}

void pubset_abort(pubset *p)
{
    if (!p)
        return;
    for (size_t i = 0; i < p->n; i++)
        unlink(p->f[i].tmp);
    free_set(p);
}

static int sync_all(pubset *p, storh_err *err)
{
    if (syncfs(p->sync_fd) != 0)
        return storh_err_sys(err, errno, "Could not sync published files");
    estats_add(ESTAT_FSYNC_FS, 1);
    return 0;
}

/* Each distinct directory renamed in, fsynced once (the fsync mode). */
static int sync_dirs(pubset *p, storh_err *err)
{
    int rc = 0;
    for (size_t i = 0; !rc && i < p->n; i++) {
        char dir[PATH_MAX], prev[PATH_MAX];
        fsx_dirname(p->f[i].path, dir, sizeof dir);
        bool seen = false;
        for (size_t j = 0; !seen && j < i; j++) {
            fsx_dirname(p->f[j].path, prev, sizeof prev);
            seen = !strcmp(dir, prev);
        }
        if (!seen)
            rc = fsx_fsync_dir(dir, err);
    }
    return rc;
}

int pubset_commit(pubset *p, storh_err *err)
{
    int rc = p->sync_fd >= 0 && p->n ? sync_all(p, err) : 0;
    if (rc) {
        pubset_abort(p);
        return rc;
    }
    size_t done = 0;
    for (; !rc && done < p->n; done++) {
        fault_point("pubset.rename"); /* name@N: before the Nth rename */
        rc = fsx_rename(p->f[done].tmp, p->f[done].path, false, err);
    }
    for (size_t i = done - 1; rc && i < p->n; i++) /* the failed one's temp and after */
        unlink(p->f[i].tmp);
    if (!rc && p->n)
        rc = p->sync_fd >= 0 ? sync_all(p, err) : sync_dirs(p, err);
    free_set(p);
    return rc;
}
