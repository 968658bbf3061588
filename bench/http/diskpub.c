#include "diskpub.h"

#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "fsx.h"

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

double diskpub_measure(const char *dir, double seconds, char *msg, unsigned long cap)
{
    storh_err err;
    if (fsx_mkdirs(dir, true, &err) != 0) {
        snprintf(msg, cap, "%s", err.msg);
        return -1;
    }
    char data[1024], tmp[PATH_MAX], fin[PATH_MAX];
    memset(data, 'x', sizeof data);
    long n = 0;
    double start = now_s(), t = start;
    int rc = 0;
    while (rc == 0 && t - start < seconds) {
        if (fsx_pathf(tmp, &err, "%s/.%ld.tmp", dir, n) ||
            fsx_pathf(fin, &err, "%s/%ld.jsonc", dir, n) ||
            fsx_write_file(tmp, data, sizeof data, true, &err) || fsx_rename(tmp, fin, true, &err))
            rc = -1;
        else
            n++;
        t = now_s();
    }
    if (rc) {
        snprintf(msg, cap, "%s", err.msg);
        return -1;
    }
    return n / (t - start);
}
