/* metrictext: one sample's value out of a /metrics exposition, for the
 * tests that scrape storhd. */
#ifndef STORHD_TEST_METRICTEXT_H
#define STORHD_TEST_METRICTEXT_H

#include <stdlib.h>
#include <string.h>

/* The value of the line that starts with key (a name, with its labels if
 * it has any) followed by a space; -1 when there is none (or no text). */
static inline double metrictext_value(const char *text, const char *key)
{
    const char *p = text;
    size_t n = strlen(key);
    while (p && (p = strstr(p, key))) {
        if ((p == text || p[-1] == '\n') && p[n] == ' ')
            return atof(p + n + 1);
        p += n;
    }
    return -1;
}

#endif
