#include "machine.h"

#include <libpq-fe.h>
#include <sched.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "spawn.h"

/* The value after "key" and a separator in the first matching line. */
static char *file_value(const char *path, const char *key, const char *seps)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return NULL;
    char line[512];
    char *out = NULL;
    size_t kl = strlen(key);
    while (!out && fgets(line, sizeof line, f)) {
        if (strncmp(line, key, kl) != 0 || !strchr(seps, line[kl]))
            continue;
        char *v = line + kl;
        v += strspn(v, seps);
        v[strcspn(v, "\n")] = '\0';
        if (*v == '"') {
            v++;
            v[strcspn(v, "\"")] = '\0';
        }
        out = strdup(v);
    }
    fclose(f);
    return out;
}

static json_t *str_or_null(char *s)
{
    json_t *v = s ? json_string(s) : json_null();
    free(s);
    return v ? v : json_null();
}

static char *pg_version(const char *conninfo)
{
    if (!conninfo)
        return NULL;
    PGconn *c = PQconnectdb(conninfo);
    char *v = NULL;
    if (PQstatus(c) == CONNECTION_OK) {
        PGresult *r = PQexec(c, "SELECT version()");
        if (PQresultStatus(r) == PGRES_TUPLES_OK)
            v = strdup(PQgetvalue(r, 0, 0));
        PQclear(r);
    }
    PQfinish(c);
    return v;
}

json_t *machine_describe(const char *wrk, const char *pg)
{
    struct utsname u;
    uname(&u);
    char kernel[300];
    snprintf(kernel, sizeof kernel, "%s %s", u.sysname, u.release);
    char *model = file_value("/proc/cpuinfo", "model name", " \t:");
    long memkb = 0;
    char *mem = file_value("/proc/meminfo", "MemTotal", " :");
    if (mem)
        memkb = atol(mem);
    free(mem);
    const char *wrk_argv[] = {wrk, "--version", NULL};
    bool container = access("/.dockerenv", F_OK) == 0 || access("/run/.containerenv", F_OK) == 0;
    char allowed[256];
    machine_allowed_cpus(allowed, sizeof allowed);
    return json_pack("{sososisssIsssosbsos{so}}", "cpu_model", str_or_null(model), "arch",
                     json_string(u.machine), "cpus_online", (int)sysconf(_SC_NPROCESSORS_ONLN),
                     "cpus_allowed", allowed, "memory_mib", (json_int_t)(memkb / 1024), "kernel",
                     kernel, "os", str_or_null(file_value("/etc/os-release", "PRETTY_NAME", "=")),
                     "container", container, "postgres", str_or_null(pg_version(pg)), "tools",
                     "wrk", str_or_null(spawn_first_line(wrk_argv)));
}

/* CPU numbers of a taskset list as a bit set (CPUs below 1024). */
static void cpu_set_of(const char *list, cpu_set_t *set)
{
    CPU_ZERO(set);
    for (const char *p = list; p && *p;) {
        char *end;
        long a = strtol(p, &end, 10), b = a;
        if (end == p)
            break;
        if (*end == '-')
            b = strtol(end + 1, &end, 10);
        for (long c = a; c <= b && c < CPU_SETSIZE; c++)
            if (c >= 0)
                CPU_SET((int)c, set);
        p = *end == ',' ? end + 1 : end;
        if (*end != ',')
            break;
    }
}

int machine_cpus_overlap(const char *a, const char *b)
{
    cpu_set_t x, y, both;
    cpu_set_of(a, &x);
    cpu_set_of(b, &y);
    CPU_AND(&both, &x, &y);
    return CPU_COUNT(&both) > 0;
}

int machine_cpu_count(const char *list)
{
    cpu_set_t set;
    cpu_set_of(list, &set);
    return CPU_COUNT(&set);
}

void machine_allowed_cpus(char *out, size_t cap)
{
    cpu_set_t set;
    out[0] = '\0';
    if (sched_getaffinity(0, sizeof set, &set) != 0)
        return;
    size_t len = 0;
    for (int c = 0; c < CPU_SETSIZE && len + 8 < cap; c++)
        if (CPU_ISSET(c, &set))
            len += (size_t)snprintf(out + len, cap - len, "%s%d", len ? "," : "", c);
}
