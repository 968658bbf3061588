/* test_http_offloop: a route that can wait (on a file lock, a mutex, a scan)
 * runs on the work pool, never on the event loop, so a waiting request does
 * not hold up the others. storhd runs with one event-loop thread, another
 * process (this test) holds a queue's flock, and /metrics, which reads the
 * queue's depth under that lock, waits for it while /healthz still answers. */
#include <curl/curl.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <sys/file.h>
#include <unistd.h>

#include "client.h"
#include "../support/daemon.h"
#include "../test.h"

static daemon_proc d;

typedef struct scrape {
    daemon_proc *dp;
    long status;
    atomic_bool done;
} scrape;

static void *scrape_metrics(void *p)
{
    scrape *s = p;
    client_resp r;
    client_do(s->dp->base, "GET", "/metrics", NULL, NULL, 0, NULL, 0, &r);
    s->status = r.status;
    client_free(&r);
    atomic_store(&s->done, true);
    return NULL;
}

typedef struct holder {
    int fd;
    atomic_bool stop, released;
} holder;

/* Releases the lock when told to, or after 20 s so that a storhd that
 * blocks its loop on it (the bug) fails the test instead of hanging it. */
static void *release_later(void *p)
{
    holder *h = p;
    for (int i = 0; i < 200 && !atomic_load(&h->stop); i++)
        usleep(100 * 1000);
    atomic_store(&h->released, true);
    flock(h->fd, LOCK_UN);
    return NULL;
}

TEST(metrics_waiting_on_a_queue_lock_does_not_block_healthz)
{
    static const char *const extra[] = {"--threads", "1", NULL};
    CHECK_INT(daemon_start(&d, NULL, extra), 0);
    client_resp r;
    const char *job = "{\"task\":1}";
    client_do(d.base, "POST", "/v1/queues/lq/jobs", "application/json", job, strlen(job), NULL, 0,
              &r);
    CHECK_INT(r.status, 201); /* the queue is open: /metrics reads its depth */
    client_free(&r);

    char lockp[PATH_MAX];
    snprintf(lockp, sizeof lockp, "%s/lq/queue.lock", d.root);
    holder h = {.fd = open(lockp, O_RDWR)};
    CHECK(h.fd >= 0);
    CHECK_INT(flock(h.fd, LOCK_EX), 0);
    pthread_t rel, scr;
    pthread_create(&rel, NULL, release_later, &h);
    scrape s = {.dp = &d};
    pthread_create(&scr, NULL, scrape_metrics, &s);
    usleep(300 * 1000);
    CHECK(!atomic_load(&s.done)); /* the scrape is waiting for the lock */

    client_do(d.base, "GET", "/healthz", NULL, NULL, 0, NULL, 0, &r);
    bool answered_while_held = !atomic_load(&h.released);
    CHECK_INT(r.status, 200);
    CHECK(answered_while_held);
    client_free(&r);

    atomic_store(&h.stop, true);
    pthread_join(rel, NULL);
    pthread_join(scr, NULL);
    CHECK_INT(s.status, 200); /* and the scrape completes once the lock is free */
    close(h.fd);
    CHECK_INT(daemon_stop(&d), 0);
    daemon_cleanup(&d);
}

static const test_case tests[] = {
    TEST_ENTRY(metrics_waiting_on_a_queue_lock_does_not_block_healthz),
};

static int run_cases(int argc, char **argv);

int main(int argc, char **argv)
{
    curl_global_init(CURL_GLOBAL_DEFAULT);
    int rc = run_cases(argc, argv);
    curl_global_cleanup();
    return rc;
}

TEST_MAIN_NAMED(run_cases, tests)
