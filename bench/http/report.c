#include "report.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "svgplot.h"

static const char *str(const json_t *o, const char *key)
{
    const char *s = json_string_value(json_object_get(o, key));
    return s ? s : "";
}

static double dbl(const json_t *o, const char *key)
{
    return json_number_value(json_object_get(o, key));
}

static void esc(buf *b, const char *s)
{
    svgplot_escape(b, s);
}

/* A row of the environment table; nothing when value is empty. */
static void row(buf *b, const char *key, const char *value)
{
    if (!value || !*value)
        return;
    buf_appends(b, "<tr><th>");
    esc(b, key);
    buf_appends(b, "<td>");
    esc(b, value);
    buf_appends(b, "</tr>");
}

static const char *css =
    "body{font:15px/1.5 system-ui,sans-serif;max-width:1060px;margin:24px auto;padding:0 16px;"
    "color:#222}h1{margin-bottom:0}.sub{color:#555;margin-top:4px}table{border-collapse:collapse;"
    "margin:8px 0 16px}th,td{text-align:left;padding:4px 10px;border-bottom:1px solid #ddd;"
    "vertical-align:top}td.n{text-align:right;font-variant-numeric:tabular-nums}"
    "code,pre{font:13px ui-monospace,monospace;background:#f4f4f4}pre{padding:8px;"
    "white-space:pre-wrap;word-break:break-all}.trial{display:flex;flex-wrap:wrap;gap:4px;"
    "margin-bottom:8px}.trial h4{width:100%;margin:8px 0 0}svg.plot{background:#fcfcfc;"
    "border:1px solid #eee}svg .t{font:600 12px sans-serif}svg .g{stroke:#e6e6e6}svg .a{stroke:"
    "#888}svg .yl{font:10px sans-serif;text-anchor:end;fill:#555}svg .xl{font:10px sans-serif;"
    "text-anchor:middle;fill:#555}svg .xt{font:11px sans-serif;text-anchor:middle;fill:#333}"
    "svg .lg{font:10px sans-serif;fill:#333}.dl{display:inline-block;padding:6px 12px;"
    "background:#1f77b4;color:#fff;border-radius:4px;text-decoration:none}";

static void results_table(buf *b, const json_t *scenarios)
{
    buf_appends(b, "<table><tr><th>scenario<th>successful req/s<br><small>median (range)</small>"
                   "<th>latency p50 / p95 / p99<br><small>median of trials, ms</small>"
                   "<th>API memory<br><small>PSS, MiB</small><th>API CPU<br><small>per "
                   "request</small><th>errors</tr>");
    size_t i;
    json_t *sc;
    json_array_foreach (scenarios, i, sc) {
        const json_t *s = json_object_get(sc, "summary");
        const json_t *rps = json_object_get(s, "rps"), *lat = json_object_get(s, "latency_ms");
        buf_appends(b, "<tr><td><a href=\"#");
        esc(b, str(sc, "name"));
        buf_appends(b, "\">");
        esc(b, str(sc, "title"));
        buf_printf(b,
                   "</a><td class=n>%.0f (%.0f&ndash;%.0f)<td class=n>%.2f / %.2f / %.2f"
                   "<td class=n>%.1f<td class=n>%.0f &micro;s<td class=n>%lld</tr>",
                   dbl(rps, "median"), dbl(rps, "min"), dbl(rps, "max"), dbl(lat, "p50"),
                   dbl(lat, "p95"), dbl(lat, "p99"), dbl(s, "pss_mib"),
                   dbl(s, "cpu_us_per_request"),
                   (long long)json_integer_value(json_object_get(s, "errors")));
    }
    buf_appends(b, "</table>");
}

/* x and y of every element of arr (objects with xkey/ykey, or [x,y]
 * pairs when xkey is NULL); caller frees *x and *y. */
static size_t columns(const json_t *arr, const char *xkey, const char *ykey, double **x, double **y)
{
    size_t n = json_array_size(arr);
    *x = calloc(n + 1, sizeof **x);
    *y = calloc(n + 1, sizeof **y);
    for (size_t i = 0; i < n; i++) {
        const json_t *e = json_array_get(arr, i);
        (*x)[i] = xkey ? dbl(e, xkey) : json_number_value(json_array_get(e, 0));
        (*y)[i] = xkey ? dbl(e, ykey) : json_number_value(json_array_get(e, 1));
    }
    return n;
}

static void plot(buf *b, const char *title, const char *xl, const char *yl, bool pct,
                 const json_t *arr, const char *xkey, const char *ykey)
{
    double *x, *y;
    svgplot_series s = {NULL, NULL, NULL, 0};
    s.n = columns(arr, xkey, ykey, &x, &y);
    s.x = x;
    s.y = y;
    svgplot_chart c = {title, xl, yl, 340, 200, pct};
    svgplot_lines(b, &c, &s, 1);
    free(x);
    free(y);
}

static void trial_plots(buf *b, const json_t *t, size_t ntotal)
{
    const json_t *api = json_object_get(t, "api");
    buf_printf(b,
               "<div class=trial><h4>Trial %lld (run %lld of %zu): %.0f req/s, p99 %.2f ms, "
               "PSS %.1f MiB, %.0f &micro;s CPU per request</h4>",
               (long long)json_integer_value(json_object_get(t, "trial")),
               (long long)json_integer_value(json_object_get(t, "order")), ntotal, dbl(t, "rps"),
               dbl(json_object_get(t, "latency_ms"), "p99"), dbl(api, "pss_mib"),
               dbl(api, "cpu_us_per_request"));
    const json_t *series = json_object_get(t, "series");
    plot(b, "Throughput (served by the API)", "seconds into the measured run", "req/s", false,
         series, "t", "rps");
    plot(b, "Latency by percentile (wrk)", "percentile", "ms", true,
         json_object_get(t, "latency_curve"), NULL, NULL);
    plot(b, "API memory", "seconds into the measured run", "PSS MiB", false, series, "t",
         "pss_mib");
    buf_appends(b, "</div>");
}

static void env_table(buf *b, const json_t *doc)
{
    const json_t *env = json_object_get(doc, "environment");
    const json_t *cfg = json_object_get(doc, "config");
    const json_t *pin = json_object_get(cfg, "pinning");
    char text[512];
    buf_appends(b, "<table>");
    snprintf(text, sizeof text, "%s (%s), %lld CPUs online, %lld MiB", str(env, "cpu_model"),
             str(env, "arch"), (long long)json_integer_value(json_object_get(env, "cpus_online")),
             (long long)json_integer_value(json_object_get(env, "memory_mib")));
    row(b, "machine", text);
    snprintf(text, sizeof text, "%s, %s%s", str(env, "os"), str(env, "kernel"),
             json_is_true(json_object_get(env, "container")) ? ", inside a container" : "");
    row(b, "system", text);
    snprintf(text, sizeof text, "API %s · PostgreSQL %s · wrk %s%s", str(pin, "api"),
             str(pin, "postgres"), str(pin, "wrk"),
             json_is_true(json_object_get(pin, "disjoint"))
                 ? " (disjoint)"
                 : " (NOT disjoint: this machine has too few CPUs; shared CPUs compete)");
    row(b, "CPUs (taskset / cpuset)", text);
    snprintf(text, sizeof text,
             "%lld HTTP connections from %lld wrk thread(s), %lld tokens "
             "used in turn, %lld-byte JSON argument, %lld stored records "
             "(doc-get)",
             (long long)json_integer_value(json_object_get(cfg, "connections")),
             (long long)json_integer_value(json_object_get(cfg, "wrk_threads")),
             (long long)json_integer_value(json_object_get(cfg, "tokens")),
             (long long)json_integer_value(json_object_get(cfg, "arg_bytes")),
             (long long)json_integer_value(json_object_get(cfg, "records")));
    row(b, "load", text);
    row(b, "storhd", str(env, "storhd"));
    row(b, "PostgreSQL", str(env, "postgres"));
    row(b, "wrk", str(json_object_get(env, "tools"), "wrk"));
    row(b, "source revision", str(env, "source_rev"));
    const json_t *img = json_object_get(env, "images");
    const char *k;
    json_t *v;
    json_object_foreach ((json_t *)img, k, v) {
        snprintf(text, sizeof text, "image (%s)", k);
        row(b, text, json_string_value(v));
    }
    buf_appends(b, "</table>");
}

static void method(buf *b, const json_t *doc)
{
    const json_t *cfg = json_object_get(doc, "config");
    bool local = !strcmp(str(cfg, "mode"), "local");
    buf_printf(b,
               "<p>%lld trials per scenario ran in random order (seed %lld; the order is in "
               "the JSON). %s Each trial warmed up for %lld s, then wrk measured for %lld s. "
               "Throughput is the number of completed requests answered below 400, per second "
               "of the measured run. The table's latencies are the median across trials of "
               "each trial's percentile, not percentiles of the pooled requests.</p>",
               (long long)json_integer_value(json_object_get(cfg, "trials")),
               (long long)json_integer_value(json_object_get(cfg, "seed")),
               local ? "Each trial started a fresh storhd on an empty storage root."
                     : "The API was already running and was not restarted between trials.",
               (long long)json_integer_value(json_object_get(cfg, "warmup_s")),
               (long long)json_integer_value(json_object_get(cfg, "duration_s")));
    buf_printf(b,
               "<p>API memory is the mean of PSS samples (%s, every %lld ms) over the measured "
               "run; API CPU per request is the API's utime+stime over the measured run divided "
               "by the requests wrk completed. The table gives the median of both across "
               "trials. PostgreSQL and wrk are not counted.</p>",
               local ? "<code>/proc/PID/smaps_rollup</code>"
                     : "the API's own <code>/proc/self/smaps_rollup</code>, read through its "
                       "<code>/metrics</code>",
               (long long)json_integer_value(json_object_get(cfg, "sample_ms")));
    buf_appends(b, "<p>These figures come from a machine other work may share. They do not "
                   "establish the least memory needed or the capacity of a whole server, and "
                   "cache hits for reused tokens and arguments do not model a workload where "
                   "most tokens differ.</p>");
}

static void reproduce(buf *b, const json_t *doc, const char *json_href)
{
    buf_appends(b, "<p>The whole run:</p><pre>");
    esc(b, str(doc, "command"));
    buf_appends(b, "</pre><p>Commands of the first trial of each scenario:</p><pre>");
    size_t i;
    json_t *sc;
    json_array_foreach (json_object_get(doc, "scenarios"), i, sc) {
        const json_t *t = json_array_get(json_object_get(sc, "trials"), 0);
        const json_t *cmd = json_object_get(t, "commands");
        buf_appends(b, "# ");
        esc(b, str(sc, "name"));
        buf_appends(b, "\n");
        if (*str(cmd, "api")) {
            esc(b, str(cmd, "api"));
            buf_appends(b, "\n");
        }
        esc(b, str(cmd, "wrk"));
        buf_appends(b, "\n");
    }
    buf_appends(b, "</pre><p><a class=dl download href=\"");
    esc(b, json_href);
    buf_appends(b, "\">Download the measurements and their sources (JSON)</a></p>");
}

int report_write(const json_t *doc, const char *html_path, const char *json_href, char *msg,
                 size_t cap)
{
    buf b = BUF_INIT;
    const json_t *scenarios = json_object_get(doc, "scenarios");
    buf_printf(&b,
               "<!doctype html><html lang=en><meta charset=utf-8><meta name=viewport "
               "content=\"width=device-width\"><title>storhd HTTP load trials</title>"
               "<style>%s</style><h1>storhd HTTP load trials</h1><p class=sub>",
               css);
    esc(&b, str(json_object_get(doc, "environment"), "cpu_model"));
    buf_appends(&b, " · started ");
    esc(&b, str(doc, "started_at"));
    buf_appends(&b, " · <a href=\"");
    esc(&b, json_href);
    buf_appends(&b, "\" download>results.json</a></p><h2>Results</h2>");
    results_table(&b, scenarios);
    size_t ntotal = json_array_size(json_object_get(json_object_get(doc, "config"), "order"));
    size_t i, j;
    json_t *sc, *t;
    json_array_foreach (scenarios, i, sc) {
        buf_appends(&b, "<h3 id=\"");
        esc(&b, str(sc, "name"));
        buf_appends(&b, "\">");
        esc(&b, str(sc, "title"));
        buf_appends(&b, " <small><code>");
        esc(&b, str(sc, "method"));
        buf_appends(&b, " ");
        esc(&b, str(sc, "route"));
        buf_appends(&b, "</code></small></h3><p>");
        esc(&b, str(sc, "what"));
        buf_appends(&b, ".</p>");
        json_array_foreach (json_object_get(sc, "trials"), j, t)
            trial_plots(&b, t, ntotal);
    }
    buf_appends(&b, "<h2>Workload and environment</h2>");
    env_table(&b, doc);
    buf_appends(&b, "<h2>Method</h2>");
    method(&b, doc);
    buf_appends(&b, "<h2>How to reproduce</h2>");
    reproduce(&b, doc, json_href);
    buf_appends(&b, "</html>\n");
    FILE *f = buf_failed(&b) ? NULL : fopen(html_path, "w");
    int rc = f && fwrite(b.data, 1, b.len, f) == b.len ? 0 : -1;
    if (f && fclose(f) != 0)
        rc = -1;
    if (rc)
        snprintf(msg, cap, "could not write %s", html_path);
    buf_free(&b);
    return rc;
}
