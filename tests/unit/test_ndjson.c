/* test_ndjson: the streamed body splitter (lines cut anywhere across chunks,
 * CRLF, blank lines, a last line without '\n', the size limit at and past
 * its boundary, a row callback that stops the body). The request is a
 * stand-in that records http_fail: the binary links ndjson.c alone. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "../test.h"
#include "http.h"
#include "ndjson.h"

struct http_req {
    int status; /* of the first http_fail, 0 if none */
    char msg[256];
    int fails;
};

int http_fail(http_req *req, int status, const char *fmt, ...)
{
    if (!req->fails++) {
        req->status = status;
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(req->msg, sizeof req->msg, fmt, ap);
        va_end(ap);
    }
    return -1;
}

/* What the row callback saw: "lineno:text|" per row. */
typedef struct rows {
    char seen[4096];
    size_t at, n;
    size_t stop_at; /* fail the request at this line number (0: never) */
} rows;

static int on_row(void *ctx, http_req *req, const char *line, size_t len, size_t lineno)
{
    rows *r = ctx;
    r->n++;
    r->at += (size_t)snprintf(r->seen + r->at, sizeof r->seen - r->at, "%zu:%.*s|", lineno,
                              (int)len, line);
    if (r->at >= sizeof r->seen)
        r->at = sizeof r->seen - 1;
    if (r->stop_at && lineno == r->stop_at)
        return http_fail(req, 400, "Line %zu: bad.", lineno);
    return 0;
}

/* Feeds body in chunks of at most chunk bytes (0: all at once), then the
 * end; returns the first non-zero feed result (0 if none). */
static int feed(ndjson_lines *l, http_req *req, const char *body, size_t chunk)
{
    size_t len = strlen(body);
    int rc = 0;
    for (size_t off = 0; off < len && !rc;) {
        size_t n = chunk && len - off > chunk ? chunk : len - off;
        rc = ndjson_lines_feed(l, req, body + off, n);
        off += n;
    }
    int end = ndjson_lines_feed(l, req, NULL, 0);
    return rc ? rc : end;
}

TEST(lines_are_the_same_whatever_the_chunking)
{
    const char *body = "{\"a\":1}\n{\"b\":22}\n\n{\"c\":333}\n";
    const char *want = "1:{\"a\":1}|2:{\"b\":22}|4:{\"c\":333}|";
    for (size_t chunk = 0; chunk <= strlen(body) + 1; chunk++) {
        rows r = {0};
        http_req req = {0};
        ndjson_lines l;
        ndjson_lines_init(&l, 64, on_row, &r);
        CHECK_INT(feed(&l, &req, body, chunk), 0);
        if (strcmp(r.seen, want) != 0)
            fprintf(stderr, "chunk %zu: %s\n", chunk, r.seen);
        CHECK_STR(r.seen, want);
        CHECK_INT(req.fails, 0);
        ndjson_lines_free(&l);
    }
}

TEST(a_last_line_without_newline_is_a_row)
{
    for (size_t chunk = 0; chunk < 6; chunk++) {
        rows r = {0};
        http_req req = {0};
        ndjson_lines l;
        ndjson_lines_init(&l, 64, on_row, &r);
        CHECK_INT(feed(&l, &req, "{\"a\":1}\n{\"z\":9}", chunk), 0);
        CHECK_STR(r.seen, "1:{\"a\":1}|2:{\"z\":9}|");
        ndjson_lines_free(&l);
    }
    /* an empty body, and one of blank lines only, have no rows */
    const char *blank[] = {"", "\n", "\n\n  \n\t\r\n", "   "};
    for (size_t i = 0; i < sizeof blank / sizeof blank[0]; i++) {
        rows r = {0};
        http_req req = {0};
        ndjson_lines l;
        ndjson_lines_init(&l, 64, on_row, &r);
        CHECK_INT(feed(&l, &req, blank[i], 1), 0);
        CHECK_INT(r.n, 0);
        ndjson_lines_free(&l);
    }
}

TEST(crlf_lines_reach_the_row_with_their_cr_and_blank_ones_are_skipped)
{
    for (size_t chunk = 0; chunk < 5; chunk++) {
        rows r = {0};
        http_req req = {0};
        ndjson_lines l;
        ndjson_lines_init(&l, 64, on_row, &r);
        CHECK_INT(feed(&l, &req, "{\"a\":1}\r\n\r\n{\"b\":2}\r\n", chunk), 0);
        /* the row parser (JSON) takes the trailing CR as whitespace */
        CHECK_STR(r.seen, "1:{\"a\":1}\r|3:{\"b\":2}\r|");
        ndjson_lines_free(&l);
    }
}

TEST(a_line_of_exactly_the_limit_passes_one_byte_more_is_413)
{
    enum { MAX = 16 };
    char body[64];
    /* MAX bytes then '\n': fine, in any chunking */
    memset(body, 'x', MAX);
    body[MAX] = '\n';
    body[MAX + 1] = 0;
    for (size_t chunk = 0; chunk < 5; chunk++) {
        rows r = {0};
        http_req req = {0};
        ndjson_lines l;
        ndjson_lines_init(&l, MAX, on_row, &r);
        CHECK_INT(feed(&l, &req, body, chunk), 0);
        CHECK_INT(r.n, 1);
        CHECK_INT(req.fails, 0);
        ndjson_lines_free(&l);
    }
    /* MAX + 1 bytes on line 2: 413 naming line 2, whether the line arrives
     * whole, cut across chunks, or without its newline */
    const char *tails[] = {"\n", ""};
    for (size_t t = 0; t < 2; t++) {
        snprintf(body, sizeof body, "{}\n%.*s%s", MAX + 1, "yyyyyyyyyyyyyyyyyyyyyyyy", tails[t]);
        for (size_t chunk = 0; chunk < 6; chunk++) {
            rows r = {0};
            http_req req = {0};
            ndjson_lines l;
            ndjson_lines_init(&l, MAX, on_row, &r);
            CHECK(feed(&l, &req, body, chunk) != 0);
            CHECK_INT(req.status, 413);
            CHECK_STR(req.msg, "Line 2 is over the limit of 16 bytes.");
            CHECK_STR(r.seen, "1:{}|"); /* the line before was a row, the long one not */
            /* later chunks and the end are refused too, with no second reply */
            CHECK(ndjson_lines_feed(&l, &req, "{}\n", 3) != 0);
            CHECK(ndjson_lines_feed(&l, &req, NULL, 0) != 0);
            CHECK_INT(req.fails, 1);
            CHECK_INT(r.n, 1);
            ndjson_lines_free(&l);
        }
    }
}

TEST(a_row_that_fails_stops_the_body)
{
    for (size_t chunk = 0; chunk < 4; chunk++) {
        rows r = {.stop_at = 2};
        http_req req = {0};
        ndjson_lines l;
        ndjson_lines_init(&l, 64, on_row, &r);
        CHECK(feed(&l, &req, "1\n2\n3\n4\n", chunk) != 0);
        CHECK_STR(r.seen, "1:1|2:2|");
        CHECK_INT(req.status, 400);
        CHECK_STR(req.msg, "Line 2: bad.");
        CHECK(ndjson_lines_feed(&l, &req, "5\n", 2) != 0);
        CHECK_INT(r.n, 2);
        CHECK_INT(req.fails, 1);
        ndjson_lines_free(&l);
    }
}

TEST(many_lines_in_one_chunk_and_one_line_over_many)
{
    /* 1000 short lines at once */
    static char big[16000];
    size_t at = 0;
    for (int i = 0; i < 1000; i++)
        at += (size_t)snprintf(big + at, sizeof big - at, "%d\n", i);
    rows r = {0};
    http_req req = {0};
    ndjson_lines l;
    ndjson_lines_init(&l, 8, on_row, &r);
    CHECK_INT(ndjson_lines_feed(&l, &req, big, at), 0);
    CHECK_INT(ndjson_lines_feed(&l, &req, NULL, 0), 0);
    CHECK_INT(r.n, 1000);
    CHECK_INT(l.lineno, 1000);
    ndjson_lines_free(&l);
    /* a line of 10000 bytes fed one byte at a time */
    static char lng[10002];
    memset(lng, 'q', 10000);
    lng[10000] = '\n';
    lng[10001] = 0;
    rows r2 = {0};
    ndjson_lines_init(&l, 10000, on_row, &r2);
    CHECK_INT(feed(&l, &req, lng, 1), 0);
    CHECK_INT(r2.n, 1);
    CHECK_INT(req.fails, 0);
    ndjson_lines_free(&l);
}

static const test_case tests[] = {
    TEST_ENTRY(lines_are_the_same_whatever_the_chunking),
    TEST_ENTRY(a_last_line_without_newline_is_a_row),
    TEST_ENTRY(crlf_lines_reach_the_row_with_their_cr_and_blank_ones_are_skipped),
    TEST_ENTRY(a_line_of_exactly_the_limit_passes_one_byte_more_is_413),
    TEST_ENTRY(a_row_that_fails_stops_the_body),
    TEST_ENTRY(many_lines_in_one_chunk_and_one_line_over_many),
};

TEST_MAIN(tests)
