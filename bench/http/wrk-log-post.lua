wrk.method = "POST"
wrk.body = '{"type":"click","user":"u123","path":"/pricing","n":1}'
wrk.headers["Content-Type"] = "application/json"
