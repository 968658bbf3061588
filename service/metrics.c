#include "metrics.h"

#include <jansson.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#include "auth.h"
#include "budget.h"
#include "docgroup.h"
#include "estats.h"
#include "longpoll.h"
#include "mempolicy.h"
#include "mirror.h"
#include "rcache.h"
#include "rpc.h"
#include "service.h"
#include "wstats.h"

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

/* ---- rendering: each family once, HELP and TYPE before its samples ---- */

void metrics_family(buf *out, const char *name, const char *type, const char *help)
{
    buf_printf(out, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* A label value as the text format wants it: \\, \" and \n escaped. */
static void label_value(buf *out, const char *s)
{
    for (; *s; s++) {
        if (*s == '\\' || *s == '"')
            buf_printf(out, "\\%c", *s);
        else if (*s == '\n')
            buf_appends(out, "\\n");
        else
            buf_append(out, s, 1);
    }
}

/* name{key="value"} v, for the many one-label samples. */
static void sample1(buf *out, const char *name, const char *key, const char *value, double v)
{
    buf_printf(out, "%s{%s=\"", name, key);
    label_value(out, value);
    buf_printf(out, "\"} %.17g\n", v);
}

static void render_http(buf *out)
{
    metrics_family(out, "storhd_http_requests_total", "counter",
                   "HTTP requests by route, method and status.");
    for (size_t r = 0; r <= nroutes; r++)
        for (int s = 0; s < STATUS_SPAN; s++) {
            uint64_t v = atomic_load_explicit(&stats[r].status[s], memory_order_relaxed);
            if (!v)
                continue;
            buf_appends(out, "storhd_http_requests_total{");
            labels(out, r);
            buf_printf(out, ",status=\"%d\"} %llu\n", s + STATUS_MIN, (unsigned long long)v);
        }
    metrics_family(out, "storhd_http_request_duration_seconds", "histogram", "Request latency.");
    for (size_t r = 0; r <= nroutes; r++) {
        uint64_t n[NBUCKETS + 1], total = 0, cum = 0;
        for (size_t b = 0; b <= NBUCKETS; b++)
            total += n[b] = atomic_load_explicit(&stats[r].bucket[b], memory_order_relaxed);
        if (!total)
            continue;
        for (size_t b = 0; b <= NBUCKETS; b++) {
            cum += n[b];
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
        char name[40];
        snprintf(name, sizeof name, "storhd_http_bytes_%s_total", dir[k]);
        metrics_family(out, name, "counter", k ? "Body bytes sent." : "Body bytes received.");
        for (size_t r = 0; r <= nroutes; r++) {
            uint64_t v = atomic_load_explicit(k ? &stats[r].bytes_out : &stats[r].bytes_in,
                                              memory_order_relaxed);
            if (!v)
                continue;
            buf_printf(out, "%s{", name);
            labels(out, r);
            buf_printf(out, "} %llu\n", (unsigned long long)v);
        }
    }
}

static void render_engines(buf *out)
{
    metrics_family(out, "storhd_engine_operations_total", "counter",
                   "Engine operations (fsyncs, renames, record reads and writes).");
    for (int i = 0; i < ESTAT__COUNT; i++)
        sample1(out, "storhd_engine_operations_total", "op", estats_name((estat_id)i),
                (double)estats_get((estat_id)i));
    metrics_family(out, "storhd_group_commit_batch_writes", "histogram",
                   "Writes made durable by one group-commit fsync, by kind of store.");
    for (int k = 0; k < WSTATS__KINDS; k++) {
        wstats_hist h;
        wstats_batch_snapshot((wstats_kind)k, &h);
        const char *kind = wstats_kind_name((wstats_kind)k);
        uint64_t cum = 0;
        for (size_t b = 0; b <= WSTATS_NBUCKETS; b++) {
            cum += h.bucket[b];
            if (b < WSTATS_NBUCKETS)
                buf_printf(out,
                           "storhd_group_commit_batch_writes_bucket{kind=\"%s\",le=\"%g\"} %llu\n",
                           kind, wstats_batch_le(b), (unsigned long long)cum);
            else
                buf_printf(
                    out, "storhd_group_commit_batch_writes_bucket{kind=\"%s\",le=\"+Inf\"} %llu\n",
                    kind, (unsigned long long)cum);
        }
        /* the buckets' total is the count: a batch racing this scrape may
         * have reached some counters and not others */
        buf_printf(out, "storhd_group_commit_batch_writes_sum{kind=\"%s\"} %llu\n", kind,
                   (unsigned long long)h.sum);
        buf_printf(out, "storhd_group_commit_batch_writes_count{kind=\"%s\"} %llu\n", kind,
                   (unsigned long long)cum);
    }
    wstats_store bad[64];
    size_t nbad = wstats_poisoned_list(bad, sizeof bad / sizeof bad[0]);
    metrics_family(out, "storhd_stores_refusing_writes", "gauge",
                   "Stores refusing writes until restart because an fsync of theirs failed.");
    buf_printf(out, "storhd_stores_refusing_writes %zu\n", nbad);
    metrics_family(out, "storhd_store_refusing_writes", "gauge",
                   "1 for each store refusing writes after a failed fsync (the first 64).");
    for (size_t i = 0; i < nbad && i < sizeof bad / sizeof bad[0]; i++) {
        buf_printf(out, "storhd_store_refusing_writes{kind=\"%s\",store=\"",
                   wstats_kind_name(bad[i].kind));
        label_value(out, bad[i].name);
        buf_appends(out, "\"} 1\n");
    }
}

typedef struct qdepth {
    json_t *rows; /* [[name, pending, processing, done], ...] */
} qdepth;

static void queue_depth(void *ctx, const char *name, queue *q)
{
    qdepth *d = ctx;
    json_t *c;
    if (queue_counts(q, &c, NULL))
        return;
    json_array_append_new(d->rows,
                          json_pack("[sOOO]", name, json_object_get(c, "pending"),
                                    json_object_get(c, "processing"), json_object_get(c, "done")));
    json_decref(c);
}

static void render_queues(buf *out, service *svc)
{
    /* counts are read first: queue_counts may take a queue's lock, and no
     * family is half printed while it waits */
    qdepth d = {json_array()};
    registry_each_queue(svc->reg, queue_depth, &d);
    metrics_family(out, "storhd_queue_jobs", "gauge", "Jobs by queue and state.");
    static const char *const states[] = {"pending", "processing", "done"};
    size_t i;
    json_t *row;
    json_array_foreach (d.rows, i, row) {
        for (size_t s = 0; s < 3; s++) {
            buf_appends(out, "storhd_queue_jobs{queue=\"");
            label_value(out, json_string_value(json_array_get(row, 0)));
            buf_printf(out, "\",state=\"%s\"} %lld\n", states[s],
                       (long long)json_integer_value(json_array_get(row, s + 1)));
        }
    }
    json_decref(d.rows);
    metrics_family(out, "storhd_longpoll_parked", "gauge",
                   "Queue claims parked waiting for a job (holding no thread).");
    buf_printf(out, "storhd_longpoll_parked %zu\n", longpoll_parked());
}

static void render_caches(buf *out, service *svc)
{
    rcache_stats rc;
    rcache_totals(&rc);
    auth_stats as = {0};
    rpc_stats rs = {0};
    if (svc->auth)
        auth_snapshot(svc->auth, &as);
    if (svc->rpc)
        rpc_snapshot(svc->rpc, &rs);
    struct {
        const char *cache;
        bool on;
        unsigned long long hit, miss, evict, entries, bytes;
    } c[] = {
        {"record", true, rc.hits, rc.misses, rc.evictions, rc.entries, rc.bytes},
        {"response", svc->rpc != NULL, rs.hits, rs.misses, rs.evictions, rs.entries, rs.bytes},
        {"jwt", svc->auth != NULL, as.hits, as.misses, as.evictions, as.entries, as.bytes},
    };
    size_t n = sizeof c / sizeof c[0];
    metrics_family(out, "storhd_cache_total", "counter",
                   "Lookups and evictions of the record, RPC response and JWT caches.");
    for (size_t i = 0; i < n; i++)
        if (c[i].on)
            buf_printf(out,
                       "storhd_cache_total{cache=\"%s\",event=\"hit\"} %llu\n"
                       "storhd_cache_total{cache=\"%s\",event=\"miss\"} %llu\n"
                       "storhd_cache_total{cache=\"%s\",event=\"eviction\"} %llu\n",
                       c[i].cache, c[i].hit, c[i].cache, c[i].miss, c[i].cache, c[i].evict);
    metrics_family(out, "storhd_cache_entries", "gauge", "Entries held by caches.");
    for (size_t i = 0; i < n; i++)
        if (c[i].on)
            buf_printf(out, "storhd_cache_entries{cache=\"%s\"} %llu\n", c[i].cache, c[i].entries);
    metrics_family(out, "storhd_cache_bytes", "gauge", "Bytes held by caches.");
    for (size_t i = 0; i < n; i++)
        if (c[i].on)
            buf_printf(out, "storhd_cache_bytes{cache=\"%s\"} %llu\n", c[i].cache, c[i].bytes);
    if (svc->auth) {
        metrics_family(out, "storhd_jwt_rejected_total", "counter",
                       "Tokens that failed verification.");
        buf_printf(out, "storhd_jwt_rejected_total %llu\n", as.rejected);
    }
    if (!svc->rpc)
        return;
    metrics_family(out, "storhd_pg_pool", "gauge",
                   "Connections of the page RPC's PostgreSQL pool.");
    buf_printf(out, "storhd_pg_pool{state=\"size\"} %d\nstorhd_pg_pool{state=\"busy\"} %d\n",
               rs.pool, rs.busy);
    metrics_family(out, "storhd_pg_pool_total", "counter",
                   "Page RPC calls that waited for a free connection, calls that failed, calls "
                   "refused with 503 because the pool stayed saturated (rejected), and statements "
                   "cancelled at --rpc-timeout (timeout).");
    buf_printf(out,
               "storhd_pg_pool_total{event=\"wait\"} %llu\n"
               "storhd_pg_pool_total{event=\"error\"} %llu\n"
               "storhd_pg_pool_total{event=\"rejected\"} %llu\n"
               "storhd_pg_pool_total{event=\"timeout\"} %llu\n",
               rs.waits, rs.errors, rs.rejected, rs.timeouts);
    metrics_family(out, "storhd_rpc_calls_total", "counter",
                   "Page RPC calls, response cache hits included.");
    buf_printf(out, "storhd_rpc_calls_total %llu\n", rs.calls);
    metrics_family(out, "storhd_rpc_seconds_total", "counter", "Time spent in page RPC calls.");
    buf_printf(out, "storhd_rpc_seconds_total %.6f\n", rs.seconds);
    metrics_family(out, "storhd_rpc_coalesced_total", "counter",
                   "Page RPC misses that shared an identical call in progress (single-flight).");
    buf_printf(out, "storhd_rpc_coalesced_total %llu\n", rs.coalesced);
}

static void render_mirrors(buf *out, service *svc)
{
    size_t n = svc->nmirrors;
    mirror_stats *ms = calloc(n ? n : 1, sizeof *ms);
    if (!ms)
        return;
    for (size_t i = 0; i < n; i++)
        mirror_snapshot(svc->mirrors[i], &ms[i]);
    static const struct {
        const char *name, *type, *help;
    } fam[] = {
        {"storhd_mirror_rows_pushed_total", "counter", "Rows written by pushes."},
        {"storhd_mirror_pushes_total", "counter", "Completed pushes (one per collection)."},
        {"storhd_mirror_push_seconds_total", "counter", "Time spent in pushes."},
        {"storhd_mirror_failures_total", "counter", "Failed mirror operations."},
        {"storhd_mirror_unpushed_writes", "gauge",
         "Record writes of this process since the oldest last successful push of the "
         "mirror's collections began (an estimate of what the mirror lacks)."},
        {"storhd_mirror_last_push_success", "gauge",
         "1 if the last push succeeded, 0 if it failed, -1 before the first."},
        {"storhd_mirror_last_push_timestamp_seconds", "gauge",
         "When the last push ended (0: never)."},
        {"storhd_mirror_last_success_timestamp_seconds", "gauge",
         "When the last successful push ended (0: never)."},
    };
    for (size_t f = 0; f < sizeof fam / sizeof fam[0]; f++) {
        metrics_family(out, fam[f].name, fam[f].type, fam[f].help);
        for (size_t i = 0; i < n; i++) {
            const mirror_stats *m = &ms[i];
            double v[] = {(double)m->rows_pushed, (double)m->pushes, m->push_seconds,
                          (double)m->failures,    (double)m->lag,    m->last_push_ok,
                          m->last_push_at,        m->last_good_at};
            sample1(out, fam[f].name, "mirror", svc->mirrors[i]->name, v[f]);
        }
    }
    free(ms);
}

static void render_process(buf *out, service *svc)
{
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
               cpu, rss_bytes(), pss_bytes(), budget_fds_in_use(), (long long)started);
    size_t keep;
    uint64_t releases;
    mempolicy_stats(&keep, &releases);
    metrics_family(out, "storhd_heap_keep_bytes", "gauge",
                   "Largest freed block the heap keeps for the next operation (0: glibc's "
                   "policy, left to the environment).");
    buf_printf(out, "storhd_heap_keep_bytes %zu\n", keep);
    metrics_family(out, "storhd_heap_releases_total", "counter",
                   "Times the heap's free memory was given back after a quiet spell.");
    buf_printf(out, "storhd_heap_releases_total %llu\n", (unsigned long long)releases);
    struct statvfs vfs;
    if (statvfs(svc->cfg.root, &vfs) != 0)
        return;
    metrics_family(out, "storhd_root_filesystem_avail_bytes", "gauge",
                   "Bytes available to storhd on the storage root's filesystem.");
    buf_printf(out, "storhd_root_filesystem_avail_bytes %.17g\n",
               (double)vfs.f_bavail * (double)vfs.f_frsize);
    metrics_family(out, "storhd_root_filesystem_size_bytes", "gauge",
                   "Size of the storage root's filesystem.");
    buf_printf(out, "storhd_root_filesystem_size_bytes %.17g\n",
               (double)vfs.f_blocks * (double)vfs.f_frsize);
}

/* Group commit of single-document writes (docgroup.h). */
static void docgroup_histogram(buf *out, const char *name, const double *le, const uint64_t *b,
                               int n, double sum)
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
    docgroup_histogram(out, "storhd_doc_group_size", docgroup_size_le, g.size_bucket,
                       DOCGROUP_SIZE_BUCKETS, (double)g.ops);
    buf_appends(out, "# HELP storhd_doc_group_wait_seconds Time a single-document write waited "
                     "in its group, queued to answered.\n"
                     "# TYPE storhd_doc_group_wait_seconds histogram\n");
    docgroup_histogram(out, "storhd_doc_group_wait_seconds", docgroup_wait_le, g.wait_bucket,
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

void metrics_render(buf *out, service *svc)
{
    render_http(out);
    render_engines(out);
    render_docgroup(out);
    render_queues(out, svc);
    render_caches(out, svc);
    budget_render_metrics(out, &svc->budget, svc->reg);
    render_mirrors(out, svc);
    render_process(out, svc);
}
