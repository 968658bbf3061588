/* h_system: the service's own routes: liveness and readiness, Prometheus
 * metrics, the OpenAPI description, and the UUIDv7 helpers. */
#ifndef STORHD_H_SYSTEM_H
#define STORHD_H_SYSTEM_H

typedef struct http_req http_req;

int h_healthz(http_req *req);
int h_readyz(http_req *req);
int h_metrics(http_req *req);
int h_openapi(http_req *req);
int h_uuid_new(http_req *req);
int h_uuid_check(http_req *req);

#endif
