/* test_longpoll: parking requests on a key (a kick wakes that key's
 * requests only, a kick between trying and parking requeues at once, the
 * deadline and the re-poll wake without a kick, stop answers everyone and
 * later parks are refused, keys past the generation table still wake, and
 * threads parking and kicking at once lose no request). The request is a
 * stand-in recording http_park and http_requeue: the binary links
 * longpoll.c alone. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "../test.h"
#include "http.h"
#include "longpoll.h"

struct http_req {
    int parks, requeues;
    int (*fn)(http_req *);
    uint64_t requeued_at; /* longpoll_now_us() of the last requeue */
};

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;

void http_park(http_req *req)
{
    pthread_mutex_lock(&mu);
    req->parks++;
    pthread_mutex_unlock(&mu);
}

void http_requeue(http_req *req, int (*fn)(http_req *req))
{
    pthread_mutex_lock(&mu);
    req->requeues++;
    req->fn = fn;
    req->requeued_at = longpoll_now_us();
    pthread_cond_broadcast(&cv);
    pthread_mutex_unlock(&mu);
}

static int retry(http_req *req)
{
    (void)req;
    return 0;
}

static int requeues(http_req *req)
{
    pthread_mutex_lock(&mu);
    int n = req->requeues;
    pthread_mutex_unlock(&mu);
    return n;
}

/* Waits until req has been requeued n times (or a generous bound passes:
 * this is a liveness check, not a timing one); returns the count. */
static int wait_requeues(http_req *req, int n)
{
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += 30;
    pthread_mutex_lock(&mu);
    while (req->requeues < n)
        if (pthread_cond_timedwait(&cv, &mu, &until) != 0)
            break;
    int got = req->requeues;
    pthread_mutex_unlock(&mu);
    return got;
}

#define FAR (longpoll_now_us() + 600u * 1000000u)

TEST(a_kick_wakes_the_requests_parked_on_its_key_only)
{
    CHECK_INT(longpoll_start(), 0);
    http_req a = {0}, a2 = {0}, b = {0};
    uint64_t ga = longpoll_generation("queue-a"), gb = longpoll_generation("queue-b");
    uint64_t parked_at = longpoll_now_us();
    CHECK(longpoll_park("queue-a", &a, FAR, retry, ga));
    CHECK(longpoll_park("queue-a", &a2, FAR, retry, ga));
    CHECK(longpoll_park("queue-b", &b, FAR, retry, gb));
    CHECK_INT(a.parks, 1);
    CHECK_INT(b.parks, 1);
    longpoll_kick("queue-a");
    CHECK_INT(wait_requeues(&a, 1), 1);
    CHECK_INT(wait_requeues(&a2, 1), 1);
    CHECK(a.fn == retry);
    CHECK_INT(longpoll_generation("queue-a"), ga + 1);
    CHECK_INT(longpoll_generation("queue-b"), gb);
    /* b was not kicked: if it was requeued at all, the re-poll did it, and
     * not before the re-poll interval (250 ms) */
    pthread_mutex_lock(&mu);
    if (b.requeues)
        CHECK(b.requeued_at >= parked_at + 250000);
    pthread_mutex_unlock(&mu);
    longpoll_kick("queue-c"); /* nobody parked there */
    longpoll_stop();
    CHECK_INT(requeues(&a), 1); /* a kicked request is not answered twice */
    CHECK_INT(requeues(&b), 1);
    CHECK_INT(longpoll_parked(), 0);
}

TEST(a_kick_between_trying_and_parking_requeues_at_once)
{
    CHECK_INT(longpoll_start(), 0);
    http_req r = {0};
    uint64_t seen = longpoll_generation("jobs");
    longpoll_kick("jobs"); /* an enqueue after the try found nothing */
    CHECK(longpoll_park("jobs", &r, FAR, retry, seen));
    CHECK_INT(r.parks, 1);
    CHECK_INT(requeues(&r), 1); /* not left waiting for the next kick */
    CHECK_INT(longpoll_parked(), 0);
    /* with the current generation it waits */
    http_req w = {0};
    CHECK(longpoll_park("jobs", &w, FAR, retry, longpoll_generation("jobs")));
    CHECK_INT(w.parks, 1);
    longpoll_stop();
    CHECK_INT(requeues(&w), 1);
    CHECK_INT(requeues(&r), 1);
}

TEST(the_deadline_and_the_repoll_wake_without_a_kick)
{
    CHECK_INT(longpoll_start(), 0);
    http_req r = {0};
    uint64_t deadline = longpoll_now_us() + 50000;
    CHECK(longpoll_park("late", &r, deadline, retry, longpoll_generation("late")));
    CHECK_INT(wait_requeues(&r, 1), 1);
    pthread_mutex_lock(&mu);
    CHECK(r.requeued_at >= deadline);
    CHECK(r.fn == retry);
    pthread_mutex_unlock(&mu);
    /* far deadline: the periodic re-poll (which catches other processes'
     * enqueues) sends it back anyway */
    http_req p = {0};
    CHECK(longpoll_park("other", &p, FAR, retry, longpoll_generation("other")));
    CHECK_INT(wait_requeues(&p, 1), 1);
    pthread_mutex_lock(&mu);
    CHECK(p.fn == retry);
    pthread_mutex_unlock(&mu);
    CHECK_INT(longpoll_parked(), 0);
    longpoll_stop();
    CHECK_INT(requeues(&r), 1);
    CHECK_INT(requeues(&p), 1);
}

TEST(stop_answers_every_parked_request_and_refuses_later_parks)
{
    CHECK_INT(longpoll_start(), 0);
    enum { N = 64 };
    static http_req reqs[N];
    memset(reqs, 0, sizeof reqs);
    for (int i = 0; i < N; i++) {
        char key[16];
        snprintf(key, sizeof key, "q%d", i % 5);
        CHECK(longpoll_park(key, &reqs[i], FAR, retry, longpoll_generation(key)));
    }
    longpoll_stop();
    int wrong = 0;
    for (int i = 0; i < N; i++)
        if (requeues(&reqs[i]) != 1 || reqs[i].parks != 1)
            wrong++;
    CHECK_INT(wrong, 0);
    CHECK_INT(longpoll_parked(), 0);
    /* shutting down: no more waiting, the caller replies now */
    http_req late = {0};
    CHECK(!longpoll_park("q0", &late, FAR, retry, longpoll_generation("q0")));
    CHECK_INT(late.parks, 0);
    CHECK_INT(requeues(&late), 0);
    /* and it starts again */
    CHECK_INT(longpoll_start(), 0);
    CHECK(longpoll_park("q0", &late, FAR, retry, longpoll_generation("q0")));
    longpoll_kick("q0");
    CHECK_INT(requeues(&late), 1);
    longpoll_stop();
}

TEST(keys_past_the_generation_table_still_wake)
{
    CHECK_INT(longpoll_start(), 0);
    char key[32];
    for (int i = 0; i < 5000; i++) { /* the table holds 4096 */
        snprintf(key, sizeof key, "k%d", i);
        (void)longpoll_generation(key);
    }
    http_req r = {0};
    snprintf(key, sizeof key, "k%d", 4999);
    CHECK(longpoll_park(key, &r, FAR, retry, longpoll_generation(key)));
    longpoll_kick(key);
    CHECK_INT(requeues(&r), 1);
    CHECK_INT(longpoll_parked(), 0);
    longpoll_stop();
    CHECK_INT(requeues(&r), 1);
}

enum { PARKERS = 4, ROUNDS = 40 };

typedef struct parker {
    int id;
    http_req req;
    int refused;
} parker;

static int done_parkers;

/* Parks, waits to be sent back, parks again, as a long-poll handler does. */
static void *park_loop(void *arg)
{
    parker *p = arg;
    char key[16];
    snprintf(key, sizeof key, "race%d", p->id % 2);
    for (int i = 0; i < ROUNDS; i++) {
        uint64_t seen = longpoll_generation(key);
        if (!longpoll_park(key, &p->req, FAR, retry, seen)) {
            p->refused++;
            break;
        }
        if (wait_requeues(&p->req, i + 1) != i + 1)
            break;
    }
    pthread_mutex_lock(&mu);
    done_parkers++;
    pthread_mutex_unlock(&mu);
    return NULL;
}

static void *kick_loop(void *arg)
{
    (void)arg;
    for (;;) {
        pthread_mutex_lock(&mu);
        int done = done_parkers;
        pthread_mutex_unlock(&mu);
        if (done == PARKERS)
            break;
        longpoll_kick("race0");
        longpoll_kick("race1");
        (void)longpoll_parked();
        nanosleep(&(struct timespec){0, 200000}, NULL);
    }
    return NULL;
}

TEST(threads_parking_and_kicking_lose_no_request)
{
    CHECK_INT(longpoll_start(), 0);
    static parker ps[PARKERS];
    memset(ps, 0, sizeof ps);
    done_parkers = 0;
    pthread_t th[PARKERS], kicker;
    for (int i = 0; i < PARKERS; i++) {
        ps[i].id = i;
        pthread_create(&th[i], NULL, park_loop, &ps[i]);
    }
    pthread_create(&kicker, NULL, kick_loop, NULL);
    for (int i = 0; i < PARKERS; i++)
        pthread_join(th[i], NULL);
    pthread_join(kicker, NULL);
    longpoll_stop();
    /* every park was answered exactly once */
    for (int i = 0; i < PARKERS; i++) {
        CHECK_INT(ps[i].refused, 0);
        CHECK_INT(ps[i].req.parks, ROUNDS);
        CHECK_INT(requeues(&ps[i].req), ROUNDS);
    }
    CHECK_INT(longpoll_parked(), 0);
}

static const test_case tests[] = {
    TEST_ENTRY(a_kick_wakes_the_requests_parked_on_its_key_only),
    TEST_ENTRY(a_kick_between_trying_and_parking_requeues_at_once),
    TEST_ENTRY(the_deadline_and_the_repoll_wake_without_a_kick),
    TEST_ENTRY(stop_answers_every_parked_request_and_refuses_later_parks),
    TEST_ENTRY(keys_past_the_generation_table_still_wake),
    TEST_ENTRY(threads_parking_and_kicking_lose_no_request),
};

TEST_MAIN(tests)
