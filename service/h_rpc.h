/* h_rpc: POST /rpc/{function}, the page RPC: a JSON object of arguments in,
 * the function's rows out as a JSON array, with ETag/304 and Cache-Control.
 * A response-cache hit is answered on the event loop (h_rpc_hit); so is a
 * miss handed over: the connection is suspended and resumed with the
 * answer by the thread that drives the PostgreSQL connections, the loop
 * itself or the RPC's I/O thread (rpc_start). A token not yet verified
 * runs h_rpc on the work pool (verification, then the call). The route
 * table says so (ROUTE_RUN_LOOP_FIRST). */
#ifndef STORHD_H_RPC_H
#define STORHD_H_RPC_H

typedef struct http_req http_req;

/* On the loop: 0 when it replied (a hit, or a request refused) or handed a
 * miss to PostgreSQL; 1 never (the pool is not needed). */
int h_rpc_hit(http_req *req);
/* On the pool: the call, through the cache. */
int h_rpc(http_req *req);

#endif
