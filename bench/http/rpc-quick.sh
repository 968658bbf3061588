#!/usr/bin/env bash
# A quick page-RPC trial (the full trial suite is bench/http/ in a later issue):
# storhd pinned to CPU 0, PostgreSQL and wrk on CPU 1, 32 connections, 10 reused
# tokens, a 1 KiB argument; 5 s warm-up and 20 s measured for the cache-miss path
# (every argument set new) and the cache-hit path (10 argument sets), each in a
# fresh storhd. Prints req/s, latency, API CPU per request (utime+stime) and PSS.
set -eu -o pipefail
cd "$(dirname "$0")/../.."
W=$(mktemp -d "${TMPDIR:-/tmp}/storhd-rpc-XXXXXX")
chmod 755 "$W" # the postgres user must reach its cluster inside
conn=$(scripts/pg.sh start $W/pg 25440)
taskset -cp 1 $(head -1 $W/pg/postmaster.pid) >/dev/null
psql "$conn" -q -f deploy/postgres/fixture.sql >/dev/null 2>&1
deploy/postgres/mint.sh keys $W/keys >/dev/null
tokens=""
for t in $(seq 0 9); do
  tok=$(build/release/bench/storh-token $W/keys/jwt.key "{\"sub\":\"u$t\",\"tenant\":$((t*7)),\"role\":\"reader\",\"scope\":\"*\"}" 3600)
  tokens="$tokens\"$tok\","
done
pad=$(head -c 960 /dev/zero | tr '\0' x)
for mode in miss hit; do
cat > $W/$mode.lua <<LUA
local tokens = {${tokens%,}}
local n = 0
request = function()
  n = n + 1
  local t = tokens[(n % 10) + 1]
  local uniq = "$mode" == "miss" and n or (n % 10)
  local body = '{"limit":100,"req":' .. uniq .. ',"pad":"$pad"}'
  return wrk.format("POST", "/rpc/page", {["Content-Type"]="application/json", ["Authorization"]="Bearer " .. t}, body)
end
LUA
done
cpu() { awk '{print $14+$15}' /proc/$pid/stat; }
for mode in miss hit; do
  taskset -c 0 build/release/service/storhd --root $W/root-$mode --listen 127.0.0.1:18095 --access-log=false \
    --rpc-conninfo "$conn" --rpc-functions page --rpc-pool 8 --rpc-cache-ttl 60 --rpc-cache-bytes 4194304 \
    --jwt-public-key $W/keys/jwt.pub 2>/dev/null &
  pid=$!
  sleep 1
  taskset -c 1 wrk -t1 -c32 -d5s -s $W/$mode.lua http://127.0.0.1:18095 >/dev/null   # warm-up
  c0=$(cpu)
  out=$(taskset -c 1 wrk -t1 -c32 -d20s --latency -s $W/$mode.lua http://127.0.0.1:18095)
  c1=$(cpu)
  req=$(echo "$out" | awk '/requests in/{print $1}')
  rps=$(echo "$out" | awk '/Requests\/sec/{print $2}')
  p99=$(echo "$out" | awk '$1=="99%"{print $2}')
  p90=$(echo "$out" | awk '$1=="90%"{print $2}')
  non2xx=$(echo "$out" | awk '/Non-2xx/{print $5}')
  pss=$(awk '/^Pss:/{print $2}' /proc/$pid/smaps_rollup)
  tick=$(getconf CLK_TCK)
  echo "$mode: $rps req/s ($req requests, non-2xx ${non2xx:-0}), p90 $p90, p99 $p99, API CPU $(echo "($c1-$c0)*1000000/$tick/$req" | bc) us/req, PSS $((pss/1024)) MiB"
  curl -s localhost:18095/metrics | grep -E 'cache="(jwt|response)",event="(hit|miss)"|cache_bytes\{cache="response"|pool_total\{event="wait"'
  kill $pid; wait $pid 2>/dev/null
done
scripts/pg.sh stop $W/pg
rm -rf "$W"
