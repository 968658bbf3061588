#include "pfsyncfs.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <poll.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#if defined(__x86_64__)
#define PF_ARCH AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#define PF_ARCH AUDIT_ARCH_AARCH64
#else
#error "pfsyncfs: add this architecture's AUDIT_ARCH"
#endif

#define MAXL 8

int pfsync_child_install(pfsync_relay *r)
{
    struct sock_filter f[] = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, PF_ARCH, 1, 0),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_syncfs, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_USER_NOTIF),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
    };
    struct sock_fprog prog = {.len = sizeof f / sizeof f[0], .filter = f};
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0)
        return -1;
    int lfd =
        (int)syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_NEW_LISTENER, &prog);
    if (lfd < 0)
        return -1;
    char cbuf[CMSG_SPACE(sizeof(int))] = {0};
    char one = 1;
    struct iovec iov = {&one, 1};
    struct msghdr msg = {
        .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf, .msg_controllen = sizeof cbuf};
    struct cmsghdr *c = CMSG_FIRSTHDR(&msg);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int));
    memcpy(CMSG_DATA(c), &lfd, sizeof lfd);
    int rc = sendmsg(r->sock[1], &msg, 0) == 1 ? 0 : -1;
    close(lfd);
    close(r->sock[1]);
    close(r->sock[0]);
    return rc;
}

static int recv_fd(int sock)
{
    char cbuf[CMSG_SPACE(sizeof(int))];
    char one;
    struct iovec iov = {&one, 1};
    struct msghdr msg = {
        .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf, .msg_controllen = sizeof cbuf};
    if (recvmsg(sock, &msg, MSG_CMSG_CLOEXEC) != 1)
        return -1;
    struct cmsghdr *c = CMSG_FIRSTHDR(&msg);
    int fd = -1;
    if (c && c->cmsg_type == SCM_RIGHTS)
        memcpy(&fd, CMSG_DATA(c), sizeof fd);
    return fd;
}

/* One stopped syncfs: relayed when its descriptor is on the mount. */
static void serve(pfsync_relay *r, int lfd)
{
    struct seccomp_notif req;
    struct seccomp_notif_resp resp;
    memset(&req, 0, sizeof req);
    if (ioctl(lfd, SECCOMP_IOCTL_NOTIF_RECV, &req) != 0)
        return;
    char p[64];
    snprintf(p, sizeof p, "/proc/%d/fd/%d", (int)req.pid, (int)req.data.args[0]);
    struct stat st;
    if (stat(p, &st) == 0 && st.st_dev == r->m->dev &&
        ioctl(lfd, SECCOMP_IOCTL_NOTIF_ID_VALID, &req.id) == 0) {
        if (pfmount_cmd(r->m, "sync") == 0)
            atomic_fetch_add(&r->relayed, 1);
        else
            fprintf(stderr, "pfsyncfs: could not relay a syncfs\n");
    }
    memset(&resp, 0, sizeof resp);
    resp.id = req.id;
    resp.flags = SECCOMP_USER_NOTIF_FLAG_CONTINUE;
    ioctl(lfd, SECCOMP_IOCTL_NOTIF_SEND, &resp);
}

static void *relay(void *arg)
{
    pfsync_relay *r = arg;
    int lfds[MAXL];
    int n = 0;
    for (;;) {
        struct pollfd pf[MAXL + 2];
        pf[0] = (struct pollfd){r->wake[0], POLLIN, 0};
        pf[1] = (struct pollfd){r->sock[0], POLLIN, 0};
        for (int i = 0; i < n; i++)
            pf[2 + i] = (struct pollfd){lfds[i], POLLIN, 0};
        if (poll(pf, (nfds_t)(2 + n), -1) < 0) {
            if (errno == EINTR)
                continue;
            break;
        }
        if (pf[0].revents)
            break;
        /* the listeners this poll looked at, then a new one */
        for (int i = n - 1; i >= 0; i--) {
            if (pf[2 + i].revents & POLLIN)
                serve(r, lfds[i]);
            else if (pf[2 + i].revents & (POLLHUP | POLLERR | POLLNVAL)) {
                close(lfds[i]); /* its process ended */
                lfds[i] = lfds[--n];
            }
        }
        if (pf[1].revents & POLLIN) {
            int fd = recv_fd(r->sock[0]);
            if (fd >= 0 && n < MAXL)
                lfds[n++] = fd;
            else if (fd >= 0)
                close(fd);
        }
    }
    for (int i = 0; i < n; i++)
        close(lfds[i]);
    return NULL;
}

int pfsync_relay_start(pfsync_relay *r, pfmount *m)
{
    memset(r, 0, sizeof *r);
    r->m = m;
    if (socketpair(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0, r->sock) != 0)
        return -1;
    if (pipe2(r->wake, O_CLOEXEC) != 0)
        return -1;
    return pthread_create(&r->th, NULL, relay, r) == 0 ? 0 : -1;
}

void pfsync_relay_stop(pfsync_relay *r)
{
    if (write(r->wake[1], "x", 1) != 1)
        return;
    pthread_join(r->th, NULL);
    close(r->wake[0]);
    close(r->wake[1]);
    close(r->sock[0]);
    close(r->sock[1]);
}
