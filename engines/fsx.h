/* fsx: the filesystem primitives durability rests on: mkdir -p, whole-file
 * reads, temp files written and fsynced, rename followed by a directory
 * fsync, and flock(2) locks on dedicated lock files (FORMAT.md 1.6, 1.8).
 * Every write path reports failures; nothing is "best effort". */
#ifndef STORH_FSX_H
#define STORH_FSX_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "buf.h"
#include "storh_err.h"

/* mkdir -p with mode 0777 (before umask). With sync_parents, the parent of
 * every directory it creates is fsynced, so a new directory survives a crash
 * as well as the files later renamed into it. */
int fsx_mkdirs(const char *path, bool sync_parents, storh_err *err);
/* Appends the whole file to out. STORH_ENOTFOUND if it does not exist. */
int fsx_read_all(const char *path, buf *out, storh_err *err);
/* As fsx_read_all, and *st = fstat of the descriptor the bytes came from,
 * taken before they were read, so a cache never claims a newer state than
 * its bytes (a failed fstat is then an error). A file whose size fstat gave
 * is read in one read(2). */
int fsx_read_all_stat(const char *path, buf *out, struct stat *st, storh_err *err);
/* As fsx_read_all_stat, path relative to the directory dirfd (AT_FDCWD:
 * as fsx_read_all_stat); messages name path as given. */
int fsx_read_all_statat(int dirfd, const char *path, buf *out, struct stat *st, storh_err *err);
/* Creates path exclusively, writes data, fsyncs and closes it. On failure the
 * file is removed. */
int fsx_write_synced(const char *path, const void *data, size_t len, storh_err *err);
/* The same with the fsync optional: without it the caller owes a barrier
 * (fsync or syncfs) before relying on the bytes. */
int fsx_write_file(const char *path, const void *data, size_t len, bool sync, storh_err *err);
/* fsync of a directory. */
int fsx_fsync_dir(const char *dir, storh_err *err);
/* rename(from, to) then fsync of to's directory (skipped when sync_dir is
 * false: the caller then owes that fsync before acknowledging). */
int fsx_rename(const char *from, const char *to, bool sync_dir, storh_err *err);
/* The directory part of path, into out (PATH_MAX). */
void fsx_dirname(const char *path, char *out, size_t cap);
/* Writes all of data to fd (EINTR retried); 0, or -1 with errno (EIO when
 * write makes no progress). */
int fsx_write_all(int fd, const void *data, size_t len);
/* Atomic replace with storh's generic temp name
 * <dir>/.<basename>.<12hex>.tmp: write, fsync, rename, fsync dir. */
int fsx_publish(const char *path, const void *data, size_t len, storh_err *err);
/* fsx_publish of the bytes of head followed by those of data, written
 * from where they are (no copy of the two into one buffer). */
int fsx_publish2(const char *path, const void *head, size_t hlen, const void *data, size_t len,
                 storh_err *err);
/* snprintf into a PATH_MAX buffer; STORH_EINVAL if the path would not fit. */
int fsx_pathf(char *out, storh_err *err, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Lowercase hex of n random bytes into out (2n+1 bytes). */
int fsx_random_hex(char *out, size_t nbytes, storh_err *err);

/* An exclusive flock on a lock file, created on demand, never truncated. */
typedef struct fsx_lock {
    int fd;
} fsx_lock;
int fsx_lock_open(fsx_lock *l, const char *path, storh_err *err);
int fsx_lock_acquire(fsx_lock *l, storh_err *err);
void fsx_lock_release(fsx_lock *l);
void fsx_lock_close(fsx_lock *l);

#endif
