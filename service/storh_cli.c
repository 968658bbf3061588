/* storh: the maintenance CLI over a storage root, with the PHP CLI's
 * commands and defaults:
 *   storh stats|verify <root> [collection=default] [doc|log|queue]
 *   storh compact <root> [collection] [doc|log|queue]   (default log)
 *   storh reindex <root> [collection]                  (DocStore)
 *   storh repair <root> [collection] [doc|log|queue]
 * Prints pretty JSON; exits 1 on drift, corruption or an error, 2 on usage.
 * On a terminal a progress bar follows the records scanned. */
#include <jansson.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "docstore.h"
#include "estats.h"
#include "queue.h"
#include "logset.h"
#include "seglog.h"

typedef struct progress {
    pthread_t th;
    atomic_bool done;
    size_t total;
    uint64_t base;
    const char *what;
} progress;

static void *progress_loop(void *p)
{
    progress *pr = p;
    struct timespec t0, now;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    while (!atomic_load(&pr->done)) {
        struct timespec ts = {0, 100 * 1000 * 1000};
        nanosleep(&ts, NULL);
        clock_gettime(CLOCK_MONOTONIC, &now);
        double secs = (double)(now.tv_sec - t0.tv_sec) + (now.tv_nsec - t0.tv_nsec) / 1e9;
        uint64_t done = estats_get(ESTAT_DOC_SCAN) - pr->base;
        if (pr->total) {
            size_t pct = done >= pr->total ? 100 : (size_t)(done * 100 / pr->total);
            char bar[41];
            memset(bar, '#', pct * 40 / 100);
            memset(bar + pct * 40 / 100, '.', 40 - pct * 40 / 100);
            bar[40] = '\0';
            fprintf(stderr, "\r%s [%s] %3zu%% %llu/%zu %.1fs", pr->what, bar, pct,
                    (unsigned long long)done, pr->total, secs);
        } else {
            fprintf(stderr, "\r%s ... %.1fs", pr->what, secs);
        }
    }
    fprintf(stderr, "\r\033[K");
    return NULL;
}

static void progress_start(progress *pr, const char *what, size_t total)
{
    memset(pr, 0, sizeof *pr);
    pr->what = what;
    pr->total = total;
    pr->base = estats_get(ESTAT_DOC_SCAN);
    if (isatty(STDERR_FILENO))
        pthread_create(&pr->th, NULL, progress_loop, pr);
    else
        atomic_store(&pr->done, true);
}

static void progress_stop(progress *pr)
{
    if (atomic_exchange(&pr->done, true))
        return;
    pthread_join(pr->th, NULL);
}

static int usage(void)
{
    fprintf(stderr, "usage: storh stats|verify|compact|reindex|repair <root> [collection] "
                    "[doc|log|queue]\n");
    return 2;
}

static int print(json_t *out)
{
    char *s = json_dumps(out, JSON_INDENT(4) | JSON_ENSURE_ASCII | JSON_PRESERVE_ORDER);
    if (s)
        printf("%s\n", s);
    free(s);
    json_t *ok = json_object_get(out, "ok");
    int rc = ok && !json_is_true(ok) ? 1 : 0;
    json_decref(out);
    return rc;
}

static int fail(const storh_err *err)
{
    fprintf(stderr, "%s\n", err->msg);
    return 1;
}

static int run_doc(const char *cmd, const char *root, const char *name)
{
    docstore *ds;
    storh_err err;
    if (docstore_open(root, name, &ds, &err))
        return fail(&err);
    progress pr;
    progress_start(&pr, cmd, docstore_count_files(ds));
    json_t *out = NULL;
    int rc;
    if (!strcmp(cmd, "stats"))
        rc = docstore_stats(ds, &out, &err);
    else if (!strcmp(cmd, "verify"))
        rc = docstore_health(ds, &out, &err);
    else if (!strcmp(cmd, "compact"))
        rc = docstore_compact(ds, &out, &err);
    else if (!strcmp(cmd, "reindex"))
        rc = docstore_reindex(ds, &out, &err);
    else
        rc = docstore_repair(ds, &out, &err);
    progress_stop(&pr);
    docstore_close(ds);
    return rc ? fail(&err) : print(out);
}

/* The logs the CLI opened (logset_open's opener): closed together. */
typedef struct opened {
    const char *root;
    seglog **logs;
    size_t n, cap;
} opened;

static int open_log(void *ctx, const char *name, const seglog_opts *o, seglog **out, storh_err *err)
{
    opened *op = ctx;
    if (op->n == op->cap) {
        size_t cap = op->cap ? op->cap * 2 : 8;
        seglog **grown = realloc(op->logs, cap * sizeof *grown);
        if (!grown)
            return storh_err_oom(err);
        op->logs = grown;
        op->cap = cap;
    }
    int rc = seglog_open(op->root, name, o, false, out, err);
    if (!rc)
        op->logs[op->n++] = *out;
    return rc;
}

/* The stream as every reader sees it (logset): its one log, or, when it
 * has none, its partitions (the CLI has no config saying which). */
static int open_stream(const char *root, const char *name, opened *op, logset *ls, storh_err *err)
{
    seglog_opts o;
    seglog_opts_default(&o);
    op->root = root;
    int rc = logset_open(ls, root, name, &o, open_log, op, err);
    if (rc == STORH_ENOTFOUND) {
        o.partition = SEGLOG_PART_DAILY; /* daily and monthly alike, by name */
        rc = logset_open(ls, root, name, &o, open_log, op, err);
    }
    return rc;
}

/* fn on every log of the set: its result for one log, else an object of
 * results keyed by partition. */
static int each_log(const logset *ls, int (*fn)(seglog *, json_t **, storh_err *), json_t **out,
                    storh_err *err)
{
    if (ls->n == 1 && !ls->part)
        return fn(ls->logs[0], out, err);
    json_t *all = json_object();
    if (!all)
        return storh_err_oom(err);
    for (size_t i = 0; i < ls->n; i++) {
        json_t *one = NULL;
        int rc = fn(ls->logs[i], &one, err);
        if (rc) {
            json_decref(all);
            return rc;
        }
        json_object_set_new(all, ls->part[i], one);
    }
    *out = all;
    return 0;
}

static int run_log(const char *cmd, const char *root, const char *name)
{
    storh_err err;
    progress pr;
    progress_start(&pr, cmd, 0);
    opened op = {0};
    logset ls;
    int rc = open_stream(root, name, &op, &ls, &err);
    json_t *out = NULL;
    if (!rc) {
        if (!strcmp(cmd, "stats"))
            rc = logset_stats(&ls, &out, &err);
        else if (!strcmp(cmd, "verify"))
            rc = logset_verify(&ls, &out, &err);
        else if (!strcmp(cmd, "repair"))
            rc = each_log(&ls, seglog_repair, &out, &err);
        else if (!strcmp(cmd, "compact")) {
            json_t *rep = NULL;
            rc = each_log(&ls, seglog_compact, &rep, &err);
            json_decref(rep);
            if (!rc) /* storh prints the stats after compacting */
                rc = logset_stats(&ls, &out, &err);
        } else
            rc = storh_err_set(&err, STORH_EINVAL, "reindex is for DocStore collections.");
        logset_free(&ls);
    }
    for (size_t i = 0; i < op.n; i++)
        seglog_close(op.logs[i]);
    free(op.logs);
    progress_stop(&pr);
    return rc ? fail(&err) : print(out);
}

static int run_queue(const char *cmd, const char *root, const char *name)
{
    queue *q;
    storh_err err;
    int rc = queue_open(root, name, false, &q, &err);
    json_t *out = NULL;
    if (!rc) {
        if (!strcmp(cmd, "verify"))
            rc = queue_verify(q, &out, &err);
        else if (!strcmp(cmd, "repair"))
            rc = queue_repair(q, 3600, &out, &err);
        else if (!strcmp(cmd, "stats") || !strcmp(cmd, "compact"))
            rc = queue_stats(q, &out, &err); /* a queue is never compacted */
        else
            rc = storh_err_set(&err, STORH_EINVAL, "reindex is for DocStore collections.");
        queue_close(q);
    }
    return rc ? fail(&err) : print(out);
}

int main(int argc, char **argv)
{
    if (argc < 3)
        return usage();
    const char *cmd = argv[1], *root = argv[2];
    const char *name = argc > 3 ? argv[3] : "default";
    bool known = !strcmp(cmd, "stats") || !strcmp(cmd, "verify") || !strcmp(cmd, "compact") ||
                 !strcmp(cmd, "reindex") || !strcmp(cmd, "repair");
    if (!known || argc > 5)
        return usage();
    const char *engine = argc > 4 ? argv[4] : (!strcmp(cmd, "compact") ? "log" : "doc");
    if (strchr(name, '/') || !strcmp(name, "..") || !strcmp(name, ".")) {
        fprintf(stderr, "storh: collection must be a plain name\n");
        return 2;
    }
    if (!strcmp(engine, "doc"))
        return run_doc(cmd, root, name);
    if (!strcmp(engine, "log"))
        return run_log(cmd, root, name);
    if (!strcmp(engine, "queue"))
        return run_queue(cmd, root, name);
    return usage();
}
