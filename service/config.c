#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "seglog.h"

typedef enum { OPT_STR, OPT_SIZE, OPT_INT, OPT_BOOL } opt_kind;

typedef struct opt_def {
    const char *flag; /* --flag, STORHD_FLAG, "flag" in the config file */
    const char *env;
    opt_kind kind;
    size_t offset;
    const char *help;
} opt_def;

#define OFF(f) offsetof(config, f)
static const opt_def opts[] = {
    {"root", "STORHD_ROOT", OPT_STR, OFF(root), "storage root directory (default ./var/data)"},
    {"listen", "STORHD_LISTEN", OPT_STR, 0, "HOST:PORT to listen on (default 127.0.0.1:8080)"},
    {"config", "STORHD_CONFIG", OPT_STR, OFF(config_file), "JSON config file"},
    {"max-body", "STORHD_MAX_BODY", OPT_SIZE, OFF(max_body),
     "largest JSON body or NDJSON line in bytes (default 1048576)"},
    {"threads", "STORHD_THREADS", OPT_INT, OFF(threads),
     "HTTP event loops (default: one per CPU this process may run on, at most 16)"},
    {"conn-timeout", "STORHD_CONN_TIMEOUT", OPT_INT, OFF(conn_timeout),
     "idle connection timeout in seconds (default 30)"},
    {"max-conns", "STORHD_MAX_CONNS", OPT_INT, OFF(max_conns),
     "concurrent connections (default 1024)"},
    {"max-conns-per-ip", "STORHD_MAX_CONNS_PER_IP", OPT_INT, OFF(max_conns_per_ip),
     "concurrent connections from one client address, 0 = no limit (default 0; behind a "
     "proxy every client has its address)"},
    {"heap-release-idle", "STORHD_HEAP_RELEASE_IDLE", OPT_INT, OFF(heap_release_idle),
     "seconds without an API request (/v1, /rpc) after which the heap's free memory goes "
     "back to the system, 0 = never (default 10)"},
    {"access-log", "STORHD_ACCESS_LOG", OPT_BOOL, OFF(access_log),
     "log every request as a JSON line on stderr (default true)"},
    {"insecure-no-auth", "STORHD_INSECURE_NO_AUTH", OPT_BOOL, OFF(insecure_no_auth),
     "serve /v1 without a JWT key on a non-loopback address"},
    {"workers", "STORHD_WORKERS", OPT_INT, OFF(workers),
     "threads for blocking writes; concurrent appends share fsyncs (default 32)"},
    {"log-segment-bytes", "STORHD_LOG_SEGMENT_BYTES", OPT_SIZE, OFF(log_segment_bytes),
     "segment size of logs (default 1048576)"},
    {"log-partition", "STORHD_LOG_PARTITION", OPT_STR, OFF(log_partition),
     "partition of logs: none, daily or monthly (default none)"},
    {"jwt-public-key", "STORHD_JWT_PUBLIC_KEY", OPT_STR, OFF(jwt_public_key),
     "RSA public key (PEM): /v1 then requires RS256 JWTs with scopes"},
    {"jwks", "STORHD_JWKS", OPT_STR, OFF(jwks), "JWKS file with RSA keys picked by kid"},
    {"jwt-issuer", "STORHD_JWT_ISSUER", OPT_STR, OFF(jwt_issuer), "required iss claim"},
    {"jwt-audience", "STORHD_JWT_AUDIENCE", OPT_STR, OFF(jwt_audience), "required aud claim"},
    {"jwt-leeway", "STORHD_JWT_LEEWAY", OPT_INT, OFF(jwt_leeway),
     "seconds of clock skew allowed for exp and nbf (default 30)"},
    {"jwt-cache-entries", "STORHD_JWT_CACHE_ENTRIES", OPT_INT, OFF(jwt_cache_entries),
     "verified tokens kept (default 1000)"},
    {"jwt-cache-bytes", "STORHD_JWT_CACHE_BYTES", OPT_SIZE, OFF(jwt_cache_bytes),
     "bytes of claims and digests kept (default 1048576)"},
    {"rpc-conninfo", "STORHD_RPC_CONNINFO", OPT_STR, OFF(rpc_conninfo),
     "PostgreSQL of the page RPC (libpq conninfo)"},
    {"rpc-functions", "STORHD_RPC_FUNCTIONS", OPT_STR, OFF(rpc_functions),
     "functions POST /rpc/{function} may call, comma separated"},
    {"rpc-pool", "STORHD_RPC_POOL", OPT_INT, OFF(rpc_pool), "PostgreSQL connections (default 8)"},
    {"rpc-timeout", "STORHD_RPC_TIMEOUT", OPT_INT, OFF(rpc_timeout),
     "ms a PostgreSQL call may run before it is cancelled (504; default 5000)"},
    {"rpc-queue", "STORHD_RPC_QUEUE", OPT_INT, OFF(rpc_queue),
     "calls that may wait for a busy pool, then 503 (default 64; 0 = none)"},
    {"rpc-queue-timeout", "STORHD_RPC_QUEUE_TIMEOUT", OPT_INT, OFF(rpc_queue_timeout),
     "ms a call waits for a pool connection, then 503 (default 1000)"},
    {"rpc-cache-ttl", "STORHD_RPC_CACHE_TTL", OPT_INT, OFF(rpc_cache_ttl),
     "seconds a response stays cached, 0 = no cache (default 5)"},
    {"rpc-cache-entries", "STORHD_RPC_CACHE_ENTRIES", OPT_INT, OFF(rpc_cache_entries),
     "cached responses (default 10000)"},
    {"rpc-cache-bytes", "STORHD_RPC_CACHE_BYTES", OPT_SIZE, OFF(rpc_cache_bytes),
     "bytes of cached responses (default 67108864)"},
    {"rpc-scope-claims", "STORHD_RPC_SCOPE_CLAIMS", OPT_STR, OFF(rpc_scope_claims),
     "claims that scope the response cache (default tenant,role)"},
    {"cache-validation", "STORHD_CACHE_VALIDATION", OPT_STR, OFF(cache_validation),
     "record cache hits checked by stat (mtime+size), hash (xxh128) or trust (default stat)"},
    {"cache-watch", "STORHD_CACHE_WATCH", OPT_STR, OFF(cache_watch),
     "stat-validated cache hits kept fresh by inotify (no syscall but one read per hit) or none "
     "(a stat per hit: for network filesystems, whose other hosts' writes inotify does not "
     "see; default inotify)"},
    {"cache-entries", "STORHD_CACHE_ENTRIES", OPT_INT, OFF(cache_entries),
     "record cache entries per collection (default 100000)"},
    {"cache-bytes", "STORHD_CACHE_BYTES", OPT_SIZE, OFF(cache_bytes),
     "record cache bytes per collection (default 67108864)"},
    {"doc-sync", "STORHD_DOC_SYNC", OPT_STR, OFF(doc_sync),
     "how a group of document writes is made durable: syncfs (one call per step), fsync "
     "(each file and directory, in parallel) or auto (syncfs for groups of 4 or more on "
     "Linux >= 5.8; default)"},
    {"max-open-engines", "STORHD_MAX_OPEN_ENGINES", OPT_INT, OFF(max_open_engines),
     "logs, queues and collections open at once; idle ones are closed and reopened on use "
     "(default: from the descriptor limit and the memory limit)"},
    {"cache-bytes-total", "STORHD_CACHE_BYTES_TOTAL", OPT_SIZE, OFF(cache_bytes_total),
     "record cache bytes over all collections (default: a quarter of the memory limit, the "
     "cgroup's when there is one)"},
};
#define NOPTS (sizeof opts / sizeof opts[0])

static void usage(FILE *f)
{
    fprintf(f, "usage: storhd [--root DIR] [--listen HOST:PORT] [--config FILE] [options]\n\n");
    for (size_t i = 0; i < NOPTS; i++)
        fprintf(f, "  --%-18s %s\n      env %s\n", opts[i].flag, opts[i].help, opts[i].env);
    fprintf(f, "  --%-18s %s\n  --%-18s %s\n", "help", "this text", "version", "print the version");
}

static int set_listen(config *cfg, const char *v)
{
    const char *colon = strrchr(v, ':');
    if (!colon || colon == v) {
        fprintf(stderr, "storhd: --listen must be HOST:PORT, got '%s'\n", v);
        return -1;
    }
    char *end;
    long port = strtol(colon + 1, &end, 10);
    if (*end || port < 0 || port > 65535 || end == colon + 1) {
        fprintf(stderr, "storhd: bad port in --listen '%s'\n", v);
        return -1;
    }
    const char *h = v;
    size_t hl = (size_t)(colon - v);
    if (hl >= 2 && h[0] == '[' && h[hl - 1] == ']') {
        h++;
        hl -= 2;
    }
    char host[64];
    if (hl >= sizeof host) {
        fprintf(stderr, "storhd: bad host in --listen '%s'\n", v);
        return -1;
    }
    memcpy(host, h, hl);
    host[hl] = '\0';
    if (!strcmp(host, "localhost"))
        strcpy(host, "127.0.0.1");
    unsigned char tmp[16];
    if (inet_pton(AF_INET, host, tmp) != 1 && inet_pton(AF_INET6, host, tmp) != 1) {
        fprintf(stderr, "storhd: --listen host must be a numeric address, got '%s'\n", host);
        return -1;
    }
    free(cfg->listen_host);
    cfg->listen_host = strdup(host);
    cfg->listen_port = (int)port;
    return 0;
}

static int set_opt(config *cfg, const opt_def *o, const char *v, const char *where)
{
    if (!strcmp(o->flag, "listen"))
        return set_listen(cfg, v);
    void *field = (char *)cfg + o->offset;
    char *end;
    switch (o->kind) {
    case OPT_STR:
        free(*(char **)field);
        *(char **)field = strdup(v);
        return 0;
    case OPT_SIZE: {
        errno = 0;
        unsigned long long n = strtoull(v, &end, 10);
        if (errno || *end || end == v || n == 0) {
            fprintf(stderr, "storhd: %s %s: expected a positive byte count, got '%s'\n", where,
                    o->flag, v);
            return -1;
        }
        *(size_t *)field = (size_t)n;
        return 0;
    }
    case OPT_INT: {
        errno = 0;
        long n = strtol(v, &end, 10);
        bool zero_ok = o->offset == OFF(cache_entries) || o->offset == OFF(jwt_leeway) ||
                       o->offset == OFF(rpc_cache_ttl) || o->offset == OFF(max_conns_per_ip) ||
                       o->offset == OFF(rpc_queue) || o->offset == OFF(heap_release_idle);
        if (errno || *end || end == v || n < (zero_ok ? 0 : 1) || n > 100000000) {
            fprintf(stderr, "storhd: %s %s: expected an integer >= %d, got '%s'\n", where, o->flag,
                    zero_ok ? 0 : 1, v);
            return -1;
        }
        if (o->offset == OFF(max_conns))
            *(unsigned *)field = (unsigned)n;
        else
            *(int *)field = (int)n;
        return 0;
    }
    case OPT_BOOL:
        if (!strcmp(v, "1") || !strcmp(v, "true") || !strcmp(v, "yes") || !strcmp(v, "on"))
            *(bool *)field = true;
        else if (!strcmp(v, "0") || !strcmp(v, "false") || !strcmp(v, "no") || !strcmp(v, "off"))
            *(bool *)field = false;
        else {
            fprintf(stderr, "storhd: %s %s: expected true or false, got '%s'\n", where, o->flag, v);
            return -1;
        }
        return 0;
    }
    return -1;
}

static const opt_def *find_opt(const char *flag)
{
    for (size_t i = 0; i < NOPTS; i++)
        if (!strcmp(opts[i].flag, flag))
            return &opts[i];
    return NULL;
}

static int load_file(config *cfg, const char *path)
{
    json_error_t je;
    json_t *root = json_load_file(path, 0, &je);
    if (!root) {
        fprintf(stderr, "storhd: config %s:%d:%d: %s\n", path, je.line, je.column, je.text);
        return -1;
    }
    int rc = 0;
    const char *key;
    json_t *v;
    json_object_foreach (root, key, v) {
        if (!strcmp(key, "mirrors") && json_is_object(v)) {
            json_decref(cfg->mirrors);
            cfg->mirrors = json_incref(v);
            continue;
        }
        if (!strcmp(key, "logs") && json_is_object(v)) {
            json_decref(cfg->logs);
            cfg->logs = json_incref(v);
            continue;
        }
        const opt_def *o = find_opt(key);
        if (!o || !strcmp(key, "config")) {
            /* later issues add sections (mirrors, rpc); unknown keys are kept for them */
            continue;
        }
        char tmp[64];
        const char *s = NULL;
        if (json_is_string(v))
            s = json_string_value(v);
        else if (json_is_integer(v))
            snprintf(tmp, sizeof tmp, "%lld", (long long)json_integer_value(v)), s = tmp;
        else if (json_is_boolean(v))
            s = json_is_true(v) ? "true" : "false";
        if (!s) {
            fprintf(stderr, "storhd: config %s: bad value for '%s'\n", path, key);
            rc = -1;
            break;
        }
        if ((rc = set_opt(cfg, o, s, "config")))
            break;
    }
    json_decref(root);
    return rc;
}

/* One event loop per CPU the process may use (taskset, cpuset): more loops
 * than CPUs only take turns on them, which adds tail latency. */
static int allowed_cpus(void)
{
    cpu_set_t set;
    int n = sched_getaffinity(0, sizeof set, &set) == 0 ? CPU_COUNT(&set) : 4;
    return n < 1 ? 1 : n > 16 ? 16 : n;
}

int config_load(config *cfg, int argc, char **argv)
{
    memset(cfg, 0, sizeof *cfg);
    cfg->root = strdup("./var/data");
    cfg->listen_host = strdup("127.0.0.1");
    cfg->listen_port = 8080;
    cfg->max_body = 1024 * 1024;
    cfg->threads = allowed_cpus();
    cfg->conn_timeout = 30;
    cfg->heap_release_idle = 10;
    cfg->max_conns = 1024;
    cfg->access_log = true;
    cfg->workers = 32;
    cfg->log_segment_bytes = 1024 * 1024;
    cfg->log_partition = strdup("none");
    cfg->cache_validation = strdup("stat");
    cfg->doc_sync = strdup("auto");
    cfg->cache_watch = strdup("inotify");
    cfg->jwt_leeway = 30;
    cfg->rpc_pool = 8;
    cfg->rpc_cache_ttl = 5;
    cfg->rpc_timeout = 5000;
    cfg->rpc_queue = 64;
    cfg->rpc_queue_timeout = 1000;
    cfg->rpc_cache_entries = 10000;
    cfg->rpc_cache_bytes = 64 * 1024 * 1024;
    cfg->rpc_scope_claims = strdup("tenant,role");
    cfg->jwt_cache_entries = 1000;
    cfg->jwt_cache_bytes = 1024 * 1024;
    cfg->cache_entries = 100000;
    cfg->cache_bytes = 64 * 1024 * 1024;

    struct option lo[NOPTS + 3];
    for (size_t i = 0; i < NOPTS; i++)
        lo[i] = (struct option){opts[i].flag,
                                opts[i].kind == OPT_BOOL ? optional_argument : required_argument,
                                NULL, (int)(i + 1)};
    lo[NOPTS] = (struct option){"help", no_argument, NULL, 'h'};
    lo[NOPTS + 1] = (struct option){"version", no_argument, NULL, 'V'};
    lo[NOPTS + 2] = (struct option){NULL, 0, NULL, 0};

    /* pass 1: --help, --version and --config (the file sits below env and flags) */
    const char *file = getenv("STORHD_CONFIG");
    optind = 1;
    opterr = 0;
    int c;
    while ((c = getopt_long(argc, argv, "hV", lo, NULL)) != -1) {
        if (c == 'h') {
            usage(stdout);
            return 1;
        }
        if (c == 'V') {
            printf("storhd %s\n", STORHD_VERSION);
            return 1;
        }
        if (c == '?') {
            fprintf(stderr, "storhd: unknown or incomplete option '%s'\n", argv[optind - 1]);
            usage(stderr);
            return -1;
        }
        if (c > 0 && c <= (int)NOPTS && !strcmp(opts[c - 1].flag, "config"))
            file = optarg;
    }
    if (optind < argc) {
        fprintf(stderr, "storhd: unexpected argument '%s'\n", argv[optind]);
        return -1;
    }
    if (file) {
        free(cfg->config_file);
        cfg->config_file = strdup(file);
        if (load_file(cfg, file))
            return -1;
    }
    for (size_t i = 0; i < NOPTS; i++) {
        const char *v = getenv(opts[i].env);
        if (v && opts[i].offset != OFF(config_file) && set_opt(cfg, &opts[i], v, opts[i].env))
            return -1;
    }
    optind = 1;
    while ((c = getopt_long(argc, argv, "hV", lo, NULL)) != -1) {
        if (c <= 0 || c > (int)NOPTS || !strcmp(opts[c - 1].flag, "config"))
            continue;
        const opt_def *o = &opts[c - 1];
        const char *v = optarg ? optarg : (o->kind == OPT_BOOL ? "true" : "");
        if (set_opt(cfg, o, v, "flag"))
            return -1;
    }
    if (config_cache_mode(cfg) < 0) {
        fprintf(stderr, "storhd: --cache-validation must be stat, hash or trust\n");
        return -1;
    }
    if (config_cache_watch(cfg) < 0) {
        fprintf(stderr, "storhd: --cache-watch must be inotify or none\n");
        return -1;
    }
    if (config_doc_sync(cfg) < -1) {
        fprintf(stderr, "storhd: --doc-sync must be auto, syncfs or fsync\n");
        return -1;
    }
    seglog_opts check;
    storh_err err;
    if (config_log_opts(cfg, "*", &check, &err)) {
        fprintf(stderr, "storhd: %s\n", err.msg);
        return -1;
    }
    return 0;
}

int config_cache_mode(const config *cfg)
{
    static const char *const modes[] = {"stat", "hash", "trust"};
    for (int i = 0; i < 3; i++)
        if (!strcmp(cfg->cache_validation, modes[i]))
            return i; /* the order of rcache_mode */
    return -1;
}

int config_doc_sync(const config *cfg)
{
    if (!strcmp(cfg->doc_sync, "auto"))
        return -1;
    if (!strcmp(cfg->doc_sync, "fsync"))
        return 0;
    return !strcmp(cfg->doc_sync, "syncfs") ? 1 : -2;
}

int config_cache_watch(const config *cfg)
{
    if (!strcmp(cfg->cache_watch, "inotify"))
        return 1;
    return !strcmp(cfg->cache_watch, "none") ? 0 : -1;
}

static int partition_of(const char *p, int *out)
{
    if (!strcmp(p, "none"))
        *out = SEGLOG_PART_NONE;
    else if (!strcmp(p, "daily"))
        *out = SEGLOG_PART_DAILY;
    else if (!strcmp(p, "monthly"))
        *out = SEGLOG_PART_MONTHLY;
    else
        return -1;
    return 0;
}

int config_log_opts(const config *cfg, const char *name, seglog_opts *o, storh_err *err)
{
    seglog_opts_default(o);
    o->max_segment_bytes = cfg->log_segment_bytes;
    if (partition_of(cfg->log_partition, &o->partition)) {
        return storh_err_set(err, STORH_EIO,
                             "log partition must be none, daily or monthly, not '%s'",
                             cfg->log_partition);
    }
    json_t *per = json_object_get(cfg->logs, name);
    if (!per)
        per = json_object_get(cfg->logs, "*");
    if (!per)
        return 0;
    json_t *sb = json_object_get(per, "segment_bytes");
    json_t *pt = json_object_get(per, "partition");
    if (sb && (!json_is_integer(sb) || json_integer_value(sb) < 256)) {
        return storh_err_set(err, STORH_EIO, "logs.%s.segment_bytes must be an integer >= 256",
                             name);
    }
    if (sb)
        o->max_segment_bytes = (size_t)json_integer_value(sb);
    if (pt && (!json_is_string(pt) || partition_of(json_string_value(pt), &o->partition))) {
        return storh_err_set(err, STORH_EIO, "logs.%s.partition must be none, daily or monthly",
                             name);
    }
    return 0;
}

void config_free(config *cfg)
{
    free(cfg->root);
    free(cfg->listen_host);
    free(cfg->config_file);
    free(cfg->log_partition);
    free(cfg->cache_validation);
    free(cfg->doc_sync);
    free(cfg->cache_watch);
    free(cfg->jwt_public_key);
    free(cfg->rpc_conninfo);
    free(cfg->rpc_functions);
    free(cfg->rpc_scope_claims);
    free(cfg->jwks);
    free(cfg->jwt_issuer);
    free(cfg->jwt_audience);
    json_decref(cfg->logs);
    json_decref(cfg->mirrors);
    memset(cfg, 0, sizeof *cfg);
}

bool config_listen_is_loopback(const config *cfg)
{
    struct in_addr a4;
    struct in6_addr a6;
    if (inet_pton(AF_INET, cfg->listen_host, &a4) == 1)
        return (ntohl(a4.s_addr) >> 24) == 127;
    if (inet_pton(AF_INET6, cfg->listen_host, &a6) == 1)
        return IN6_IS_ADDR_LOOPBACK(&a6);
    return false;
}
