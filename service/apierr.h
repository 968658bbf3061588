/* apierr: the one table from engine error codes (STORH_E*) to HTTP statuses,
 * and from statuses to the stable "code" strings of the JSON error body. */
#ifndef STORHD_APIERR_H
#define STORHD_APIERR_H

int apierr_status(int storh_code);
const char *apierr_code(int http_status);

#endif
