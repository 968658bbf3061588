/* pfsyncfs: relays syncfs(2) of a process to powerfs. Linux does not send
 * syncfs to a FUSE server (only virtiofs gets FUSE_SYNCFS), so powerfs
 * cannot see it; a seccomp filter installed in the child before exec
 * stops each syncfs in the kernel, the relay thread tells powerfs "sync"
 * when the descriptor is on the mount, then lets the syscall go on
 * (SECCOMP_USER_NOTIF_FLAG_CONTINUE). Everything written before the call
 * is durable by then, as a real syncfs promises. */
#ifndef STORHD_PFSYNCFS_H
#define STORHD_PFSYNCFS_H

#include <pthread.h>
#include <stdatomic.h>
#include <sys/types.h>

#include "pfmount.h"

typedef struct pfsync_relay {
    int sock[2]; /* the child sends its listener on sock[1] */
    int wake[2];
    pfmount *m;
    pthread_t th;
    atomic_long relayed;
} pfsync_relay;

int pfsync_relay_start(pfsync_relay *r, pfmount *m);
/* In a child of the process that started r, before exec: 0 when installed. */
int pfsync_child_install(pfsync_relay *r);
void pfsync_relay_stop(pfsync_relay *r);

#endif
