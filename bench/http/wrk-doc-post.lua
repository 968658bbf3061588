wrk.method = "POST"
wrk.body = '{"title":"hello world","kind":"page","n":42,"tags":["a","b"],"payload":"0123456789abcdef0123456789abcdef"}'
wrk.headers["Content-Type"] = "application/json"
