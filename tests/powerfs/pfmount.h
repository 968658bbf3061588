/* pfmount: starts powerfs for a test over a scratch directory (backing,
 * shadow and mount point inside it), sends it commands, and unmounts it.
 * powerfs unmounts itself when it ends, also when the test dies (it gets
 * SIGTERM then, and fusermount3's auto_unmount covers a SIGKILL). */
#ifndef STORHD_PFMOUNT_H
#define STORHD_PFMOUNT_H

#include <limits.h>
#include <sys/types.h>

typedef struct pfmount {
    pid_t pid;
    char scratch[PATH_MAX], backing[PATH_MAX], shadow[PATH_MAX], mnt[PATH_MAX];
    char ctl[PATH_MAX];
    dev_t dev; /* of the mount */
} pfmount;

/* A fresh scratch directory for pfmount_start, on a tmpfs when there is
 * one (/dev/shm: a cut rewrites the whole tree, which a busy disk makes
 * slow), else under $TMPDIR; $POWERFS_TMPDIR overrides. NULL on failure. */
char *pfmount_scratch(char out[PATH_MAX]);
/* scratch: an existing empty directory. Returns 0 once mounted. */
int pfmount_start(pfmount *m, const char *scratch);
/* Writes one command ("sync", "cut strict", "cut SEED"); 0 on success. */
int pfmount_cmd(pfmount *m, const char *cmd);
/* A counter of powerfs ("fsync", "syncfs", "cut_dropped", ...), -1 if none. */
long pfmount_stat(pfmount *m, const char *key);
/* Unmounts and waits for powerfs; returns its exit status. */
int pfmount_stop(pfmount *m);

#endif
