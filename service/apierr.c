#include "apierr.h"

#include <stddef.h>

#include "storh_err.h"

static const struct {
    int code;
    int status;
} by_code[] = {
    {STORH_EINVAL, 400},    {STORH_ENOTFOUND, 404}, {STORH_EIO, 500},      {STORH_ECORRUPT, 500},
    {STORH_ECONFLICT, 409}, {STORH_ENOSPC, 507},    {STORH_ENOMEM, 503},   {STORH_ESCHEMA, 422},
    {STORH_ETOOBIG, 413},   {STORH_EUNAVAIL, 503},  {STORH_ETIMEOUT, 504}, {STORH_ELIMIT, 503},
};

static const struct {
    int status;
    const char *code;
} by_status[] = {
    {400, "bad_request"},
    {401, "unauthorized"},
    {403, "forbidden"},
    {404, "not_found"},
    {405, "method_not_allowed"},
    {409, "conflict"},
    {413, "payload_too_large"},
    {415, "unsupported_media_type"},
    {422, "schema_violation"},
    {500, "internal_error"},
    {503, "unavailable"},
    {504, "timeout"},
    {507, "insufficient_storage"},
};

int apierr_status(int storh_code)
{
    for (size_t i = 0; i < sizeof by_code / sizeof by_code[0]; i++)
        if (by_code[i].code == storh_code)
            return by_code[i].status;
    return 500;
}

const char *apierr_code(int http_status)
{
    for (size_t i = 0; i < sizeof by_status / sizeof by_status[0]; i++)
        if (by_status[i].status == http_status)
            return by_status[i].code;
    return http_status >= 500 ? "internal_error" : "error";
}
