wrk.method = "POST"
wrk.body = '{"to":"user@example.org","template":"welcome"}'
wrk.headers["Content-Type"] = "application/json"
