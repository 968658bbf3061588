/* crashkit: what the suites that kill storhd share (test_crash,
 * test_crash_docindex, test_powercut): a ledger per writer thread of the
 * writes storhd acknowledged (documents at their acknowledged version and
 * the one in flight, log records, jobs enqueued and completed), the writes
 * that keep it, writer threads that run until storhd is gone or they are
 * stopped, the checks of a restarted store, and the main that makes the
 * scratch root and keeps it for a look when a case failed. */
#ifndef STORHD_TEST_CRASHKIT_H
#define STORHD_TEST_CRASHKIT_H

#include <jansson.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>

#include "idset.h"
#include "uuid7.h"

/* ---- the ledger ---- */

typedef struct crashkit_doc {
    char id[UUID7_LEN + 1];
    long acked;   /* n of the version known to be there, -1 if none */
    long pending; /* n of a write in flight, -1 if none */
    bool deleted, delete_pending;
} crashkit_doc;

typedef struct crashkit_log {
    char id[UUID7_LEN + 1];
    long n;
    bool deleted, delete_pending;
} crashkit_log;

/* What one writer did; only its thread touches it while writers run.
 * Zero-initialise, set w and rng; free with crashkit_ledger_free. */
typedef struct crashkit_ledger {
    int w;
    unsigned long long rng;
    long seq;
    crashkit_doc *docs;
    size_t ndocs, capdocs;
    crashkit_log *logs;
    size_t nlogs, caplogs;
    idset enqueued, completed, complete_tried;
} crashkit_ledger;

/* xorshift64: the writers' and the kill points' randomness (a seed replays). */
unsigned long long crashkit_rnd(unsigned long long *s);
/* p grown to hold n + 1 elements of size bytes (*cap updated); aborts when
 * out of memory (a test cannot go on without its ledger). */
void *crashkit_grow(void *p, size_t *cap, size_t n, size_t size);
/* A new document of l under a fresh id, neither acknowledged nor pending. */
crashkit_doc *crashkit_new_doc(crashkit_ledger *l);
void crashkit_ledger_free(crashkit_ledger *l);

/* ---- writes that keep the ledger; each returns false when storhd is gone ---- */

/* Answers 5xx so far (each is also printed): a kill ends a request without
 * an answer, never with a 5xx. */
extern atomic_long crashkit_5xx;
/* One JSON request (client_json) that counts a 5xx answer. */
long crashkit_call(const char *base, const char *method, const char *path, const char *body,
                   json_t **out);
/* PUT body as version n of a document of coll: with overwrite, one of l's
 * documents in a known state (after a write in doubt its state is one of
 * two, which the checks know), else a new one. */
bool crashkit_put_doc(const char *base, crashkit_ledger *l, const char *coll, const char *body,
                      long n, bool overwrite);
/* DELETE one of l's acknowledged documents (none if it picks one in doubt). */
bool crashkit_delete_doc(const char *base, crashkit_ledger *l, const char *coll);
/* POST body (record n) to log; the id it got goes into the ledger. */
bool crashkit_append_log(const char *base, crashkit_ledger *l, const char *log, const char *body,
                         long n);
/* POST body (count jobs: an object or an array) to queue; when all were
 * acknowledged their ids go into l->enqueued and *acked (may be NULL) is set. */
bool crashkit_enqueue(const char *base, crashkit_ledger *l, const char *queue, const char *body,
                      size_t count, bool *acked);
/* Claims one job and completes it (complete_tried, then completed once
 * acknowledged); on_claim (may be NULL) sees the claimed job first. */
bool crashkit_claim_complete(const char *base, crashkit_ledger *l, const char *queue,
                             void (*on_claim)(void *ctx, const char *id, const json_t *job),
                             void *ctx);

/* ---- writer threads ---- */

#define CRASHKIT_MAX_WRITERS 32

typedef struct crashkit_crew crashkit_crew;
typedef struct crashkit_hand {
    crashkit_crew *crew;
    void *ledger;
} crashkit_hand;
struct crashkit_crew {
    bool (*one)(void *ledger);
    int n;
    atomic_bool stop;
    pthread_t th[CRASHKIT_MAX_WRITERS];
    crashkit_hand hand[CRASHKIT_MAX_WRITERS];
};

/* n threads (at most CRASHKIT_MAX_WRITERS), the i-th calling one on the
 * i-th of the ledgers (an array of elements stride bytes apart) until it
 * returns false (storhd is gone, or the writer is done) or the crew stops. */
void crashkit_crew_start(crashkit_crew *c, int n, bool (*one)(void *ledger), void *ledgers,
                         size_t stride);
/* Tells the writers to stop and joins them. */
void crashkit_crew_stop(crashkit_crew *c);

/* ---- checks after a restart ---- */

/* Whether a document storhd shows (there, at version n) or not is allowed
 * by its ledger entry: deleted ones absent, absent ones never acknowledged
 * or deleted in flight, others at the acknowledged version or the one in
 * flight. Prints the entry when not. */
bool crashkit_doc_ok(const crashkit_doc *e, bool there, long n);
/* Whether GET path (a _verify) answers ok with no errors (the body is
 * printed when not); a store that never acknowledged a write may not exist
 * (404) unless must_exist. The suites CHECK what these return. */
bool crashkit_verify_ok(const char *base, const char *path, bool must_exist);
/* Requeues every processing job and claims them all into claimed (sorted
 * at the end), each claimed job to each (may be NULL). Returns the
 * requeue's status (404: a queue never written to). */
long crashkit_claim_all(const char *base, const char *queue, idset *claimed,
                        void (*each)(void *ctx, const json_t *job), void *ctx);
/* The complete_tried and completed of n ledgers (elements stride bytes
 * apart, each starting with its crashkit_ledger) pooled and sorted: jobs
 * are claimed by any writer. */
void crashkit_pool_completions(const void *ledgers, int n, size_t stride, idset *tried,
                               idset *done);

/* ---- the run ---- */

/* The integer in environment variable name, or dflt. */
int crashkit_env_int(const char *name, int dflt);
/* A seed: name's value when name is set in the environment (to replay a
 * run), else one from the time and the pid. */
unsigned long long crashkit_seed(const char *name);
void crashkit_sleep_ms(long ms);
/* A fresh scratch root: 0, or the exit status 2. */
int crashkit_root_make(char root[PATH_MAX]);
/* After the cases (rc their exit status): removes root and what storhd
 * keeps beside it when they passed, else keeps it for a look. Returns rc. */
int crashkit_root_done(const char *root, int rc);

/* main() of a suite that kills storhd: --list, curl's globals, setup()
 * (0, or the exit status), the named case or all, then teardown(rc) (frees
 * the ledgers, removes or keeps the scratch; returns the exit status).
 * Needs test.h and curl.h. */
#define CRASHKIT_MAIN(list, setup, teardown)                                                       \
    static int run_cases(int argc, char **argv);                                                   \
    int main(int argc, char **argv)                                                                \
    {                                                                                              \
        TEST_LIST_EXIT(argc, argv, list);                                                          \
        curl_global_init(CURL_GLOBAL_DEFAULT);                                                     \
        int rc = setup();                                                                          \
        if (rc == 0)                                                                               \
            rc = teardown(run_cases(argc, argv));                                                  \
        curl_global_cleanup();                                                                     \
        return rc;                                                                                 \
    }                                                                                              \
    TEST_MAIN_NAMED(run_cases, list)

#endif
