#!/usr/bin/env bash
# The load suite of the hardening work, on this host:
# 1. every main route at saturation for 60 s (one trial, 5 s warm-up): no
#    request may fail, and memory must stay flat: RSS in the last quarter of
#    the run within 4 MiB or 5% of the second quarter. The log keeps storh's
#    in-memory state index (id -> line) for every record it holds, so there
#    RSS growth per acknowledged append is bounded instead (512 bytes; a
#    leaked request body would be over 1 KiB);
# 2. 10,000 distinct JWTs against a JWT cache bounded to 256 KiB (and a
#    100,000 entry bound that never binds): its byte gauge, sampled every
#    second, never passes the bound, and it evicts.
#   bench/http/load.sh           the full form (about 9 minutes)
#   bench/http/load.sh --short   the CI form: 5 s per route
# Results: build/http-load/{routes,jwt}/results.json and index.html.
set -euo pipefail
cd "$(dirname "$0")/../.."
given="$*"
duration=60 warmup=5 form=full
# The pass/fail thresholds, each checked by name in the jq programs below.
flat_mib=4                # a route's memory is flat: tail RSS within 4 MiB of the
flat_fraction=0.05        # second quarter's, or within 5% of it
log_bytes_per_append=512  # log-post: RSS growth per acknowledged append
jwt_bound=262144          # the JWT cache's byte bound (--jwt-cache-bytes), never passed
if [ "${1:-}" = --short ]; then
  duration=5 warmup=1 form=short
  shift
fi
. bench/http/env.sh
common=(--pg="$conn" --jwt-key="$keys/jwt.key" --jwt-pub="$keys/jwt.pub"
        --api-cpus="$api_cpus" --pg-cpus="$pg_cpus" --wrk-cpus="$wrk_cpus" --source-rev="$rev"
        --trials=1 --warmup="$warmup" --duration="$duration" --fail-on-errors)
out=build/http-load
"$trial" "${common[@]}" --scenarios=doc-get,doc-post,log-post,queue-cycle,rpc-hit,rpc-miss \
  --api-arg=--rpc-cache-bytes=4194304 --api-arg=--cache-bytes=8388608 \
  --out="$out/routes" --command="bench/http/load.sh${given:+ $given}" "$@"
jq -r --argjson log_bytes_per_append "$log_bytes_per_append" --argjson flat_mib "$flat_mib" \
  --argjson flat_fraction "$flat_fraction" '
  .scenarios[] | .trials[0] as $t | ($t.series | map(.rss_mib)) as $r | ($r | length) as $n
  | (if $n >= 4 then ($r[($n/4|floor):($n/2|floor)] | add / length) else $r[0] end) as $mid
  | ($r[(3*$n/4|floor):] | add / length) as $tail
  | if .name == "log-post" then
      (($t.api.rss_mib_last - $t.api.rss_mib_first) * 1048576 / $t.successful) as $per
      | "\(.name) \($t.successful) \($t.errors.total) per-write \($per|floor) \(if $per <= $log_bytes_per_append then "ok" else "FAIL" end)"
    else
      ($tail - $mid) as $g
      | "\(.name) \($t.successful) \($t.errors.total) flat \($mid*100|round/100)->\($tail*100|round/100) \(if $g <= $flat_mib or $g <= $mid * $flat_fraction then "ok" else "FAIL" end)"
    end' "$out/routes/results.json" | tee "$out/routes/memory.txt"
"$trial" "${common[@]}" --scenarios=doc-get --tokens=10000 \
  --api-arg=--jwt-cache-entries=100000 --api-arg=--jwt-cache-bytes=$jwt_bound \
  --watch='storhd_cache_bytes{cache="jwt"}' --watch='storhd_cache_entries{cache="jwt"}' \
  --watch='storhd_cache_total{cache="jwt",event="eviction"}' \
  --out="$out/jwt" --command="bench/http/load.sh${given:+ $given}"
jq -r --argjson jwt_bound "$jwt_bound" '.scenarios[0].trials[0] as $t | $t.api.watch_max as $m
  | "jwt \($t.successful) requests, 10000 tokens: bytes max \($m["storhd_cache_bytes{cache=\"jwt\"}"]) of \($jwt_bound), entries max \($m["storhd_cache_entries{cache=\"jwt\"}"]), evictions \($m["storhd_cache_total{cache=\"jwt\",event=\"eviction\"}"]) \(if $m["storhd_cache_bytes{cache=\"jwt\"}"] <= $jwt_bound and $m["storhd_cache_total{cache=\"jwt\",event=\"eviction\"}"] > 0 then "ok" else "FAIL" end)"' \
  "$out/jwt/results.json" | tee "$out/jwt/bound.txt"
if grep -q FAIL "$out/routes/memory.txt" "$out/jwt/bound.txt"; then
  echo "load ($form): FAILED"
  exit 1
fi
echo "load ($form): every route at saturation with no failed request and bounded memory; the JWT cache within its byte bound"
