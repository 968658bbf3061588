/* storhd: the daemon's entry point. Loads the config, checks the auth rule
 * for non-loopback addresses, opens the storage root and serves until SIGINT
 * or SIGTERM. */
#include <jansson.h>
#include <malloc.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "accesslog.h"
#include "docgroup.h"
#include "budget.h"
#include "fsx.h"
#include "fwatch.h"
#include "dirwatch.h"
#include "logwatch.h"
#include "auth.h"
#include "rpc.h"
#include "h_mirror.h"
#include "http.h"
#include "longpoll.h"
#include "mempolicy.h"
#include "metrics.h"
#include "rcache.h"
#include "routes.h"
#include "service.h"

/* The side pool's threads (ROUTE_RUN_SIDE): scrapes, probes and _stats are
 * few at a time; two let one wait on a lock while another answers. */
#define SIDE_THREADS 2

/* Frees what main set up, once no request can run: the mirrors' pushers,
 * the pools, the engines, the auth and RPC state, the metrics, the config. */
static void service_free(service *svc)
{
    h_mirror_teardown(svc);
    workpool_free(svc->pool);
    workpool_free(svc->side);
    registry_free(svc->reg);
    auth_free(svc->auth);
    rpc_free(svc->rpc);
    metrics_free();
    config_free(&svc->cfg);
}

/* glibc gives each thread that contends for malloc an arena of its own,
 * up to 8 per CPU, and each keeps the memory freed into it: with 32 workers
 * making page RPC calls (libpq results, 21 KB answers) that was ~7 MiB of
 * the process's PSS in arenas of ~500 KB. One arena per CPU (two at least)
 * bounds it;
 * MALLOC_ARENA_MAX in the environment still decides when set. */
static void bound_arenas(void)
{
    if (getenv("MALLOC_ARENA_MAX"))
        return;
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    mallopt(M_ARENA_MAX, (int)(cpus < 2 ? 2 : cpus > 64 ? 64 : cpus));
}

/* Waits for SIGINT or SIGTERM (blocked in set) and returns it; meanwhile,
 * once per quiet spell of idle_s seconds (0: never) in which no API request
 * began or ended (probes and scrapes do not count: a health check every
 * few seconds is no work), gives the heap's free memory back (mempolicy.h:
 * the heap keeps what operations free, for the next ones; an idle server
 * keeps nothing it does not use). A request running through the whole
 * spell (a long export) may see its freed pages go back; it only costs
 * their first touch again. */
static int wait_for_signal(const sigset_t *set, int idle_s)
{
    uint64_t seen = http_work_events();
    int quiet = 0;
    bool released = false;
    for (;;) {
        struct timespec second = {1, 0};
        int sig = sigtimedwait(set, NULL, &second);
        if (sig > 0)
            return sig;
        uint64_t now = http_work_events();
        if (now != seen) {
            seen = now;
            quiet = 0;
            released = false;
        } else if (idle_s > 0 && !released && ++quiet >= idle_s) {
            mempolicy_release();
            released = true;
        }
    }
}

int main(int argc, char **argv)
{
    bound_arenas();
    /* SIGINT and SIGTERM are taken by sigtimedwait (wait_for_signal) at the end of main, so every
     * thread must block them: block them before the first thread exists
     * (threads inherit the mask). Else the kernel may hand SIGTERM to a
     * worker, whose default action ends the process without shutting down. */
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &set, NULL);
    signal(SIGPIPE, SIG_IGN);
    service svc = {0};
    int rc = config_load(&svc.cfg, argc, argv);
    if (rc != 0) {
        config_free(&svc.cfg);
        return rc > 0 ? 0 : 2;
    }
    bool loopback = config_listen_is_loopback(&svc.cfg);
    if (svc.cfg.jwt_public_key || svc.cfg.jwks) {
        auth_opts ao = {svc.cfg.jwt_public_key, svc.cfg.jwks,
                        svc.cfg.jwt_issuer,     svc.cfg.jwt_audience,
                        svc.cfg.jwt_leeway,     (size_t)svc.cfg.jwt_cache_entries,
                        svc.cfg.jwt_cache_bytes};
        char amsg[256];
        if (auth_new(&ao, &svc.auth, amsg, sizeof amsg) != 0) {
            fprintf(stderr, "storhd: %s\n", amsg);
            config_free(&svc.cfg);
            return 2;
        }
    }
    if (svc.cfg.rpc_conninfo) {
        rpc_opts ro = {svc.cfg.rpc_conninfo,
                       svc.cfg.rpc_functions,
                       svc.cfg.rpc_pool,
                       svc.cfg.rpc_cache_ttl,
                       (size_t)svc.cfg.rpc_cache_entries,
                       svc.cfg.rpc_cache_bytes,
                       svc.cfg.rpc_scope_claims,
                       svc.cfg.rpc_timeout,
                       svc.cfg.rpc_queue,
                       svc.cfg.rpc_queue_timeout,
                       svc.cfg.threads <= 1};
        char rmsg[256];
        if (rpc_new(&ro, &svc.rpc, rmsg, sizeof rmsg) != 0) {
            fprintf(stderr, "storhd: %s\n", rmsg);
            auth_free(svc.auth);
            config_free(&svc.cfg);
            return 2;
        }
    }
    if (!svc.auth && !loopback && !svc.cfg.insecure_no_auth) {
        fprintf(stderr,
                "storhd: no JWT key is configured, so /v1 is served on loopback only; "
                "listening on %s needs --insecure-no-auth\n",
                svc.cfg.listen_host);
        config_free(&svc.cfg);
        return 2;
    }
    storh_err err;
    if (fsx_mkdirs(svc.cfg.root, true, &err)) {
        fprintf(stderr, "storhd: %s\n", err.msg);
        config_free(&svc.cfg);
        return 1;
    }
    if (config_doc_sync(&svc.cfg) >= 0)
        docgroup_set_default_mode((docgroup_sync)config_doc_sync(&svc.cfg));
    svc.routes = routes_table(&svc.nroutes);
    budget_init(&svc.cfg, svc.cfg.rpc_conninfo ? (size_t)svc.cfg.rpc_pool : 0,
                svc.cfg.mirrors ? json_object_size(svc.cfg.mirrors) : 1, &svc.budget);
    svc.cfg.max_conns = svc.budget.max_conns;
    size_t heap_keep = mempolicy_apply(svc.budget.memory_limit);
    rcache_set_budget(svc.budget.cache_bytes_total);
    fwatch_set_enabled(config_cache_watch(&svc.cfg) == 1);
    logwatch_set_enabled(config_cache_watch(&svc.cfg) == 1);
    dirwatch_set_enabled(config_cache_watch(&svc.cfg) == 1);
    svc.reg = registry_new(svc.cfg.root, config_cache_mode(&svc.cfg), (size_t)svc.cfg.cache_entries,
                           svc.cfg.cache_bytes, svc.budget.max_open_engines);
    if (svc.reg)
        registry_set_fd_safe(svc.reg, svc.budget.fd_safe_engines);
    svc.pool = workpool_new(svc.cfg.workers);
    svc.side = workpool_new(SIDE_THREADS);
    if (!svc.reg || !svc.pool || !svc.side || metrics_init(svc.routes, svc.nroutes) != 0 ||
        longpoll_start() != 0) {
        fprintf(stderr, "storhd: out of memory\n");
        return 1;
    }
    if (h_mirror_setup(&svc) != 0) {
        h_mirror_teardown(&svc);
        return 2;
    }

    http_server *srv;
    char msg[256];
    if (http_start(&svc, &srv, msg, sizeof msg)) {
        fprintf(stderr, "storhd: %s\n", msg);
        longpoll_stop();
        service_free(&svc);
        return 1;
    }
    accesslog_event("listening",
                    json_pack("{sssisssisiss}", "host", svc.cfg.listen_host, "port", http_port(srv),
                              "root", svc.cfg.root, "threads", svc.cfg.threads, "workers",
                              svc.cfg.workers, "auth",
                              svc.auth   ? "RS256 JWT on /v1 and /rpc"
                              : loopback ? "none: no JWT key configured, serving on loopback only"
                                         : "none: --insecure-no-auth"));
    accesslog_event("budget",
                    json_pack("{sIsIsIsIsssIsI}", "fd_limit", (json_int_t)svc.budget.nofile,
                              "max_conns", (json_int_t)svc.budget.max_conns, "max_open_engines",
                              (json_int_t)svc.budget.max_open_engines, "memory_limit",
                              (json_int_t)svc.budget.memory_limit, "memory_from",
                              svc.budget.memory_from, "cache_bytes_total",
                              (json_int_t)svc.budget.cache_bytes_total, "heap_keep",
                              (json_int_t)heap_keep));
    int sig = wait_for_signal(&set, svc.cfg.heap_release_idle);
    accesslog_event("stopping", json_pack("{si}", "signal", sig));
    /* parked long polls answer, queued writes finish, then the server stops */
    longpoll_stop();
    workpool_shutdown(svc.pool);
    workpool_shutdown(svc.side);
    rpc_shutdown(svc.rpc); /* after the pool, whose RPC calls it answers */
    http_stop(srv);
    service_free(&svc);
    return 0;
}
