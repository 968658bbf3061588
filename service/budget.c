#include "budget.h"

#include <dirent.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "metrics.h"
#include "rcache.h"

/* Descriptors kept for what is neither a connection nor an engine: stdio,
 * listening sockets, the access log, /proc reads, eventfds and spares. */
#define FDS_FIXED 48
#define FDS_PER_THREAD 3      /* an HTTP event loop: epoll and its wakeup pipe */
#define FDS_PER_WORKER 3      /* a write in flight: lock file, temp file, directory */
#define FDS_PER_MIRROR 4      /* SQLite: database, journal, WAL, shared memory */
#define FDS_PER_CONN 2        /* the socket, and the file a streamed response reads */
#define FDS_PER_ENGINE 2      /* a log or queue: its lock file and its active file */
#define ENGINE_MEM (64 << 10) /* memory planned per open engine (measured: well under) */
#define MIN_ENGINES 4
#define MIN_CONNS 4
#define DEGRADED_SECONDS 10

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static time_t exhausted_at;
static char exhausted_cause[256];

static uint64_t raise_nofile(void)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) != 0)
        return 1024;
    if (rl.rlim_cur < rl.rlim_max) {
        struct rlimit up = {rl.rlim_max, rl.rlim_max};
        if (setrlimit(RLIMIT_NOFILE, &up) == 0)
            rl.rlim_cur = rl.rlim_max;
    }
    return rl.rlim_cur == RLIM_INFINITY ? (uint64_t)1 << 20 : (uint64_t)rl.rlim_cur;
}

/* A limit file holding a byte count or "max"; 0 when absent or unlimited. */
static uint64_t read_limit(const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return 0;
    unsigned long long v = 0;
    char word[32] = "";
    if (fscanf(f, "%31s", word) == 1 && strcmp(word, "max") != 0)
        sscanf(word, "%llu", &v);
    fclose(f);
    return v >= (1ull << 60) ? 0 : (uint64_t)v; /* cgroup v1 says "unlimited" with ~2^63 */
}

static uint64_t cgroup_limit(const char **from)
{
    char path[512], line[400];
    FILE *f = fopen("/proc/self/cgroup", "r");
    uint64_t v = 0;
    while (f && !v && fgets(line, sizeof line, f)) {
        line[strcspn(line, "\n")] = '\0';
        if (!strncmp(line, "0::", 3)) { /* cgroup v2: our group, then the namespace root */
            snprintf(path, sizeof path, "/sys/fs/cgroup%s/memory.max", line + 3);
            if ((v = read_limit(path)))
                *from = "cgroup v2";
        }
    }
    if (f)
        fclose(f);
    if (!v && (v = read_limit("/sys/fs/cgroup/memory.max")))
        *from = "cgroup v2";
    if (!v && (v = read_limit("/sys/fs/cgroup/memory/memory.limit_in_bytes")))
        *from = "cgroup v1";
    return v;
}

static uint64_t memory_limit(const char **from)
{
    long pages = sysconf(_SC_PHYS_PAGES), psize = sysconf(_SC_PAGESIZE);
    uint64_t lim = pages > 0 && psize > 0 ? (uint64_t)pages * (uint64_t)psize : (uint64_t)1 << 30;
    *from = "RAM";
    const char *cg_from = NULL;
    uint64_t cg = cgroup_limit(&cg_from);
    if (cg && cg < lim) {
        lim = cg;
        *from = cg_from;
    }
    struct rlimit rl;
    if (getrlimit(RLIMIT_AS, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < lim) {
        lim = rl.rlim_cur;
        *from = "RLIMIT_AS";
    }
    return lim;
}

void budget_init(const config *cfg, size_t nrpc, size_t nmirrors, budget *b)
{
    memset(b, 0, sizeof *b);
    b->nofile = raise_nofile();
    b->fds_reserved = FDS_FIXED + (uint64_t)cfg->threads * FDS_PER_THREAD +
                      (uint64_t)cfg->workers * FDS_PER_WORKER + nrpc + nmirrors * FDS_PER_MIRROR;
    uint64_t rest = b->nofile > b->fds_reserved ? b->nofile - b->fds_reserved : 0;
    /* connections get at most half of the rest, so accept() never meets a
     * limit engines already took */
    uint64_t conns = rest / 2 / FDS_PER_CONN;
    if (conns > cfg->max_conns)
        conns = cfg->max_conns;
    if (conns < MIN_CONNS)
        conns = MIN_CONNS;
    b->max_conns = (unsigned)conns;
    uint64_t engine_fds = rest > conns * FDS_PER_CONN ? rest - conns * FDS_PER_CONN : 0;
    b->memory_limit = memory_limit(&b->memory_from);
    uint64_t engines = engine_fds / FDS_PER_ENGINE;
    if (engines > b->memory_limit / 8 / ENGINE_MEM) /* engines take at most an eighth */
        engines = b->memory_limit / 8 / ENGINE_MEM;
    if (engines < MIN_ENGINES)
        engines = MIN_ENGINES;
    b->fd_safe_engines = engine_fds / FDS_PER_ENGINE;
    b->max_open_engines = cfg->max_open_engines > 0 ? (size_t)cfg->max_open_engines : engines;
    b->cache_bytes_total =
        cfg->cache_bytes_total ? cfg->cache_bytes_total : (size_t)(b->memory_limit / 4);
}

void budget_note_exhausted(const char *cause)
{
    pthread_mutex_lock(&mu);
    exhausted_at = time(NULL);
    snprintf(exhausted_cause, sizeof exhausted_cause, "%s", cause);
    pthread_mutex_unlock(&mu);
}

bool budget_degraded(char *out, size_t cap)
{
    pthread_mutex_lock(&mu);
    bool d = exhausted_at && time(NULL) - exhausted_at < DEGRADED_SECONDS;
    if (d)
        snprintf(out, cap, "%s", exhausted_cause);
    pthread_mutex_unlock(&mu);
    return d;
}

int budget_fds_in_use(void)
{
    DIR *d = opendir("/proc/self/fd");
    if (!d)
        return -1;
    int n = 0;
    struct dirent *de;
    while ((de = readdir(d)))
        if (de->d_name[0] != '.')
            n++;
    closedir(d);
    return n - 1; /* the directory stream itself */
}

void budget_render_metrics(buf *out, const budget *b, registry *reg)
{
    registry_stats s;
    registry_get_stats(reg, &s);
    metrics_family(out, "storhd_engines_open", "gauge", "Engines open, by kind.");
    buf_printf(out,
               "storhd_engines_open{kind=\"docs\"} %zu\n"
               "storhd_engines_open{kind=\"log\"} %zu\n"
               "storhd_engines_open{kind=\"queue\"} %zu\n",
               s.open[REGISTRY_DOC], s.open[REGISTRY_LOG], s.open[REGISTRY_QUEUE]);
    metrics_family(out, "storhd_engines_held", "gauge", "Open engines a request is using.");
    buf_printf(out, "storhd_engines_held %zu\n", s.held);
    metrics_family(out, "storhd_engines_budget", "gauge", "Engines that may be open at once.");
    buf_printf(out, "storhd_engines_budget %zu\n", s.max_open);
    metrics_family(out, "storhd_engine_events_total", "counter",
                   "Engine opens, reopens (after an eviction), evictions of idle engines and "
                   "refusals (budget full, all in use).");
    buf_printf(out,
               "storhd_engine_events_total{event=\"open\"} %llu\n"
               "storhd_engine_events_total{event=\"reopen\"} %llu\n"
               "storhd_engine_events_total{event=\"eviction\"} %llu\n"
               "storhd_engine_events_total{event=\"refusal\"} %llu\n",
               (unsigned long long)s.opens, (unsigned long long)s.reopens,
               (unsigned long long)s.evictions, (unsigned long long)s.refusals);
    metrics_family(out, "storhd_fds_budget", "gauge",
                   "Descriptors: the limit, and what connections may use.");
    buf_printf(out,
               "storhd_fds_budget{use=\"limit\"} %llu\n"
               "storhd_fds_budget{use=\"connections\"} %llu\n"
               "storhd_fds_budget{use=\"engines\"} %llu\n",
               (unsigned long long)b->nofile, (unsigned long long)b->max_conns * FDS_PER_CONN,
               (unsigned long long)s.max_open * FDS_PER_ENGINE);
    metrics_family(out, "storhd_cache_budget_bytes", "gauge", "The record caches' total budget.");
    buf_printf(out, "storhd_cache_budget_bytes %zu\n", b->cache_bytes_total);
    metrics_family(out, "storhd_cache_budget_evictions_total", "counter",
                   "Entries evicted to stay within it.");
    buf_printf(out, "storhd_cache_budget_evictions_total %llu\n",
               (unsigned long long)rcache_budget_evictions());
}
