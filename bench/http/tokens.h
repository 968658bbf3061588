/* tokens: the bearer tokens of a trial run, minted with libjwt (RS256) from
 * a private key: token i is user "trial-<i>" of tenant (7 * i) % 100, role
 * reader, with the scopes the scenarios' routes need. */
#ifndef STORHD_TRIAL_TOKENS_H
#define STORHD_TRIAL_TOKENS_H

#include <stddef.h>

/* Writes n tokens, one per line, to path; they expire after ttl_s. *first
 * (caller frees) is token 0. 0, or -1 with a message. */
int tokens_mint(const char *key_path, int n, long ttl_s, const char *path, char **first, char *msg,
                size_t cap);

#endif
