/* recpred_int: the compiled predicate's layout, shared by recpred.c
 * (deciding on record bytes) and recpred_compile.c (compiling queries into
 * it). Nothing else includes it. */
#ifndef STORH_RECPRED_INT_H
#define STORH_RECPRED_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "query.h"

#define MAX_FIELDS 16

/* A field the conditions read: its key as the encoder writes it (quotes
 * included) and as it is. */
typedef struct pfield {
    char *enc, *raw;
    size_t enclen, rawlen;
    bool is_id; /* "id" in a query: the record's id when one is given */
} pfield;

/* An operand: its canonical encoding, the type rank of its first byte
 * (query_compare's order of scalar types; -1 for containers) and, for an
 * integer, its value. */
typedef struct pval {
    char *p;
    size_t n;
    int rank;
    long long i;
} pval;

typedef struct pcond {
    size_t field;
    qop op;
    pval *v; /* eq/neq/gt..lte/prefix: one; in/notIn: the list; between: two */
    size_t nv;
} pcond;

struct recpred {
    pfield f[MAX_FIELDS];
    size_t nf;
    pcond *c;     /* every group's conditions, one group after the other */
    size_t *gend; /* where each group's conditions end in c */
    size_t ng;
    bool has_id; /* some field is the record's id */
    bool eq1;    /* one equality on one data field: eq1_match */
    /* eq1's member as the encoder writes it, "key":value; the first bytes
     * of "key": as a word and their mask, to pass other keys in one compare */
    char *needle;
    size_t nlen, klen1;
    uint64_t kw, km;
    /* the needle in two 16-byte lanes with the masks of its key, first and
     * second lane's bytes (when it fits: n32ok) */
    bool n32ok;
    unsigned char n32[32];
    unsigned kbits, nbits0, nbits1;
    /* the key's first byte in every lane (n32ok and the byte cannot follow
     * a closing quote: first16 may look for the key) */
    bool f16ok;
    unsigned char c1[16];
};

static inline int rank_of(char c)
{
    switch (c) {
    case '"':
        return 0;
    case 'f':
        return 2;
    case 'n':
        return 3;
    case 't':
        return 4;
    case '[':
    case '{':
        return -1;
    default:
        return 1; /* a digit or '-' */
    }
}

/* An integer's canonical digits (at most 18, so no overflow); false for a
 * float or anything longer. */
static inline bool int_of(const char *p, size_t n, long long *out)
{
    size_t i = 0;
    bool neg = n > 0 && p[0] == '-';
    if (neg)
        i = 1;
    if (i == n || n - i > 18)
        return false;
    long long v = 0;
    for (; i < n; i++) {
        if (p[i] < '0' || p[i] > '9')
            return false;
        v = v * 10 + (p[i] - '0');
    }
    *out = neg ? -v : v;
    return true;
}

#endif
