/* suite_queue (bench): the Queue figures, one job at a time and in bulk. */
#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "suite.h"
#include "queue.h"

/* ---------- Queue ---------- */

void suite_queue(const harness_opts *o, bench_result *r)
{
    long n = o->dataset;
    queue *q;
    storh_err err;
    if (queue_open(o->work, "jobs", true, &q, &err))
        harness_die("queue open", &err);
    json_t *one = json_array();
    double t = harness_now();
    for (long i = 0; i < n; i++) {
        json_array_clear(one);
        json_array_append_new(one, json_pack("{si}", "n", (int)i));
        json_t *ids;
        if (queue_enqueue_many(q, one, &ids, &err))
            harness_die("enqueue", &err);
        json_decref(ids);
    }
    bench_add(r, "queue.enqueue", n / (harness_now() - t), "jobs/s", "higher",
              "enqueue(), fsync after every event");
    json_t *claimed = json_array();
    t = harness_now();
    for (long i = 0; i < n; i++) {
        json_t *c;
        if (queue_claim(q, 1, &c, &err))
            harness_die("claim", &err);
        json_array_extend(claimed, c);
        json_decref(c);
    }
    bench_add(r, "queue.claim", n / (harness_now() - t), "jobs/s", "higher", "claim()");
    t = harness_now();
    for (size_t i = 0; i < json_array_size(claimed); i++) {
        json_t *id = json_pack("[O]", json_object_get(json_array_get(claimed, i), "id"));
        size_t done;
        if (queue_complete_many(q, id, true, &done, &err))
            harness_die("complete", &err);
        json_decref(id);
    }
    bench_add(r, "queue.complete", n / (harness_now() - t), "jobs/s", "higher", "complete()");
    json_decref(claimed);
    queue_close(q);

    queue_open(o->work, "many", true, &q, NULL);
    json_t *jobs = json_array();
    for (long i = 0; i < n; i++)
        json_array_append_new(jobs, json_pack("{si}", "n", (int)i));
    json_t *ids;
    t = harness_now();
    if (queue_enqueue_many(q, jobs, &ids, &err))
        harness_die("enqueueMany", &err);
    bench_add(r, "queue.enqueue_many", n / (harness_now() - t), "jobs/s", "higher",
              "enqueueMany()");
    json_decref(ids);
    json_decref(jobs);
    json_t *all = json_array();
    t = harness_now();
    for (;;) {
        json_t *c;
        if (queue_claim(q, 1000, &c, &err))
            harness_die("claimMany", &err);
        size_t got = json_array_size(c);
        json_array_extend(all, c);
        json_decref(c);
        if (!got)
            break;
    }
    bench_add(r, "queue.claim_many", n / (harness_now() - t), "jobs/s", "higher",
              "claimMany() in batches of 1000");
    json_t *idl = json_array();
    for (size_t i = 0; i < json_array_size(all); i++)
        json_array_append(idl, json_object_get(json_array_get(all, i), "id"));
    t = harness_now();
    for (size_t i = 0; i < json_array_size(idl); i += 1000) {
        json_t *part = json_array();
        for (size_t k = i; k < i + 1000 && k < json_array_size(idl); k++)
            json_array_append(part, json_array_get(idl, k));
        size_t done;
        if (queue_complete_many(q, part, true, &done, &err))
            harness_die("completeMany", &err);
        json_decref(part);
    }
    bench_add(r, "queue.complete_many", n / (harness_now() - t), "jobs/s", "higher",
              "completeMany() in batches of 1000");
    json_decref(idl);
    json_decref(all);
    queue_close(q);
}
