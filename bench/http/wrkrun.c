#include "wrkrun.h"

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "spawn.h"

int wrkrun_run(const wrkrun_opts *o, json_t **result, char **cmdline, char *msg, size_t cap)
{
    char t[16], c[16], d[16], to[16];
    snprintf(t, sizeof t, "%d", o->threads);
    snprintf(c, sizeof c, "%d", o->connections);
    snprintf(d, sizeof d, "%ds", o->seconds);
    snprintf(to, sizeof to, "%ds", o->timeout_s);
    const char *argv[] = {o->wrk,      "-t", t,    "-c",   c,      "-d", d,
                          "--timeout", to,   "-s", o->lua, o->url, NULL};
    char e_method[32], e_paths[4200], e_tokens[4200], e_body[4200], e_ctype[128], e_out[4200],
        e_queue[128];
    const wrkrun_plan *p = o->plan;
    snprintf(e_method, sizeof e_method, "TRIAL_METHOD=%s", p->method);
    snprintf(e_paths, sizeof e_paths, "TRIAL_PATHS=%s", p->paths);
    snprintf(e_tokens, sizeof e_tokens, "TRIAL_TOKENS=%s", p->tokens ? p->tokens : "");
    snprintf(e_body, sizeof e_body, "TRIAL_BODY=%s", p->body ? p->body : "");
    snprintf(e_ctype, sizeof e_ctype, "TRIAL_CTYPE=%s", p->ctype ? p->ctype : "application/json");
    snprintf(e_out, sizeof e_out, "TRIAL_OUT=%s", o->out);
    snprintf(e_queue, sizeof e_queue, "TRIAL_QUEUE=%s", p->queue ? p->queue : "");
    const char *env[] = {e_method, e_paths, e_tokens, e_body, e_ctype, e_out, e_queue, NULL};
    if (cmdline)
        *cmdline = spawn_cmdline(o->cpus, argv);
    unlink(o->out);
    pid_t pid = spawn_pinned(o->cpus, argv, env, o->log);
    if (pid < 0) {
        snprintf(msg, cap, "could not start %s", o->wrk);
        return -1;
    }
    int rc = spawn_wait(pid);
    json_error_t je;
    *result = json_load_file(o->out, 0, &je);
    if (rc != 0 || !json_is_object(*result)) {
        snprintf(msg, cap, "wrk exited with %d and left no summary in %s (see %s)", rc, o->out,
                 o->log ? o->log : "its output");
        json_decref(*result);
        *result = NULL;
        return -1;
    }
    return 0;
}
