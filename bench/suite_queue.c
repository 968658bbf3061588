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
        json_array_append_new(one, harness_record(i));
        json_t *ids;
        if (queue_enqueue_many(q, one, &ids, &err))
            harness_die("enqueue", &err);
        json_decref(ids);
    }
    json_decref(one);
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

    /* the bulk calls as storh's bench makes them: one enqueueMany() of
     * every job (building the rows included), one claimMany(n), one
     * completeMany() of every id */
    queue_open(o->work, "many", true, &q, NULL);
    json_t *ids;
    t = harness_now();
    json_t *jobs = json_array();
    for (long i = 0; i < n; i++)
        json_array_append_new(jobs, harness_record(i));
    if (queue_enqueue_many(q, jobs, &ids, &err))
        harness_die("enqueueMany", &err);
    bench_add(r, "queue.enqueue_many", n / (harness_now() - t), "jobs/s", "higher",
              "enqueueMany() of every job");
    json_decref(ids);
    json_decref(jobs);
    json_t *all;
    t = harness_now();
    if (queue_claim(q, (size_t)n, &all, &err))
        harness_die("claimMany", &err);
    bench_add(r, "queue.claim_many", n / (harness_now() - t), "jobs/s", "higher",
              "claimMany(n), one call");
    json_t *idl = json_array();
    for (size_t i = 0; i < json_array_size(all); i++)
        json_array_append(idl, json_object_get(json_array_get(all, i), "id"));
    size_t done;
    t = harness_now();
    if (queue_complete_many(q, idl, true, &done, &err))
        harness_die("completeMany", &err);
    bench_add(r, "queue.complete_many", n / (harness_now() - t), "jobs/s", "higher",
              "completeMany() of every id, one call");
    json_decref(idl);
    json_decref(all);
    queue_close(q);
}
