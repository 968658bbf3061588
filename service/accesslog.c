#include "accesslog.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

static void emit(json_t *line)
{
    char *s = line ? json_dumps(line, JSON_COMPACT) : NULL;
    json_decref(line);
    if (!s)
        return;
    size_t n = strlen(s);
    s[n] = '\n'; /* json_dumps leaves room for the NUL we overwrite */
    ssize_t w = write(STDERR_FILENO, s, n + 1);
    (void)w;
    free(s);
}

static json_t *timestamp(void)
{
    struct timeval tv;
    gettimeofday(&tv, NULL);
    struct tm tm;
    gmtime_r(&tv.tv_sec, &tm);
    char ts[40];
    size_t n = strftime(ts, sizeof ts, "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(ts + n, sizeof ts - n, ".%06ldZ", (long)tv.tv_usec);
    return json_string(ts);
}

/* Paths come percent-decoded from the client and may not be UTF-8. */
static json_t *text_or_null(const char *s)
{
    json_t *t = json_string(s);
    return t ? t : json_null();
}

void accesslog_write(const char *method, const char *route, const char *path, int status,
                     uint64_t usec, uint64_t bytes_in, uint64_t bytes_out, const char *error)
{
    json_t *line =
        json_pack("{sossssso sisIsIsI}", "ts", timestamp(), "method", method, "route", route,
                  "path", text_or_null(path), "status", status, "us", (json_int_t)usec, "bytes_in",
                  (json_int_t)bytes_in, "bytes_out", (json_int_t)bytes_out);
    if (line && error)
        json_object_set_new(line, "error", text_or_null(error));
    emit(line);
}

void accesslog_event(const char *msg, void *fields)
{
    json_t *o = fields ? (json_t *)fields : json_object();
    json_object_set_new(o, "ts", timestamp());
    json_object_set_new(o, "msg", json_string(msg));
    emit(o);
}
