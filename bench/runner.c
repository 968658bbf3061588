#include "runner.h"

#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <malloc.h>
#include <unistd.h>

#include "compare.h"
#include "fsx.h"
#include "metrics.h"
#include "suite.h"

/* ---------- driver ---------- */

static const struct {
    const char *name;
    void (*fn)(const harness_opts *, bench_result *);
} engines[] = {{"limits", suite_limits}, {"doc", suite_doc},       {"log", suite_log},
               {"queue", suite_queue},   {"cache", suite_cache},   {"filter", suite_filter},
               {"uuid", suite_uuid},     {"mirror", suite_mirror}, {"docgroup", suite_docgroup}};

/* The process's peak RSS in MiB since the last rss_reset (VmHWM). */
static double rss_peak_mib(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long kb = -1;
    while (f && fgets(line, sizeof line, f))
        if (sscanf(line, "VmHWM: %ld kB", &kb) == 1)
            break;
    if (f)
        fclose(f);
    return kb < 0 ? 0 : kb / 1024.0;
}

/* Gives freed memory back and restarts the peak from the current RSS, so
 * each engine's peak is its own (Linux: clear_refs 5 resets VmHWM). */
static bool rss_reset(void)
{
    malloc_trim(0);
    FILE *f = fopen("/proc/self/clear_refs", "w");
    bool ok = f && fputs("5", f) >= 0;
    if (f && fclose(f))
        ok = false;
    return ok;
}

/* "all", or name is one of the comma-separated list. */
static bool selected(const char *list, const char *name)
{
    if (!strcmp(list, "all"))
        return true;
    size_t n = strlen(name);
    for (const char *p = list; p; p = strchr(p, ',')) {
        p += *p == ',';
        if (!strncmp(p, name, n) && (p[n] == ',' || !p[n]))
            return true;
    }
    return false;
}

static int run_engines(harness_opts *o, bench_result *r)
{
    bool any = false, each = true;
    double peak = 0;
    for (int rep = 0; rep < o->repeat; rep++)
        for (size_t e = 0; e < sizeof engines / sizeof engines[0]; e++) {
            if (!selected(o->engine, engines[e].name))
                continue;
            any = true;
            snprintf(o->work, sizeof o->work, "build/bench-work/%ld-%s-%d", (long)getpid(),
                     engines[e].name, rep);
            storh_err err;
            if (fsx_mkdirs(o->work, false, &err))
                harness_die("work dir", &err);
            fprintf(stderr, "bench: %s, %ld records, run %d/%d\n", engines[e].name, o->dataset,
                    rep + 1, o->repeat);
            each = rss_reset() && each;
            engines[e].fn(o, r);
            double rss = rss_peak_mib();
            peak = rss > peak ? rss : peak;
            char name[64], label[96];
            snprintf(name, sizeof name, "rss.%s", engines[e].name);
            snprintf(label, sizeof label, "peak RSS while the %s suite ran%s", engines[e].name,
                     each ? "" : " (and every suite before it: VmHWM could not be reset)");
            bench_add(r, name, rss, "MiB", "lower", label);
            harness_clean(o->work);
        }
    if (!any) {
        fprintf(stderr, "bench: unknown engine %s\n", o->engine);
        return 2;
    }
    bench_add(r, "rss.peak", peak, "MiB", "lower",
              "peak RSS of the whole run (the largest suite's)");
    compare_add_fractions(r);
    bench_finish(r);
    return 0;
}

static int write_doc(const json_t *doc, const char *path)
{
    char dir[PATH_MAX];
    fsx_dirname(path, dir, sizeof dir);
    fsx_mkdirs(dir, false, NULL);
    if (json_dump_file(doc, path, JSON_INDENT(2) | JSON_SORT_KEYS | JSON_REAL_PRECISION(6))) {
        fprintf(stderr, "bench: cannot write %s\n", path);
        return 1;
    }
    return 0;
}

int runner_run(harness_opts *o)
{
    bench_result r;
    bench_result_init(&r);
    int rc = run_engines(o, &r);
    if (rc)
        return rc;
    json_t *doc = bench_document(&r, o->dataset, o->repeat, o->engine);
    rc = write_doc(doc, o->out);
    if (!rc) {
        char md[PATH_MAX], html[PATH_MAX];
        snprintf(md, sizeof md, "%.*s.md", (int)(strlen(o->out) - 5), o->out);
        snprintf(html, sizeof html, "%.*s.html", (int)(strlen(o->out) - 5), o->out);
        bench_write_reports(doc, md, html);
        fprintf(stderr, "bench: wrote %s, %s, %s\n", o->out, md, html);
        FILE *f = o->quiet ? NULL : fopen(md, "r");
        char line[512];
        while (f && fgets(line, sizeof line, f))
            fputs(line, stdout);
        if (f)
            fclose(f);
    }
    json_decref(doc);
    bench_result_free(&r);
    return rc;
}

static json_t *load(const char *path)
{
    json_error_t e;
    json_t *j = json_load_file(path, 0, &e);
    if (!j)
        fprintf(stderr, "bench: %s: %s\n", path, e.text);
    return j;
}

int runner_compare(const char *a, const char *b)
{
    json_t *x = load(a), *y = load(b);
    if (!x || !y)
        return 2;
    printf("| metric | %s | %s | change |\n|---|---|---|---|\n", a, b);
    const char *k;
    json_t *m;
    json_object_foreach (json_object_get(x, "metrics"), k, m) {
        json_t *n = json_object_get(json_object_get(y, "metrics"), k);
        if (!n)
            continue;
        double va = json_number_value(json_object_get(m, "value"));
        double vb = json_number_value(json_object_get(n, "value"));
        bool higher = !strcmp(json_string_value(json_object_get(m, "better")), "higher");
        double gain = va > 0 ? (higher ? vb / va : va / (vb > 0 ? vb : 1e-12)) : 0;
        printf("| %s | %.4g %s | %.4g %s | %.2fx %s |\n", k, va,
               json_string_value(json_object_get(m, "unit")), vb,
               json_string_value(json_object_get(n, "unit")), gain >= 1 ? gain : 1 / gain,
               gain >= 1 ? "better" : "worse");
    }
    json_decref(x);
    json_decref(y);
    return 0;
}

int runner_gate(const char *base, const char *cur, double threshold, char **only, int nonly,
                bool verbose)
{
    json_t *x = load(base), *y = load(cur);
    if (!x || !y)
        return 2;
    int bad = 0, checked = 0;
    const char *k;
    json_t *m;
    json_object_foreach (json_object_get(x, "metrics"), k, m) {
        bool wanted = nonly == 0;
        for (int i = 0; i < nonly; i++)
            wanted = wanted || !strcmp(only[i], k);
        json_t *n = json_object_get(json_object_get(y, "metrics"), k);
        if (!wanted)
            continue;
        if (!n) {
            printf("MISSING %s\n", k);
            bad++;
            continue;
        }
        double va = json_number_value(json_object_get(m, "value"));
        double vb = json_number_value(json_object_get(n, "value"));
        bool higher = !strcmp(json_string_value(json_object_get(m, "better")), "higher");
        /* worse by more than threshold percent, as a ratio: 10 means 1.1x
         * slower whether the metric is a rate or a latency */
        double worse =
            higher ? (vb > 0 ? (va / vb - 1) * 100 : 1e9) : (va > 0 ? (vb / va - 1) * 100 : 0);
        checked++;
        if (va > 0 && worse > threshold) {
            printf("REGRESSION %s: %.4g -> %.4g %s (%.1f%% worse, threshold %.0f%%)\n", k, va, vb,
                   json_string_value(json_object_get(m, "unit")), worse, threshold);
            bad++;
        } else if (verbose) {
            printf("ok %s: %.4g -> %.4g %s\n", k, va, vb,
                   json_string_value(json_object_get(m, "unit")));
        }
    }
    for (int i = 0; i < nonly; i++)
        if (!json_object_get(json_object_get(x, "metrics"), only[i])) {
            printf("UNKNOWN metric %s\n", only[i]);
            bad++;
        }
    json_decref(x);
    json_decref(y);
    printf("%d checked, %d failed\n", checked, bad);
    return bad ? 1 : 0;
}
