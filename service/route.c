#include "route.h"

#include <stdio.h>
#include <string.h>

#include "uuid7.h"

static int split(char *path, char **segs)
{
    int n = 0;
    if (*path != '/')
        return -1;
    char *p = path + 1;
    for (;;) {
        if (n == ROUTE_MAX_SEGS)
            return -1;
        segs[n++] = p;
        char *slash = strchr(p, '/');
        if (!slash)
            break;
        *slash = '\0';
        p = slash + 1;
    }
    return n;
}

/* Score = literal segments matched, or -1. seglen: each segment's length
 * (measured once per request, not once per pattern tried). */
static int match_pattern(const char *pattern, char **segs, const size_t *seglen, int nsegs,
                         route_match *m)
{
    const char *p = pattern + 1;
    int score = 0, i = 0, np = 0;
    while (*p || i < nsegs) {
        if (i >= nsegs)
            return -1;
        size_t len = 0;
        if (p[0] != '{') { /* a literal, compared as scanned: most patterns stop at a first byte */
            const char *seg = segs[i];
            while (p[len] && p[len] != '/' && p[len] == seg[len])
                len++;
            if ((p[len] && p[len] != '/') || len != seglen[i])
                return -1;
        }
        while (p[len] && p[len] != '/')
            len++;
        const char *end = p[len] ? p + len : NULL;
        if (len > 1 && p[0] == '{' && p[len - 1] == '}') {
            if (segs[i][0] == '\0' || np == ROUTE_MAX_PARAMS)
                return -1;
            if (m) {
                m->params[np].name = p + 1;
                m->params[np].name_len = len - 2;
                m->params[np].value = segs[i];
            }
            np++;
        } else {
            if (p[0] == '{' && (seglen[i] != len || memcmp(segs[i], p, len) != 0))
                return -1; /* a literal was compared above */
            score++;
        }
        i++;
        p = end ? end + 1 : p + len;
        if (!end)
            break;
    }
    if (i != nsegs)
        return -1;
    if (m)
        m->nparams = np;
    return score;
}

static bool method_is(const char *route_method, const char *method)
{
    if (strcmp(route_method, method) == 0)
        return true;
    return strcmp(method, "HEAD") == 0 && strcmp(route_method, "GET") == 0;
}

int route_find(const route *table, size_t n, const char *method, char *path, route_match *m)
{
    char *segs[ROUTE_MAX_SEGS];
    memset(m, 0, sizeof *m);
    m->index = -1;
    int nsegs = split(path, segs);
    if (nsegs < 0)
        return 404;
    size_t seglen[ROUTE_MAX_SEGS];
    for (int i = 0; i < nsegs; i++)
        seglen[i] = strlen(segs[i]);
    int best = -1;
    bool any = false;
    for (size_t i = 0; i < n; i++) {
        int score = match_pattern(table[i].pattern, segs, seglen, nsegs, NULL);
        if (score < 0)
            continue;
        any = true;
        if (!method_is(table[i].method, method)) {
            size_t al = strlen(m->allow);
            if (!strstr(m->allow, table[i].method) && al + 12 < sizeof m->allow)
                snprintf(m->allow + al, sizeof m->allow - al, "%s%s", al ? ", " : "",
                         table[i].method);
            continue;
        }
        if (score > best) {
            best = score;
            m->index = (int)i;
        }
    }
    if (m->index < 0)
        return any ? 405 : 404;
    match_pattern(table[m->index].pattern, segs, seglen, nsegs, m);
    return 0;
}

bool route_valid_name(const char *s)
{
    size_t n = 0;
    for (; s[n]; n++) {
        char c = s[n];
        if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
              c == '_' || c == '-'))
            return false;
    }
    return n >= 1 && n <= 64;
}

static bool param_is(const route_param *p, const char *name)
{
    return p->name_len == strlen(name) && memcmp(p->name, name, p->name_len) == 0;
}

bool route_check_params(const route_match *m, char *msg, size_t cap)
{
    static const char *const names[] = {"collection", "stream", "queue"};
    for (int i = 0; i < m->nparams; i++) {
        const route_param *p = &m->params[i];
        for (size_t k = 0; k < sizeof names / sizeof names[0]; k++) {
            if (param_is(p, names[k]) && !route_valid_name(p->value)) {
                snprintf(msg, cap, "Invalid %s name in path: must match [A-Za-z0-9_-]{1,64}.",
                         names[k]);
                return false;
            }
        }
        if (param_is(p, "id") && !uuid7_is_valid(p->value, strlen(p->value))) {
            snprintf(msg, cap, "Invalid id in path: not a UUIDv7.");
            return false;
        }
    }
    return true;
}
