/* storh-bench: the engine benchmark harness, counterpart of storh's
 * `composer bench*` (see README "Benchmarks"). Every engine runs in process
 * against a scratch root on the same filesystem as the build; every write is
 * fsynced exactly as in production.
 *   run     --dataset=N --engine=all|limits|doc|docgroup|log|queue|cache|filter|uuid|mirror
 *           (or a comma list of them)
 *           [--cache-validation=stat|hash|trust] [--cache-watch=inotify|none]
 *           [--repeat=N] [--out=FILE]
 *   repeat  like run, --repeat defaults to 3
 *   range   --datasets=1000,10000 [--engines=doc,log] -> build/bench-ranges/
 *   compare a.json b.json
 *   gate    base.json cur.json [--threshold=10] [--metric=doc.put ...]
 *   compare-storh PHP.json[,PHP2.json...] CURRENT.json[,CURRENT2.json...]
 *           storh's bench.php --output JSON next to storhd's: ratios, class
 *           goals and limits (medians over each list)
 *   ci      a 1k run of every engine gated against bench/baselines/ci-1k-all.json */
#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compare.h"
#include "fwatch.h"
#include "dirwatch.h"
#include "logwatch.h"
#include "mempolicy.h"
#include "rcache.h"
#include "runner.h"

static const char *arg(const char *a, const char *name)
{
    size_t n = strlen(name);
    return !strncmp(a, name, n) && a[n] == '=' ? a + n + 1 : NULL;
}

int main(int argc, char **argv)
{
    /* the engines run under the heap policy storhd runs them under */
    mempolicy_apply(0);
    const char *cmd = argc > 1 ? argv[1] : "run";
    harness_opts o = {.dataset = 1000,
                      .engine = "all",
                      .cache_mode = RCACHE_STAT,
                      .repeat = 1,
                      .out = "build/bench-current.json"};
    if (!strcmp(cmd, "repeat"))
        o.repeat = 3;
    const char *datasets = NULL, *engines_list = NULL;
    double threshold = 10;
    char *only[64];
    int nonly = 0;
    const char *pos[2] = {NULL, NULL};
    int npos = 0;
    for (int i = 2; i < argc; i++) {
        const char *v;
        if ((v = arg(argv[i], "--dataset")))
            o.dataset = atol(v);
        else if ((v = arg(argv[i], "--engine")))
            o.engine = v;
        else if ((v = arg(argv[i], "--engines")))
            engines_list = v;
        else if ((v = arg(argv[i], "--datasets")))
            datasets = v;
        else if ((v = arg(argv[i], "--repeat")))
            o.repeat = atoi(v);
        else if ((v = arg(argv[i], "--out")))
            o.out = v;
        else if ((v = arg(argv[i], "--threshold")))
            threshold = atof(v);
        else if ((v = arg(argv[i], "--metric")) && nonly < 64)
            only[nonly++] = (char *)v;
        else if ((v = arg(argv[i], "--cache-validation"))) {
            o.cache_mode = !strcmp(v, "hash")    ? RCACHE_HASH
                           : !strcmp(v, "trust") ? RCACHE_TRUST
                                                 : RCACHE_STAT;
            if (strcmp(v, "stat") && strcmp(v, "hash") && strcmp(v, "trust")) {
                fprintf(stderr, "bench: --cache-validation must be stat, hash or trust\n");
                return 2;
            }
        } else if ((v = arg(argv[i], "--cache-watch"))) {
            if (strcmp(v, "inotify") && strcmp(v, "none")) {
                fprintf(stderr, "bench: --cache-watch must be inotify or none\n");
                return 2;
            }
            fwatch_set_enabled(!strcmp(v, "inotify"));
            logwatch_set_enabled(!strcmp(v, "inotify"));
            dirwatch_set_enabled(!strcmp(v, "inotify"));
        } else if (argv[i][0] != '-' && npos < 2)
            pos[npos++] = argv[i];
        else {
            fprintf(stderr, "bench: unknown argument %s\n", argv[i]);
            return 2;
        }
    }
    if (o.dataset < 10 || o.repeat < 1) {
        fprintf(stderr, "bench: --dataset must be >= 10 and --repeat >= 1\n");
        return 2;
    }
    if (!strcmp(cmd, "run") || !strcmp(cmd, "repeat"))
        return runner_run(&o);
    if (!strcmp(cmd, "compare") && npos == 2)
        return runner_compare(pos[0], pos[1]);
    if (!strcmp(cmd, "compare-storh") && npos == 2)
        return compare_storh(pos[0], pos[1]);
    if (!strcmp(cmd, "gate") && npos == 2)
        return runner_gate(pos[0], pos[1], threshold, only, nonly, true);
    if (!strcmp(cmd, "ci")) {
        /* medians of three: a single 1k run of an fsync-bound metric is
         * a handful of fsyncs, too few to tell anything from noise */
        o.dataset = 1000;
        o.repeat = 3;
        o.quiet = true;
        o.out = "build/bench-ci.json";
        int rc = runner_run(&o);
        /* generous: shared machines move fsync-bound figures a lot; this
         * catches order-of-magnitude regressions, not noise */
        return rc ? rc
                  : runner_gate("bench/baselines/ci-1k-all.json", o.out, 300, only, nonly, false);
    }
    if (!strcmp(cmd, "range") && datasets) {
        char *list = strdup(datasets), *save = NULL;
        const char *which = engines_list ? engines_list : "doc,log,queue,cache,filter,uuid,mirror";
        for (char *d = strtok_r(list, ",", &save); d; d = strtok_r(NULL, ",", &save)) {
            char *el = strdup(which), *s2 = NULL;
            for (char *e = strtok_r(el, ",", &s2); e; e = strtok_r(NULL, ",", &s2)) {
                char out[PATH_MAX];
                snprintf(out, sizeof out, "build/bench-ranges/%s-%s.json", e, d);
                harness_opts ro = o;
                ro.dataset = atol(d);
                ro.engine = e;
                ro.out = out;
                int rc = runner_run(&ro);
                if (rc) {
                    free(el);
                    free(list);
                    return rc;
                }
            }
            free(el);
        }
        free(list);
        return 0;
    }
    fprintf(stderr,
            "usage: storh-bench run|repeat|range|compare|compare-storh|gate|ci [options]\n");
    return 2;
}
