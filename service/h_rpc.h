/* h_rpc: POST /rpc/{function}, the page RPC: a JSON object of arguments in,
 * the function's rows out as a JSON array, with ETag/304 and Cache-Control.
 * Runs on the worker pool (the call waits for PostgreSQL). */
#ifndef STORHD_H_RPC_H
#define STORHD_H_RPC_H

typedef struct http_req http_req;

int h_rpc(http_req *req);

#endif
