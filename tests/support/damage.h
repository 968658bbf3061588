/* damage: the hand-made damage fault tests plant in a store's files. */
#ifndef STORH_TEST_DAMAGE_H
#define STORH_TEST_DAMAGE_H

#include <stdio.h>
#include <string.h>

#include "buf.h"
#include "fsx.h"

/* Rewrites path with the first digit after field (e.g. "\"a\":2") in its
 * second line set to digit, so that line's checksum no longer matches.
 * 0, or -1 when the file cannot be read or written or has no such line. */
static inline int damage_second_line(const char *path, const char *field, char digit)
{
    buf b = BUF_INIT;
    int rc = fsx_read_all(path, &b, NULL) ? -1 : 0;
    char *nl = rc ? NULL : strchr(b.data, '\n');
    char *at = nl ? strstr(nl + 1, field) : NULL;
    FILE *f = NULL;
    if (!at || !(f = fopen(path, "w"))) {
        rc = -1;
    } else {
        at[strlen(field) - 1] = digit;
        if (fwrite(b.data, 1, b.len, f) != b.len)
            rc = -1;
        if (fclose(f) != 0)
            rc = -1;
    }
    buf_free(&b);
    return rc;
}

#endif
