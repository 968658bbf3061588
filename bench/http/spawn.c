#include "spawn.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "buf.h"

#define MAX_ARGS 96

/* argv behind `taskset -c cpus` when pinned; out must hold MAX_ARGS. */
static int full_argv(const char *cpus, const char *const *argv, const char **out)
{
    int n = 0;
    if (cpus && *cpus) {
        out[n++] = "taskset";
        out[n++] = "-c";
        out[n++] = cpus;
    }
    for (; *argv && n < MAX_ARGS - 1; argv++)
        out[n++] = *argv;
    out[n] = NULL;
    return n;
}

pid_t spawn_pinned(const char *cpus, const char *const *argv, const char *const *env,
                   const char *log)
{
    const char *args[MAX_ARGS];
    full_argv(cpus, argv, args);
    pid_t pid = fork();
    if (pid != 0)
        return pid;
    int fd = open(log ? log : "/dev/null", O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd >= 0) {
        dup2(fd, STDOUT_FILENO);
        dup2(fd, STDERR_FILENO);
    }
    int devnull = open("/dev/null", O_RDONLY);
    if (devnull >= 0)
        dup2(devnull, STDIN_FILENO);
    for (; env && *env; env++)
        putenv((char *)*env);
    execvp(args[0], (char *const *)args);
    fprintf(stderr, "could not run %s: %s\n", args[0], strerror(errno));
    _exit(127);
}

int spawn_wait(pid_t pid)
{
    int st = 0;
    while (waitpid(pid, &st, 0) < 0)
        if (errno != EINTR)
            return -1;
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

int spawn_stop(pid_t pid, int timeout_ms)
{
    kill(pid, SIGTERM);
    for (int waited = 0; waited < timeout_ms; waited += 10) {
        int st;
        pid_t r = waitpid(pid, &st, WNOHANG);
        if (r == pid)
            return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
        if (r < 0)
            return -1;
        struct timespec ts = {0, 10 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    kill(pid, SIGKILL);
    return spawn_wait(pid);
}

/* Context switches of every thread of pid (threads that ended are not
 * counted; storhd's threads live as long as it does). */
static double context_switches(pid_t pid)
{
    char path[96], line[256];
    snprintf(path, sizeof path, "/proc/%d/task", (int)pid);
    DIR *d = opendir(path);
    if (!d)
        return 0;
    double n = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.')
            continue;
        snprintf(path, sizeof path, "/proc/%d/task/%.20s/status", (int)pid, e->d_name);
        FILE *f = fopen(path, "r");
        if (!f)
            continue;
        while (fgets(line, sizeof line, f)) {
            unsigned long v;
            if (sscanf(line, "voluntary_ctxt_switches: %lu", &v) == 1 ||
                sscanf(line, "nonvoluntary_ctxt_switches: %lu", &v) == 1)
                n += (double)v;
        }
        fclose(f);
    }
    closedir(d);
    return n;
}

int spawn_stat_read(pid_t pid, spawn_stat *out)
{
    char path[64], line[512];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    size_t n = fread(line, 1, sizeof line - 1, f);
    fclose(f);
    line[n] = '\0';
    /* the command name may hold spaces: fields start after its ')' */
    const char *p = strrchr(line, ')');
    unsigned long utime = 0, stime = 0;
    if (!p ||
        sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", &utime, &stime) != 2)
        return -1;
    out->cpu_s = (double)(utime + stime) / (double)sysconf(_SC_CLK_TCK);
    out->sys_s = (double)stime / (double)sysconf(_SC_CLK_TCK);
    out->ctxsw = context_switches(pid);
    out->pss_mib = out->rss_mib = 0;
    snprintf(path, sizeof path, "/proc/%d/smaps_rollup", (int)pid);
    f = fopen(path, "r");
    if (!f)
        return -1;
    while (fgets(line, sizeof line, f)) {
        unsigned long kb;
        if (sscanf(line, "Pss: %lu kB", &kb) == 1)
            out->pss_mib = (double)kb / 1024.0;
        else if (sscanf(line, "Rss: %lu kB", &kb) == 1)
            out->rss_mib = (double)kb / 1024.0;
    }
    fclose(f);
    return 0;
}

char *spawn_cmdline(const char *cpus, const char *const *argv)
{
    const char *args[MAX_ARGS];
    full_argv(cpus, argv, args);
    buf b = BUF_INIT;
    for (int i = 0; args[i]; i++) {
        if (i)
            buf_appends(&b, " ");
        if (args[i][strcspn(args[i], " \t'\"$\\;&|<>()*?")] == '\0' && args[i][0]) {
            buf_appends(&b, args[i]);
            continue;
        }
        buf_appends(&b, "'");
        for (const char *c = args[i]; *c; c++)
            if (*c == '\'')
                buf_appends(&b, "'\\''");
            else
                buf_append(&b, c, 1);
        buf_appends(&b, "'");
    }
    if (buf_failed(&b)) {
        buf_free(&b);
        return NULL;
    }
    return b.data ? b.data : strdup("");
}

char *spawn_first_line(const char *const *argv)
{
    int fds[2];
    if (pipe(fds) != 0)
        return NULL;
    pid_t pid = fork();
    if (pid == 0) {
        dup2(fds[1], STDOUT_FILENO);
        dup2(fds[1], STDERR_FILENO);
        close(fds[0]);
        execvp(argv[0], (char *const *)argv);
        _exit(127);
    }
    close(fds[1]);
    char text[512];
    size_t n = 0;
    ssize_t r;
    while (n < sizeof text - 1 && (r = read(fds[0], text + n, sizeof text - 1 - n)) > 0)
        n += (size_t)r;
    close(fds[0]);
    if (pid > 0)
        spawn_wait(pid);
    text[n] = '\0';
    text[strcspn(text, "\n")] = '\0';
    return pid > 0 && text[0] ? strdup(text) : NULL;
}
