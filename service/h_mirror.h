/* h_mirror: the /v1/mirror routes (install, uninstall, push, flush, pull,
 * verify, rebuild) over the mirrors declared in the config, and the
 * background push loop. Every call runs on the worker pool. */
#ifndef STORHD_H_MIRROR_H
#define STORHD_H_MIRROR_H

#include "buf.h"

typedef struct http_req http_req;
typedef struct service service;

/* Builds the configured mirrors (or the embedded default); 0 or -1 with
 * a message on stderr. */
int h_mirror_setup(service *svc);
void h_mirror_teardown(service *svc);

int h_mirror_install(http_req *req);
int h_mirror_uninstall(http_req *req);
int h_mirror_push(http_req *req);
int h_mirror_flush(http_req *req);
int h_mirror_pull(http_req *req);
int h_mirror_verify(http_req *req);
int h_mirror_rebuild(http_req *req);

#endif
