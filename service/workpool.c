#include "workpool.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>

typedef struct task {
    void (*fn)(void *);
    void *arg;
    struct task *next;
} task;

struct workpool {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    task *head, *tail;
    bool stopping, joined;
    int n;
    pthread_t *threads;
};

static void *worker(void *p)
{
    workpool *w = p;
    pthread_mutex_lock(&w->mu);
    for (;;) {
        while (!w->head && !w->stopping)
            pthread_cond_wait(&w->cv, &w->mu);
        task *t = w->head;
        if (!t)
            break; /* stopping and drained */
        w->head = t->next;
        if (!w->head)
            w->tail = NULL;
        pthread_mutex_unlock(&w->mu);
        t->fn(t->arg);
        free(t);
        pthread_mutex_lock(&w->mu);
    }
    pthread_mutex_unlock(&w->mu);
    return NULL;
}

workpool *workpool_new(int threads)
{
    workpool *w = calloc(1, sizeof *w);
    if (!w)
        return NULL;
    w->threads = calloc((size_t)threads, sizeof *w->threads);
    if (!w->threads) {
        free(w);
        return NULL;
    }
    pthread_mutex_init(&w->mu, NULL);
    pthread_cond_init(&w->cv, NULL);
    for (; w->n < threads; w->n++)
        if (pthread_create(&w->threads[w->n], NULL, worker, w) != 0)
            break;
    if (w->n == 0) {
        workpool_free(w);
        return NULL;
    }
    return w;
}

int workpool_submit(workpool *w, void (*fn)(void *), void *arg)
{
    task *t = malloc(sizeof *t);
    if (!t)
        return -1;
    t->fn = fn;
    t->arg = arg;
    t->next = NULL;
    pthread_mutex_lock(&w->mu);
    if (w->stopping) {
        pthread_mutex_unlock(&w->mu);
        free(t);
        return -1;
    }
    if (w->tail)
        w->tail->next = t;
    else
        w->head = t;
    w->tail = t;
    pthread_cond_signal(&w->cv);
    pthread_mutex_unlock(&w->mu);
    return 0;
}

void workpool_shutdown(workpool *w)
{
    pthread_mutex_lock(&w->mu);
    w->stopping = true;
    pthread_cond_broadcast(&w->cv);
    bool joined = w->joined;
    w->joined = true;
    pthread_mutex_unlock(&w->mu);
    if (!joined)
        for (int i = 0; i < w->n; i++)
            pthread_join(w->threads[i], NULL);
}

void workpool_free(workpool *w)
{
    if (!w)
        return;
    workpool_shutdown(w);
    pthread_cond_destroy(&w->cv);
    pthread_mutex_destroy(&w->mu);
    free(w->threads);
    free(w);
}
