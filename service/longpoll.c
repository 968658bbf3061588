#include "longpoll.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "http.h"

#define REPOLL_US 250000
#define TICK_NS 20000000L
#define MAX_KEYS 4096

typedef struct waiter {
    char key[72];
    http_req *req;
    uint64_t deadline, repoll;
    int (*fn)(http_req *);
    struct waiter *next;
} waiter;

typedef struct keygen {
    char key[72];
    uint64_t gen;
} keygen;

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static waiter *waiters;
static keygen *gens;
static size_t ngens;
static bool running;
static pthread_t thread;

uint64_t longpoll_now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

static keygen *find_gen(const char *key, bool add)
{
    for (size_t i = 0; i < ngens; i++)
        if (!strcmp(gens[i].key, key))
            return &gens[i];
    if (!add || ngens == MAX_KEYS)
        return NULL;
    if (!gens && !(gens = calloc(MAX_KEYS, sizeof *gens)))
        return NULL;
    snprintf(gens[ngens].key, sizeof gens[ngens].key, "%s", key);
    return &gens[ngens++];
}

uint64_t longpoll_generation(const char *key)
{
    pthread_mutex_lock(&mu);
    keygen *g = find_gen(key, true);
    uint64_t v = g ? g->gen : 0;
    pthread_mutex_unlock(&mu);
    return v;
}

bool longpoll_park(const char *key, http_req *req, uint64_t deadline_us, int (*fn)(http_req *req),
                   uint64_t seen)
{
    pthread_mutex_lock(&mu);
    if (!running) {
        pthread_mutex_unlock(&mu);
        return false;
    }
    http_park(req);
    keygen *g = find_gen(key, true);
    bool missed = g && g->gen != seen;
    waiter *w = missed ? NULL : calloc(1, sizeof *w);
    if (w) {
        snprintf(w->key, sizeof w->key, "%s", key);
        w->req = req;
        w->deadline = deadline_us;
        w->repoll = longpoll_now_us() + REPOLL_US;
        w->fn = fn;
        w->next = waiters;
        waiters = w;
    }
    pthread_mutex_unlock(&mu);
    if (!w) /* kicked meanwhile, or out of memory: try again now */
        http_requeue(req, fn);
    return true;
}

void longpoll_kick(const char *key)
{
    waiter *ready = NULL;
    pthread_mutex_lock(&mu);
    keygen *g = find_gen(key, true);
    if (g)
        g->gen++;
    for (waiter **pp = &waiters; *pp;) {
        waiter *w = *pp;
        if (!strcmp(w->key, key)) {
            *pp = w->next;
            w->next = ready;
            ready = w;
        } else {
            pp = &w->next;
        }
    }
    pthread_mutex_unlock(&mu);
    while (ready) {
        waiter *n = ready->next;
        http_requeue(ready->req, ready->fn);
        free(ready);
        ready = n;
    }
}

size_t longpoll_parked(void)
{
    size_t n = 0;
    pthread_mutex_lock(&mu);
    for (const waiter *w = waiters; w; w = w->next)
        n++;
    pthread_mutex_unlock(&mu);
    return n;
}

/* Takes the waiters that are due (all when everything is due). */
static waiter *take_due(uint64_t now, bool all)
{
    waiter *due = NULL;
    for (waiter **pp = &waiters; *pp;) {
        waiter *w = *pp;
        if (all || now >= w->deadline || now >= w->repoll) {
            *pp = w->next;
            w->next = due;
            due = w;
        } else {
            pp = &w->next;
        }
    }
    return due;
}

static void *timer(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&mu);
    while (running) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_nsec += TICK_NS;
        if (ts.tv_nsec >= 1000000000L) {
            ts.tv_sec++;
            ts.tv_nsec -= 1000000000L;
        }
        pthread_cond_timedwait(&cv, &mu, &ts);
        waiter *due = take_due(longpoll_now_us(), !running);
        pthread_mutex_unlock(&mu);
        while (due) {
            waiter *n = due->next;
            http_requeue(due->req, due->fn);
            free(due);
            due = n;
        }
        pthread_mutex_lock(&mu);
    }
    pthread_mutex_unlock(&mu);
    return NULL;
}

int longpoll_start(void)
{
    running = true;
    if (pthread_create(&thread, NULL, timer, NULL) != 0) {
        running = false;
        return -1;
    }
    return 0;
}

void longpoll_stop(void)
{
    pthread_mutex_lock(&mu);
    running = false;
    pthread_cond_broadcast(&cv);
    pthread_mutex_unlock(&mu);
    pthread_join(thread, NULL);
    pthread_mutex_lock(&mu);
    waiter *rest = take_due(0, true);
    pthread_mutex_unlock(&mu);
    while (rest) {
        waiter *n = rest->next;
        http_requeue(rest->req, rest->fn);
        free(rest);
        rest = n;
    }
    free(gens);
    gens = NULL;
    ngens = 0;
}
