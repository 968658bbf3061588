#include "pfmount.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

char *pfmount_scratch(char out[PATH_MAX])
{
    const char *base = getenv("POWERFS_TMPDIR");
    if (!base && access("/dev/shm", W_OK) == 0)
        base = "/dev/shm";
    if (!base)
        base = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
    snprintf(out, PATH_MAX, "%s/storhd-powerfs-XXXXXX", base);
    return mkdtemp(out);
}

int pfmount_start(pfmount *m, const char *scratch)
{
    memset(m, 0, sizeof *m);
    snprintf(m->scratch, sizeof m->scratch, "%s", scratch);
    snprintf(m->backing, sizeof m->backing, "%s/backing", scratch);
    snprintf(m->shadow, sizeof m->shadow, "%s/shadow", scratch);
    snprintf(m->mnt, sizeof m->mnt, "%s/mnt", scratch);
    snprintf(m->ctl, sizeof m->ctl, "%s/.powerfs", m->mnt);
    mkdir(m->backing, 0755);
    mkdir(m->shadow, 0700);
    mkdir(m->mnt, 0755);
    pid_t parent = getpid();
    m->pid = fork();
    if (m->pid < 0)
        return -1;
    if (m->pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGTERM);
        if (getppid() != parent)
            _exit(127);
        const char *log = getenv("POWERFS_LOG");
        int fd = open(log ? log : "/dev/null", O_WRONLY | O_CREAT | O_APPEND, 0644);
        if (fd >= 0) {
            dup2(fd, STDOUT_FILENO);
            dup2(fd, STDERR_FILENO);
        }
        execl(POWERFS_BIN, "powerfs", m->backing, m->shadow, m->mnt,
              getenv("POWERFS_DEBUG") ? "-d" : NULL, (char *)NULL);
        _exit(127);
    }
    for (int i = 0; i < 400; i++) { /* 10 s */
        struct stat st;
        if (stat(m->ctl, &st) == 0) {
            if (stat(m->mnt, &st) == 0)
                m->dev = st.st_dev;
            return 0;
        }
        int ws;
        if (waitpid(m->pid, &ws, WNOHANG) == m->pid) {
            m->pid = 0;
            return -1;
        }
        struct timespec ts = {0, 25 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    pfmount_stop(m);
    return -1;
}

int pfmount_cmd(pfmount *m, const char *cmd)
{
    int fd = open(m->ctl, O_WRONLY);
    if (fd < 0)
        return -errno;
    ssize_t w = write(fd, cmd, strlen(cmd));
    int rc = w == (ssize_t)strlen(cmd) ? 0 : -(errno ? errno : EIO);
    close(fd);
    return rc;
}

long pfmount_stat(pfmount *m, const char *key)
{
    FILE *f = fopen(m->ctl, "r");
    if (!f)
        return -1;
    char k[64];
    long v, found = -1;
    while (fscanf(f, "%63s %ld", k, &v) == 2)
        if (!strcmp(k, key))
            found = v;
    fclose(f);
    return found;
}

int pfmount_stop(pfmount *m)
{
    if (m->pid <= 0)
        return -1;
    char cmd[PATH_MAX + 64];
    snprintf(cmd, sizeof cmd, "fusermount3 -u '%s' 2>/dev/null || umount -l '%s' 2>/dev/null",
             m->mnt, m->mnt);
    if (system(cmd) != 0)
        kill(m->pid, SIGTERM);
    int st = 0;
    waitpid(m->pid, &st, 0);
    m->pid = 0;
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}
