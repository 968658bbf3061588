#include "fault.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void fault_point(const char *name)
{
    const char *want = getenv("STORH_FAULT");
    if (!want)
        return;
    size_t n = strlen(name);
    if (strncmp(want, name, n) != 0)
        return;
    if (want[n] == '\0')
        _exit(86);
    if (want[n] != '@')
        return;
    /* name@N: the Nth time this process reaches the point */
    static atomic_long hits;
    if (atomic_fetch_add(&hits, 1) + 1 == atol(want + n + 1))
        _exit(86);
}

bool fault_fails(const char *op, const char *target)
{
    const char *want = getenv("STORH_FAULT_FAIL");
    if (!want)
        return false;
    size_t n = strlen(op);
    if (strncmp(want, op, n) != 0 || want[n] != ':')
        return false;
    const char *slash = strrchr(target, '/');
    if (slash) /* a store's directory: its name */
        target = slash + 1;
    const char *t = want + n + 1, *at = strchr(t, '@');
    size_t tl = at ? (size_t)(at - t) : strlen(t);
    if (strlen(target) != tl || strncmp(t, target, tl) != 0)
        return false;
    if (!at)
        return true;
    /* op:target@N: only the Nth time this process asks, counted since
     * STORH_FAULT_FAIL last changed (a test sets one per case) */
    static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
    static char last[256];
    static long asked;
    pthread_mutex_lock(&mu);
    if (strncmp(last, want, sizeof last) != 0) {
        snprintf(last, sizeof last, "%s", want);
        asked = 0;
    }
    bool fail = ++asked == atol(at + 1);
    pthread_mutex_unlock(&mu);
    return fail;
}
