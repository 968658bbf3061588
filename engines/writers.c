#include "writers.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "fsx.h"

#define STALE_FOREIGN_TEMP_SECONDS 60

bool writers_pid_alive(long pid)
{
    if (pid < 1 || pid > 0x7fffffffL)
        return false;
    return kill((pid_t)pid, 0) == 0;
}

int writers_identity(char *out, storh_err *err)
{
    char hex[9];
    int rc = fsx_random_hex(hex, 4, err);
    if (rc)
        return rc;
    sprintf(out, "%ld.%s", (long)getpid(), hex);
    return 0;
}

int writers_register(const char *coll, const char *identity, storh_err *err)
{
    char dir[PATH_MAX], path[PATH_MAX];
    int rc = fsx_pathf(dir, err, "%s/.storh/writers", coll);
    if (!rc)
        rc = fsx_mkdirs(dir, true, err);
    if (!rc)
        rc = fsx_pathf(path, err, "%s/%s", dir, identity);
    if (rc)
        return rc;
    FILE *f = fopen(path, "ab");
    if (!f)
        return storh_err_sys(err, errno, "Could not register storage writer marker: %s", path);
    fclose(f);
    /* durable before the first write: after a power cut it tells the next
     * open that a writer died (docstore_open rebuilds the indexes then) */
    return fsx_fsync_dir(dir, err);
}

void writers_unregister(const char *coll, const char *identity)
{
    char path[PATH_MAX];
    if (fsx_pathf(path, NULL, "%s/.storh/writers/%s", coll, identity) == 0)
        unlink(path);
}

/* Parses ".<digits>.<hex>.<digits>.tmp"; returns the pid or -1. */
static long record_temp_pid(const char *name)
{
    const char *p = name;
    if (*p++ != '.')
        return -1;
    char *end;
    if (*p < '0' || *p > '9')
        return -1;
    long pid = strtol(p, &end, 10);
    if (*end != '.')
        return -1;
    p = end + 1;
    const char *h = p;
    while ((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f'))
        p++;
    if (p == h || *p != '.')
        return -1;
    p++;
    const char *d = p;
    while (*p >= '0' && *p <= '9')
        p++;
    if (p == d || strcmp(p, ".tmp") != 0)
        return -1;
    return pid;
}

static void sweep_dir(const char *dir, time_t now)
{
    DIR *d = opendir(dir);
    if (!d)
        return;
    struct dirent *de;
    while ((de = readdir(d))) {
        if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
            continue;
        char path[PATH_MAX];
        if (snprintf(path, sizeof path, "%s/%s", dir, de->d_name) >= (int)sizeof path)
            continue;
        struct stat st;
        if (lstat(path, &st) != 0)
            continue;
        if (S_ISDIR(st.st_mode)) {
            sweep_dir(path, now);
            continue;
        }
        if (!S_ISREG(st.st_mode))
            continue;
        size_t n = strlen(de->d_name);
        if (de->d_name[0] != '.' || n < 5 || strcmp(de->d_name + n - 4, ".tmp") != 0)
            continue;
        long pid = record_temp_pid(de->d_name);
        if (pid >= 0) {
            if (!writers_pid_alive(pid))
                unlink(path);
        } else if (now - st.st_mtime >= STALE_FOREIGN_TEMP_SECONDS) {
            unlink(path);
        }
    }
    closedir(d);
}

int writers_sweep(const char *coll, storh_err *err)
{
    (void)err;
    sweep_dir(coll, time(NULL));
    return 0;
}

static bool marker_stale(const char *name)
{
    const char *p = name;
    if (*p < '0' || *p > '9')
        return true;
    char *end;
    long pid = strtol(p, &end, 10);
    if (*end != '.')
        return true;
    return !writers_pid_alive(pid);
}

/* Calls fn on every stale marker name; true if there was any. */
static bool each_stale(const char *dir, bool unlink_them)
{
    DIR *d = opendir(dir);
    if (!d)
        return false;
    bool any = false;
    struct dirent *de;
    while ((de = readdir(d))) {
        if (de->d_name[0] == '.' &&
            (de->d_name[1] == '\0' || (de->d_name[1] == '.' && de->d_name[2] == '\0')))
            continue;
        if (!marker_stale(de->d_name))
            continue;
        any = true;
        if (!unlink_them)
            break;
        char path[PATH_MAX];
        if (snprintf(path, sizeof path, "%s/%s", dir, de->d_name) < (int)sizeof path)
            unlink(path);
    }
    closedir(d);
    return any;
}

bool writers_any_stale(const char *coll)
{
    char dir[PATH_MAX];
    return fsx_pathf(dir, NULL, "%s/.storh/writers", coll) == 0 && each_stale(dir, false);
}

int writers_cleanup_on_open(const char *coll, bool *swept, storh_err *err)
{
    char dir[PATH_MAX];
    int rc = fsx_pathf(dir, err, "%s/.storh/writers", coll);
    if (swept)
        *swept = false;
    if (rc)
        return rc;
    struct stat st;
    if (stat(dir, &st) != 0) {
        writers_sweep(coll, err);
        if (swept)
            *swept = true;
        /* synced: a marker in it must survive a power cut (writers_register) */
        return fsx_mkdirs(dir, true, err);
    }
    if (!each_stale(dir, false))
        return 0;
    if (swept)
        *swept = true;
    writers_sweep(coll, err);
    each_stale(dir, true);
    return 0;
}
