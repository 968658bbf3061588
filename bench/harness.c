#include "harness.h"

#include <errno.h>
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
    snprintf(slug, sizeof slug, "item-%ld", i);
    return json_pack("{sssssisssI}", "kind", i % 2 ? "post" : "page", "status",
                     i % 3 ? "published" : "draft", "bucket", (int)(i % 10), "slug", slug,
                     "publishedAt", (json_int_t)(HARNESS_BASE_MS + i));
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
