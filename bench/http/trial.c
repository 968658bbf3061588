/* storh-trial: the HTTP load-trial runner (bench/http). It reproduces the
 * method of the page-RPC load report: for every scenario, N trials in random
 * order, each a warm-up then a measured wrk run with 32 connections, the API,
 * PostgreSQL and wrk on separate CPUs; per trial it records successful
 * req/s, errors, latency percentiles, the API's PSS (mean of samples) and
 * CPU per request, and writes results.json and a report page.
 *
 * A trial in local mode: start storhd pinned on an empty root -> wait for
 * /readyz -> prepare the scenario (plan files, records) -> warm-up run ->
 * sample, measured run, sample -> stop storhd. In remote mode (--target) the
 * API is already running (a container) and is not restarted. */
#include <curl/curl.h>
#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "client.h"
#include "diskpub.h"
#include "fsx.h"
#include "machine.h"
#include "probe.h"
#include "report.h"
#include "results.h"
#include "scenario.h"
#include "spawn.h"
#include "tokens.h"
#include "workdir.h"
#include "wrkrun.h"

#define MAX_API_ARGS 32
#define REQUEST_TIMEOUT_S 10 /* wrk --timeout */

typedef struct options {
    char scenarios[512];
    int trials, warmup_s, duration_s, connections, wrk_threads, ntokens, records, sample_ms;
    size_t arg_bytes;
    char api_cpus[64], pg_cpus[64], wrk_cpus[64];
    const char *storhd, *target, *pg, *jwt_key, *jwt_pub, *lua, *wrk, *out;
    const char *peer; /* a shell command serving the same routes instead of storhd */
    const char *api_args[MAX_API_ARGS];
    int napi_args;
    unsigned long long seed;
    const char *image_api, *image_pg, *source_rev, *command;
    const char *watch[PROBE_MAX_WATCH];
    int nwatch;
    bool fail_on_errors, print_cpus;
    int wait_s;            /* --target: how long to wait for its /readyz */
    double disk_publish_s; /* measure the disk's per-publish limit before each trial */
} options;

static void usage(FILE *f)
{
    size_t n;
    const scenario *all = scenario_all(&n);
    fprintf(f,
            "usage: storh-trial [options]\n"
            "  --scenarios=a,b      default rpc-miss,rpc-hit,doc-get,log-post\n"
            "  --trials=N           trials per scenario (3)\n"
            "  --warmup=S           seconds of warm-up per trial (10)\n"
            "  --duration=S         seconds measured per trial (30)\n"
            "  --connections=N      HTTP connections (32)\n"
            "  --wrk-threads=N      wrk threads (default: one per wrk CPU)\n"
            "  --api-cpus=LIST      taskset list for the API (default 0)\n"
            "  --pg-cpus=LIST       where PostgreSQL runs, recorded (default 1..4 or the rest)\n"
            "  --wrk-cpus=LIST      taskset list for wrk (default: the CPUs after PostgreSQL's)\n"
            "  --storhd=PATH        start this storhd for each trial "
            "(default build/release/service/storhd)\n"
            "  --api-arg=ARG        one more storhd argument (repeatable)\n"
            "  --target=URL         use a running API instead (no restarts)\n"
            "  --peer=CMD           start this shell command instead of storhd for each trial\n"
            "                       (another server of the same routes; it gets PORT in its\n"
            "                       environment, must answer GET /healthz and end with exec,\n"
            "                       so the pid measured is its own; no /metrics is read)\n"
            "  --wait=S             with --target: wait up to S s for its /readyz (0)\n"
            "  --pg=CONNINFO        PostgreSQL of the page RPC (for the started storhd)\n"
            "  --jwt-key=PEM        RSA private key: mint the tokens (RS256)\n"
            "  --jwt-pub=PEM        its public key, for the started storhd\n"
            "  --tokens=N           distinct tokens, used in turn (10)\n"
            "  --arg-bytes=N        size of the JSON argument of POSTs (1024)\n"
            "  --records=N          records stored for doc-get (1000)\n"
            "  --sample-ms=N        probe interval (1000)\n"
            "  --seed=N             order of the trials (default: from the clock)\n"
            "  --lua=PATH --wrk=PATH --out=DIR (default build/http-trials)\n"
            "  --image-api=ID --image-pg=ID --source-rev=REV --command=TEXT  recorded as is\n"
            "  --fail-on-errors     exit 1 when any request failed\n"
            "  --print-cpus         print the API, PostgreSQL and wrk CPU lists and exit\n"
            "  --disk-publish=S     before each trial, S seconds of create+write+fsync+rename+\n"
            "                       dir fsync beside the API's root: the disk's per-publish limit\n"
            "  --watch=SERIES       also record this /metrics series, e.g.\n"
            "                       'storhd_cache_bytes{cache=\"jwt\"}' (repeatable, 8 at most)\n"
            "scenarios:\n");
    for (size_t i = 0; i < n; i++)
        fprintf(f, "  %-10s %s\n", all[i].name, all[i].title);
}

/* Default CPUs in the reference's shape (API 1, PostgreSQL 4, wrk 2) when
 * the machine has them, else as disjoint as it allows. */
static void default_cpus(options *o)
{
    int n = (int)sysconf(_SC_NPROCESSORS_ONLN);
    const char *api = "0", *pg = "0", *wrk = "0";
    char pg_range[32], wrk_one[16];
    if (n >= 7) { /* the reference: API 1 vCPU, PostgreSQL 4, wrk 2 */
        pg = "1-4";
        wrk = "5-6";
    } else if (n >= 3) {
        if (n == 3)
            snprintf(pg_range, sizeof pg_range, "1");
        else
            snprintf(pg_range, sizeof pg_range, "1-%d", n - 2);
        snprintf(wrk_one, sizeof wrk_one, "%d", n - 1);
        pg = pg_range;
        wrk = wrk_one;
    } else if (n == 2) { /* PostgreSQL and wrk must share */
        pg = wrk = "1";
    }
    if (!o->api_cpus[0])
        snprintf(o->api_cpus, sizeof o->api_cpus, "%s", api);
    if (!o->pg_cpus[0])
        snprintf(o->pg_cpus, sizeof o->pg_cpus, "%s", pg);
    if (!o->wrk_cpus[0])
        snprintf(o->wrk_cpus, sizeof o->wrk_cpus, "%s", wrk);
    if (o->wrk_threads <= 0) {
        int count = machine_cpu_count(o->wrk_cpus);
        o->wrk_threads = count > 0 ? count : 1;
    }
}

/* trial.lua: the source tree's, or the installed one beside the binary
 * (<prefix>/bin/storh-trial -> <prefix>/share/storhd/trial.lua). */
static const char *default_lua(void)
{
    static char path[PATH_MAX];
    if (access(STORHD_TRIAL_LUA, R_OK) == 0)
        return STORHD_TRIAL_LUA;
    ssize_t n = readlink("/proc/self/exe", path, sizeof path - 40);
    if (n > 0) {
        path[n] = '\0';
        char *slash = strrchr(path, '/');
        if (slash) {
            *slash = '\0';
            slash = strrchr(path, '/');
            if (slash) {
                strcpy(slash, "/share/storhd/trial.lua");
                return path;
            }
        }
    }
    return STORHD_TRIAL_LUA;
}

static int parse_options(int argc, char **argv, options *o)
{
    /* clang-format off */
    static const struct option longs[] = {{"scenarios", 1, 0, 's'},
                                          {"trials", 1, 0, 'n'},
                                          {"warmup", 1, 0, 'W'},
                                          {"duration", 1, 0, 'd'},
                                          {"connections", 1, 0, 'c'},
                                          {"wrk-threads", 1, 0, 't'},
                                          {"api-cpus", 1, 0, 'A'},
                                          {"pg-cpus", 1, 0, 'P'},
                                          {"wrk-cpus", 1, 0, 'K'},
                                          {"storhd", 1, 0, 'b'},
                                          {"api-arg", 1, 0, 'a'},
                                          {"target", 1, 0, 'T'},
                                          {"peer", 1, 0, 'Q'},
                                          {"pg", 1, 0, 'g'},
                                          {"jwt-key", 1, 0, 'k'},
                                          {"jwt-pub", 1, 0, 'p'},
                                          {"tokens", 1, 0, 'N'},
                                          {"arg-bytes", 1, 0, 'B'},
                                          {"records", 1, 0, 'r'},
                                          {"sample-ms", 1, 0, 'm'},
                                          {"seed", 1, 0, 'S'},
                                          {"lua", 1, 0, 'l'},
                                          {"wrk", 1, 0, 'w'},
                                          {"out", 1, 0, 'o'},
                                          {"image-api", 1, 0, 'I'},
                                          {"image-pg", 1, 0, 'J'},
                                          {"source-rev", 1, 0, 'R'},
                                          {"command", 1, 0, 'C'},
                                          {"fail-on-errors", 0, 0, 'F'},
                                          {"print-cpus", 0, 0, 'X'},
                                          {"watch", 1, 0, 'V'},
                                          {"wait", 1, 0, 'Y'},
                                          {"disk-publish", 1, 0, 'D'},
                                          {"help", 0, 0, 'h'},
                                          {0, 0, 0, 0}};
    /* clang-format on */
    *o = (options){.trials = 3,
                   .warmup_s = 10,
                   .duration_s = 30,
                   .connections = 32,
                   .ntokens = 10,
                   .records = 1000,
                   .sample_ms = 1000,
                   .arg_bytes = 1024,
                   .storhd = "build/release/service/storhd",
                   .lua = default_lua(),
                   .wrk = "wrk",
                   .out = "build/http-trials"};
    snprintf(o->scenarios, sizeof o->scenarios, "rpc-miss,rpc-hit,doc-get,log-post");
    o->seed = (unsigned long long)time(NULL) ^ ((unsigned long long)getpid() << 16);
    int c;
    while ((c = getopt_long(argc, argv, "h", longs, NULL)) != -1) {
        switch (c) {
        case 's':
            snprintf(o->scenarios, sizeof o->scenarios, "%s", optarg);
            break;
        case 'n':
            o->trials = atoi(optarg);
            break;
        case 'W':
            o->warmup_s = atoi(optarg);
            break;
        case 'd':
            o->duration_s = atoi(optarg);
            break;
        case 'c':
            o->connections = atoi(optarg);
            break;
        case 't':
            o->wrk_threads = atoi(optarg);
            break;
        case 'A':
            snprintf(o->api_cpus, sizeof o->api_cpus, "%s", optarg);
            break;
        case 'P':
            snprintf(o->pg_cpus, sizeof o->pg_cpus, "%s", optarg);
            break;
        case 'K':
            snprintf(o->wrk_cpus, sizeof o->wrk_cpus, "%s", optarg);
            break;
        case 'b':
            o->storhd = optarg;
            break;
        case 'a':
            if (o->napi_args < MAX_API_ARGS - 1)
                o->api_args[o->napi_args++] = optarg;
            break;
        case 'T':
            o->target = optarg;
            break;
        case 'Q':
            o->peer = optarg;
            break;
        case 'g':
            o->pg = optarg;
            break;
        case 'k':
            o->jwt_key = optarg;
            break;
        case 'p':
            o->jwt_pub = optarg;
            break;
        case 'N':
            o->ntokens = atoi(optarg);
            break;
        case 'B':
            o->arg_bytes = (size_t)atol(optarg);
            break;
        case 'r':
            o->records = atoi(optarg);
            break;
        case 'm':
            o->sample_ms = atoi(optarg);
            break;
        case 'S':
            o->seed = strtoull(optarg, NULL, 10) & 0x7fffffffffffffffULL;
            break;
        case 'l':
            o->lua = optarg;
            break;
        case 'w':
            o->wrk = optarg;
            break;
        case 'o':
            o->out = optarg;
            break;
        case 'I':
            o->image_api = optarg;
            break;
        case 'J':
            o->image_pg = optarg;
            break;
        case 'R':
            o->source_rev = optarg;
            break;
        case 'C':
            o->command = optarg;
            break;
        case 'F':
            o->fail_on_errors = true;
            break;
        case 'X':
            o->print_cpus = true;
            break;
        case 'Y':
            o->wait_s = atoi(optarg);
            break;
        case 'D':
            o->disk_publish_s = atof(optarg);
            break;
        case 'V':
            if (o->nwatch < PROBE_MAX_WATCH)
                o->watch[o->nwatch++] = optarg;
            break;
        case 'h':
            usage(stdout);
            return 1;
        default:
            usage(stderr);
            return -1;
        }
    }
    if (o->trials < 1 || o->warmup_s < 0 || o->duration_s < 1 || o->connections < 1 ||
        o->ntokens < 1 || o->sample_ms < 50 || o->records < 1) {
        fprintf(stderr, "storh-trial: a count or duration is out of range\n");
        return -1;
    }
    default_cpus(o);
    if (o->print_cpus) {
        printf("%s %s %s\n", o->api_cpus, o->pg_cpus, o->wrk_cpus);
        return 1;
    }
    return 0;
}

/* splitmix64: a fixed generator, so --seed reproduces the order anywhere */
static unsigned long long next_rand(unsigned long long *s)
{
    unsigned long long z = (*s += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

static void iso_now(char *out, size_t cap)
{
    time_t t = time(NULL);
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(out, cap, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

/* Waits up to seconds for path (/readyz: the storage root and PostgreSQL)
 * to answer 200; false if the API exited or never did. */
static bool wait_ok(const char *base, const char *path, pid_t pid, int seconds)
{
    for (int i = 0; i < seconds * 20; i++) {
        client_resp r;
        bool ok = client_do(base, "GET", path, NULL, NULL, 0, NULL, 0, &r) == 0 && r.status == 200;
        client_free(&r);
        if (ok)
            return true;
        if (pid > 0 && waitpid(pid, NULL, WNOHANG) == pid)
            return false;
        struct timespec ts = {0, 50 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    return false;
}

typedef struct run_state {
    const options *o;
    char out[PATH_MAX / 2];  /* --out; every file of the run is a short name under it */
    char work[PATH_MAX / 2]; /* out/work */
    char tokens[PATH_MAX];
    char *token;       /* token 0, for set-up requests */
    json_t *scenarios; /* name -> scenario object with "trials" */
    char storhd_version[64];
} run_state;

/* The storhd command line of a trial, into out (MAX_API_ARGS + 16). */
static void api_argv(const run_state *st, const char *root, const char *listen, const char **out)
{
    const options *o = st->o;
    int n = 0;
    out[n++] = o->storhd;
    out[n++] = "--root";
    out[n++] = root;
    out[n++] = "--listen";
    out[n++] = listen;
    out[n++] = "--access-log=false";
    if (o->jwt_pub) {
        out[n++] = "--jwt-public-key";
        out[n++] = o->jwt_pub;
    }
    if (o->pg) {
        out[n++] = "--rpc-conninfo";
        out[n++] = o->pg;
        out[n++] = "--rpc-functions";
        out[n++] = "page";
    }
    for (int i = 0; i < o->napi_args; i++)
        out[n++] = o->api_args[i];
    out[n] = NULL;
}

/* One trial; appends its record to the scenario. 0, or -1 with msg. */
static int run_trial(run_state *st, const scenario *sc, int trial, int order, char *msg, size_t cap)
{
    const options *o = st->o;
    char base[128], root[PATH_MAX], dp[PATH_MAX], listen[64], log[PATH_MAX] = "", started[32];
    iso_now(started, sizeof started);
    pid_t pid = 0;
    char *api_cmd = NULL;
    workdir_paths(st->work, order, root, dp, sizeof root);
    if (o->target) {
        snprintf(base, sizeof base, "%s", o->target);
    } else {
        int port = client_free_port();
        snprintf(listen, sizeof listen, "127.0.0.1:%d", port);
        snprintf(base, sizeof base, "http://%s", listen);
        snprintf(log, sizeof log, "%s/storhd-%d.log", st->work, order);
        workdir_remove(root); /* an interrupted run's */
        mkdir(root, 0755);
        const char *argv[MAX_API_ARGS + 16];
        char port_env[32];
        const char *env[] = {port_env, NULL};
        snprintf(port_env, sizeof port_env, "PORT=%d", port);
        if (o->peer) { /* it execs itself: the pid measured is the peer's */
            argv[0] = "/bin/sh";
            argv[1] = "-c";
            argv[2] = o->peer;
            argv[3] = NULL;
        } else {
            api_argv(st, root, listen, argv);
        }
        api_cmd = spawn_cmdline(o->api_cpus, argv);
        pid = spawn_pinned(o->api_cpus, argv, o->peer ? env : NULL, log);
        if (pid < 0 || !wait_ok(base, o->peer ? "/healthz" : "/readyz", pid, 20)) {
            snprintf(msg, cap, "%s did not start (see %s)", o->peer ? "the peer" : "storhd", log);
            if (pid > 0)
                spawn_stop(pid, 2000);
            free(api_cmd);
            return -1;
        }
    }
    scenario_ctx ctx = {.base = base,
                        .dir = st->work,
                        .tokens = o->jwt_key ? st->tokens : NULL,
                        .token = st->token,
                        .arg_bytes = o->arg_bytes,
                        .salt = (unsigned long)(o->seed % 1000000) * 100 + (unsigned long)order,
                        .records = o->records};
    scenario_plan plan;
    int rc = scenario_prepare(sc, &ctx, &plan, msg, cap);
    char wrk_out[PATH_MAX], wrk_log[PATH_MAX];
    snprintf(wrk_out, sizeof wrk_out, "%s/wrk-%d.json", st->work, order);
    snprintf(wrk_log, sizeof wrk_log, "%s/wrk-%d.log", st->work, order);
    int conns = sc->connections ? sc->connections : o->connections;
    wrkrun_opts w = {.wrk = o->wrk,
                     .lua = o->lua,
                     .cpus = o->wrk_cpus,
                     .threads = o->wrk_threads < conns ? o->wrk_threads : conns,
                     .connections = conns,
                     .seconds = o->warmup_s,
                     .timeout_s = REQUEST_TIMEOUT_S,
                     .url = base,
                     .out = wrk_out,
                     .log = wrk_log,
                     .plan = &plan.wrk};
    json_t *res = NULL;
    char *wrk_cmd = NULL;
    double disk = 0;
    if (rc == 0 && o->disk_publish_s > 0) { /* beside the root, on its filesystem */
        workdir_remove(dp);                 /* an interrupted run's */
        disk = diskpub_measure(dp, o->disk_publish_s, msg, cap);
        rc = disk < 0 ? -1 : 0;
    }
    if (rc == 0 && o->warmup_s > 0) {
        rc = wrkrun_run(&w, &res, NULL, msg, cap);
        json_decref(res);
        res = NULL;
    }
    probe_opts po = {base,         pid,      sc->route, sc->method,
                     o->sample_ms, o->watch, o->nwatch, o->peer != NULL};
    probe_sample first, last;
    probe *p = NULL;
    if (rc == 0)
        rc = probe_once(&po, 0, &first, msg, cap);
    if (rc == 0 && probe_start(&po, &p) != 0) {
        snprintf(msg, cap, "could not start the probe");
        rc = -1;
    }
    double end = 0;
    if (rc == 0) {
        w.seconds = o->duration_s;
        rc = wrkrun_run(&w, &res, &wrk_cmd, msg, cap);
        end = probe_elapsed(p);
        probe_stop(p);
    }
    if (rc == 0)
        rc = probe_once(&po, end, &last, msg, cap);
    if (rc == 0) {
        /* sample times are relative to probe_start; first was taken just
         * before it, last just after wrk ended, and samples after that end
         * measured an idle API */
        const probe_sample *s = probe_samples(p);
        size_t n = probe_count(p);
        while (n > 0 && s[n - 1].t >= end)
            n--;
        first.t = 0;
        json_t *t = results_trial(sc->name, trial, order, res, s, n, &first, &last, &po);
        json_object_set_new(t, "started_at", json_string(started));
        if (disk > 0) {
            json_object_set_new(t, "connections", json_integer(conns));
            json_object_set_new(t, "disk_publish_per_s", json_real(disk));
            json_object_set_new(t, "vs_disk",
                                json_real(json_number_value(json_object_get(t, "rps")) / disk));
        }
        json_object_set_new(t, "probe_failures", json_integer((json_int_t)probe_failures(p)));
        json_object_set_new(t, "commands",
                            json_pack("{s:s?,s:s?}", "api", api_cmd, "wrk", wrk_cmd));
        json_array_append_new(json_object_get(json_object_get(st->scenarios, sc->name), "trials"),
                              t);
    }
    json_decref(res);
    probe_free(p);
    free(wrk_cmd);
    free(api_cmd);
    if (pid > 0) {
        int st_code = spawn_stop(pid, 10000);
        if (st_code != 0 && rc == 0) {
            snprintf(msg, cap, "%s exited with %d after the trial (see %s)",
                     o->peer ? "the peer" : "storhd", st_code, log);
            rc = -1;
        }
    }
    return rc;
}

static json_t *config_json(const options *o, json_t *order)
{
    json_t *args = json_array();
    for (int i = 0; i < o->napi_args; i++)
        json_array_append_new(args, json_string(o->api_args[i]));
    bool disjoint = !machine_cpus_overlap(o->api_cpus, o->pg_cpus) &&
                    !machine_cpus_overlap(o->api_cpus, o->wrk_cpus) &&
                    !machine_cpus_overlap(o->pg_cpus, o->wrk_cpus);
    json_t *pin = json_object();
    json_object_set_new(pin, "api", json_string(o->api_cpus));
    json_object_set_new(pin, "postgres", json_string(o->pg_cpus));
    json_object_set_new(pin, "wrk", json_string(o->wrk_cpus));
    json_object_set_new(pin, "disjoint", json_boolean(disjoint));
    json_t *c = json_object();
    json_object_set_new(c, "mode", json_string(o->target ? "remote" : "local"));
    json_object_set_new(c, "target", json_string(o->target ? o->target : ""));
    json_object_set_new(c, "trials", json_integer(o->trials));
    json_object_set_new(c, "warmup_s", json_integer(o->warmup_s));
    json_object_set_new(c, "duration_s", json_integer(o->duration_s));
    json_object_set_new(c, "connections", json_integer(o->connections));
    json_object_set_new(c, "wrk_threads", json_integer(o->wrk_threads));
    json_object_set_new(c, "tokens", json_integer(o->ntokens));
    json_object_set_new(c, "records", json_integer(o->records));
    json_object_set_new(c, "arg_bytes", json_integer((json_int_t)o->arg_bytes));
    json_object_set_new(c, "sample_ms", json_integer(o->sample_ms));
    json_object_set_new(c, "request_timeout_s", json_integer(REQUEST_TIMEOUT_S));
    json_object_set_new(c, "seed", json_integer((json_int_t)o->seed));
    json_object_set_new(c, "order", order);
    json_object_set_new(c, "pinning", pin);
    json_object_set_new(c, "api_args", args);
    return c;
}

static char *joined_argv(int argc, char **argv)
{
    const char *args[128];
    int n = 0;
    for (int i = 0; i < argc && n < 127; i++)
        args[n++] = argv[i];
    args[n] = NULL;
    return spawn_cmdline(NULL, args);
}

static void storhd_version(run_state *st)
{
    const options *o = st->o;
    snprintf(st->storhd_version, sizeof st->storhd_version, "unknown");
    if (o->peer) {
        snprintf(st->storhd_version, sizeof st->storhd_version, "peer");
        return;
    }
    if (!o->target) {
        const char *argv[] = {o->storhd, "--version", NULL};
        char *v = spawn_first_line(argv);
        if (v)
            snprintf(st->storhd_version, sizeof st->storhd_version, "%s", v);
        free(v);
        return;
    }
    client_resp r;
    if (client_do(o->target, "GET", "/openapi.json", NULL, NULL, 0, NULL, 0, &r) == 0) {
        json_t *doc = json_loadb(r.body, r.len, 0, NULL);
        const char *v = json_string_value(json_object_get(json_object_get(doc, "info"), "version"));
        if (v)
            snprintf(st->storhd_version, sizeof st->storhd_version, "storhd %s", v);
        json_decref(doc);
    }
    client_free(&r);
}

/* The ratios group commit is judged by: each scenario over the disk's
 * per-publish limit (--disk-publish; median of per-trial ratios), and
 * doc-post (32 connections) over doc-post-1 (medians of the same run). */
static void print_comparisons(const json_t *scen_list)
{
    size_t i;
    const json_t *sc;
    double post = 0, post1 = 0;
    json_array_foreach (scen_list, i, sc) {
        const char *name = json_string_value(json_object_get(sc, "name"));
        const json_t *s = json_object_get(sc, "summary");
        double rps = json_number_value(json_object_get(json_object_get(s, "rps"), "median"));
        if (!strcmp(name, "doc-post"))
            post = rps;
        if (!strcmp(name, "doc-post-1"))
            post1 = rps;
        if (json_object_get(s, "vs_disk"))
            printf("%-10s %8.1fx the disk's per-publish limit (%.0f/s; medians of the trials)\n",
                   name, json_number_value(json_object_get(s, "vs_disk")),
                   json_number_value(json_object_get(s, "disk_publish_per_s")));
    }
    if (post > 0 && post1 > 0)
        printf("doc-post   %8.1fx doc-post-1 (medians of this run)\n", post / post1);
}

int main(int argc, char **argv)
{
    options o;
    int prc = parse_options(argc, argv, &o);
    if (prc)
        return prc > 0 ? 0 : 2;
    const scenario *list[16];
    int nsc = 0;
    for (char *save = NULL, *name = strtok_r(o.scenarios, ",", &save); name && nsc < 16;
         name = strtok_r(NULL, ",", &save)) {
        list[nsc] = scenario_find(name);
        if (!list[nsc]) {
            fprintf(stderr, "storh-trial: no scenario %s (see --help)\n", name);
            return 2;
        }
        if (list[nsc]->rpc && !o.target && !o.pg) {
            fprintf(stderr, "storh-trial: %s needs --pg (the page RPC's PostgreSQL)\n", name);
            return 2;
        }
        nsc++;
    }
    curl_global_init(CURL_GLOBAL_DEFAULT);
    run_state st = {.o = &o};
    if (strlen(o.out) + 8 > sizeof st.work) {
        fprintf(stderr, "storh-trial: --out is too long\n");
        return 2;
    }
    snprintf(st.out, sizeof st.out, "%s", o.out);
    snprintf(st.work, sizeof st.work, "%s/work", o.out);
    storh_err merr;
    if (fsx_mkdirs(st.work, false, &merr) != 0) {
        fprintf(stderr, "storh-trial: %s\n", merr.msg);
        return 1;
    }
    snprintf(st.tokens, sizeof st.tokens, "%s/tokens.txt", st.work);
    char msg[512];
    /* tokens outlive the run: 2x its planned length plus an hour */
    long ttl = 3600 + 2L * nsc * o.trials * (o.warmup_s + o.duration_s + 30);
    if (o.jwt_key &&
        tokens_mint(o.jwt_key, o.ntokens, ttl, st.tokens, &st.token, msg, sizeof msg) != 0) {
        fprintf(stderr, "storh-trial: %s\n", msg);
        return 1;
    }
    /* every (scenario, trial) pair, shuffled (Fisher-Yates) */
    int total = nsc * o.trials;
    int *pairs = calloc((size_t)total, sizeof *pairs);
    for (int i = 0; i < total; i++)
        pairs[i] = i;
    unsigned long long rs = o.seed;
    for (int i = total - 1; i > 0; i--) {
        int j = (int)(next_rand(&rs) % (unsigned long long)(i + 1));
        int tmp = pairs[i];
        pairs[i] = pairs[j];
        pairs[j] = tmp;
    }
    json_t *order = json_array();
    st.scenarios = json_object();
    json_t *scen_list = json_array();
    for (int i = 0; i < nsc; i++) {
        json_t *sc =
            json_pack("{sssssssssss[]}", "name", list[i]->name, "title", list[i]->title, "method",
                      list[i]->method, "route", list[i]->route, "what", list[i]->what, "trials");
        json_object_set(st.scenarios, list[i]->name, sc);
        json_array_append_new(scen_list, sc);
    }
    for (int k = 0; k < total; k++)
        json_array_append_new(order,
                              json_pack("{sssi}", "scenario", list[pairs[k] / o.trials]->name,
                                        "trial", pairs[k] % o.trials + 1));
    if (o.target && o.wait_s > 0 && !wait_ok(o.target, "/readyz", 0, o.wait_s)) {
        fprintf(stderr, "storh-trial: %s/readyz was not ready within %d s\n", o.target, o.wait_s);
        return 1;
    }
    storhd_version(&st);
    char started[32], finished[32];
    iso_now(started, sizeof started);
    int failed = 0;
    for (int k = 0; k < total; k++) {
        const scenario *sc = list[pairs[k] / o.trials];
        int trial = pairs[k] % o.trials + 1;
        fprintf(stderr, "storh-trial: run %d of %d: %s, trial %d\n", k + 1, total, sc->name, trial);
        if (run_trial(&st, sc, trial, k + 1, msg, sizeof msg) != 0) {
            fprintf(stderr, "storh-trial: %s trial %d failed: %s\n", sc->name, trial, msg);
            failed++;
        }
    }
    workdir_remove_all(st.work, total);
    iso_now(finished, sizeof finished);
    for (int i = 0; i < nsc; i++)
        results_summarize(json_object_get(st.scenarios, list[i]->name));
    json_t *env = machine_describe(o.wrk, o.pg);
    json_object_set_new(env, "storhd", json_string(st.storhd_version));
    json_object_set_new(env, "source_rev", json_string(o.source_rev ? o.source_rev : ""));
    json_object_set_new(env, "images",
                        json_pack("{s:s?,s:s?}", "api", o.image_api, "postgres", o.image_pg));
    char *cmd = o.command ? strdup(o.command) : joined_argv(argc, argv);
    json_t *doc = json_pack("{sssssssssososo}", "schema", RESULTS_SCHEMA, "started_at", started,
                            "finished_at", finished, "command", cmd ? cmd : "", "config",
                            config_json(&o, order), "environment", env, "scenarios", scen_list);
    free(cmd);
    char json_path[PATH_MAX], html_path[PATH_MAX];
    snprintf(json_path, sizeof json_path, "%s/results.json", st.out);
    snprintf(html_path, sizeof html_path, "%s/index.html", st.out);
    int rc = 0;
    if (json_dump_file(doc, json_path, JSON_INDENT(1) | JSON_SORT_KEYS) != 0) {
        fprintf(stderr, "storh-trial: could not write %s\n", json_path);
        rc = 1;
    } else if (report_write(doc, html_path, "results.json", msg, sizeof msg) != 0) {
        fprintf(stderr, "storh-trial: %s\n", msg);
        rc = 1;
    }
    long long errors = results_errors(doc);
    size_t i;
    json_t *sc;
    json_array_foreach (scen_list, i, sc) {
        const json_t *s = json_object_get(sc, "summary");
        const json_t *rps = json_object_get(s, "rps"), *lat = json_object_get(s, "latency_ms");
        printf("%-9s %8.0f req/s (%.0f-%.0f)  p50/p95/p99 %.2f/%.2f/%.2f ms  PSS %.1f MiB  "
               "CPU %.1f us/req  errors %lld\n",
               json_string_value(json_object_get(sc, "name")),
               json_number_value(json_object_get(rps, "median")),
               json_number_value(json_object_get(rps, "min")),
               json_number_value(json_object_get(rps, "max")),
               json_number_value(json_object_get(lat, "p50")),
               json_number_value(json_object_get(lat, "p95")),
               json_number_value(json_object_get(lat, "p99")),
               json_number_value(json_object_get(s, "pss_mib")),
               json_number_value(json_object_get(s, "cpu_us_per_request")),
               (long long)json_integer_value(json_object_get(s, "errors")));
    }
    print_comparisons(scen_list);
    printf("wrote %s and %s\n", json_path, html_path);
    if (failed) {
        fprintf(stderr, "storh-trial: %d of %d trials failed\n", failed, total);
        rc = 1;
    }
    if (o.fail_on_errors && errors > 0) {
        fprintf(stderr, "storh-trial: %lld requests failed\n", errors);
        rc = 1;
    }
    json_decref(doc);
    json_decref(st.scenarios);
    free(st.token);
    free(pairs);
    curl_global_cleanup();
    return rc;
}
