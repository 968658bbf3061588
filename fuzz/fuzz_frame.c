/* libFuzzer: the framed-line readers of the segmented log (lenient) and the
 * queue (strict), and the log's envelope data rule. */
#include <stddef.h>
#include <stdint.h>

#include "frame.h"
#include "seglog.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *j;
    size_t jl;
    for (int strict = 0; strict < 2; strict++) {
        if (frame_decode((const char *)data, size, strict, &j, &jl, NULL) != 0)
            continue;
        json_t *env = json_loadb(j, jl, JSON_ALLOW_NUL, NULL);
        json_t *d = seglog_envelope_data(env);
        json_decref(d);
        json_decref(env);
    }
    return 0;
}
