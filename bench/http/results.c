#include "results.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double results_median(double *v, size_t n)
{
    if (n == 0)
        return 0;
    qsort(v, n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* Rounded for the JSON: figures carry more digits than they have meaning. */
static json_t *num(double v, int digits)
{
    double f = pow(10, digits);
    return json_real(round(v * f) / f);
}

static double jnum(const json_t *o, const char *key)
{
    return json_number_value(json_object_get(o, key));
}

/* The number at "a.b" (one level down) or "a". */
static double jpath(const json_t *o, const char *path)
{
    const char *dot = strchr(path, '.');
    if (!dot)
        return jnum(o, path);
    char head[64];
    snprintf(head, sizeof head, "%.*s", (int)(dot - path), path);
    return jnum(json_object_get(o, head), dot + 1);
}

static json_t *latency_ms(const json_t *wrk)
{
    const json_t *lat = json_object_get(wrk, "latency_us");
    const json_t *pct = json_object_get(lat, "percentiles");
    json_t *o = json_object();
    static const char *const keys[] = {"min", "mean", "stdev", "max"};
    for (size_t i = 0; i < 4; i++)
        json_object_set_new(o, keys[i], num(jnum(lat, keys[i]) / 1000.0, 3));
    static const char *const p_in[] = {"50", "75", "90", "95", "99", "99.9", "99.99"};
    static const char *const p_out[] = {"p50", "p75", "p90", "p95", "p99", "p99.9", "p99.99"};
    for (size_t i = 0; i < 7; i++)
        json_object_set_new(o, p_out[i], num(jnum(pct, p_in[i]) / 1000.0, 3));
    return o;
}

static json_t *curve_ms(const json_t *wrk)
{
    json_t *out = json_array();
    size_t i;
    json_t *pt;
    json_array_foreach (json_object_get(wrk, "curve"), i, pt) {
        json_array_append_new(out,
                              json_pack("[oo]", num(json_number_value(json_array_get(pt, 0)), 4),
                                        num(json_number_value(json_array_get(pt, 1)) / 1000.0, 3)));
    }
    return out;
}

static json_t *watched(const probe_opts *po, const double *v)
{
    json_t *o = json_object();
    for (int i = 0; i < po->nwatch; i++)
        json_object_set_new(o, po->watch[i], json_real(v[i]));
    return o;
}

/* Per-interval figures from consecutive samples. */
static json_t *series(const probe_sample *first, const probe_sample *s, size_t n,
                      const probe_opts *po)
{
    json_t *out = json_array();
    const probe_sample *prev = first;
    for (size_t i = 0; i < n; i++) {
        double dt = s[i].t - prev->t;
        if (dt <= 0)
            continue;
        double ok = s[i].ok - prev->ok, bad = s[i].failed - prev->failed;
        double lat = ok + bad > 0 ? (s[i].lat_sum_s - prev->lat_sum_s) * 1000.0 / (ok + bad) : 0;
        json_t *pt = json_object();
        json_object_set_new(pt, "t", num(s[i].t - first->t, 2));
        json_object_set_new(pt, "rps", num(ok / dt, 1));
        json_object_set_new(pt, "failed_rps", num(bad / dt, 1));
        json_object_set_new(pt, "server_latency_ms", num(lat, 3));
        json_object_set_new(pt, "pss_mib", num(s[i].pss_mib, 2));
        json_object_set_new(pt, "rss_mib", num(s[i].rss_mib, 2));
        json_object_set_new(pt, "cpu_pct", num((s[i].cpu_s - prev->cpu_s) * 100.0 / dt, 1));
        if (po->nwatch)
            json_object_set_new(pt, "watch", watched(po, s[i].watch));
        json_array_append_new(out, pt);
        prev = &s[i];
    }
    return out;
}

json_t *results_trial(const char *scenario, int trial, int order, const json_t *wrk,
                      const probe_sample *s, size_t n, const probe_sample *first,
                      const probe_sample *last, const probe_opts *po)
{
    double secs = jnum(wrk, "duration_us") / 1e6;
    double requests = jnum(wrk, "requests");
    const json_t *e = json_object_get(wrk, "errors");
    double status = jnum(e, "status");
    double total =
        status + jnum(e, "connect") + jnum(e, "read") + jnum(e, "write") + jnum(e, "timeout");
    double successful = requests - status;
    double pss = 0, rss_max = 0;
    for (size_t i = 0; i < n; i++) {
        pss += s[i].pss_mib;
        if (s[i].rss_mib > rss_max)
            rss_max = s[i].rss_mib;
    }
    double cpu = last->cpu_s - first->cpu_s;
    json_t *errors = json_deep_copy(e);
    json_object_set_new(errors, "total", json_integer((json_int_t)total));
    json_t *api = json_object();
    json_object_set_new(api, "pss_mib", num(n ? pss / (double)n : 0, 2));
    json_object_set_new(api, "pss_samples", json_integer((json_int_t)n));
    json_object_set_new(api, "rss_mib_first", num(first->rss_mib, 2));
    json_object_set_new(api, "rss_mib_last", num(last->rss_mib, 2));
    json_object_set_new(api, "rss_mib_max",
                        num(rss_max > last->rss_mib ? rss_max : last->rss_mib, 2));
    json_object_set_new(api, "cpu_s", num(cpu, 3));
    json_object_set_new(api, "cpu_us_per_request", num(requests > 0 ? cpu * 1e6 / requests : 0, 2));
    if (last->ctxsw > 0) { /* read from /proc: the runner started the API */
        double sys = last->sys_s - first->sys_s, sw = last->ctxsw - first->ctxsw;
        json_object_set_new(api, "sys_us_per_request",
                            num(requests > 0 ? sys * 1e6 / requests : 0, 2));
        json_object_set_new(api, "ctxsw_per_request", num(requests > 0 ? sw / requests : 0, 3));
    }
    if (po->nwatch) {
        double mx[PROBE_MAX_WATCH];
        for (int w = 0; w < po->nwatch; w++) {
            mx[w] = last->watch[w];
            for (size_t i = 0; i < n; i++)
                if (s[i].watch[w] > mx[w])
                    mx[w] = s[i].watch[w];
        }
        json_object_set_new(api, "watch_max", watched(po, mx));
    }
    json_t *t = json_object();
    json_object_set_new(t, "scenario", json_string(scenario));
    json_object_set_new(t, "trial", json_integer(trial));
    json_object_set_new(t, "order", json_integer(order));
    json_object_set_new(t, "requests", json_integer((json_int_t)requests));
    json_object_set_new(t, "successful", json_integer((json_int_t)successful));
    json_object_set_new(t, "duration_s", num(secs, 3));
    json_object_set_new(t, "rps", num(secs > 0 ? successful / secs : 0, 1));
    json_object_set_new(t, "errors", errors);
    json_object_set_new(t, "latency_ms", latency_ms(wrk));
    json_object_set_new(t, "latency_curve", curve_ms(wrk));
    json_object_set_new(t, "api", api);
    json_object_set_new(t, "series", series(first, s, n, po));
    return t;
}

/* The median across trials of the number at path. */
static double median_of(const json_t *trials, const char *path)
{
    size_t n = json_array_size(trials);
    double *v = calloc(n ? n : 1, sizeof *v);
    for (size_t i = 0; i < n; i++)
        v[i] = jpath(json_array_get(trials, i), path);
    double m = results_median(v, n);
    free(v);
    return m;
}

static int by_trial(const void *a, const void *b)
{
    json_int_t x = json_integer_value(json_object_get(*(json_t *const *)a, "trial"));
    json_int_t y = json_integer_value(json_object_get(*(json_t *const *)b, "trial"));
    return (x > y) - (x < y);
}

/* Trials were appended in run order; the document lists them by number. */
static void sort_trials(json_t *trials)
{
    size_t n = json_array_size(trials);
    json_t **v = calloc(n ? n : 1, sizeof *v);
    for (size_t i = 0; i < n; i++)
        v[i] = json_incref(json_array_get(trials, i));
    qsort(v, n, sizeof *v, by_trial);
    json_array_clear(trials);
    for (size_t i = 0; i < n; i++)
        json_array_append_new(trials, v[i]);
    free(v);
}

void results_summarize(json_t *scenario)
{
    json_t *trials = json_object_get(scenario, "trials");
    sort_trials(trials);
    size_t n = json_array_size(trials);
    double lo = 0, hi = 0;
    json_int_t errors = 0, requests = 0;
    for (size_t i = 0; i < n; i++) {
        const json_t *t = json_array_get(trials, i);
        double r = jnum(t, "rps");
        if (i == 0 || r < lo)
            lo = r;
        if (i == 0 || r > hi)
            hi = r;
        errors += (json_int_t)jpath(t, "errors.total");
        requests += (json_int_t)jnum(t, "requests");
    }
    json_t *rps = json_object();
    json_object_set_new(rps, "median", num(median_of(trials, "rps"), 1));
    json_object_set_new(rps, "min", num(lo, 1));
    json_object_set_new(rps, "max", num(hi, 1));
    json_t *lat = json_object();
    static const char *const pct[] = {"p50", "p90", "p95", "p99"};
    for (size_t i = 0; i < sizeof pct / sizeof pct[0]; i++) {
        char path[32];
        snprintf(path, sizeof path, "latency_ms.%s", pct[i]);
        json_object_set_new(lat, pct[i], num(median_of(trials, path), 3));
    }
    json_t *sum = json_object();
    json_object_set_new(sum, "trials", json_integer((json_int_t)n));
    json_object_set_new(sum, "rps", rps);
    json_object_set_new(sum, "latency_ms", lat);
    json_object_set_new(sum, "pss_mib", num(median_of(trials, "api.pss_mib"), 2));
    json_object_set_new(sum, "cpu_us_per_request",
                        num(median_of(trials, "api.cpu_us_per_request"), 2));
    if (n &&
        json_object_get(json_object_get(json_array_get(trials, 0), "api"), "ctxsw_per_request")) {
        json_object_set_new(sum, "sys_us_per_request",
                            num(median_of(trials, "api.sys_us_per_request"), 2));
        json_object_set_new(sum, "ctxsw_per_request",
                            num(median_of(trials, "api.ctxsw_per_request"), 3));
    }
    json_object_set_new(sum, "requests", json_integer(requests));
    json_object_set_new(sum, "errors", json_integer(errors));
    if (n && json_object_get(json_array_get(trials, 0), "vs_disk")) {
        json_object_set_new(sum, "disk_publish_per_s",
                            num(median_of(trials, "disk_publish_per_s"), 1));
        json_object_set_new(sum, "vs_disk", num(median_of(trials, "vs_disk"), 2));
    }
    json_object_set_new(scenario, "summary", sum);
}

long long results_errors(const json_t *doc)
{
    long long total = 0;
    size_t i, j;
    json_t *sc, *t;
    json_array_foreach (json_object_get(doc, "scenarios"), i, sc)
        json_array_foreach (json_object_get(sc, "trials"), j, t)
            total += (long long)jpath(t, "errors.total");
    return total;
}
