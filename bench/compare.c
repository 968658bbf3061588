#include "compare.h"
#include "harness.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef enum { CLS_CPU, CLS_KERNEL, CLS_DURABLE, CLS_BULK, CLS_MEMORY } cmp_class;

/* How many operations storh's timed block covers, given its dataset N. */
typedef enum {
    OPS_N,         /* one per record */
    OPS_N_LESS100, /* every record but the 100 its bench deleted before */
    OPS_UPTO1000,  /* the first min(1000, N) records */
    OPS_ONE        /* one call */
} cmp_ops;

typedef struct cmp_row {
    const char *storh;  /* "<engine>.<name>" in storh's results */
    const char *storhd; /* storhd's metric */
    cmp_class cls;
    cmp_ops ops;
    const char *limit; /* storhd's limit metric it is held against, or NULL */
    const char *note;  /* where the two harnesses still differ, or NULL */
} cmp_row;

/* The mapping. storhd's harness times the same work under these names
 * (storh's row, call counts, what is inside the clock); notes say where not. */
static const cmp_row rows[] = {
    {"filter.record_equal", "filter.rows", CLS_CPU, OPS_N, NULL,
     "storh's rows are PHP arrays, storhd's canonical record bytes (filter.rows_tree: jansson "
     "trees)"},
    {"filter.record_range", "filter.record_range", CLS_CPU, OPS_N, NULL, NULL},
    {"filter.condition_equal", "filter.condition_equal", CLS_CPU, OPS_N, NULL, NULL},
    {"doc.index_build", "doc.index_build", CLS_CPU, OPS_N_LESS100, "limit.index_io",
     "both build over the N-100 records left after deleting the first 100"},
    {"doc.indexed", "doc.query_eq_limit100_answer", CLS_CPU, OPS_ONE, NULL,
     "storh times one call, storhd the mean of 50; storhd: the bytes _query sends "
     "(doc.query_eq_limit100: the tree)"},
    {"doc.indexed_count", "doc.count_indexed", CLS_CPU, OPS_ONE, NULL,
     "storh times one call, storhd the mean of 50"},
    {"doc.jsonl_export", "doc.export_jsonl", CLS_CPU, OPS_N, "limit.stream", NULL},
    {"log.compact", "log.compact", CLS_CPU, OPS_N, "limit.compact_io",
     "disk-bound: one roll, one syncfs and a manifest swap (limit.compact_io, same bytes)"},
    {"log.cursor", "log.cursor_read", CLS_CPU, OPS_ONE, NULL,
     "storh times one call, storhd the median pass of 5 x 20 (the HTTP stream's read; "
     "log.cursor_read_tree decodes every record)"},
    {"log.bulk_range", "log.time_range", CLS_CPU, OPS_ONE, NULL,
     "storh times one call, storhd the median pass of 5 x 20 (the HTTP stream's read; "
     "log.time_range_tree decodes every record)"},
    {"log.query_count", "log.eq_count", CLS_CPU, OPS_ONE, "limit.count_stats",
     "storh builds its counters on open and stats nothing, storhd on the first count "
     "(log.eq_count_cold), and keeps them fresh with one empty read of its inotify watch per "
     "count (limit.count_stats: the stat and fstat it makes without the watch)"},
    {"queue.bulk_enqueue", "queue.enqueue_many", CLS_CPU, OPS_N, "limit.queue_enqueue_many",
     "limit: the call's bytes staged, appended, fsynced (storh appends once: "
     "limit.queue_enqueue_many_append); storhd the median of 3 passes"},
    {"queue.bulk_claim", "queue.claim_many", CLS_CPU, OPS_N, "limit.queue_claim_many",
     "limit: the call's bytes appended + fsync; storhd the median of 3 passes"},
    {"queue.bulk_complete", "queue.complete_many", CLS_CPU, OPS_N, "limit.queue_complete_many",
     "limit: the call's bytes appended + fsync; storhd the median of 3 passes"},
    {"mirror.reconcile", "mirror.push_nochange", CLS_CPU, OPS_N, "limit.mirror_push_nochange",
     "both stat each record file (storh validates its record cache); limit: the stat scan of "
     "the same files, in turns with the pushes"},
    {"cache.warm", "cache.get_warm_answer", CLS_CPU, OPS_N, "limit.stat",
     "storhd: the bytes GET sends, a validated hit (cache.get_warm: the decoded tree)"},
    {"uuid.monotonic", "uuid.generate_at", CLS_CPU, OPS_N, NULL,
     "both make every id for one given millisecond (uuid.generate: storhd's, reading the "
     "clock)"},
    {"uuid.validate", "uuid.validate", CLS_CPU, OPS_N, NULL, NULL},
    {"doc.get", "doc.get_answer", CLS_KERNEL, OPS_UPTO1000, "limit.stat",
     "both read what the puts cached; storhd: the bytes GET sends (doc.get decodes them into "
     "a tree; doc.get_uncached reads the file)"},
    {"cache.cold", "cache.get_cold_answer", CLS_KERNEL, OPS_N, "limit.cold_read",
     "storhd: the bytes GET sends, a canonical file kept as read (cache.get_cold: decoded into "
     "a tree)"},
    {"doc.stream", "doc.stream", CLS_KERNEL, OPS_N, "limit.stream", NULL},
    {"doc.reopen", "doc.reopen", CLS_KERNEL, OPS_ONE, NULL,
     "the constructor; storhd's close is doc.close"},
    {"mirror.push", "mirror.push", CLS_KERNEL, OPS_N, "limit.mirror_push",
     "limit: SQLite's insert of the same rows, measured right before and after the push"},
    {"mirror.rebuild", "mirror.rebuild", CLS_KERNEL, OPS_N, "limit.mirror_rebuild",
     "limit: SQLite emptying the table and inserting the same rows, measured right before and "
     "after the rebuild"},
    {"mirror.flush", "mirror.flush100", CLS_KERNEL, OPS_ONE, NULL,
     "both time one flush of 100 unchanged records right after a push"},
    {"doc.put", "doc.put", CLS_DURABLE, OPS_N, "limit.doc_put", NULL},
    {"log.append", "log.put", CLS_DURABLE, OPS_N, "limit.log_put", NULL},
    {"queue.enqueue", "queue.enqueue", CLS_DURABLE, OPS_N, "limit.queue_enqueue",
     "limit: its calls' bytes appended and fsynced, interleaved with them"},
    {"queue.claim", "queue.claim", CLS_DURABLE, OPS_N, "limit.queue_claim",
     "limit: its calls' bytes appended and fsynced, interleaved with them"},
    {"queue.complete", "queue.complete", CLS_DURABLE, OPS_N, "limit.queue_complete",
     "limit: its calls' bytes appended and fsynced, interleaved with them"},
    {"doc.bulk_put", "doc.put_stream", CLS_BULK, OPS_N, "limit.bulk_publish",
     "storhd: the median of 3 batches, each as storh's one"},
    {"doc.jsonl_import", "doc.import_jsonl", CLS_BULK, OPS_N, "limit.bulk_publish",
     "storhd: the median of 3 batches, each as storh's one"},
    {"log.bulk_append", "log.append_stream", CLS_BULK, OPS_N, NULL, NULL},
    {"mirror.pull", "mirror.pull", CLS_BULK, OPS_N, "limit.bulk_publish_mirror",
     "storhd: the median of 3 batches, each as storh's one"},
    /* storh's JSON has no memory figure: storh-side-by-side.sh adds
     * peakRssKb from /usr/bin/time */
    {"peakRssKb", "rss.peak", CLS_MEMORY, OPS_ONE, NULL, "peak RSS of the whole run"},
};

static const char *const class_names[] = {"CPU-bound (>=10x)", "kernel-bound (>=80% of limit)",
                                          "durable (>=90% of limit)", "bulk durable (>=10x)",
                                          "memory (<= PHP)"};

static const char *str(const json_t *obj, const char *key)
{
    const char *s = json_string_value(json_object_get(obj, key));
    return s ? s : "?";
}

static bool higher(const json_t *m)
{
    return !strcmp(str(m, "better"), "higher");
}

/* value as a fraction of limit, both in their own units (a latency's limit is
 * a latency); 0 when either is missing. */
static double fraction(double value, double limit, bool is_rate)
{
    if (value <= 0 || limit <= 0)
        return 0;
    return is_rate ? value / limit : limit / value;
}

void compare_add_fractions(bench_result *r)
{
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        if (!rows[i].limit)
            continue;
        json_t *m = json_object_get(r->metrics, rows[i].storhd);
        json_t *l = json_object_get(r->metrics, rows[i].limit);
        if (!m || !l)
            continue;
        json_t *mr = json_object_get(m, "runs"), *lr = json_object_get(l, "runs");
        char name[128], label[192];
        snprintf(name, sizeof name, "%s.of_limit", rows[i].storhd);
        snprintf(label, sizeof label, "%s as a percent of %s, same repetition", rows[i].storhd,
                 rows[i].limit);
        /* one fraction per repetition, each against the limit measured in
         * that repetition: the disk's limit moves within a run */
        size_t n = json_array_size(mr) == json_array_size(lr) ? json_array_size(mr) : 0;
        for (size_t k = 0; k < n; k++)
            bench_add(r, name,
                      100 * fraction(json_number_value(json_array_get(mr, k)),
                                     json_number_value(json_array_get(lr, k)), higher(m)),
                      "%", "higher", label);
    }
}

typedef struct docs {
    json_t **d;
    int n;
} docs;

static int load_list(const char *list, docs *out)
{
    char *copy = strdup(list), *save = NULL;
    out->d = NULL;
    out->n = 0;
    int rc = copy ? 0 : 2;
    for (char *p = copy ? strtok_r(copy, ",", &save) : NULL; p; p = strtok_r(NULL, ",", &save)) {
        json_error_t e;
        json_t *j = json_load_file(p, 0, &e);
        json_t **grown = realloc(out->d, (size_t)(out->n + 1) * sizeof *grown);
        if (!j || !grown) {
            fprintf(stderr, "bench: %s: %s\n", p, j ? "out of memory" : e.text);
            json_decref(j);
            free(grown ? grown : out->d);
            out->d = NULL;
            out->n = 0;
            rc = 2;
            break;
        }
        out->d = grown;
        out->d[out->n++] = j;
    }
    free(copy);
    if (!rc && !out->n) {
        fprintf(stderr, "bench: no file in %s\n", list);
        rc = 2;
    }
    return rc;
}

static void docs_free(docs *x)
{
    for (int i = 0; i < x->n; i++)
        json_decref(x->d[i]);
    free(x->d);
}

/* storh's figure of a row in storhd's unit (m: storhd's metric), from one
 * storh document; NAN when the document lacks it. */
static double storh_value(const json_t *doc, const cmp_row *row, const json_t *m)
{
    if (row->cls == CLS_MEMORY) {
        json_t *kb = json_object_get(doc, row->storh);
        return json_is_number(kb) ? json_number_value(kb) / 1024 : NAN;
    }
    char eng[32];
    const char *dot = strchr(row->storh, '.');
    snprintf(eng, sizeof eng, "%.*s", (int)(dot - row->storh), row->storh);
    json_t *s = json_object_get(json_object_get(json_object_get(doc, "results"), eng), dot + 1);
    double secs = json_number_value(s);
    if (!json_is_number(s) || secs <= 0)
        return NAN;
    double n = (double)json_integer_value(json_object_get(doc, "dataset"));
    double ops = row->ops == OPS_N           ? n
                 : row->ops == OPS_N_LESS100 ? n - (n < 100 ? n : 100)
                 : row->ops == OPS_UPTO1000  ? (n < 1000 ? n : 1000)
                                             : 1;
    if (higher(m))
        return ops / secs;
    const char *unit = str(m, "unit");
    double scale = !strcmp(unit, "ms") ? 1e3 : !strcmp(unit, "µs") ? 1e6 : 1;
    return secs / ops * scale;
}

/* storhd's median of a metric over the documents; m gets one of its
 * definitions. */
static double storhd_value(const docs *cur, const char *name, const json_t **m)
{
    double v[64];
    int k = 0;
    *m = NULL;
    for (int i = 0; i < cur->n && k < 64; i++) {
        const json_t *x = json_object_get(json_object_get(cur->d[i], "metrics"), name);
        if (x) {
            *m = x;
            v[k++] = json_number_value(json_object_get(x, "value"));
        }
    }
    return harness_median(v, k);
}

static const char *fmt(double v, const char *unit, char *out, size_t cap)
{
    if (isnan(v))
        return snprintf(out, cap, "-"), out;
    char num[32];
    bench_fmt_value(v, num, sizeof num);
    snprintf(out, cap, "%s %s", num, unit);
    return out;
}

static const char *pct(double f, char *out, size_t cap)
{
    if (f <= 0 || isnan(f))
        snprintf(out, cap, "-");
    else
        snprintf(out, cap, "%.0f%%", f * 100);
    return out;
}

static void print_row(const cmp_row *row, const docs *php, const docs *cur)
{
    const json_t *m, *lm;
    double c = storhd_value(cur, row->storhd, &m);
    if (!m) {
        printf("| %s | `%s` <-> `%s` | | (not in storhd's run) | | | | | |\n",
               class_names[row->cls], row->storhd, row->storh);
        return;
    }
    double v[64];
    int k = 0;
    for (int i = 0; i < php->n && k < 64; i++) {
        double x = storh_value(php->d[i], row, m);
        if (!isnan(x))
            v[k++] = x;
    }
    double p = harness_median(v, k);
    bool rate = higher(m);
    double ratio = isnan(p) || p <= 0 || c <= 0 ? NAN : rate ? c / p : p / c;
    double lim = row->limit ? storhd_value(cur, row->limit, &lm) : NAN;
    /* fractions per run against the limit of that run (storh's run i
     * against storhd's run i, its neighbour), then their median: the
     * disk's limit moves between runs */
    double vc[64], vp[64];
    int kc = 0, kp = 0;
    for (int i = 0; row->limit && i < cur->n && i < 64; i++) {
        const json_t *ms = json_object_get(cur->d[i], "metrics");
        const json_t *x = json_object_get(ms, row->storhd), *y = json_object_get(ms, row->limit);
        if (!y)
            continue;
        double li = json_number_value(json_object_get(y, "value"));
        if (x)
            vc[kc++] = fraction(json_number_value(json_object_get(x, "value")), li, rate);
        double pi = i < php->n ? storh_value(php->d[i], row, m) : NAN;
        if (!isnan(pi))
            vp[kp++] = fraction(pi, li, rate);
    }
    double fc = kc ? harness_median(vc, kc) : 0, fp = kp ? harness_median(vp, kp) : 0;
    const char *unit = str(m, "unit");
    bool met;
    switch (row->cls) {
    case CLS_CPU:
    case CLS_BULK:
        /* or, where the harness measures the syscalls that stop it, 80% of
         * that limit and never slower than storh */
        met = ratio >= 10 || (row->limit && ratio >= 1 && fc >= 0.8);
        break;
    case CLS_KERNEL:
        met = ratio >= 1 && (!row->limit || fc >= 0.8);
        break;
    case CLS_DURABLE:
        met = fc >= 0.9;
        break;
    default:
        met = ratio >= 1;
    }
    char a[48], b[48], l[48], f1[16], f2[16];
    printf("| %s | `%s` <-> `%s` | %s | %s | %.2fx | %s | %s | %s | %s%s%s |\n",
           class_names[row->cls], row->storhd, row->storh, fmt(p, unit, a, sizeof a),
           fmt(c, unit, b, sizeof b), ratio, fmt(lim, unit, l, sizeof l), pct(fp, f1, sizeof f1),
           pct(fc, f2, sizeof f2),
           isnan(ratio) ? "?"
           : met        ? "met"
                        : "NOT met",
           row->note ? "; " : "", row->note ? row->note : "");
}

int compare_storh(const char *php_list, const char *cur_list)
{
    docs php, cur;
    if (load_list(php_list, &php))
        return 2;
    if (load_list(cur_list, &cur)) {
        docs_free(&php);
        return 2;
    }
    const json_t *p0 = php.d[0], *c0 = cur.d[0];
    const json_t *mach = json_object_get(c0, "machine");
    const json_t *rt = json_object_get(p0, "runtime");
    printf("storh %s (PHP %s, opcache %s, JIT %s), dataset %lld, %d run(s) | storhd %s build "
           "(%s), dataset %lld, %d run(s); medians. %s, %lld cores, kernel %s.\n\n",
           str(p0, "engine"), str(p0, "php"),
           json_is_true(json_object_get(rt, "opcacheEnabled")) ? "on" : "off",
           json_is_true(json_object_get(rt, "jitOn")) ? "on" : "off",
           (long long)json_integer_value(json_object_get(p0, "dataset")), php.n,
           str(json_object_get(c0, "build"), "type"), str(json_object_get(c0, "build"), "variant"),
           (long long)json_integer_value(json_object_get(c0, "dataset")), cur.n, str(mach, "cpu"),
           (long long)json_integer_value(json_object_get(mach, "cores")), str(mach, "kernel"));
    if (json_integer_value(json_object_get(p0, "dataset")) !=
        json_integer_value(json_object_get(c0, "dataset")))
        printf("WARNING: the two sides ran different dataset sizes.\n\n");
    printf("| class (goal) | metric (storhd <-> storh) | storh PHP | storhd | ratio | limit | "
           "storh %% of limit | storhd %% of limit | goal; note |\n"
           "|---|---|---:|---:|---:|---:|---:|---:|---|\n");
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++)
        print_row(&rows[i], &php, &cur);
    printf("\nratio: how many times faster (or, for memory, smaller) storhd is; limits are "
           "measured by storh-bench in its runs (limit.*).\n");
    docs_free(&php);
    docs_free(&cur);
    return 0;
}
