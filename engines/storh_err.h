/* storh_err: the error codes every engine function returns, and the
 * caller-supplied message holder that explains them. Functions return 0 or a
 * negative STORH_E* code and, on failure, fill the storh_err they were given
 * (which may be NULL when the caller does not want the message). */
#ifndef STORH_ERR_H
#define STORH_ERR_H

enum {
    STORH_OK = 0,
    STORH_EINVAL = -1,    /* bad input: name, id, JSON, parameter */
    STORH_ENOTFOUND = -2, /* no such record or file */
    STORH_EIO = -3,       /* the filesystem failed */
    STORH_ECORRUPT = -4,  /* stored bytes do not parse or do not match */
    STORH_ECONFLICT = -5, /* unique constraint */
    STORH_ENOSPC = -6,    /* disk full or quota */
    STORH_ENOMEM = -7,
    STORH_ESCHEMA = -8,   /* schema violation */
    STORH_ETOOBIG = -9,   /* input over a configured bound */
    STORH_EUNAVAIL = -10, /* a dependency is down or saturated */
    STORH_ETIMEOUT = -11, /* a dependency did not answer in time */
    /* A resource limit was hit: descriptors (EMFILE, ENFILE) or the budget
     * of open engines. Worth a retry once load drops. */
    STORH_ELIMIT = -12
};

typedef struct storh_err {
    int code;
    char msg[512];
} storh_err;

/* Records code and message in err (if non-NULL) and returns code. */
int storh_err_set(storh_err *err, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Like storh_err_set for a failed system call: ENOSPC/EDQUOT map to
 * STORH_ENOSPC, ENOMEM to STORH_ENOMEM, EMFILE/ENFILE to STORH_ELIMIT,
 * everything else to STORH_EIO; the strerror text (and for EMFILE/ENFILE
 * the limit's name) is appended to the message. */
int storh_err_sys(storh_err *err, int errnum, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* The one out-of-memory error: STORH_ENOMEM, "Out of memory.". Messages
 * are sentences: a capital first letter and a full stop. */
int storh_err_oom(storh_err *err);
/* A short stable name for a code: "invalid", "not_found", ... */
const char *storh_err_name(int code);

#endif
