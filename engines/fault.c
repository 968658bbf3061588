#include "fault.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void fault_point(const char *name)
{
    const char *want = getenv("STORH_FAULT");
    if (want && strcmp(want, name) == 0)
        _exit(86);
}

bool fault_fails(const char *op, const char *target)
{
    const char *want = getenv("STORH_FAULT_FAIL");
    if (!want)
        return false;
    size_t n = strlen(op);
    return !strncmp(want, op, n) && want[n] == ':' && !strcmp(want + n + 1, target);
}
