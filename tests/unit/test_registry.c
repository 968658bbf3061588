/* test_registry: the bounded set of open engines (held engines are never
 * closed, idle ones go least recently used first and reopen with their
 * data, a budget of held engines is STORH_ELIMIT, threads racing on a small
 * budget) and the record caches' process-wide byte budget. */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "../test.h"
#include "../tmpdir.h"
#include "rcache.h"
#include "registry.h"

static char root[PATH_MAX];

static seglog_opts opts(void)
{
    seglog_opts o;
    seglog_opts_default(&o);
    return o;
}

TEST(held_engines_stay_open_idle_ones_go_oldest_first)
{
    registry *r = registry_new(root, 0, 0, 0, 2);
    registry_holder h1 = {0}, h2 = {0}, h3 = {0};
    seglog_opts o = opts();
    seglog *a, *b, *c;
    storh_err err;
    CHECK_INT(registry_seglog(r, &h1, "a", &o, true, &a, &err), 0);
    CHECK_INT(registry_seglog(r, &h2, "b", &o, true, &b, &err), 0);
    char idb[UUID7_LEN + 1], ida[UUID7_LEN + 1];
    json_t *v = json_pack("{si}", "n", 1);
    CHECK_INT(seglog_put(b, NULL, v, idb, &err), 0);
    registry_release(r, &h2); /* b idle */
    /* the third engine takes b's place, never a's */
    CHECK_INT(registry_seglog(r, &h3, "c", &o, true, &c, &err), 0);
    CHECK_INT(seglog_put(a, NULL, v, ida, &err), 0); /* a still usable */
    registry_stats s;
    registry_get_stats(r, &s);
    CHECK_INT(s.open[REGISTRY_LOG], 2);
    CHECK_INT(s.held, 2);
    CHECK_INT(s.evictions, 1);
    /* all held: a fourth is refused, and nothing is closed */
    seglog *d;
    CHECK_INT(registry_seglog(r, &h2, "d", &o, true, &d, &err), STORH_ELIMIT);
    CHECK(strstr(err.msg, "--max-open-engines") != NULL);
    CHECK_INT(h2.n, 0);
    registry_release(r, &h1);
    /* b reopens with its record */
    CHECK_INT(registry_seglog(r, &h2, "b", &o, false, &b, &err), 0);
    json_t *got = NULL;
    CHECK_INT(seglog_get(b, idb, &got, &err), 0);
    CHECK_INT(json_integer_value(json_object_get(got, "n")), 1);
    json_decref(got);
    registry_get_stats(r, &s);
    CHECK_INT(s.reopens, 1);
    CHECK_INT(s.refusals, 1);
    /* the same engine twice in one holder is held once */
    CHECK_INT(registry_seglog(r, &h2, "b", &o, false, &b, &err), 0);
    CHECK_INT(h2.n, 1);
    /* a missing log is 404 and leaves no entry behind (it made room: c) */
    registry_release(r, &h3);
    CHECK_INT(registry_seglog(r, &h3, "missing", &o, false, &d, &err), STORH_ENOTFOUND);
    CHECK_INT(h3.n, 0);
    registry_get_stats(r, &s);
    CHECK_INT(s.open[REGISTRY_LOG], 1);
    registry_release(r, &h2);
    json_decref(v);
    registry_free(r);
}

typedef struct racer {
    registry *r;
    int seed, ok, refused, wrong;
} racer;

static void *race(void *p)
{
    racer *x = p;
    for (int i = 0; i < 400; i++) {
        registry_holder h = {0};
        char name[16];
        snprintf(name, sizeof name, "q%d", (x->seed * 7 + i) % 12);
        queue *q;
        storh_err err;
        int rc = registry_queue(x->r, &h, name, true, &q, &err);
        if (rc == 0) {
            json_t *c;
            x->ok += queue_counts(q, &c, &err) == 0;
            json_decref(c);
            docstore *ds; /* a second engine in the same holder */
            if (registry_docstore(x->r, &h, name, &ds, &err) == 0)
                x->wrong += strstr(docstore_dir(ds), name) == NULL;
        } else {
            x->refused += rc == STORH_ELIMIT;
            x->wrong += rc != STORH_ELIMIT;
        }
        registry_release(x->r, &h);
    }
    return NULL;
}

TEST(threads_race_on_a_small_budget)
{
    registry *r = registry_new(root, 0, 0, 0, 5);
    racer x[4];
    pthread_t t[4];
    for (int i = 0; i < 4; i++) {
        x[i] = (racer){r, i, 0, 0, 0};
        pthread_create(&t[i], NULL, race, &x[i]);
    }
    int ok = 0;
    for (int i = 0; i < 4; i++) {
        pthread_join(t[i], NULL);
        ok += x[i].ok;
        CHECK_INT(x[i].wrong, 0);
    }
    CHECK(ok > 0);
    registry_stats s;
    registry_get_stats(r, &s);
    CHECK(s.open[REGISTRY_DOC] + s.open[REGISTRY_QUEUE] <= 5);
    CHECK_INT(s.held, 0);
    registry_free(r);
}

TEST(one_budget_over_every_cache)
{
    rcache *a = rcache_new(RCACHE_TRUST, 1000, 1 << 20);
    rcache *b = rcache_new(RCACHE_TRUST, 1000, 1 << 20);
    json_t *v = json_pack("{ss}", "s", "x");
    char id[UUID7_LEN + 1] = "01a23b42-4943-73c3-92fe-eb3965ad3400";
    rcache_stats st;
    rcache_totals(&st);
    uint64_t base = st.bytes;
    rcache_set_budget(base + 40 * 200); /* about 40 entries of 200 bytes */
    for (int i = 0; i < 30; i++) {
        snprintf(id + 34, 3, "%02d", i);
        rcache_put(a, id, v, NULL, "0123456789012345678901234567890123456789", 40);
    }
    json_t *got = NULL;
    snprintf(id + 34, 3, "%02d", 0);
    CHECK_INT(rcache_get(a, id, "", &got), RCACHE_HIT); /* a's first is now its newest */
    json_decref(got);
    for (int i = 0; i < 30; i++) {
        snprintf(id + 34, 3, "%02d", i);
        rcache_put(b, id, v, NULL, "0123456789012345678901234567890123456789", 40);
    }
    rcache_totals(&st);
    CHECK(st.bytes - base <= 40 * 200);
    CHECK(rcache_budget_evictions() > 0);
    /* least recently used across both: a's old entries went, a's touched
     * one and b's newest stayed */
    snprintf(id + 34, 3, "%02d", 5);
    CHECK_INT(rcache_get(a, id, "", &got), RCACHE_MISS);
    snprintf(id + 34, 3, "%02d", 0);
    got = NULL;
    CHECK_INT(rcache_get(a, id, "", &got), RCACHE_HIT);
    json_decref(got);
    snprintf(id + 34, 3, "%02d", 29);
    got = NULL;
    CHECK_INT(rcache_get(b, id, "", &got), RCACHE_HIT);
    json_decref(got);
    rcache_set_budget(0);
    rcache_free(a);
    rcache_free(b);
    json_decref(v);
}

static const test_case tests[] = {
    {"held_engines_stay_open_idle_ones_go_oldest_first",
     held_engines_stay_open_idle_ones_go_oldest_first},
    TEST_ENTRY(threads_race_on_a_small_budget),
    TEST_ENTRY(one_budget_over_every_cache),
};

TMPDIR_TEST_MAIN(root, tests)
