#include "logset.h"

#include <dirent.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fsx.h"

/* A partition directory name: YYYY-MM-DD (daily) or YYYY-MM (monthly), as
 * seglog_dir writes them; *part gets which, *ms a timestamp inside it. */
static bool partition_name(const char *n, int *part, int64_t *ms)
{
    size_t len = strlen(n);
    if (len != 7 && len != 10)
        return false;
    for (size_t i = 0; i < len; i++) {
        bool dash = i == 4 || i == 7;
        if (dash ? n[i] != '-' : (n[i] < '0' || n[i] > '9'))
            return false;
    }
    struct tm tm = {0};
    tm.tm_year = atoi(n) - 1900;
    tm.tm_mon = atoi(n + 5) - 1;
    tm.tm_mday = len == 10 ? atoi(n + 8) : 1;
    if (tm.tm_mon < 0 || tm.tm_mon > 11 || tm.tm_mday < 1 || tm.tm_mday > 31)
        return false;
    *part = len == 10 ? SEGLOG_PART_DAILY : SEGLOG_PART_MONTHLY;
    *ms = (int64_t)timegm(&tm) * 1000;
    return true;
}

static int name_cmp(const void *a, const void *b)
{
    return strcmp((const char *)a, (const char *)b);
}

void logset_free(logset *ls)
{
    free(ls->logs);
    free(ls->part);
    memset(ls, 0, sizeof *ls);
}

/* The partition names under <root>/<name>/partitions, sorted (oldest first). */
static int list_partitions(const char *root, const char *name, char (**out)[16], size_t *n,
                           storh_err *err)
{
    char dir[PATH_MAX];
    int rc = fsx_pathf(dir, err, "%s/%s/partitions", root, name);
    if (rc)
        return rc;
    *out = NULL;
    *n = 0;
    DIR *d = opendir(dir);
    if (!d)
        return storh_err_set(err, STORH_ENOTFOUND, "No such log: %s", name);
    size_t cap = 0;
    struct dirent *de;
    while ((de = readdir(d))) {
        int part;
        int64_t ms;
        if (!partition_name(de->d_name, &part, &ms))
            continue;
        if (*n == cap) {
            cap = cap ? cap * 2 : 16;
            char(*grown)[16] = realloc(*out, cap * sizeof **out);
            if (!grown) {
                rc = storh_err_set(err, STORH_ENOMEM, "Out of memory.");
                break;
            }
            *out = grown;
        }
        memcpy((*out)[(*n)++], de->d_name, strlen(de->d_name) + 1); /* 7 or 10 bytes */
    }
    closedir(d);
    if (!rc && *n)
        qsort(*out, *n, sizeof **out, name_cmp);
    return rc;
}

int logset_open(logset *ls, const char *root, const char *name, const seglog_opts *o,
                logset_open_fn open_fn, void *ctx, storh_err *err)
{
    memset(ls, 0, sizeof *ls);
    if (o->partition == SEGLOG_PART_NONE) {
        ls->logs = malloc(sizeof *ls->logs);
        if (!ls->logs)
            return storh_err_set(err, STORH_ENOMEM, "Out of memory.");
        int rc = open_fn(ctx, name, o, &ls->logs[0], err);
        if (rc) {
            logset_free(ls);
            return rc;
        }
        ls->n = 1;
        return 0;
    }
    size_t np;
    int rc = list_partitions(root, name, &ls->part, &np, err);
    if (!rc && !(ls->logs = calloc(np ? np : 1, sizeof *ls->logs)))
        rc = storh_err_set(err, STORH_ENOMEM, "Out of memory.");
    for (size_t i = 0; !rc && i < np; i++) {
        seglog_opts po = *o;
        if (!partition_name(ls->part[i], &po.partition, &po.partition_ts_ms))
            continue;
        storh_err perr;
        int prc = open_fn(ctx, name, &po, &ls->logs[ls->n], &perr);
        if (prc == STORH_ENOTFOUND) /* a directory without a log yet */
            continue;
        if (prc) {
            rc = storh_err_set(err, prc, "Partition %s: %s", ls->part[i], perr.msg);
            break;
        }
        memmove(ls->part[ls->n], ls->part[i], sizeof ls->part[i]);
        ls->n++;
    }
    if (!rc && ls->n == 0)
        rc = storh_err_set(err, STORH_ENOTFOUND, "No such log: %s", name);
    if (rc)
        logset_free(ls);
    return rc;
}

/* ---- reads across the set ---- */

struct logset_iter {
    const logset *ls;
    const recquery *q;
    size_t cur, emitted;
    seglog_iter *it;
};

int logset_iter_open(const logset *ls, const recquery *q, logset_iter **out, storh_err *err)
{
    logset_iter *it = calloc(1, sizeof *it);
    if (!it)
        return storh_err_set(err, STORH_ENOMEM, "Out of memory.");
    it->ls = ls;
    it->q = q;
    *out = it;
    return 0;
}

int logset_iter_next_raw(logset_iter *it, const char **id, const char **raw, size_t *rawlen,
                         json_t **data, storh_err *err)
{
    for (;;) {
        if (it->q && it->q->limit && it->emitted >= it->q->limit)
            return 0;
        if (!it->it) {
            if (it->cur >= it->ls->n)
                return 0;
            int rc = seglog_iter_open(it->ls->logs[it->cur++], it->q, &it->it, err);
            if (rc)
                return rc;
        }
        int rc = seglog_iter_next_raw(it->it, id, raw, rawlen, data, err);
        if (rc == 0) {
            seglog_iter_close(it->it);
            it->it = NULL;
            continue;
        }
        if (rc > 0)
            it->emitted++;
        return rc;
    }
}

int logset_iter_next(logset_iter *it, const char **id, json_t **data, storh_err *err)
{
    return logset_iter_next_raw(it, id, NULL, NULL, data, err);
}

void logset_iter_close(logset_iter *it)
{
    if (!it)
        return;
    seglog_iter_close(it->it);
    free(it);
}

int logset_get(const logset *ls, const char *id, json_t **data, storh_err *err)
{
    for (size_t i = ls->n; i-- > 0;) {
        int rc = seglog_get(ls->logs[i], id, data, err);
        if (rc != STORH_ENOTFOUND)
            return rc;
    }
    return storh_err_set(err, STORH_ENOTFOUND, "Log record not found: %s", id);
}

int logset_count(const logset *ls, size_t *n, storh_err *err)
{
    *n = 0;
    for (size_t i = 0; i < ls->n; i++) {
        size_t c;
        int rc = seglog_count(ls->logs[i], &c, err);
        if (rc)
            return rc;
        *n += c;
    }
    return 0;
}

int logset_count_eq(const logset *ls, const char *field, const json_t *value, size_t *n,
                    bool *served, storh_err *err)
{
    *n = 0;
    *served = true;
    for (size_t i = 0; i < ls->n && *served; i++) {
        size_t c;
        int rc = seglog_count_eq(ls->logs[i], field, value, &c, served, err);
        if (rc)
            return rc;
        *n += c;
    }
    return 0;
}

/* Adds the integer members of from to acc. */
static void add_counts(json_t *acc, const json_t *from)
{
    const char *k;
    json_t *v;
    json_object_foreach ((json_t *)from, k, v) {
        if (json_is_integer(v))
            json_object_set_new(
                acc, k,
                json_integer(json_integer_value(json_object_get(acc, k)) + json_integer_value(v)));
    }
}

int logset_stats(const logset *ls, json_t **out, storh_err *err)
{
    json_t *acc = json_pack("{sIsIsIsI}", "segments", (json_int_t)0, "records", (json_int_t)0,
                            "deleted", (json_int_t)0, "bytes", (json_int_t)0);
    if (!acc)
        return storh_err_set(err, STORH_ENOMEM, "Out of memory.");
    for (size_t i = 0; i < ls->n; i++) {
        json_t *one;
        int rc = seglog_stats(ls->logs[i], &one, err);
        if (rc) {
            json_decref(acc);
            return rc;
        }
        add_counts(acc, one);
        json_decref(one);
    }
    if (ls->part)
        json_object_set_new(acc, "partitions", json_integer((json_int_t)ls->n));
    *out = acc;
    return 0;
}

int logset_verify(const logset *ls, json_t **out, storh_err *err)
{
    if (!ls->part && ls->n == 1)
        return seglog_verify(ls->logs[0], out, err);
    json_t *errors = json_array(), *stats = json_object();
    for (size_t i = 0; i < ls->n; i++) {
        json_t *one;
        int rc = seglog_verify(ls->logs[i], &one, err);
        if (rc) {
            json_decref(errors);
            json_decref(stats);
            return rc;
        }
        size_t k;
        json_t *e;
        json_array_foreach (json_object_get(one, "errors"), k, e) {
            char msg[600];
            snprintf(msg, sizeof msg, "%s: %s", ls->part ? ls->part[i] : "", json_string_value(e));
            json_array_append_new(errors, json_string(msg));
        }
        add_counts(stats, json_object_get(one, "stats"));
        json_decref(one);
    }
    if (ls->part)
        json_object_set_new(stats, "partitions", json_integer((json_int_t)ls->n));
    *out =
        json_pack("{sbsoso}", "ok", json_array_size(errors) == 0, "errors", errors, "stats", stats);
    return *out ? 0 : storh_err_set(err, STORH_ENOMEM, "Out of memory.");
}
