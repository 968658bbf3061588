#include "metrics.h"
#include "harness.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statfs.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

void bench_result_init(bench_result *r)
{
    r->metrics = json_object();
}

void bench_result_free(bench_result *r)
{
    json_decref(r->metrics);
    r->metrics = NULL;
}

void bench_add(bench_result *r, const char *name, double value, const char *unit,
               const char *better, const char *label)
{
    json_t *m = json_object_get(r->metrics, name);
    if (!m) {
        m = json_pack("{sfsssssss[]}", "value", value, "unit", unit, "better", better, "label",
                      label, "runs");
        json_object_set_new(r->metrics, name, m);
    }
    json_array_append_new(json_object_get(m, "runs"), json_real(value));
}

void bench_finish(bench_result *r)
{
    const char *k;
    json_t *m;
    json_object_foreach (r->metrics, k, m) {
        json_t *runs = json_object_get(m, "runs");
        size_t n = json_array_size(runs);
        double *v = malloc((n ? n : 1) * sizeof *v);
        for (size_t i = 0; v && i < n; i++)
            v[i] = json_number_value(json_array_get(runs, i));
        if (v && n)
            json_object_set_new(m, "value", json_real(harness_median(v, (int)n)));
        free(v);
    }
}

static json_t *machine(void)
{
    char cpu[256] = "unknown";
    FILE *f = fopen("/proc/cpuinfo", "r");
    char line[512];
    while (f && fgets(line, sizeof line, f)) {
        if (!strncmp(line, "model name", 10)) {
            char *c = strchr(line, ':');
            if (c) {
                snprintf(cpu, sizeof cpu, "%s", c + 2);
                cpu[strcspn(cpu, "\n")] = '\0';
            }
            break;
        }
    }
    if (f)
        fclose(f);
    struct utsname u;
    uname(&u);
    long mem = sysconf(_SC_PHYS_PAGES) * sysconf(_SC_PAGESIZE);
    return json_pack("{sssIsssssI}", "cpu", cpu, "cores", (json_int_t)sysconf(_SC_NPROCESSORS_ONLN),
                     "os", u.sysname, "kernel", u.release, "memory_bytes", (json_int_t)mem);
}

json_t *bench_document(const bench_result *r, long dataset, int repeat, const char *engines)
{
    char when[32];
    time_t t = time(NULL);
    strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", gmtime(&t));
    json_t *build = json_pack("{ssssssss}", "type", STORHD_BUILD_TYPE, "flags", STORHD_C_FLAGS,
                              "compiler", __VERSION__, "variant", STORHD_BENCH_VARIANT);
    return json_pack("{sisssososssisIsO}", "schema", 1, "generated", when, "build", build,
                     "machine", machine(), "engines", engines, "repeat", repeat, "dataset",
                     (json_int_t)dataset, "metrics", r->metrics);
}

const char *bench_fmt_value(double v, char *out, size_t cap)
{
    if (v >= 1e6)
        snprintf(out, cap, "%.2fM", v / 1e6);
    else if (v >= 1e4)
        snprintf(out, cap, "%.1fk", v / 1e3);
    else if (v >= 100)
        snprintf(out, cap, "%.0f", v);
    else if (v >= 1)
        snprintf(out, cap, "%.2f", v);
    else
        snprintf(out, cap, "%.3f", v);
    return out;
}

int bench_write_reports(const json_t *doc, const char *md_path, const char *html_path)
{
    FILE *md = fopen(md_path, "w"), *html = fopen(html_path, "w");
    if (!md || !html) {
        if (md)
            fclose(md);
        if (html)
            fclose(html);
        return -1;
    }
    json_t *metrics = json_object_get(doc, "metrics");
    json_t *m = json_object_get(doc, "machine");
    fprintf(md,
            "# storhd engine benchmark\n\n%s, %lld cores, kernel %s; build %s (%s); dataset "
            "%lld, medians of %lld run(s).\n\n| metric | what | median |\n|---|---|---|\n",
            json_string_value(json_object_get(m, "cpu")),
            (long long)json_integer_value(json_object_get(m, "cores")),
            json_string_value(json_object_get(m, "kernel")),
            json_string_value(json_object_get(json_object_get(doc, "build"), "type")),
            json_string_value(json_object_get(json_object_get(doc, "build"), "variant")),
            (long long)json_integer_value(json_object_get(doc, "dataset")),
            (long long)json_integer_value(json_object_get(doc, "repeat")));
    fprintf(html,
            "<!doctype html><meta charset=utf-8><title>storhd engine benchmark</title>"
            "<style>body{font:14px system-ui,sans-serif;margin:2em;max-width:60em}"
            "td{padding:2px 8px}svg text{font:12px sans-serif}</style>"
            "<h1>storhd engine benchmark</h1><p>dataset %lld, medians of %lld run(s); "
            "<a href=\"bench-current.json\" download>download the JSON</a></p>",
            (long long)json_integer_value(json_object_get(doc, "dataset")),
            (long long)json_integer_value(json_object_get(doc, "repeat")));
    /* one chart per engine prefix (doc., log., ...), bars scaled within it */
    const char *groups[] = {"limit", "doc",  "log",    "queue",    "mirror", "mirror_pg",
                            "cache", "uuid", "filter", "docgroup", "rss"};
    for (size_t g = 0; g < sizeof groups / sizeof groups[0]; g++) {
        double max = 0;
        int n = 0;
        const char *k;
        json_t *v;
        size_t gl = strlen(groups[g]);
        json_object_foreach (metrics, k, v) {
            if (strncmp(k, groups[g], gl) || k[gl] != '.')
                continue;
            double x = json_number_value(json_object_get(v, "value"));
            if (x > max)
                max = x;
            n++;
        }
        if (!n)
            continue;
        fprintf(html, "<h2>%s</h2><svg width=760 height=%d>", groups[g], n * 26 + 4);
        int row = 0;
        json_object_foreach (metrics, k, v) {
            if (strncmp(k, groups[g], gl) || k[gl] != '.')
                continue;
            double x = json_number_value(json_object_get(v, "value"));
            const char *unit = json_string_value(json_object_get(v, "unit"));
            const char *label = json_string_value(json_object_get(v, "label"));
            char val[32];
            bench_fmt_value(x, val, sizeof val);
            /* bars compare within one unit only; log-scaled so small ones show */
            double w = max > 0 ? 300.0 * (x / max) : 0;
            fprintf(html,
                    "<text x=0 y=%d>%s</text><rect x=220 y=%d width=%.1f height=18 "
                    "fill=\"#4a7fb5\"/><text x=%.1f y=%d>%s %s</text>",
                    row * 26 + 16, k, row * 26 + 3, w < 1 ? 1 : w, 226 + (w < 1 ? 1 : w),
                    row * 26 + 16, val, unit);
            fprintf(md, "| `%s` | %s | %s %s |\n", k, label, val, unit);
            row++;
        }
        fprintf(html, "</svg>");
    }
    fprintf(html, "<p>Bars are scaled within each chart; compare rates with rates and "
                  "latencies with latencies.</p>\n");
    fclose(md);
    fclose(html);
    return 0;
}
