#include "probe.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "client.h"
#include "spawn.h"

struct probe {
    probe_opts o;
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool stop;
    probe_sample *s;
    size_t n, cap, failures;
    struct timespec t0;
};

/* The value of a sample line "name{labels} value" or "name value". */
static bool metric_value(const char *line, double *v)
{
    const char *sp = strrchr(line, ' ');
    if (!sp)
        return false;
    char *end;
    *v = strtod(sp + 1, &end);
    return end != sp + 1;
}

static bool starts(const char *line, const char *prefix)
{
    return strncmp(line, prefix, strlen(prefix)) == 0;
}

/* Whether the labels at l name the probed route and method. */
static bool route_labels(const probe_opts *o, const char *l)
{
    size_t rl = strlen(o->route);
    bool prefix = rl > 0 && o->route[rl - 1] == '*';
    if (prefix)
        rl--;
    if (strncmp(l, "{route=\"", 8) != 0 || strncmp(l + 8, o->route, rl) != 0)
        return false;
    const char *after = l + 8 + rl;
    if (!prefix && *after != '"')
        return false;
    char m[32];
    snprintf(m, sizeof m, "method=\"%s\"", o->method);
    const char *end = strstr(after, "\"}"); /* patterns hold braces: {queue} */
    const char *at = strstr(after, m);
    return at && end && at < end;
}

static void parse_metrics(const probe_opts *o, char *text, probe_sample *s, bool gauges)
{
    static const char req[] = "storhd_http_requests_total";
    static const char sum[] = "storhd_http_request_duration_seconds_sum";
    for (char *save = NULL, *line = strtok_r(text, "\n", &save); line;
         line = strtok_r(NULL, "\n", &save)) {
        double v;
        if (line[0] == '#' || !metric_value(line, &v))
            continue;
        for (int i = 0; i < o->nwatch; i++) {
            size_t wl = strlen(o->watch[i]);
            if (!strncmp(line, o->watch[i], wl) && line[wl] == ' ')
                s->watch[i] = v;
        }
        if (starts(line, req) && route_labels(o, line + sizeof req - 1)) {
            const char *st = strstr(line, "status=\"");
            int status = st ? atoi(st + 8) : 0;
            if (status >= 400)
                s->failed += v;
            else
                s->ok += v;
        } else if (starts(line, sum) && route_labels(o, line + sizeof sum - 1)) {
            s->lat_sum_s += v;
        } else if (gauges && starts(line, "process_cpu_seconds_total ")) {
            s->cpu_s = v;
        } else if (gauges && starts(line, "storhd_process_pss_bytes ")) {
            s->pss_mib = v / 1048576.0;
        } else if (gauges && starts(line, "process_resident_memory_bytes ")) {
            s->rss_mib = v / 1048576.0;
        }
    }
}

int probe_once(const probe_opts *o, double t, probe_sample *s, char *msg, size_t cap)
{
    memset(s, 0, sizeof *s);
    s->t = t;
    if (o->pid > 0) {
        spawn_stat st;
        if (spawn_stat_read(o->pid, &st) != 0) {
            snprintf(msg, cap, "process %d is gone", (int)o->pid);
            return -1;
        }
        s->cpu_s = st.cpu_s;
        s->sys_s = st.sys_s;
        s->ctxsw = st.ctxsw;
        s->pss_mib = st.pss_mib;
        s->rss_mib = st.rss_mib;
    }
    if (o->no_metrics)
        return 0;
    client_resp r;
    if (client_do(o->base, "GET", "/metrics", NULL, NULL, 0, NULL, 0, &r) != 0 || r.status != 200) {
        snprintf(msg, cap, "GET %s/metrics failed (status %ld)", o->base, r.status);
        client_free(&r);
        return -1;
    }
    parse_metrics(o, r.body, s, o->pid <= 0);
    client_free(&r);
    return 0;
}

static double since(const struct timespec *t0)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (double)(now.tv_sec - t0->tv_sec) + (double)(now.tv_nsec - t0->tv_nsec) / 1e9;
}

static bool reserve(probe *p)
{
    if (p->n < p->cap)
        return true;
    size_t cap = p->cap * 2 + 64;
    probe_sample *s = realloc(p->s, cap * sizeof *s);
    if (!s)
        return false;
    p->s = s;
    p->cap = cap;
    return true;
}

/* Samples at t0 + k * interval for k = 1, 2, ... (the caller samples t0
 * itself); absolute deadlines, so a slow scrape does not shift later ones. */
static void *run(void *arg)
{
    probe *p = arg;
    struct timespec next = p->t0;
    pthread_mutex_lock(&p->mu);
    for (;;) {
        next.tv_nsec += (long)p->o.interval_ms * 1000000L;
        next.tv_sec += next.tv_nsec / 1000000000L;
        next.tv_nsec %= 1000000000L;
        while (!p->stop && pthread_cond_timedwait(&p->cv, &p->mu, &next) == 0)
            ;
        if (p->stop)
            break;
        pthread_mutex_unlock(&p->mu);
        probe_sample s;
        char msg[200];
        int rc = probe_once(&p->o, since(&p->t0), &s, msg, sizeof msg);
        pthread_mutex_lock(&p->mu);
        if (rc != 0 || !reserve(p))
            p->failures++;
        else
            p->s[p->n++] = s;
    }
    pthread_mutex_unlock(&p->mu);
    return NULL;
}

int probe_start(const probe_opts *o, probe **out)
{
    probe *p = calloc(1, sizeof *p);
    if (!p)
        return -1;
    p->o = *o;
    pthread_mutex_init(&p->mu, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&p->cv, &ca);
    pthread_condattr_destroy(&ca);
    clock_gettime(CLOCK_MONOTONIC, &p->t0);
    if (pthread_create(&p->thread, NULL, run, p) != 0) {
        free(p);
        return -1;
    }
    *out = p;
    return 0;
}

double probe_elapsed(const probe *p)
{
    return since(&p->t0);
}

void probe_stop(probe *p)
{
    pthread_mutex_lock(&p->mu);
    p->stop = true;
    pthread_cond_signal(&p->cv);
    pthread_mutex_unlock(&p->mu);
    pthread_join(p->thread, NULL);
}

size_t probe_count(const probe *p)
{
    return p->n;
}

const probe_sample *probe_samples(const probe *p)
{
    return p->s;
}

size_t probe_failures(const probe *p)
{
    return p->failures;
}

void probe_free(probe *p)
{
    if (!p)
        return;
    pthread_mutex_destroy(&p->mu);
    pthread_cond_destroy(&p->cv);
    free(p->s);
    free(p);
}
