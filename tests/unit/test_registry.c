/* test_registry: the bounded set of open engines (held engines are never
 * closed, idle ones go least recently used first and reopen with their
 * data, a budget of held engines is STORH_ELIMIT, threads racing on a small
 * budget) and the record caches' process-wide byte budget. */
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

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
        rcache_put(a, id, v, NULL, "0123456789012345678901234567890123456789", 40, NULL);
    }
    json_t *got = NULL;
    snprintf(id + 34, 3, "%02d", 0);
    CHECK_INT(rcache_get(a, id, "", &got), RCACHE_HIT); /* a's first is now its newest */
    json_decref(got);
    for (int i = 0; i < 30; i++) {
        snprintf(id + 34, 3, "%02d", i);
        rcache_put(b, id, v, NULL, "0123456789012345678901234567890123456789", 40, NULL);
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

/* Holds then lets go of log name in a holder of its own. */
static int touch(registry *r, const char *name)
{
    registry_holder h = {0};
    seglog_opts o = opts();
    seglog *s;
    storh_err err;
    int rc = registry_seglog(r, &h, name, &o, true, &s, &err);
    registry_release(r, &h);
    return rc;
}

TEST(a_use_makes_an_idle_engine_young_again)
{
    registry *r = registry_new(root, 0, 0, 0, 3);
    CHECK_INT(touch(r, "lru-a"), 0);
    CHECK_INT(touch(r, "lru-b"), 0);
    CHECK_INT(touch(r, "lru-c"), 0);
    CHECK_INT(touch(r, "lru-a"), 0); /* a is now the newest idle one */
    registry_stats s;
    registry_get_stats(r, &s);
    CHECK_INT(s.opens, 3);
    CHECK_INT(s.evictions, 0);
    CHECK_INT(touch(r, "lru-d"), 0); /* b goes, the least recently used */
    registry_get_stats(r, &s);
    CHECK_INT(s.evictions, 1);
    CHECK_INT(s.open[REGISTRY_LOG], 3);
    CHECK_INT(touch(r, "lru-a"), 0); /* still open: no open, no reopen */
    registry_get_stats(r, &s);
    CHECK_INT(s.opens, 4);
    CHECK_INT(s.reopens, 0);
    CHECK_INT(touch(r, "lru-b"), 0); /* reopened, c made room */
    registry_get_stats(r, &s);
    CHECK_INT(s.opens, 5);
    CHECK_INT(s.reopens, 1);
    CHECK_INT(s.evictions, 2);
    CHECK_INT(touch(r, "lru-d"), 0); /* d outlived c */
    registry_get_stats(r, &s);
    CHECK_INT(s.opens, 5);
    CHECK_INT(s.held, 0);
    CHECK_INT(s.max_open, 3);
    registry_free(r);
}

TEST(a_holder_past_its_inline_slots_holds_them_all)
{
    registry *r = registry_new(root, 0, 0, 0, 6);
    registry_holder h = {0};
    char name[16];
    storh_err err;
    for (int i = 0; i < 6; i++) { /* more than REGISTRY_HOLD_INLINE */
        snprintf(name, sizeof name, "many%d", i);
        docstore *d;
        CHECK_INT(registry_docstore(r, &h, name, &d, &err), 0);
    }
    CHECK_INT(h.n, 6);
    registry_stats s;
    registry_get_stats(r, &s);
    CHECK_INT(s.held, 6);
    CHECK_INT(s.open[REGISTRY_DOC], 6);
    /* the budget is the held engines': the seventh is refused, nothing closes */
    docstore *d7;
    CHECK_INT(registry_docstore(r, &h, "many6", &d7, &err), STORH_ELIMIT);
    CHECK_INT(err.code, STORH_ELIMIT);
    CHECK_INT(h.n, 6);
    registry_get_stats(r, &s);
    CHECK_INT(s.refusals, 1);
    CHECK_INT(s.evictions, 0);
    registry_release(r, &h);
    CHECK_INT(h.n, 0);
    registry_get_stats(r, &s);
    CHECK_INT(s.held, 0);
    CHECK_INT(s.open[REGISTRY_DOC], 6);
    /* released: the seventh now finds room, and h is reusable */
    CHECK_INT(registry_docstore(r, &h, "many6", &d7, &err), 0);
    registry_release(r, &h);
    registry_free(r);
}

TEST(shedding_closes_idle_engines_and_lowers_the_budget)
{
    registry *r = registry_new(root, 0, 0, 0, 40);
    char name[16];
    for (int i = 0; i < 20; i++) {
        snprintf(name, sizeof name, "shed%d", i);
        CHECK_INT(touch(r, name), 0);
    }
    registry_holder h = {0};
    seglog_opts o = opts();
    seglog *kept;
    storh_err err;
    CHECK_INT(registry_seglog(r, &h, "shed-held", &o, true, &kept, &err), 0);
    registry_shed_idle(r); /* a quarter of the idle ones, at least 8 */
    registry_stats s;
    registry_get_stats(r, &s);
    CHECK_INT(s.evictions, 8);
    CHECK_INT(s.open[REGISTRY_LOG], 13);
    CHECK_INT(s.held, 1);
    CHECK_INT(s.max_open, 13); /* the budget learns what descriptors allow */
    char id[UUID7_LEN + 1];
    json_t *v = json_pack("{si}", "n", 1);
    CHECK_INT(seglog_put(kept, NULL, v, id, &err), 0); /* the held one still works */
    json_decref(v);
    /* the oldest went first: shed0..shed7 reopen, shed19 is still open */
    CHECK_INT(touch(r, "shed19"), 0);
    registry_get_stats(r, &s);
    CHECK_INT(s.reopens, 0);
    CHECK_INT(touch(r, "shed0"), 0);
    registry_get_stats(r, &s);
    CHECK_INT(s.reopens, 1);
    CHECK(s.open[REGISTRY_LOG] <= 13);
    registry_release(r, &h);
    /* shedding when nearly nothing is open never takes the budget below 4 */
    registry *small = registry_new(root, 0, 0, 0, 10);
    CHECK_INT(touch(small, "tiny"), 0);
    registry_shed_idle(small);
    registry_get_stats(small, &s);
    CHECK_INT(s.open[REGISTRY_LOG], 0);
    CHECK_INT(s.max_open, 4);
    registry_free(small);
    registry_free(r);
}

static void count_queue(void *ctx, const char *name, queue *q)
{
    char *seen = ctx;
    CHECK(q != NULL);
    strcat(seen, name);
    strcat(seen, ";");
}

TEST(missing_logs_and_queues_are_404_and_create_nothing)
{
    registry *r = registry_new(root, 0, 0, 0, 8);
    registry_holder h = {0};
    seglog_opts o = opts();
    seglog *s;
    queue *q;
    storh_err err;
    CHECK_INT(registry_seglog(r, &h, "nolog", &o, false, &s, &err), STORH_ENOTFOUND);
    CHECK_INT(registry_queue(r, &h, "noqueue", false, &q, &err), STORH_ENOTFOUND);
    CHECK_INT(h.n, 0);
    char path[PATH_MAX + 32];
    snprintf(path, sizeof path, "%s/nolog", root);
    CHECK(access(path, F_OK) != 0);
    snprintf(path, sizeof path, "%s/noqueue", root);
    CHECK(access(path, F_OK) != 0);
    registry_stats st;
    registry_get_stats(r, &st);
    CHECK_INT(st.open[REGISTRY_LOG] + st.open[REGISTRY_QUEUE], 0);
    /* created on request; each_queue sees the open queues only */
    CHECK_INT(registry_queue(r, &h, "jobs1", true, &q, &err), 0);
    CHECK_INT(registry_queue(r, &h, "jobs2", true, &q, &err), 0);
    CHECK_INT(registry_seglog(r, &h, "alog", &o, true, &s, &err), 0);
    registry_release(r, &h);
    char seen[128] = "";
    registry_each_queue(r, count_queue, seen);
    CHECK(strstr(seen, "jobs1;") != NULL);
    CHECK(strstr(seen, "jobs2;") != NULL);
    CHECK_INT(strlen(seen), strlen("jobs1;jobs2;"));
    registry_get_stats(r, &st);
    CHECK_INT(st.held, 0); /* each_queue let go of what it held */
    /* a queue and a log of one name are two engines */
    CHECK_INT(registry_queue(r, &h, "alog", true, &q, &err), 0);
    CHECK_INT(h.n, 1);
    registry_release(r, &h);
    registry_free(r);
}

static const test_case tests[] = {
    {"held_engines_stay_open_idle_ones_go_oldest_first",
     held_engines_stay_open_idle_ones_go_oldest_first},
    TEST_ENTRY(threads_race_on_a_small_budget),
    TEST_ENTRY(one_budget_over_every_cache),
    TEST_ENTRY(a_use_makes_an_idle_engine_young_again),
    TEST_ENTRY(a_holder_past_its_inline_slots_holds_them_all),
    TEST_ENTRY(shedding_closes_idle_engines_and_lowers_the_budget),
    TEST_ENTRY(missing_logs_and_queues_are_404_and_create_nothing),
};

TMPDIR_TEST_MAIN(root, tests)
