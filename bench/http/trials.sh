#!/usr/bin/env bash
# The HTTP load trials on this host: storh-trial against a pinned private
# PostgreSQL with the reference fixture (bench/http/env.sh sets that up). It
# writes build/http-trials/results.json and build/http-trials/index.html.
# Arguments go to storh-trial:
#   bench/http/trials.sh                                  the full suite
#   bench/http/trials.sh --scenarios=rpc-hit --trials=5   one scenario
#   bench/http/trials.sh --warmup=1 --duration=2          a smoke run
# CPUs: storh-trial's defaults (API 1, PostgreSQL 4, wrk 2 when the machine
# has 7; otherwise as disjoint as it allows), or --api-cpus/--pg-cpus/--wrk-cpus.
set -euo pipefail
cd "$(dirname "$0")/../.."
. bench/http/env.sh
# --rpc-cache-bytes: the cache-miss scenario would otherwise fill the
# default 64 MiB response cache, and PSS would measure that bound
"$trial" --pg="$conn" --jwt-key="$keys/jwt.key" --jwt-pub="$keys/jwt.pub" \
  --api-cpus="$api_cpus" --pg-cpus="$pg_cpus" --wrk-cpus="$wrk_cpus" \
  --api-arg=--rpc-cache-bytes=4194304 --source-rev="$rev" \
  --command="bench/http/trials.sh $*" "$@"
