/* libFuzzer: storh's JSONC object reader and the canonical encoder behind
 * it (decode, then re-encode what was accepted). */
#include <stddef.h>
#include <stdint.h>

#include "sjson.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    json_t *v = sjson_decode_jsonc_object((const char *)data, size, NULL);
    if (v) {
        buf b = BUF_INIT;
        sjson_encode_doc(&b, v, 0, NULL);
        sjson_encode_doc(&b, v, SJSON_PRETTY, NULL);
        buf_free(&b);
        json_decref(v);
    }
    return 0;
}
