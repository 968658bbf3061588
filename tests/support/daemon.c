#include "daemon.h"

#include <curl/curl.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../tmpdir.h"
#include "client.h"

int (*daemon_pre_exec)(void);

static size_t discard(char *p, size_t s, size_t n, void *u)
{
    (void)p;
    (void)u;
    return s * n;
}

static bool healthy(const char *base)
{
    CURL *c = curl_easy_init();
    char url[128];
    snprintf(url, sizeof url, "%s/healthz", base);
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, discard);
    curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, 500L);
    long code = 0;
    bool ok = curl_easy_perform(c) == CURLE_OK &&
              curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &code) == CURLE_OK && code == 200;
    curl_easy_cleanup(c);
    return ok;
}

/* Whether the socket listening on 127.0.0.1:port is one of pid's: 1 yes,
 * 0 another process's (two tests were handed the same free port and the
 * other's storhd answered our /healthz), -1 unknown (no /proc). */
static int listener_is(pid_t pid, int port)
{
    FILE *f = fopen("/proc/net/tcp", "r");
    if (!f)
        return -1;
    char line[512];
    unsigned long inode = 0;
    while (!inode && fgets(line, sizeof line, f)) {
        unsigned lport, st;
        unsigned long ino;
        /* sl local rem st tx:rx tr:when retrnsmt uid timeout inode */
        if (sscanf(line, " %*d: %*x:%x %*x:%*x %x %*x:%*x %*x:%*x %*x %*d %*d %lu", &lport, &st,
                   &ino) == 3 &&
            (int)lport == port && st == 0x0A)
            inode = ino;
    }
    fclose(f);
    if (!inode)
        return -1;
    char want[64], dir[64];
    snprintf(want, sizeof want, "socket:[%lu]", inode);
    snprintf(dir, sizeof dir, "/proc/%d/fd", (int)pid);
    DIR *dd = opendir(dir);
    if (!dd)
        return -1;
    int found = 0;
    for (struct dirent *e; !found && (e = readdir(dd)) != NULL;) {
        char p[300], t[64];
        snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
        ssize_t n = readlink(p, t, sizeof t - 1);
        if (n > 0) {
            t[n] = '\0';
            found = !strcmp(t, want);
        }
    }
    closedir(dd);
    return found;
}

int daemon_start(daemon_proc *d, const char *root, const char *const *extra)
{
    memset(d, 0, sizeof *d);
    if (root)
        snprintf(d->root, sizeof d->root, "%s", root);
    else if (!tmpdir_make(d->root))
        return -1;
    /* STORHD_TEST_WRAPPER: words put before storhd (valgrind, for memcheck) */
    char wrap[512] = "";
    const char *w = getenv("STORHD_TEST_WRAPPER");
    if (w)
        snprintf(wrap, sizeof wrap, "%s", w);
    const char *argv[64];
    int nw = 0;
    for (char *save = NULL, *t = strtok_r(wrap, " ", &save); t && nw < 16;
         t = strtok_r(NULL, " ", &save))
        argv[nw++] = t;
    int tries = nw ? 1200 : 200; /* 50 ms each: 60 s under a wrapper, else 10 s */
    for (int attempt = 0; attempt < 5; attempt++) {
        d->port = client_free_port();
        snprintf(d->base, sizeof d->base, "http://127.0.0.1:%d", d->port);
        char listen[64];
        snprintf(listen, sizeof listen, "127.0.0.1:%d", d->port);
        int n = nw;
        argv[n++] = STORHD_BIN;
        argv[n++] = "--root";
        argv[n++] = d->root;
        argv[n++] = "--listen";
        argv[n++] = listen;
        for (const char *const *x = extra; x && *x && n < 62; x++)
            argv[n++] = *x;
        /* STORHD_TEST_EVLOOP: one HTTP loop with the page RPC configured,
         * the mode in which that loop drives MHD and PostgreSQL itself
         * (evloop.c), so every route of the test runs through it */
        const char *pg = getenv("STORHD_TEST_PG");
        if (getenv("STORHD_TEST_EVLOOP") && !pg) {
            fprintf(stderr, "STORHD_TEST_EVLOOP needs STORHD_TEST_PG (scripts/testpg.sh)\n");
            return -1;
        }
        if (getenv("STORHD_TEST_EVLOOP") && n < 56) {
            argv[n++] = "--threads";
            argv[n++] = "1";
            argv[n++] = "--rpc-conninfo";
            argv[n++] = pg;
            argv[n++] = "--rpc-functions";
            argv[n++] = "page";
        }
        argv[n] = NULL;
        pid_t parent = getpid();
        d->pid = fork();
        if (d->pid == 0) {
            /* a storhd outlives no test: killed when the test dies, and not
             * holding ctest's output pipe open meanwhile */
            prctl(PR_SET_PDEATHSIG, SIGKILL);
            if (getppid() != parent)
                _exit(127);
            const char *log = getenv("STORHD_TEST_LOG");
            int fd = open(log ? log : "/dev/null", O_WRONLY | O_CREAT | O_APPEND, 0644);
            if (fd >= 0) {
                dup2(fd, STDOUT_FILENO);
                dup2(fd, STDERR_FILENO);
            }
            if (daemon_pre_exec && daemon_pre_exec() != 0)
                _exit(126);
            execvp(argv[0], (char *const *)argv);
            _exit(127);
        }
        for (int i = 0; i < tries; i++) {
            /* without a wrapper (which may serve from a child) the storhd
             * that answers must be ours, not another test's on our port */
            if (healthy(d->base) && (nw || listener_is(d->pid, d->port) != 0))
                return 0;
            int st;
            if (waitpid(d->pid, &st, WNOHANG) == d->pid)
                break; /* exited: port taken, try another */
            struct timespec ts = {0, 50 * 1000 * 1000};
            nanosleep(&ts, NULL);
        }
        daemon_kill(d);
    }
    return -1;
}

int daemon_stop(daemon_proc *d)
{
    if (d->pid <= 0)
        return -1;
    kill(d->pid, SIGTERM);
    int st = 0;
    waitpid(d->pid, &st, 0);
    d->pid = 0;
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

void daemon_kill(daemon_proc *d)
{
    if (d->pid <= 0)
        return;
    kill(d->pid, SIGKILL);
    waitpid(d->pid, NULL, 0);
    d->pid = 0;
}

void daemon_cleanup(daemon_proc *d)
{
    if (!d->root[0])
        return;
    tmpdir_remove(d->root);
    /* the embedded SQLite mirror lives beside the root */
    char cmd[PATH_MAX + 64];
    snprintf(cmd, sizeof cmd,
             "rm -f '%s.mirror.sqlite' '%s.mirror.sqlite-wal' '%s.mirror.sqlite-shm'", d->root,
             d->root, d->root);
    if (system(cmd) != 0)
        fprintf(stderr, "could not remove the mirror of %s\n", d->root);
}

client_resp daemon_req(const daemon_proc *d, const char *method, const char *path,
                       const char *ctype, const char *body)
{
    client_resp r;
    client_do(d->base, method, path, ctype, body, body ? strlen(body) : 0, NULL, 0, &r);
    return r;
}

client_resp daemon_json(const daemon_proc *d, const char *method, const char *path,
                        const char *body)
{
    return daemon_req(d, method, path, body ? "application/json" : NULL, body);
}
