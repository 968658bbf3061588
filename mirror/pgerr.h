/* pgerr: the one reading of a PostgreSQL failure as a storh_err code, shared
 * by the mirror's PostgreSQL driver and the page RPC pool (service/rpc.c),
 * so both call the same failure the same thing: a lost connection or an
 * SQLSTATE of class 08 (connection exception) is STORH_EUNAVAIL (retry
 * later, reconnect), 57014 (query_canceled, statement_timeout) is
 * STORH_ETIMEOUT, and anything else is the caller's own code (the statement
 * or the function failed; what a constraint violation means is the
 * caller's to say). */
#ifndef STORHD_PGERR_H
#define STORHD_PGERR_H

#include <libpq-fe.h>
#include <string.h>

#include "storh_err.h"

static inline int pgerr_code(PGconn *conn, const PGresult *r, int otherwise)
{
    const char *state = r ? PQresultErrorField(r, PG_DIAG_SQLSTATE) : NULL;
    if (!conn || PQstatus(conn) != CONNECTION_OK || (state && !strncmp(state, "08", 2)))
        return STORH_EUNAVAIL;
    if (state && !strcmp(state, "57014"))
        return STORH_ETIMEOUT;
    return otherwise;
}

#endif
