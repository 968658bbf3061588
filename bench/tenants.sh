#!/usr/bin/env bash
# The cost of bounded open engines, measured on one storhd (RelWithDebInfo
# build in build/test): document reads spread round robin over TENANTS
# collections with --max-open-engines OPEN (so every read reopens its
# collection) against the same reads of one collection, in ROUNDS
# interleaved pairs of SECONDS each (wrk, one thread, 4 connections);
# prints each pair and the median ratio. Then the memory of an idle engine:
# RSS before and after opening IDLE docstores, logs and queues.
#   bench/tenants.sh [TENANTS] [ROUNDS] [SECONDS]
set -euo pipefail
cd "$(dirname "$0")/.."
tenants=${1:-10000} rounds=${2:-5} secs=${3:-5} open=${OPEN:-64} idle=${IDLE:-2000}
bin=build/test/service/storhd
work=$(mktemp -d "${TMPDIR:-/tmp}/storhd-tenants-XXXXXX")
pid=
trap '[ -n "$pid" ] && kill "$pid" 2>/dev/null; wait 2>/dev/null; rm -rf "$work"' EXIT
port=$((20000 + RANDOM % 20000))
base=http://127.0.0.1:$port
id=01a23b42-4943-73c3-92fe-eb3965ad34d8

start() {
  "$bin" --root "$work/data" --listen "127.0.0.1:$port" --access-log=false "$@" 2>"$work/log" &
  pid=$!
  until curl -sf "$base/healthz" >/dev/null; do sleep 0.1; done
}
stop() { kill "$pid" && wait "$pid" || true; pid=; }
rss_kb() { awk '/^VmRSS/ {print $2}' "/proc/$pid/status"; }
# POST or PUT a small body to every path read from stdin, keeping one connection
drive() {
  python3 -c '
import http.client, sys
method, port = sys.argv[1], int(sys.argv[2])
c = http.client.HTTPConnection("127.0.0.1", port)
for path in sys.stdin:
    body = "{\"x\":1}" if method != "GET" else None
    c.request(method, path.strip(), body, {"Content-Type": "application/json"})
    r = c.getresponse(); r.read()
    if r.status >= 300: sys.exit("%s %s: %d" % (method, path.strip(), r.status))
' "$@"
}

start --max-open-engines "$open"
seq 0 $((tenants - 1)) | sed "s|.*|/v1/docs/t&/$id|" | drive PUT "$port"
cat >"$work/rr.lua" <<EOF
local i = 0
request = function()
  i = (i + 1) % $tenants
  return wrk.format("GET", "/v1/docs/t" .. i .. "/$id")
end
EOF
cat >"$work/one.lua" <<EOF
request = function() return wrk.format("GET", "/v1/docs/t0/$id") end
EOF
rps() { wrk -t1 -c4 -d"${secs}s" -s "$1" "$base" | awk '/Requests\/sec/ {print $2}'; }
ratios=()
for r in $(seq 1 "$rounds"); do
  spread=$(rps "$work/rr.lua")
  one=$(rps "$work/one.lua")
  ratio=$(python3 -c "print(round($spread / $one, 3))")
  ratios+=("$ratio")
  echo "round $r: spread over $tenants collections $spread req/s, one collection $one req/s, ratio $ratio"
done
printf '%s\n' "${ratios[@]}" | sort -n | awk '{a[NR]=$1} END {print "median ratio (spread / one):", a[int((NR+1)/2)]}'
curl -s "$base/metrics" | grep -E '^storhd_engine_events_total|^storhd_engines_budget'
stop

# memory of an idle engine: RSS growth per engine opened and left idle
start --max-open-engines $((idle * 4 + 100))
# a warm-up of as many engines first, so allocator growth is not counted
seq 0 $((idle - 1)) | sed "s|.*|/v1/docs/t&/$id|" | drive GET "$port"
before=$(rss_kb)
seq 0 $((idle - 1)) | sed "s|.*|/v1/docs/i&/_stats|" | drive GET "$port"
docs=$(rss_kb)
seq 0 $((idle - 1)) | sed "s|.*|/v1/logs/i&|" | drive POST "$port"
logs=$(rss_kb)
seq 0 $((idle - 1)) | sed "s|.*|/v1/queues/i&/jobs|" | drive POST "$port"
queues=$(rss_kb)
echo "idle engines ($idle each): docstore $(((docs - before) * 1024 / idle)) B," \
  "log $(((logs - docs) * 1024 / idle)) B, queue $(((queues - logs) * 1024 / idle)) B of RSS each"
curl -s "$base/metrics" | grep -E '^storhd_engines_open|^process_open_fds'
stop
