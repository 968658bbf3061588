/* config: storhd's settings, from (lowest to highest precedence) built-in
 * defaults, a JSON config file, STORHD_* environment variables and command
 * line flags. The config owns its strings; config_free releases them. */
#ifndef STORHD_CONFIG_H
#define STORHD_CONFIG_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "storh_err.h"

typedef struct config {
    char *root;        /* storage root (created if missing) */
    char *listen_host; /* numeric IPv4/IPv6 address */
    int listen_port;
    char *config_file;
    size_t max_body;       /* bytes; larger JSON bodies and NDJSON lines get 413 */
    int threads;           /* HTTP event loops (each an epoll thread) */
    int conn_timeout;      /* seconds a connection may stay idle */
    unsigned max_conns;    /* concurrent connections */
    int max_conns_per_ip;  /* from one client address; 0: no limit */
    int heap_release_idle; /* seconds without an API request before the heap
                            * is given back (mempolicy_release); 0: never */
    bool access_log;       /* one JSON line per request on stderr */
    bool insecure_no_auth;
    int workers;              /* threads for blocking engine calls */
    size_t log_segment_bytes; /* default segment size of a log */
    char *log_partition;      /* default partition: none, daily, monthly */
    json_t *logs;             /* config file "logs": {stream: {...}}; owned, may be NULL */
    json_t *mirrors;          /* config file "mirrors": {name: {...}}; owned, NULL: default */
    char *jwt_public_key;     /* PEM file: /v1 then needs RS256 JWTs with scopes */
    char *jwks;               /* or a JWKS file (keys by kid) */
    char *jwt_issuer, *jwt_audience;
    int jwt_leeway;
    int jwt_cache_entries;
    size_t jwt_cache_bytes;
    char *rpc_conninfo;  /* libpq conninfo of the page RPC, or NULL */
    char *rpc_functions; /* allow-list, comma separated */
    int rpc_pool, rpc_cache_ttl, rpc_cache_entries;
    int rpc_timeout, rpc_queue, rpc_queue_timeout; /* ms, calls, ms */
    size_t rpc_cache_bytes;
    char *rpc_scope_claims;
    char *cache_validation; /* stat, hash, trust (record cache hits) */
    int cache_entries;      /* per collection; 0 turns the cache off */
    size_t cache_bytes;     /* per collection */
    char *cache_watch;      /* inotify, none: how stat-validated cache hits stay fresh */
    char *doc_sync;         /* auto, syncfs, fsync: durability step of grouped doc writes */
    /* engines open at once; 0: derived from the descriptor limit (budget) */
    int max_open_engines;
    /* record cache bytes over all collections; 0: from the memory limit */
    size_t cache_bytes_total;
} config;

/* Fills cfg from argv and the environment. Returns 0 to run, 1 when --help
 * or --version printed something (exit 0), -1 on a bad setting (message on
 * stderr, exit 2). */
int config_load(config *cfg, int argc, char **argv);
void config_free(config *cfg);
/* The options of log stream name: the file's "logs"[name] (or "logs"["*"])
 * over the defaults. 0, or STORH_EIO (a bad server configuration, 500)
 * with the message in err. */
struct seglog_opts;
int config_log_opts(const config *cfg, const char *name, struct seglog_opts *o, storh_err *err);
/* cache_validation as an rcache_mode, -1 if unknown. */
int config_cache_mode(const config *cfg);
/* doc_sync as a docgroup_sync, -1 for auto, -2 if unknown. */
int config_doc_sync(const config *cfg);
/* cache_watch: 1 inotify, 0 none, -1 if unknown. */
int config_cache_watch(const config *cfg);
/* True if listen_host is a loopback address. */
bool config_listen_is_loopback(const config *cfg);

#endif
