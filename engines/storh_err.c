#include "storh_err.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

int storh_err_set(storh_err *err, int code, const char *fmt, ...)
{
    if (err) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err->msg, sizeof err->msg, fmt, ap);
        va_end(ap);
        err->code = code;
    }
    return code;
}

int storh_err_oom(storh_err *err)
{
    return storh_err_set(err, STORH_ENOMEM, "Out of memory.");
}

int storh_err_sys(storh_err *err, int errnum, const char *fmt, ...)
{
    int code = STORH_EIO;
    if (errnum == ENOSPC || errnum == EDQUOT)
        code = STORH_ENOSPC;
    else if (errnum == ENOMEM)
        code = STORH_ENOMEM;
    else if (errnum == EMFILE || errnum == ENFILE)
        code = STORH_ELIMIT;
    if (err) {
        va_list ap;
        va_start(ap, fmt);
        int n = vsnprintf(err->msg, sizeof err->msg, fmt, ap);
        va_end(ap);
        /* name the limit that was hit, so an operator knows what to raise */
        const char *limit = errnum == EMFILE   ? ": the process descriptor limit, RLIMIT_NOFILE"
                            : errnum == ENFILE ? ": the system-wide file table, fs.file-max"
                                               : "";
        if (n >= 0 && (size_t)n < sizeof err->msg)
            snprintf(err->msg + n, sizeof err->msg - (size_t)n, " (%s%s)", strerror(errnum), limit);
        err->code = code;
    }
    return code;
}

const char *storh_err_name(int code)
{
    switch (code) {
    case STORH_OK:
        return "ok";
    case STORH_EINVAL:
        return "invalid";
    case STORH_ENOTFOUND:
        return "not_found";
    case STORH_EIO:
        return "io_error";
    case STORH_ECORRUPT:
        return "corrupt";
    case STORH_ECONFLICT:
        return "conflict";
    case STORH_ENOSPC:
        return "disk_full";
    case STORH_ENOMEM:
        return "out_of_memory";
    case STORH_ESCHEMA:
        return "schema_violation";
    case STORH_ETOOBIG:
        return "too_large";
    case STORH_EUNAVAIL:
        return "unavailable";
    case STORH_ETIMEOUT:
        return "timeout";
    case STORH_ELIMIT:
        return "resource_limit";
    default:
        return "error";
    }
}
