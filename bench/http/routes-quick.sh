#!/usr/bin/env bash
# A quick HTTP trial of the main routes: storhd on CPU 0, wrk on CPU 1, 32
# connections, 10 s per route, access log off.
set -u
here=$(cd "$(dirname "$0")" && pwd)
cd "$(dirname "$0")/../.."
bin=build/release/service/storhd
root=$(mktemp -d "${TMPDIR:-/tmp}/storhd-wrk-XXXXXX")
taskset -c 0 $bin --root $root --listen 127.0.0.1:18090 --access-log=false 2>/dev/null &
pid=$!
sleep 0.5
id=$(curl -s -XPOST -H 'Content-Type: application/json' -d '{"title":"hello","n":1,"tags":["a","b"]}' localhost:18090/v1/docs/pages | python3 -c 'import json,sys;print(json.load(sys.stdin)["id"])')
run() { echo "== $1"; taskset -c 1 wrk -t1 -c32 -d10s ${3:+-s $3} "http://127.0.0.1:18090$2" | grep -E 'Requests/sec|Latency|Non-2xx|requests in'; }
run "GET /v1/docs/pages/{id}" "/v1/docs/pages/$id"
run "POST /v1/docs/pages" "/v1/docs/pages" $here/wrk-doc-post.lua
run "POST /v1/logs/events" "/v1/logs/events" $here/wrk-log-post.lua
run "POST /v1/queues/mail/jobs" "/v1/queues/mail/jobs" $here/wrk-enqueue.lua
run "POST /v1/queues/mail/claim" "/v1/queues/mail/claim" $here/wrk-claim.lua
curl -s localhost:18090/metrics | grep -E 'op="fsync_file"|op="log_append"|op="queue_event"'
curl -s localhost:18090/v1/logs/events/_stats; echo
curl -s localhost:18090/v1/queues/mail; echo
kill $pid; wait $pid 2>/dev/null
rm -rf $root $root.mirror.sqlite*
