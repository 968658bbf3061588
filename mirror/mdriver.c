/* mdriver.c: the driver dispatcher, mdriver_open (the interface itself is
 * mdriver.h; the drivers are mdriver_sqlite.c and mdriver_pg.c). */
#include "mdriver.h"

#include <string.h>

int mdriver_open(const char *driver, const char *target, mdriver **out, storh_err *err)
{
    if (!strcmp(driver, "sqlite"))
        return mdriver_sqlite_open(target, out, err);
    if (!strcmp(driver, "postgres"))
        return mdriver_pg_open(target, out, err);
    return storh_err_set(err, STORH_EINVAL, "Unknown SQL mirror driver: %s (sqlite, postgres)",
                         driver);
}
