/* libFuzzer: queue replay. The input becomes queue.log; the queue opens
 * (replaying it, cutting only a torn tail), verifies and claims (as trees,
 * then as bytes). */
#include <ftw.h>
#include <limits.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "fsx.h"
#include "queue.h"

static char root[PATH_MAX];

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    return remove(path);
}

/* the scratch root goes with the process (the replay tests run it often) */
static void remove_root(void)
{
    nftw(root, remove_entry, 8, FTW_DEPTH | FTW_PHYS);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!root[0]) {
        snprintf(root, sizeof root, "%s/storhd-fuzz-queue-XXXXXX",
                 getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
        if (!mkdtemp(root))
            abort();
        atexit(remove_root);
    }
    char dir[PATH_MAX], log[PATH_MAX];
    snprintf(dir, sizeof dir, "%s/q", root);
    snprintf(log, sizeof log, "%s/queue.log", dir);
    fsx_mkdirs(dir, false, NULL);
    FILE *f = fopen(log, "wb");
    if (!f)
        abort();
    fwrite(data, 1, size, f);
    fclose(f);
    queue *q;
    if (queue_open(root, "q", false, &q, NULL) == 0) {
        json_t *out = NULL;
        if (queue_verify(q, &out, NULL) == 0)
            json_decref(out);
        json_t *jobs = NULL;
        if (queue_claim(q, 3, &jobs, NULL) == 0)
            json_decref(jobs);
        buf answer = BUF_INIT; /* the byte path's claim of the next ones */
        size_t n;
        queue_claim_bytes(q, 3, &answer, &n, NULL);
        buf_free(&answer);
        queue_close(q);
    }
    unlink(log);
    return 0;
}
