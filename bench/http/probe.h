/* probe: samples the API process while a trial runs. CPU time and memory
 * come from /proc/PID when the runner started the API, and otherwise (an
 * API in another container) from the process gauges of its /metrics. The
 * route's request counters and latency sum always come from /metrics, so
 * each trial gets a per-interval throughput and latency series. */
#ifndef STORHD_TRIAL_PROBE_H
#define STORHD_TRIAL_PROBE_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#define PROBE_MAX_WATCH 8

typedef struct probe_sample {
    double t;       /* seconds since probe_start */
    double cpu_s;   /* utime + stime of the API so far */
    double sys_s;   /* stime alone (0 when read from /metrics) */
    double ctxsw;   /* context switches of its threads (0 from /metrics) */
    double pss_mib; /* proportional set size */
    double rss_mib;
    double ok;                     /* requests of the route answered below 400, so far */
    double failed;                 /* ... answered 400 and above */
    double lat_sum_s;              /* server-side latency sum of the route, so far */
    double watch[PROBE_MAX_WATCH]; /* the watched series' values */
} probe_sample;

typedef struct probe_opts {
    const char *base;   /* http://HOST:PORT of the API */
    pid_t pid;          /* > 0: read /proc/PID; 0: the /metrics gauges */
    const char *route;  /* route pattern as /metrics labels it; a final "*" matches a prefix */
    const char *method; /* and its method */
    int interval_ms;
    /* more /metrics series to record, written as /metrics writes them:
     * storhd_cache_bytes{cache="jwt"} */
    const char *const *watch;
    int nwatch;
    bool no_metrics; /* a peer without /metrics: /proc/PID only */
} probe_opts;

typedef struct probe probe;

/* Takes one sample now. 0, or -1 with a message. */
int probe_once(const probe_opts *o, double t, probe_sample *s, char *msg, size_t cap);
/* Starts a thread that samples every interval until probe_stop. o's strings
 * must outlive the probe. */
int probe_start(const probe_opts *o, probe **out);
/* Seconds since probe_start. */
double probe_elapsed(const probe *p);
/* Stops the thread; the samples stay readable until probe_free. */
void probe_stop(probe *p);
size_t probe_count(const probe *p);
const probe_sample *probe_samples(const probe *p);
/* Samples that failed (the API did not answer). */
size_t probe_failures(const probe *p);
void probe_free(probe *p);

#endif
