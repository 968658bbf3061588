#include "harness.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

double harness_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

double harness_median(double *v, int n)
{
    if (n <= 0)
        return NAN;
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

void harness_die(const char *what, const storh_err *err)
{
    fprintf(stderr, "bench: %s: %s\n", what, err ? err->msg : strerror(errno));
    exit(1);
}

json_t *harness_record(long i)
{
    /* the shape and size of storh's bench row, so both harnesses write,
     * index and filter the same bytes */
    char slug[32];
    int sl = snprintf(slug, sizeof slug, "item-%ld", i);
    /* built field by field, not with json_pack (whose format parsing cost
     * as much as the row): the queue's bulk figures time this */
    json_t *o = json_object();
    json_object_set_new_nocheck(o, "kind", json_string_nocheck(i % 2 ? "post" : "page"));
    json_object_set_new_nocheck(o, "status", json_string_nocheck(i % 3 ? "published" : "draft"));
    json_object_set_new_nocheck(o, "bucket", json_integer(i % 10));
    json_object_set_new_nocheck(o, "slug", json_stringn_nocheck(slug, (size_t)sl));
    json_object_set_new_nocheck(o, "publishedAt", json_integer(HARNESS_BASE_MS + i));
    return o;
}

void harness_record_bytes(long i, buf *out)
{
    buf_append(out, i % 2 ? "{\"kind\":\"post\"" : "{\"kind\":\"page\"", 14);
    buf_appends(out, i % 3 ? ",\"status\":\"published\",\"bucket\":"
                           : ",\"status\":\"draft\",\"bucket\":");
    buf_append_u64(out, (unsigned long long)(i % 10));
    buf_append(out, ",\"slug\":\"item-", 14);
    buf_append_u64(out, (unsigned long long)i);
    buf_append(out, "\",\"publishedAt\":", 16);
    buf_append_u64(out, (unsigned long long)(HARNESS_BASE_MS + i));
    buf_appendc(out, '}');
}

char (*harness_make_ids(long n, int64_t base_ms))[UUID7_LEN + 1]
{
    char(*ids)[UUID7_LEN + 1] = malloc((size_t)n * sizeof *ids);
    for (long i = 0; ids && i < n; i++)
        uuid7_generate(ids[i], base_ms + i, NULL);
    return ids;
}

void harness_clean(const char *dir)
{
    char cmd[PATH_MAX + 16];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0)
        fprintf(stderr, "bench: could not remove %s\n", dir);
}
