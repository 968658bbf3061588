#include "bulkspool.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fsx.h"
#include "http.h"
#include "ndjson.h"

enum { SPOOL_BLOCK = 64 * 1024 };

int bulkspool_open(bulkspool *sp, const char *dir, storh_err *err)
{
    sp->pending = (buf)BUF_INIT;
    sp->fd = open(dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
    if (sp->fd >= 0)
        return 0;
    /* filesystems without O_TMPFILE: a named file, unlinked at once */
    char path[PATH_MAX];
    int rc = fsx_pathf(path, err, "%s/.storhd-bulk.XXXXXX", dir);
    if (rc)
        return rc;
    sp->fd = mkostemp(path, O_CLOEXEC);
    if (sp->fd < 0)
        return storh_err_sys(err, errno, "Could not create a spool file in %s", dir);
    unlink(path);
    return 0;
}

static int flush_pending(bulkspool *sp, storh_err *err)
{
    const char *p = sp->pending.data;
    size_t left = sp->pending.len;
    while (left) {
        ssize_t n = write(sp->fd, p, left);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return storh_err_sys(err, errno, "Could not write the bulk spool");
        p += n;
        left -= (size_t)n;
    }
    buf_reset(&sp->pending);
    return 0;
}

int bulkspool_write(bulkspool *sp, const char *data, size_t len, storh_err *err)
{
    buf_append(&sp->pending, data, len);
    if (buf_failed(&sp->pending))
        return storh_err_oom(err);
    return sp->pending.len >= SPOOL_BLOCK ? flush_pending(sp, err) : 0;
}

int bulkspool_feed(bulkspool *sp, ndjson_lines *l, http_req *req, const char *data, size_t len)
{
    int rc = ndjson_lines_feed(l, req, data, len);
    storh_err err;
    if (!rc && bulkspool_active(sp) && data && bulkspool_write(sp, data, len, &err))
        rc = http_fail_storh(req, &err);
    return rc;
}

int bulkspool_replay(bulkspool *sp, ndjson_lines *l, http_req *req)
{
    storh_err err;
    if (flush_pending(sp, &err))
        return http_fail_storh(req, &err);
    char *chunk = malloc(SPOOL_BLOCK);
    if (!chunk)
        return http_fail(req, 503, "Out of memory.");
    off_t off = 0;
    int rc = 0;
    for (;;) {
        ssize_t n = pread(sp->fd, chunk, SPOOL_BLOCK, off);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            rc = http_fail(req, 500, "Could not read the bulk spool: %s", strerror(errno));
            break;
        }
        if (n == 0) {
            rc = ndjson_lines_feed(l, req, NULL, 0);
            break;
        }
        off += n;
        if ((rc = ndjson_lines_feed(l, req, chunk, (size_t)n)))
            break;
    }
    free(chunk);
    return rc;
}

void bulkspool_close(bulkspool *sp)
{
    if (sp->fd >= 0)
        close(sp->fd);
    sp->fd = -1;
    buf_free(&sp->pending);
}
