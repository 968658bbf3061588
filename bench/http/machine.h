/* machine: the environment block of results.json: CPU model and count,
 * memory, kernel, OS, whether the runner is inside a container, and the
 * versions of the tools it drives. */
#ifndef STORHD_TRIAL_MACHINE_H
#define STORHD_TRIAL_MACHINE_H

#include <jansson.h>

/* What this machine is (new reference). wrk: the wrk binary to ask for its
 * version; pg: a libpq conninfo to ask PostgreSQL's, or NULL. */
json_t *machine_describe(const char *wrk, const char *pg);
/* Whether the CPU lists (taskset syntax: "0", "1-4", "5,6") share a CPU. */
int machine_cpus_overlap(const char *a, const char *b);
/* How many CPUs a taskset list names. */
int machine_cpu_count(const char *list);
/* The CPUs this process may run on, as a taskset list into out. */
void machine_allowed_cpus(char *out, size_t cap);

#endif
