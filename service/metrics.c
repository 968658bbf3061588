#include "metrics.h"

#include <dirent.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "docgroup.h"
#include "estats.h"

#define STATUS_MIN 100
#define STATUS_SPAN 500 /* 100..599 */

static const double bucket_le[] = {0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025,
                                   0.005,   0.01,   0.025,   0.05,   0.1,   0.25,
                                   0.5,     1,      2.5,     5,      10};
#define NBUCKETS (sizeof bucket_le / sizeof bucket_le[0])

typedef struct route_stats {
    _Atomic uint64_t status[STATUS_SPAN];
    _Atomic uint64_t bucket[NBUCKETS + 1]; /* last = +Inf */
    _Atomic uint64_t usec_sum;
    _Atomic uint64_t bytes_in, bytes_out;
} route_stats;

static const route *routes;
static size_t nroutes;
static route_stats *stats; /* nroutes + 1 */
static time_t started;
static void (*extra_fn)(buf *, void *);
static void *extra_ctx;

void metrics_set_extra(void (*fn)(buf *out, void *ctx), void *ctx)
{
    extra_fn = fn;
    extra_ctx = ctx;
}

int metrics_init(const route *table, size_t n_routes)
{
    routes = table;
    nroutes = n_routes;
    stats = calloc(n_routes + 1, sizeof *stats);
    started = time(NULL);
    return stats ? 0 : -1;
}

void metrics_free(void)
{
    free(stats);
    stats = NULL;
}

void metrics_observe(int route_index, int status, uint64_t usec, uint64_t bytes_in,
                     uint64_t bytes_out)
{
    if (!stats)
        return;
    size_t r = (route_index >= 0 && (size_t)route_index < nroutes) ? (size_t)route_index : nroutes;
    route_stats *s = &stats[r];
    if (status >= STATUS_MIN && status < STATUS_MIN + STATUS_SPAN)
        atomic_fetch_add_explicit(&s->status[status - STATUS_MIN], 1, memory_order_relaxed);
    double secs = (double)usec / 1e6;
    size_t b = 0;
    while (b < NBUCKETS && secs > bucket_le[b])
        b++;
    atomic_fetch_add_explicit(&s->bucket[b], 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&s->usec_sum, usec, memory_order_relaxed);
    atomic_fetch_add_explicit(&s->bytes_in, bytes_in, memory_order_relaxed);
    atomic_fetch_add_explicit(&s->bytes_out, bytes_out, memory_order_relaxed);
}

static void labels(buf *out, size_t r)
{
    if (r < nroutes)
        buf_printf(out, "route=\"%s\",method=\"%s\"", routes[r].pattern, routes[r].method);
    else
        buf_appends(out, "route=\"unmatched\",method=\"any\"");
}

static long rss_bytes(void)
{
    FILE *f = fopen("/proc/self/statm", "r");
    long pages = 0, rss = 0;
    if (f) {
        if (fscanf(f, "%ld %ld", &pages, &rss) != 2)
            rss = 0;
        fclose(f);
    }
    return rss * sysconf(_SC_PAGESIZE);
}

/* Proportional set size: shared pages split among the processes mapping
 * them, the memory figure of the load trials. */
static long pss_bytes(void)
{
    FILE *f = fopen("/proc/self/smaps_rollup", "r");
    long kb = 0;
    char line[128];
    while (f && fgets(line, sizeof line, f))
        if (sscanf(line, "Pss: %ld kB", &kb) == 1)
            break;
    if (f)
        fclose(f);
    return kb * 1024;
}

static int open_fds(void)
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

/* Group commit of single-document writes (docgroup.h). */
static void histogram(buf *out, const char *name, const double *le, const uint64_t *b, int n,
                      double sum)
{
    uint64_t cum = 0;
    for (int i = 0; i < n; i++) {
        cum += b[i];
        if (i < n - 1)
            buf_printf(out, "%s_bucket{le=\"%g\"} %llu\n", name, le[i], (unsigned long long)cum);
        else
            buf_printf(out, "%s_bucket{le=\"+Inf\"} %llu\n", name, (unsigned long long)cum);
    }
    buf_printf(out, "%s_sum %.6f\n%s_count %llu\n", name, sum, name, (unsigned long long)cum);
}

static void render_docgroup(buf *out)
{
    docgroup_stats g;
    docgroup_stats_snapshot(&g);
    buf_appends(out, "# HELP storhd_doc_group_size Single-document writes published together "
                     "(group commit).\n# TYPE storhd_doc_group_size histogram\n");
    histogram(out, "storhd_doc_group_size", docgroup_size_le, g.size_bucket, DOCGROUP_SIZE_BUCKETS,
              (double)g.ops);
    buf_appends(out, "# HELP storhd_doc_group_wait_seconds Time a single-document write waited "
                     "in its group, queued to answered.\n"
                     "# TYPE storhd_doc_group_wait_seconds histogram\n");
    histogram(out, "storhd_doc_group_wait_seconds", docgroup_wait_le, g.wait_bucket,
              DOCGROUP_WAIT_BUCKETS, g.wait_sum_s);
    buf_printf(out,
               "# HELP storhd_doc_group_syncs_total fsync and syncfs calls that made grouped "
               "writes durable.\n# TYPE storhd_doc_group_syncs_total counter\n"
               "storhd_doc_group_syncs_total %llu\n"
               "# HELP storhd_doc_group_acked_total Grouped writes acknowledged.\n"
               "# TYPE storhd_doc_group_acked_total counter\nstorhd_doc_group_acked_total %llu\n"
               "# HELP storhd_doc_group_fsyncs_per_write Syncs per acknowledged grouped write "
               "since start.\n# TYPE storhd_doc_group_fsyncs_per_write gauge\n"
               "storhd_doc_group_fsyncs_per_write %.4f\n",
               (unsigned long long)g.syncs, (unsigned long long)g.acked,
               g.acked ? (double)g.syncs / (double)g.acked : 0.0);
}

void metrics_render(buf *out)
{
    buf_appends(out, "# HELP storhd_http_requests_total HTTP requests by route, method and "
                     "status.\n# TYPE storhd_http_requests_total counter\n");
    for (size_t r = 0; r <= nroutes; r++)
        for (int s = 0; s < STATUS_SPAN; s++) {
            uint64_t v = atomic_load_explicit(&stats[r].status[s], memory_order_relaxed);
            if (!v)
                continue;
            buf_appends(out, "storhd_http_requests_total{");
            labels(out, r);
            buf_printf(out, ",status=\"%d\"} %llu\n", s + STATUS_MIN, (unsigned long long)v);
        }
    buf_appends(out, "# HELP storhd_http_request_duration_seconds Request latency.\n"
                     "# TYPE storhd_http_request_duration_seconds histogram\n");
    for (size_t r = 0; r <= nroutes; r++) {
        uint64_t cum = 0;
        uint64_t total = 0;
        for (size_t b = 0; b <= NBUCKETS; b++)
            total += atomic_load_explicit(&stats[r].bucket[b], memory_order_relaxed);
        if (!total)
            continue;
        for (size_t b = 0; b <= NBUCKETS; b++) {
            cum += atomic_load_explicit(&stats[r].bucket[b], memory_order_relaxed);
            buf_appends(out, "storhd_http_request_duration_seconds_bucket{");
            labels(out, r);
            if (b < NBUCKETS)
                buf_printf(out, ",le=\"%g\"} %llu\n", bucket_le[b], (unsigned long long)cum);
            else
                buf_printf(out, ",le=\"+Inf\"} %llu\n", (unsigned long long)cum);
        }
        buf_appends(out, "storhd_http_request_duration_seconds_sum{");
        labels(out, r);
        buf_printf(out, "} %.6f\n",
                   (double)atomic_load_explicit(&stats[r].usec_sum, memory_order_relaxed) / 1e6);
        buf_appends(out, "storhd_http_request_duration_seconds_count{");
        labels(out, r);
        buf_printf(out, "} %llu\n", (unsigned long long)total);
    }
    static const char *const dir[2] = {"in", "out"};
    for (int k = 0; k < 2; k++) {
        buf_printf(out,
                   "# HELP storhd_http_bytes_%s_total Body bytes %s.\n"
                   "# TYPE storhd_http_bytes_%s_total counter\n",
                   dir[k], k ? "sent" : "received", dir[k]);
        for (size_t r = 0; r <= nroutes; r++) {
            uint64_t v = atomic_load_explicit(k ? &stats[r].bytes_out : &stats[r].bytes_in,
                                              memory_order_relaxed);
            if (!v)
                continue;
            buf_printf(out, "storhd_http_bytes_%s_total{", dir[k]);
            labels(out, r);
            buf_printf(out, "} %llu\n", (unsigned long long)v);
        }
    }
    buf_appends(out, "# HELP storhd_engine_operations_total Engine operations (fsyncs, renames, "
                     "record reads and writes).\n# TYPE storhd_engine_operations_total counter\n");
    for (int i = 0; i < ESTAT__COUNT; i++)
        buf_printf(out, "storhd_engine_operations_total{op=\"%s\"} %llu\n",
                   estats_name((estat_id)i), (unsigned long long)estats_get((estat_id)i));
    render_docgroup(out);

    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    double cpu = (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
                 (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
    buf_printf(out,
               "# HELP process_cpu_seconds_total User and system CPU time.\n"
               "# TYPE process_cpu_seconds_total counter\nprocess_cpu_seconds_total %.6f\n"
               "# HELP process_resident_memory_bytes Resident set size.\n"
               "# TYPE process_resident_memory_bytes gauge\nprocess_resident_memory_bytes %ld\n"
               "# HELP storhd_process_pss_bytes Proportional set size (smaps_rollup).\n"
               "# TYPE storhd_process_pss_bytes gauge\nstorhd_process_pss_bytes %ld\n"
               "# HELP process_open_fds Open file descriptors.\n"
               "# TYPE process_open_fds gauge\nprocess_open_fds %d\n"
               "# HELP process_start_time_seconds Start time since the epoch.\n"
               "# TYPE process_start_time_seconds gauge\nprocess_start_time_seconds %lld\n",
               cpu, rss_bytes(), pss_bytes(), open_fds(), (long long)started);
    if (extra_fn)
        extra_fn(out, extra_ctx);
}
