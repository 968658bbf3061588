/* test_workpool: the worker threads behind the HTTP loops (FIFO on one
 * worker, shutdown finishes what was queued and then refuses, tasks run
 * side by side on several workers, many threads submitting at once lose
 * nothing, shutdown and free are idempotent, no workers is no pool). The
 * queue has no bound: a submit fails only out of memory or after shutdown. */
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "../test.h"
#include "workpool.h"

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;

typedef struct order {
    int seen[256];
    int n;
} order;

typedef struct step {
    order *o;
    int i;
} step;

static void record(void *arg)
{
    step *s = arg;
    pthread_mutex_lock(&mu);
    s->o->seen[s->o->n++] = s->i;
    pthread_mutex_unlock(&mu);
}

/* A task that holds its worker until the gate opens. */
typedef struct gate {
    int open, entered;
} gate;

static void wait_gate(void *arg)
{
    gate *g = arg;
    pthread_mutex_lock(&mu);
    g->entered++;
    pthread_cond_broadcast(&cv);
    while (!g->open)
        pthread_cond_wait(&cv, &mu);
    pthread_mutex_unlock(&mu);
}

/* Waits (a generous bound: liveness, not timing) until *v >= n. */
static int wait_at_least(const int *v, int n)
{
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += 30;
    pthread_mutex_lock(&mu);
    while (*v < n)
        if (pthread_cond_timedwait(&cv, &mu, &until) != 0)
            break;
    int got = *v;
    pthread_mutex_unlock(&mu);
    return got;
}

static void open_gate(gate *g)
{
    pthread_mutex_lock(&mu);
    g->open = 1;
    pthread_cond_broadcast(&cv);
    pthread_mutex_unlock(&mu);
}

TEST(one_worker_runs_tasks_in_submit_order)
{
    workpool *p = workpool_new(1);
    CHECK(p != NULL);
    gate g = {0};
    /* the worker is busy while the queue fills, so order is the queue's */
    CHECK_INT(workpool_submit(p, wait_gate, &g), 0);
    CHECK_INT(wait_at_least(&g.entered, 1), 1);
    static order o;
    static step steps[200];
    for (int i = 0; i < 200; i++) {
        steps[i] = (step){&o, i};
        CHECK_INT(workpool_submit(p, record, &steps[i]), 0);
    }
    open_gate(&g);
    workpool_shutdown(p);
    CHECK_INT(o.n, 200);
    int out_of_order = 0;
    for (int i = 0; i < o.n; i++)
        if (o.seen[i] != i)
            out_of_order++;
    CHECK_INT(out_of_order, 0);
    workpool_free(p);
}

static void *shut(void *p)
{
    workpool_shutdown(p);
    return NULL;
}

typedef struct counter {
    int n;
} counter;

static void bump(void *arg)
{
    counter *c = arg;
    pthread_mutex_lock(&mu);
    c->n++;
    pthread_mutex_unlock(&mu);
}

TEST(shutdown_finishes_the_queue_then_refuses)
{
    workpool *p = workpool_new(2);
    CHECK(p != NULL);
    gate g = {0};
    CHECK_INT(workpool_submit(p, wait_gate, &g), 0);
    CHECK_INT(workpool_submit(p, wait_gate, &g), 0);
    CHECK_INT(wait_at_least(&g.entered, 2), 2);
    static order o;
    static step steps[50];
    for (int i = 0; i < 50; i++) {
        steps[i] = (step){&o, i};
        CHECK_INT(workpool_submit(p, record, &steps[i]), 0);
    }
    /* shutdown begins with both workers busy and 50 tasks queued */
    pthread_t t;
    pthread_create(&t, NULL, shut, p);
    counter extra = {0};
    int accepted = 0;
    while (workpool_submit(p, bump, &extra) == 0) /* until shutdown has begun */
        accepted++;
    open_gate(&g);
    pthread_join(t, NULL);
    /* it returned only once every queued task had run */
    CHECK_INT(o.n, 50);
    CHECK_INT(extra.n, accepted);
    /* later submits fail and run nothing */
    step late = {&o, 999};
    CHECK_INT(workpool_submit(p, record, &late), -1);
    workpool_shutdown(p); /* twice is fine */
    workpool_free(p);
    CHECK_INT(o.n, 50);
}

TEST(tasks_run_side_by_side_on_several_workers)
{
    enum { W = 4 };
    workpool *p = workpool_new(W);
    CHECK(p != NULL);
    gate g = {0};
    /* every worker holds a task at once: none could finish before all began */
    for (int i = 0; i < W; i++)
        CHECK_INT(workpool_submit(p, wait_gate, &g), 0);
    CHECK_INT(wait_at_least(&g.entered, W), W);
    open_gate(&g);
    workpool_free(p);
}

enum { SUBMITTERS = 4, EACH = 2000 };

typedef struct submitter {
    workpool *p;
    counter *c;
    int failed;
} submitter;

static void *submit_loop(void *arg)
{
    submitter *s = arg;
    for (int i = 0; i < EACH; i++)
        if (workpool_submit(s->p, bump, s->c) != 0)
            s->failed++;
    return NULL;
}

TEST(threads_submitting_at_once_lose_no_task)
{
    workpool *p = workpool_new(3);
    CHECK(p != NULL);
    counter c = {0};
    submitter s[SUBMITTERS];
    pthread_t th[SUBMITTERS];
    for (int i = 0; i < SUBMITTERS; i++) {
        s[i] = (submitter){p, &c, 0};
        pthread_create(&th[i], NULL, submit_loop, &s[i]);
    }
    for (int i = 0; i < SUBMITTERS; i++) {
        pthread_join(th[i], NULL);
        CHECK_INT(s[i].failed, 0);
    }
    workpool_shutdown(p);
    CHECK_INT(c.n, SUBMITTERS * EACH);
    workpool_free(p);
}

typedef struct racer {
    workpool *p;
    counter *c;
    int ok;
} racer;

static void *submit_until_refused(void *arg)
{
    racer *r = arg;
    for (int i = 0; i < 100000; i++) {
        if (workpool_submit(r->p, bump, r->c) != 0)
            break;
        r->ok++;
    }
    return NULL;
}

TEST(a_submit_racing_shutdown_either_runs_or_is_refused)
{
    workpool *p = workpool_new(2);
    CHECK(p != NULL);
    counter c = {0};
    racer r[2] = {{p, &c, 0}, {p, &c, 0}};
    pthread_t th[2];
    for (int i = 0; i < 2; i++)
        pthread_create(&th[i], NULL, submit_until_refused, &r[i]);
    nanosleep(&(struct timespec){0, 2000000}, NULL);
    workpool_shutdown(p);
    for (int i = 0; i < 2; i++)
        pthread_join(th[i], NULL);
    /* every accepted task ran, none after the join */
    CHECK_INT(c.n, r[0].ok + r[1].ok);
    workpool_free(p);
    CHECK_INT(c.n, r[0].ok + r[1].ok);
}

TEST(no_workers_is_no_pool_and_free_takes_null)
{
    CHECK(workpool_new(0) == NULL);
    workpool_free(NULL);
    /* free without shutdown finishes the queue first */
    workpool *p = workpool_new(1);
    CHECK(p != NULL);
    counter c = {0};
    for (int i = 0; i < 100; i++)
        CHECK_INT(workpool_submit(p, bump, &c), 0);
    workpool_free(p);
    CHECK_INT(c.n, 100);
}

static const test_case tests[] = {
    TEST_ENTRY(one_worker_runs_tasks_in_submit_order),
    TEST_ENTRY(shutdown_finishes_the_queue_then_refuses),
    TEST_ENTRY(tasks_run_side_by_side_on_several_workers),
    TEST_ENTRY(threads_submitting_at_once_lose_no_task),
    TEST_ENTRY(a_submit_racing_shutdown_either_runs_or_is_refused),
    TEST_ENTRY(no_workers_is_no_pool_and_free_takes_null),
};

TEST_MAIN(tests)
