/* bulkspool: the body of a bulk whose target (a log stream, a document
 * collection) does not exist yet, held in an anonymous temp file under the
 * root until the whole body has been checked. A refused bulk (a bad row, a
 * line over the limit, a dropped connection) then creates nothing: the
 * handler creates the target only at the end and replays the body's bytes
 * through its normal row path, so line numbers and errors are the same as
 * for an existing target. The file has no name (O_TMPFILE, or unlinked as
 * soon as it is made), so a crash leaves nothing behind. */
#ifndef STORHD_BULKSPOOL_H
#define STORHD_BULKSPOOL_H

#include <stdbool.h>
#include <stddef.h>

#include "buf.h"
#include "storh_err.h"

typedef struct http_req http_req;
typedef struct ndjson_lines ndjson_lines;

typedef struct bulkspool {
    int fd;      /* -1 when closed */
    buf pending; /* bytes not written yet (written in 64 KiB blocks) */
} bulkspool;

/* Opens an anonymous file in dir. */
int bulkspool_open(bulkspool *sp, const char *dir, storh_err *err);
/* Appends a chunk of the body as received. */
int bulkspool_write(bulkspool *sp, const char *data, size_t len, storh_err *err);
/* Whether the spool is open: the target did not exist when the bulk began. */
static inline bool bulkspool_active(const bulkspool *sp)
{
    return sp->fd >= 0;
}
/* A chunk of the body (data == NULL: its end) fed to l and, while the
 * spool is active, kept in it too. Non-zero when the request failed. */
int bulkspool_feed(bulkspool *sp, ndjson_lines *l, http_req *req, const char *data, size_t len);
/* Feeds the whole body, from its first byte, to l (and its end, data ==
 * NULL). Returns what the feed returned (non-zero: a row failed the request)
 * or, on a read error, fails the request with 500 and returns non-zero. */
int bulkspool_replay(bulkspool *sp, ndjson_lines *l, http_req *req);
/* Closes the file (its bytes go with it); safe on a closed spool. */
void bulkspool_close(bulkspool *sp);

#endif
