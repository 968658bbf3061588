/* powerfs: a FUSE pass-through filesystem for tests that can forget like a
 * disk losing power. It serves BACKING at MOUNTPOINT and tells pfmodel
 * about every change, fsync, fdatasync and directory fsync, so that a
 * "cut" written to the control file MOUNTPOINT/.powerfs rewrites BACKING
 * to what would survive a power cut (see pfmodel.h).
 *
 *   powerfs BACKING SHADOW MOUNTPOINT [-d]
 *
 * Commands written to .powerfs (one per write): "sync" (a syncfs of the
 * whole filesystem: the kernel does not send syncfs(2) to a FUSE server,
 * so the test relays it), "cut strict", "cut SEED" (a randomized state).
 * Reading .powerfs gives the counters. The test kills every writer before
 * a cut. The mount goes away when powerfs ends (auto_unmount), killed too.
 *
 * It runs single-threaded: the model needs no lock, and every write(2)
 * has reached it when it answers (no writeback cache), so the order it
 * sees is the order the kernel acknowledged. */
#define FUSE_USE_VERSION 31
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <fuse.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "pfmodel.h"

#define CTL "/.powerfs"

typedef struct pf_fh {
    int fd; /* -1: the control file */
    pf_node *node;
    unsigned long gen;
    char reply[512];
} pf_fh;

static char backing[PATH_MAX];

static void bp(char out[PATH_MAX], const char *path)
{
    snprintf(out, PATH_MAX, "%s%s", backing, strcmp(path, "/") ? path : "");
}

static pf_fh *fh_of(const struct fuse_file_info *fi)
{
    return fi ? (pf_fh *)(uintptr_t)fi->fh : NULL;
}

/* The model's node behind an open file, NULL when a cut came between. */
static pf_node *fh_node(pf_fh *h)
{
    return h && h->node && h->gen == pf_generation() ? h->node : NULL;
}

static pf_node *node_at(const char *path, struct stat *st)
{
    char p[PATH_MAX];
    bp(p, path);
    struct stat tmp = {0};
    st = st ? st : &tmp;
    if (lstat(p, st) != 0)
        return NULL;
    return pf_lookup(st->st_ino, S_ISDIR(st->st_mode));
}

/* The parent directory's node and the last component of path. */
static pf_node *parent_of(const char *path, char ppath[PATH_MAX], const char **name)
{
    snprintf(ppath, PATH_MAX, "%s", path);
    char *slash = strrchr(ppath, '/');
    *name = path + (slash - ppath) + 1;
    if (slash == ppath)
        slash[1] = '\0';
    else
        *slash = '\0';
    return node_at(ppath, NULL);
}

static void *pfs_init(struct fuse_conn_info *conn, struct fuse_config *cfg)
{
    conn->want &= ~FUSE_CAP_WRITEBACK_CACHE;
    cfg->entry_timeout = cfg->attr_timeout = cfg->negative_timeout = 0;
    cfg->use_ino = 1;
    cfg->hard_remove = 1; /* no .fuse_hidden renames: the namespace is the model's */
    cfg->nullpath_ok = 1;
    cfg->kernel_cache = cfg->auto_cache = 0;
    cfg->direct_io = 0;
    return NULL;
}

static int pfs_getattr(const char *path, struct stat *st, struct fuse_file_info *fi)
{
    pf_fh *h = fh_of(fi);
    if ((path && !strcmp(path, CTL)) || (h && h->fd < 0)) {
        memset(st, 0, sizeof *st);
        st->st_mode = S_IFREG | 0600;
        st->st_nlink = 1;
        return 0;
    }
    if (h)
        return fstat(h->fd, st) == 0 ? 0 : -errno;
    char p[PATH_MAX];
    bp(p, path);
    return lstat(p, st) == 0 ? 0 : -errno;
}

static int pfs_access(const char *path, int mask)
{
    if (!strcmp(path, CTL))
        return 0;
    char p[PATH_MAX];
    bp(p, path);
    return access(p, mask) == 0 ? 0 : -errno;
}

static int pfs_opendir(const char *path, struct fuse_file_info *fi)
{
    char p[PATH_MAX];
    bp(p, path);
    int fd = open(p, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    pf_fh *h = calloc(1, sizeof *h);
    h->fd = fd;
    fi->fh = (uintptr_t)h;
    return 0;
}

static int pfs_readdir(const char *path, void *buf, fuse_fill_dir_t fill, off_t off,
                       struct fuse_file_info *fi, enum fuse_readdir_flags flags)
{
    (void)path;
    (void)off;
    (void)flags;
    int fd = dup(fh_of(fi)->fd);
    DIR *d = fd < 0 ? NULL : fdopendir(fd);
    if (!d) {
        if (fd >= 0)
            close(fd);
        return -EIO;
    }
    rewinddir(d);
    struct dirent *de;
    while ((de = readdir(d))) {
        struct stat st = {.st_ino = de->d_ino, .st_mode = (mode_t)(de->d_type << 12)};
        if (fill(buf, de->d_name, &st, 0, 0))
            break;
    }
    closedir(d);
    return 0;
}

static int pfs_mkdir(const char *path, mode_t mode)
{
    char pp[PATH_MAX], p[PATH_MAX];
    const char *name;
    pf_node *parent = parent_of(path, pp, &name);
    if (!parent)
        return -ENOENT;
    int rc = pf_before_dirop(parent, pp);
    bp(p, path);
    if (rc || mkdir(p, mode) != 0)
        return rc ? rc : -errno;
    struct stat st;
    if (lstat(p, &st) != 0)
        return -errno;
    pf_dirop(NULL, NULL, parent, name, pf_created(st.st_ino, true));
    return 0;
}

/* unlink and rmdir */
static int remove_entry(const char *path, bool dir)
{
    char pp[PATH_MAX], p[PATH_MAX];
    const char *name;
    struct stat st;
    pf_node *parent = parent_of(path, pp, &name);
    pf_node *n = node_at(path, &st);
    if (!parent || !n)
        return -ENOENT;
    bool last = dir || st.st_nlink <= 1;
    int rc = pf_before_dirop(parent, pp);
    if (!rc && last)
        rc = pf_before_death(n, path);
    bp(p, path);
    if (rc || (dir ? rmdir(p) : unlink(p)) != 0)
        return rc ? rc : -errno;
    pf_dirop(parent, name, NULL, NULL, n);
    if (last)
        pf_died(n);
    return 0;
}

static int pfs_unlink(const char *path)
{
    return remove_entry(path, false);
}

static int pfs_rmdir(const char *path)
{
    return remove_entry(path, true);
}

static int pfs_rename(const char *from, const char *to, unsigned int flags)
{
    if (flags & RENAME_EXCHANGE)
        return -EINVAL;
    char sp[PATH_MAX], dp[PATH_MAX], a[PATH_MAX], b[PATH_MAX];
    const char *sname, *dname;
    struct stat st, dst;
    pf_node *sdir = parent_of(from, sp, &sname);
    pf_node *ddir = parent_of(to, dp, &dname);
    pf_node *n = node_at(from, &st);
    if (!sdir || !ddir || !n)
        return -ENOENT;
    pf_node *old = node_at(to, &dst);
    if (old == n)
        return 0;
    bool dies = old && (S_ISDIR(dst.st_mode) || dst.st_nlink <= 1);
    int rc = pf_before_dirop(sdir, sp);
    if (!rc)
        rc = pf_before_dirop(ddir, dp);
    if (!rc && dies)
        rc = pf_before_death(old, to);
    bp(a, from);
    bp(b, to);
    if (rc || renameat2(AT_FDCWD, a, AT_FDCWD, b, flags) != 0)
        return rc ? rc : -errno;
    pf_dirop(sdir, sname, ddir, dname, n);
    if (dies)
        pf_died(old);
    return 0;
}

/* Flags for the backing file: readable whenever writable (a first write
 * copies the file for the model), offsets from the kernel. */
static int backing_flags(int flags)
{
    int acc = flags & O_ACCMODE;
    flags &= ~(O_ACCMODE | O_APPEND | O_CREAT | O_EXCL | O_NOCTTY | O_DIRECT | O_TRUNC);
    return flags | O_CLOEXEC | (acc == O_RDONLY ? O_RDONLY : O_RDWR);
}

static int open_common(const char *path, struct fuse_file_info *fi, bool create, mode_t mode)
{
    char p[PATH_MAX], pp[PATH_MAX];
    const char *name;
    struct stat st;
    bp(p, path);
    pf_node *n = node_at(path, &st);
    pf_node *parent = NULL;
    int rc = 0;
    if (!n && !create)
        return -ENOENT;
    if (n && create && (fi->flags & O_EXCL))
        return -EEXIST;
    if (!n) {
        if (!(parent = parent_of(path, pp, &name)))
            return -ENOENT;
        rc = pf_before_dirop(parent, pp);
    } else if ((fi->flags & O_TRUNC) && st.st_size > 0 && (fi->flags & O_ACCMODE) != O_RDONLY) {
        rc = pf_before_write(n, -1, path, 0, st.st_size);
    }
    if (rc)
        return rc;
    int fd = n ? open(p, backing_flags(fi->flags) | ((fi->flags & O_TRUNC) ? O_TRUNC : 0))
               : open(p, backing_flags(fi->flags) | O_CREAT | O_EXCL, mode);
    if (fd < 0)
        return -errno;
    if (!n) {
        if (fstat(fd, &st) != 0) {
            close(fd);
            return -errno;
        }
        n = pf_created(st.st_ino, false);
        pf_dirop(NULL, NULL, parent, name, n);
    }
    pf_fh *h = calloc(1, sizeof *h);
    h->fd = fd;
    h->node = n;
    h->gen = pf_generation();
    fi->fh = (uintptr_t)h;
    return 0;
}

static int pfs_open(const char *path, struct fuse_file_info *fi)
{
    if (!strcmp(path, CTL)) {
        pf_fh *h = calloc(1, sizeof *h);
        h->fd = -1;
        const pf_stats *s = pf_stats_get();
        snprintf(h->reply, sizeof h->reply,
                 "fsync %lu\nfsyncdir %lu\nsyncfs %lu\ndirops %lu\ncuts %lu\ncut_files "
                 "%lu\ncut_dropped %lu\ncut_torn %lu\n",
                 s->fsyncs, s->fsyncdirs, s->syncfs, s->dirops, s->cuts, s->cut_files,
                 s->cut_dropped, s->cut_torn);
        fi->fh = (uintptr_t)h;
        fi->direct_io = 1;
        return 0;
    }
    return open_common(path, fi, false, 0);
}

static int pfs_create(const char *path, mode_t mode, struct fuse_file_info *fi)
{
    return open_common(path, fi, true, mode);
}

static int pfs_read(const char *path, char *buf, size_t size, off_t off, struct fuse_file_info *fi)
{
    (void)path;
    pf_fh *h = fh_of(fi);
    if (h->fd < 0) {
        size_t len = strlen(h->reply);
        if ((size_t)off >= len)
            return 0;
        size = size < len - (size_t)off ? size : len - (size_t)off;
        memcpy(buf, h->reply + off, size);
        return (int)size;
    }
    ssize_t r = pread(h->fd, buf, size, off);
    return r < 0 ? -errno : (int)r;
}

static int control(const char *cmd, size_t len)
{
    char c[64];
    snprintf(c, sizeof c, "%.*s", (int)(len < sizeof c - 1 ? len : sizeof c - 1), cmd);
    c[strcspn(c, "\n")] = '\0';
    if (!strcmp(c, "sync")) {
        pf_syncfs();
        return 0;
    }
    if (!strcmp(c, "cut strict"))
        return pf_cut(0);
    unsigned long long seed;
    if (sscanf(c, "cut %llu", &seed) == 1 && seed)
        return pf_cut(seed);
    return -EINVAL;
}

static int pfs_write(const char *path, const char *buf, size_t size, off_t off,
                     struct fuse_file_info *fi)
{
    (void)path;
    pf_fh *h = fh_of(fi);
    if (h->fd < 0) {
        int rc = control(buf, size);
        if (rc)
            fprintf(stderr, "powerfs: %.*s: %s\n", (int)size, buf, strerror(-rc));
        return rc ? rc : (int)size;
    }
    pf_node *n = fh_node(h);
    int rc = n ? pf_before_write(n, h->fd, NULL, off, off + (off_t)size) : 0;
    if (rc)
        return rc;
    ssize_t w = pwrite(h->fd, buf, size, off);
    return w < 0 ? -errno : (int)w;
}

static int pfs_truncate(const char *path, off_t size, struct fuse_file_info *fi)
{
    pf_fh *h = fh_of(fi);
    struct stat st;
    pf_node *n = h ? fh_node(h) : node_at(path, &st);
    if (h && fstat(h->fd, &st) != 0)
        return -errno;
    if (!h && !n)
        return -ENOENT;
    int rc = 0;
    if (n)
        rc = pf_before_write(n, h ? h->fd : -1, path, size < st.st_size ? size : st.st_size,
                             size > st.st_size ? size : st.st_size);
    if (rc)
        return rc;
    char p[PATH_MAX];
    if (h)
        return ftruncate(h->fd, size) == 0 ? 0 : -errno;
    bp(p, path);
    return truncate(p, size) == 0 ? 0 : -errno;
}

static int pfs_fallocate(const char *path, int mode, off_t off, off_t len,
                         struct fuse_file_info *fi)
{
    (void)path;
    pf_fh *h = fh_of(fi);
    pf_node *n = fh_node(h);
    int rc = n ? pf_before_write(n, h->fd, NULL, off, off + len) : 0;
    if (rc)
        return rc;
    return fallocate(h->fd, mode, off, len) == 0 ? 0 : -errno;
}

static int pfs_fsync(const char *path, int datasync, struct fuse_file_info *fi)
{
    (void)path;
    (void)datasync;
    pf_fh *h = fh_of(fi);
    pf_node *n = fh_node(h);
    return n && h->fd >= 0 ? pf_fsync(n, h->fd) : 0;
}

static int pfs_fsyncdir(const char *path, int datasync, struct fuse_file_info *fi)
{
    (void)path;
    (void)datasync;
    struct stat st;
    if (fstat(fh_of(fi)->fd, &st) != 0)
        return -errno;
    return pf_fsyncdir(pf_lookup(st.st_ino, true), NULL);
}

static int pfs_release(const char *path, struct fuse_file_info *fi)
{
    (void)path;
    pf_fh *h = fh_of(fi);
    if (h->fd >= 0)
        close(h->fd);
    free(h);
    return 0;
}

static int pfs_statfs(const char *path, struct statvfs *st)
{
    (void)path;
    return statvfs(backing, st) == 0 ? 0 : -errno;
}

static int pfs_utimens(const char *path, const struct timespec tv[2], struct fuse_file_info *fi)
{
    pf_fh *h = fh_of(fi);
    if (h && h->fd >= 0)
        return futimens(h->fd, tv) == 0 ? 0 : -errno;
    char p[PATH_MAX];
    bp(p, path);
    return utimensat(AT_FDCWD, p, tv, AT_SYMLINK_NOFOLLOW) == 0 ? 0 : -errno;
}

static int pfs_chmod(const char *path, mode_t mode, struct fuse_file_info *fi)
{
    pf_fh *h = fh_of(fi);
    if (h && h->fd >= 0)
        return fchmod(h->fd, mode) == 0 ? 0 : -errno;
    char p[PATH_MAX];
    bp(p, path);
    return chmod(p, mode) == 0 ? 0 : -errno;
}

static int pfs_chown(const char *path, uid_t uid, gid_t gid, struct fuse_file_info *fi)
{
    pf_fh *h = fh_of(fi);
    if (h && h->fd >= 0)
        return fchown(h->fd, uid, gid) == 0 ? 0 : -errno;
    char p[PATH_MAX];
    bp(p, path);
    return lchown(p, uid, gid) == 0 ? 0 : -errno;
}

static const struct fuse_operations ops = {
    .init = pfs_init,
    .getattr = pfs_getattr,
    .access = pfs_access,
    .readdir = pfs_readdir,
    .mkdir = pfs_mkdir,
    .unlink = pfs_unlink,
    .rmdir = pfs_rmdir,
    .rename = pfs_rename,
    .open = pfs_open,
    .create = pfs_create,
    .read = pfs_read,
    .write = pfs_write,
    .truncate = pfs_truncate,
    .fallocate = pfs_fallocate,
    .fsync = pfs_fsync,
    .fsyncdir = pfs_fsyncdir,
    .release = pfs_release,
    .opendir = pfs_opendir,
    .releasedir = pfs_release,
    .statfs = pfs_statfs,
    .utimens = pfs_utimens,
    .chmod = pfs_chmod,
    .chown = pfs_chown,
};

int main(int argc, char **argv)
{
    if (argc < 4) {
        fprintf(stderr, "usage: powerfs BACKING SHADOW MOUNTPOINT [-d]\n");
        return 2;
    }
    if (!realpath(argv[1], backing)) {
        perror(argv[1]);
        return 2;
    }
    char shadow[PATH_MAX];
    if (!realpath(argv[2], shadow)) {
        perror(argv[2]);
        return 2;
    }
    pf_init(backing, shadow);
    char *fargv[] = {argv[0], "-o", "auto_unmount,fsname=powerfs,subtype=powerfs", "-d", NULL};
    struct fuse_args args = FUSE_ARGS_INIT(argc > 4 && !strcmp(argv[4], "-d") ? 4 : 3, fargv);
    struct fuse *f = fuse_new(&args, &ops, sizeof ops, NULL);
    if (!f) {
        fuse_opt_free_args(&args);
        return 1;
    }
    int rc = 1;
    if (fuse_mount(f, argv[3]) == 0) {
        if (fuse_set_signal_handlers(fuse_get_session(f)) == 0) {
            rc = fuse_loop(f) == 0 ? 0 : 1;
            fuse_remove_signal_handlers(fuse_get_session(f));
        }
        fuse_unmount(f);
    }
    fuse_destroy(f);
    fuse_opt_free_args(&args);
    pf_free();
    return rc;
}
