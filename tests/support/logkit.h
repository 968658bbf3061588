/* logkit: the helpers the segmented log's unit tests share (test_seglog,
 * test_seglog_read, test_seglog_compact): a log opened in a scratch root,
 * filled with small records, read back, counted, and its files read. */
#ifndef STORHD_TEST_LOGKIT_H
#define STORHD_TEST_LOGKIT_H

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "buf.h"
#include "fsx.h"
#include "seglog.h"

/* The log name under dir, created if missing; seg_bytes 0: the default
 * segment size. NULL (and a line on stderr) when it cannot open. */
static inline seglog *logkit_open(const char *dir, const char *name, size_t seg_bytes)
{
    seglog_opts o;
    seglog_opts_default(&o);
    if (seg_bytes)
        o.max_segment_bytes = seg_bytes;
    seglog *s = NULL;
    storh_err err;
    if (seglog_open(dir, name, &o, true, &s, &err))
        fprintf(stderr, "open %s: %s\n", name, err.msg);
    return s;
}

/* n records {"i": i, "pad": "x..."} put, their ids in ids */
static inline void logkit_fill(seglog *s, int n, char ids[][37])
{
    for (int i = 0; i < n; i++) {
        json_t *d = json_pack("{siss}", "i", i, "pad", "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx");
        seglog_put(s, NULL, d, ids[i], NULL);
        json_decref(d);
    }
}

/* The whole file at fmt (formatted with dir, then a), NUL-ended; the
 * caller frees it. NULL when it cannot be read. */
static inline char *logkit_slurp(const char *dir, const char *fmt, const char *a)
{
    char p[PATH_MAX];
    snprintf(p, sizeof p, fmt, dir, a);
    buf b = BUF_INIT;
    if (fsx_read_all(p, &b, NULL) != 0)
        return NULL;
    return b.data ? b.data : strdup("");
}

/* Live records as the log counts them, or -1 when counting failed. */
static inline long long logkit_live(seglog *s)
{
    size_t n;
    return seglog_count(s, &n, NULL) == 0 ? (long long)n : -1;
}

/* Records a read of s with q hands out (their ids in ids, up to max), or
 * -1 when the read failed. */
static inline int logkit_count(seglog *s, const recquery *q, char ids[][37], int max)
{
    seglog_iter *it;
    if (seglog_iter_open(s, q, &it, NULL))
        return -1;
    const char *id;
    json_t *d;
    int n = 0, r;
    while ((r = seglog_iter_next(it, &id, &d, NULL)) == 1) {
        if (ids && n < max)
            memcpy(ids[n], id, 37);
        n++;
        json_decref(d);
    }
    seglog_iter_close(it);
    return r < 0 ? -1 : n;
}

/* The size of the file at p, or -1 */
static inline off_t logkit_fsize(const char *p)
{
    struct stat st;
    return stat(p, &st) == 0 ? st.st_size : -1;
}

#endif
