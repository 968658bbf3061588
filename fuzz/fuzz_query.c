/* libFuzzer: the REST query body parser and the predicate over a few
 * records of every type. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "query.h"
#include "sjson.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    json_t *body = sjson_decode((const char *)data, size, NULL);
    if (!body)
        return 0;
    query q;
    if (query_parse(body, &q, NULL) == 0) {
        static const char *const rows[] = {
            "{\"k\":1,\"s\":\"abc\",\"f\":1.5,\"b\":true,\"n\":null}",
            "{\"k\":[1,2],\"o\":{\"a\":1}}", "{}", "[1]"};
        json_t *all = json_array();
        for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
            json_t *r = sjson_decode(rows[i], strlen(rows[i]), NULL);
            query_match(&q, "018bcfe5-6800-7000-8000-000000000000", r);
            json_array_append_new(
                all, json_pack("{ssso}", "id", "018bcfe5-6800-7000-8000-000000000000", "data", r));
        }
        json_decref(query_result(&q, all, true));
        query_free(&q);
    }
    json_decref(body);
    return 0;
}
