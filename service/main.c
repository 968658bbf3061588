/* storhd: the daemon's entry point. Loads the config, checks the auth rule
 * for non-loopback addresses, opens the storage root and serves until SIGINT
 * or SIGTERM. */
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>

#include "accesslog.h"
#include "fsx.h"
#include "http.h"
#include "metrics.h"
#include "routes.h"
#include "service.h"

int main(int argc, char **argv)
{
    service svc = {0};
    int rc = config_load(&svc.cfg, argc, argv);
    if (rc != 0) {
        config_free(&svc.cfg);
        return rc > 0 ? 0 : 2;
    }
    bool loopback = config_listen_is_loopback(&svc.cfg);
    if (!loopback && !svc.cfg.insecure_no_auth) {
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
    svc.routes = routes_table(&svc.nroutes);
    svc.reg = registry_new(svc.cfg.root);
    if (!svc.reg || metrics_init(svc.routes, svc.nroutes) != 0) {
        fprintf(stderr, "storhd: out of memory\n");
        return 1;
    }
    /* signals are taken by sigwait below; worker threads inherit the mask */
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &set, NULL);
    signal(SIGPIPE, SIG_IGN);

    http_server *srv;
    char msg[256];
    if (http_start(&svc, &srv, msg, sizeof msg)) {
        fprintf(stderr, "storhd: %s\n", msg);
        registry_free(svc.reg);
        metrics_free();
        config_free(&svc.cfg);
        return 1;
    }
    accesslog_event("listening",
                    json_pack("{sssisssiss}", "host", svc.cfg.listen_host, "port", http_port(srv),
                              "root", svc.cfg.root, "threads", svc.cfg.threads, "auth",
                              loopback ? "none: no JWT key configured, serving on loopback only"
                                       : "none: --insecure-no-auth"));
    int sig = 0;
    sigwait(&set, &sig);
    accesslog_event("stopping", json_pack("{si}", "signal", sig));
    http_stop(srv);
    registry_free(svc.reg);
    metrics_free();
    config_free(&svc.cfg);
    return 0;
}
