#include <fcntl.h>
#include <pthread.h>
#include <unistd.h>

#include "../test.h"
#include "../tmpdir.h"
#include "estats.h"
#include "gcommit.h"

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
    printf("800 appends, %llu fsyncs\n", (unsigned long long)n);
    gcommit_destroy(&g);
    close(fd);
}

static const test_case tests[] = {
    {"one_fsync_covers_every_earlier_ticket", one_fsync_covers_every_earlier_ticket},
    {"threads_share_fsyncs_and_all_return_durable", threads_share_fsyncs_and_all_return_durable},
};

TMPDIR_TEST_MAIN(root, tests)
