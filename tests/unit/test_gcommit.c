#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>

#include "../test.h"
#include "../tmpdir.h"
#include "estats.h"
#include "gcommit.h"
#include "storh_err.h"
#include "wstats.h"

static char root[PATH_MAX];

TEST(one_fsync_covers_every_earlier_ticket)
{
    char p[PATH_MAX];
    snprintf(p, sizeof p, "%s/f", root);
    int fd = open(p, O_RDWR | O_CREAT | O_APPEND, 0644);
    pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
    gcommit g;
    gcommit_init(&g, &mu, fd, 0);
    pthread_mutex_lock(&mu);
    gcommit_ticket t[3];
    for (int i = 0; i < 3; i++) {
        CHECK_INT(write(fd, "line\n", 5), 5);
        t[i] = gcommit_written(&g, (uint64_t)(i + 1) * 5);
    }
    uint64_t before = estats_get(ESTAT_FSYNC_FILE);
    CHECK_INT(gcommit_wait(&g, t[2], NULL), 0);
    CHECK_INT(estats_get(ESTAT_FSYNC_FILE) - before, 1);
    CHECK_INT(gcommit_wait(&g, t[0], NULL), 0);
    CHECK_INT(gcommit_wait(&g, t[1], NULL), 0);
    CHECK_INT(estats_get(ESTAT_FSYNC_FILE) - before, 1); /* already durable */
    /* switching files makes the old one durable first */
    CHECK_INT(write(fd, "more\n", 5), 5);
    gcommit_ticket old = gcommit_written(&g, 20);
    int fd2 = open(p, O_RDWR | O_APPEND);
    CHECK_INT(gcommit_switch(&g, fd2, 20, NULL), 0);
    CHECK_INT(estats_get(ESTAT_FSYNC_FILE) - before, 2);
    CHECK_INT(gcommit_wait(&g, old, NULL), 0); /* an earlier generation */
    CHECK_INT(estats_get(ESTAT_FSYNC_FILE) - before, 2);
    pthread_mutex_unlock(&mu);
    gcommit_destroy(&g);
    close(fd2); /* the switch closed fd */
    CHECK(fcntl(fd, F_GETFD) == -1);
}

typedef struct waiter {
    gcommit *g;
    pthread_mutex_t *mu;
    int fd, rc;
} waiter;

static void *append_and_wait(void *p)
{
    waiter *w = p;
    for (int i = 0; i < 200; i++) {
        pthread_mutex_lock(w->mu);
        if (write(w->fd, "x\n", 2) != 2)
            w->rc = -1;
        off_t end = lseek(w->fd, 0, SEEK_END);
        gcommit_ticket t = gcommit_written(w->g, (uint64_t)end);
        if (gcommit_wait(w->g, t, NULL) != 0)
            w->rc = -1;
        pthread_mutex_unlock(w->mu);
    }
    return NULL;
}

TEST(threads_share_fsyncs_and_all_return_durable)
{
    char p[PATH_MAX];
    snprintf(p, sizeof p, "%s/g", root);
    int fd = open(p, O_RDWR | O_CREAT | O_APPEND, 0644);
    pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
    gcommit g;
    gcommit_init(&g, &mu, fd, 0);
    gcommit_label(&g, WSTATS_DOC, "g"); /* the only store of that kind here */
    wstats_hist h0, h1;
    wstats_batch_snapshot(WSTATS_DOC, &h0);
    uint64_t before = estats_get(ESTAT_FSYNC_FILE);
    pthread_t th[4];
    waiter w[4];
    for (int i = 0; i < 4; i++) {
        w[i] = (waiter){&g, &mu, fd, 0};
        pthread_create(&th[i], NULL, append_and_wait, &w[i]);
    }
    for (int i = 0; i < 4; i++) {
        pthread_join(th[i], NULL);
        CHECK_INT(w[i].rc, 0);
    }
    uint64_t n = estats_get(ESTAT_FSYNC_FILE) - before;
    CHECK(n >= 1 && n <= 800);
    CHECK_INT(g.synced, 1600); /* every byte written is covered */
    /* the batch histogram: one batch per fsync, the batches add up to the
     * writes */
    wstats_batch_snapshot(WSTATS_DOC, &h1);
    CHECK_INT(h1.count - h0.count, n);
    CHECK_INT(h1.sum - h0.sum, 800);
    uint64_t buckets = 0;
    for (size_t b = 0; b <= WSTATS_NBUCKETS; b++)
        buckets += h1.bucket[b] - h0.bucket[b];
    CHECK_INT(buckets, n);
    printf("800 appends, %llu fsyncs\n", (unsigned long long)n);
    gcommit_destroy(&g);
    close(fd);
}

TEST(a_failed_fsync_poisons_and_lists_the_store)
{
    char p[PATH_MAX];
    snprintf(p, sizeof p, "%s/h", root);
    int fd = open(p, O_RDWR | O_CREAT | O_APPEND, 0644);
    pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
    gcommit g;
    gcommit_init(&g, &mu, fd, 0);
    gcommit_label(&g, WSTATS_QUEUE, "jobs");
    wstats_store bad[8];
    CHECK_INT(wstats_poisoned_list(bad, 8), 0);
    setenv("STORH_FAULT_FAIL", "fsync:jobs", 1);
    pthread_mutex_lock(&mu);
    CHECK_INT(write(fd, "a\n", 2), 2);
    storh_err err;
    CHECK(gcommit_wait(&g, gcommit_written(&g, 2), &err) != 0);
    CHECK(strstr(err.msg, strerror(EIO)) != NULL);
    unsetenv("STORH_FAULT_FAIL");
    /* poisoned: later writes fail too though fsync works again */
    CHECK(gcommit_check(&g, &err) != 0);
    CHECK(gcommit_wait(&g, gcommit_written(&g, 4), &err) != 0);
    CHECK(gcommit_flush(&g, &err) != 0);
    pthread_mutex_unlock(&mu);
    CHECK_INT(wstats_poisoned_list(bad, 8), 1);
    CHECK_INT(bad[0].kind, WSTATS_QUEUE);
    CHECK_STR(bad[0].name, "jobs");
    CHECK_INT(bad[0].errnum, EIO);
    gcommit_destroy(&g);
    close(fd);
}

static const test_case tests[] = {
    TEST_ENTRY(one_fsync_covers_every_earlier_ticket),
    TEST_ENTRY(threads_share_fsyncs_and_all_return_durable),
    TEST_ENTRY(a_failed_fsync_poisons_and_lists_the_store),
};

TMPDIR_TEST_MAIN(root, tests)
