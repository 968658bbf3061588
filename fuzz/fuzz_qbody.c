/* libFuzzer: the queue's byte path readers against the tree path. Whatever
 * queue_jobs_read takes as an enqueue body must decode (sjson) to jobs that
 * queue_check_jobs accepts, as many, with the same given ids and payloads
 * whose encoding is the byte path's span; whatever queue_ids_read takes as
 * a complete's body must decode to the same ids. A difference aborts. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "queue.h"
#include "sjson.h"

static void check_jobs(const char *b, size_t n, const queue_jobs *js)
{
    json_t *v = sjson_decode(b, n, NULL);
    if (!v)
        abort();
    json_t *jobs = json_is_object(v) ? json_pack("[O]", v) : json_incref(v);
    if (!jobs || queue_check_jobs(jobs, NULL) != 0 || json_array_size(jobs) != js->n)
        abort();
    for (size_t i = 0; i < js->n; i++) {
        const json_t *job = json_array_get(jobs, i), *id = json_object_get(job, "id");
        const json_t *p = json_object_get(job, "payload");
        if (!json_is_object(p) && !json_is_array(p))
            p = job;
        if (json_is_string(id) != (js->v[i].id != NULL) ||
            (js->v[i].id && memcmp(js->v[i].id, json_string_value(id), UUID7_LEN)))
            abort();
        buf e = BUF_INIT;
        if (sjson_encode(&e, p, 0, NULL) != 0 || e.len != js->v[i].len ||
            memcmp(e.data, js->v[i].payload, e.len))
            abort();
        buf_free(&e);
    }
    json_decref(jobs);
    json_decref(v);
}

static void check_ids(const char *b, size_t n, const queue_ids *qi)
{
    json_t *v = sjson_decode(b, n, NULL);
    json_t *ids = json_object_get(v, "ids");
    if (!json_is_object(v) || !json_is_array(ids) || json_array_size(ids) != qi->n)
        abort();
    for (size_t i = 0; i < qi->n; i++) {
        const json_t *s = json_array_get(ids, i);
        if (json_string_length(s) != UUID7_LEN || memcmp(json_string_value(s), qi->v[i], UUID7_LEN))
            abort();
    }
    json_decref(v);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *b = (const char *)data;
    queue_jobs js = QUEUE_JOBS_INIT;
    if (queue_jobs_read(b, size, &js))
        check_jobs(b, size, &js);
    queue_jobs_free(&js);
    queue_ids qi = QUEUE_IDS_INIT;
    if (queue_ids_read(b, size, &qi))
        check_ids(b, size, &qi);
    queue_ids_free(&qi);
    return 0;
}
