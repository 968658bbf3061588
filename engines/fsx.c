#include "fsx.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "estats.h"

/* mkdir of path's first k bytes; with sync_parents, its parent fsynced
 * when it was made. 0 made, 1 there already; < 0 failed: *eno is mkdir's
 * errno, or 0 when the fsync failed (err set). */
static int mkdir_prefix(char *tmp, const char *path, size_t k, bool sync_parents, int *eno,
                        storh_err *err)
{
    memcpy(tmp, path, k);
    tmp[k] = '\0';
    if (mkdir(tmp, 0777) != 0) {
        *eno = errno;
        return errno == EEXIST ? 1 : -1;
    }
    if (sync_parents) {
        char parent[PATH_MAX];
        fsx_dirname(tmp, parent, sizeof parent);
        int rc = fsx_fsync_dir(parent, err);
        if (rc) {
            *eno = 0;
            return rc;
        }
    }
    return 0;
}

int fsx_mkdirs(const char *path, bool sync_parents, storh_err *err)
{
    char tmp[PATH_MAX];
    size_t n = strlen(path);
    if (n == 0 || n >= sizeof tmp)
        return storh_err_set(err, STORH_EINVAL, "Could not create storage directory: %s", path);
    /* from the path up to the deepest directory that exists (usually the
     * parent: one mkdir), then down again making each one */
    size_t k = n;
    int eno = 0, r;
    for (;;) {
        r = mkdir_prefix(tmp, path, k, sync_parents, &eno, err);
        if (r == 0 || r == 1)
            break;
        if (eno == 0)
            return r; /* the parent's fsync failed; err says so */
        size_t up = k;
        while (up > 0 && path[up - 1] != '/')
            up--;
        while (up > 0 && path[up - 1] == '/') /* the slash(es) before that name */
            up--;
        if (eno != ENOENT || up == 0)
            return storh_err_sys(err, eno, "Could not create storage directory: %s", tmp);
        k = up;
    }
    while (k < n) {
        while (k < n && path[k] == '/')
            k++;
        while (k < n && path[k] != '/')
            k++;
        r = mkdir_prefix(tmp, path, k, sync_parents, &eno, err);
        if (r < 0 && eno == 0)
            return r;
        if (r < 0)
            return storh_err_sys(err, eno, "Could not create storage directory: %s", tmp);
    }
    return 0;
}

int fsx_read_all(const char *path, buf *out, storh_err *err)
{
    return fsx_read_all_stat(path, out, NULL, err);
}

int fsx_read_all_stat(const char *path, buf *out, struct stat *st, storh_err *err)
{
    return fsx_read_all_statat(AT_FDCWD, path, out, st, err);
}

int fsx_read_all_statat(int dirfd, const char *path, buf *out, struct stat *st, storh_err *err)
{
    int fd = openat(dirfd, path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        if (errno == ENOENT || errno == ENOTDIR)
            return storh_err_set(err, STORH_ENOTFOUND, "No such file: %s", path);
        return storh_err_sys(err, errno, "Could not read storage file: %s", path);
    }
    struct stat local;
    memset(&local, 0, sizeof local);
    struct stat *s = st ? st : &local;
    if (fstat(fd, s) != 0) {
        if (st) { /* the caller needs the state: no guessing */
            int e = errno;
            close(fd);
            return storh_err_sys(err, e, "Could not stat storage file: %s", path);
        }
    }
    size_t start = out->len;
    size_t want = s->st_size > 0 ? (size_t)s->st_size : 0;
    bool first = true;
    for (;;) {
        /* the first read asks for one byte more than the size, the next
         * ones for at least 4 KiB */
        if (!buf_reserve(out, first ? want + 1 : 4096)) {
            close(fd);
            return storh_err_set(err, STORH_ENOMEM, "Out of memory reading %s", path);
        }
        first = false;
        size_t room = out->cap - out->len - 1;
        ssize_t r = read(fd, out->data + out->len, room);
        if (r < 0) {
            if (errno == EINTR)
                continue;
            int e = errno;
            close(fd);
            return storh_err_sys(err, e, "Could not read storage file: %s", path);
        }
        if (r == 0)
            break;
        out->len += (size_t)r;
        /* a short read that ends exactly at the size fstat gave is the end
         * of a regular file: no second read to see EOF */
        if ((size_t)r < room && want && out->len - start == want)
            break;
    }
    out->data[out->len] = '\0';
    close(fd);
    return 0;
}

int fsx_write_all(int fd, const void *data, size_t len)
{
    const char *p = data;
    while (len) {
        ssize_t w = write(fd, p, len);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            if (w == 0)
                errno = EIO; /* no progress: not a loop forever */
            return -1;
        }
        p += w;
        len -= (size_t)w;
    }
    return 0;
}

int fsx_write_synced(const char *path, const void *data, size_t len, storh_err *err)
{
    return fsx_write_file(path, data, len, true, err);
}

/* Creates path exclusively and writes head then data into it, fsynced
 * when sync; removed on failure. */
static int write_file2(const char *path, const void *head, size_t hlen, const void *data,
                       size_t len, bool sync, storh_err *err)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd < 0)
        return storh_err_sys(err, errno, "Could not open temporary storage file for writing: %s",
                             path);
    int rc = 0;
    if ((hlen && fsx_write_all(fd, head, hlen) != 0) || fsx_write_all(fd, data, len) != 0)
        rc = storh_err_sys(err, errno, "Could not write storage file: %s", path);
    else if (sync && fsync(fd) != 0)
        rc = storh_err_sys(err, errno, "Could not sync storage file: %s", path);
    else if (sync)
        estats_add(ESTAT_FSYNC_FILE, 1);
    if (close(fd) != 0 && rc == 0)
        rc = storh_err_sys(err, errno, "Could not write storage file: %s", path);
    if (rc)
        unlink(path);
    return rc;
}

int fsx_write_file(const char *path, const void *data, size_t len, bool sync, storh_err *err)
{
    return write_file2(path, NULL, 0, data, len, sync, err);
}

int fsx_fsync_dir(const char *dir, storh_err *err)
{
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return storh_err_sys(err, errno, "Could not open directory for sync: %s", dir);
    int rc = 0;
    if (fsync(fd) != 0)
        rc = storh_err_sys(err, errno, "Could not sync directory: %s", dir);
    else
        estats_add(ESTAT_FSYNC_DIR, 1);
    close(fd);
    return rc;
}

void fsx_dirname(const char *path, char *out, size_t cap)
{
    const char *slash = strrchr(path, '/');
    if (!slash) {
        snprintf(out, cap, ".");
        return;
    }
    size_t n = (size_t)(slash - path);
    if (n == 0)
        n = 1;
    if (n >= cap)
        n = cap - 1;
    memcpy(out, path, n);
    out[n] = '\0';
}

int fsx_rename(const char *from, const char *to, bool sync_dir, storh_err *err)
{
    if (rename(from, to) != 0)
        return storh_err_sys(err, errno, "Could not atomically replace storage file: %s", to);
    estats_add(ESTAT_RENAME, 1);
    if (!sync_dir)
        return 0;
    char dir[PATH_MAX];
    fsx_dirname(to, dir, sizeof dir);
    return fsx_fsync_dir(dir, err);
}

int fsx_pathf(char *out, storh_err *err, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(out, PATH_MAX, fmt, ap);
    va_end(ap);
    if (n < 0 || n >= PATH_MAX)
        return storh_err_set(err, STORH_EINVAL, "Path too long.");
    return 0;
}

int fsx_random_hex(char *out, size_t nbytes, storh_err *err)
{
    static const char hexdig[] = "0123456789abcdef";
    unsigned char raw[64];
    if (nbytes > sizeof raw)
        return storh_err_set(err, STORH_EINVAL, "random hex too long");
    size_t got = 0;
    while (got < nbytes) {
        ssize_t r = getrandom(raw + got, nbytes - got, 0);
        if (r < 0)
            return storh_err_sys(err, errno, "Could not read random bytes");
        got += (size_t)r;
    }
    for (size_t i = 0; i < nbytes; i++) {
        out[2 * i] = hexdig[raw[i] >> 4];
        out[2 * i + 1] = hexdig[raw[i] & 0xf];
    }
    out[2 * nbytes] = '\0';
    return 0;
}

int fsx_publish(const char *path, const void *data, size_t len, storh_err *err)
{
    return fsx_publish2(path, NULL, 0, data, len, err);
}

int fsx_publish2(const char *path, const void *head, size_t hlen, const void *data, size_t len,
                 storh_err *err)
{
    char dir[PATH_MAX], tmp[PATH_MAX], hex[25];
    fsx_dirname(path, dir, sizeof dir);
    int rc = fsx_mkdirs(dir, true, err);
    if (rc)
        return rc;
    if ((rc = fsx_random_hex(hex, 6, err)))
        return rc;
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    if (snprintf(tmp, sizeof tmp, "%s/.%s.%s.tmp", dir, base, hex) >= (int)sizeof tmp)
        return storh_err_set(err, STORH_EINVAL, "Path too long: %s", path);
    if ((rc = write_file2(tmp, head, hlen, data, len, true, err)))
        return rc;
    if ((rc = fsx_rename(tmp, path, true, err)))
        unlink(tmp);
    return rc;
}

int fsx_lock_open(fsx_lock *l, const char *path, storh_err *err)
{
    char dir[PATH_MAX];
    fsx_dirname(path, dir, sizeof dir);
    int rc = fsx_mkdirs(dir, true, err);
    if (rc)
        return rc;
    l->fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0666);
    if (l->fd < 0)
        return storh_err_sys(err, errno, "Could not open lock file: %s", path);
    return 0;
}

int fsx_lock_acquire(fsx_lock *l, storh_err *err)
{
    while (flock(l->fd, LOCK_EX) != 0) {
        if (errno != EINTR)
            return storh_err_sys(err, errno, "Could not lock collection");
    }
    return 0;
}

void fsx_lock_release(fsx_lock *l)
{
    flock(l->fd, LOCK_UN);
}

void fsx_lock_close(fsx_lock *l)
{
    if (l->fd >= 0)
        close(l->fd);
    l->fd = -1;
}
