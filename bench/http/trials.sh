#!/usr/bin/env bash
# The HTTP load trials on this host. Builds storhd and storh-trial (Release),
# starts a private PostgreSQL cluster on the PostgreSQL CPUs with the
# reference fixture (deploy/postgres/fixture.sql), makes a throw-away RSA key
# pair, and runs storh-trial, which writes build/http-trials/results.json and
# build/http-trials/index.html. Arguments go to storh-trial:
#   bench/http/trials.sh                                  the full suite
#   bench/http/trials.sh --scenarios=rpc-hit --trials=5   one scenario
#   bench/http/trials.sh --warmup=1 --duration=2          a smoke run
# CPUs: storh-trial's defaults (API 1, PostgreSQL 4, wrk 2 when the machine
# has 7; otherwise as disjoint as it allows), or --api-cpus/--pg-cpus/--wrk-cpus.
set -euo pipefail
cd "$(dirname "$0")/../.."
scripts/deps.sh wrk >/dev/null
cmake -S . -B build/release -DCMAKE_BUILD_TYPE=Release -DBUILD_TESTING=OFF >/dev/null
cmake --build build/release -j"$(nproc)" --target storhd storh_trial >/dev/null
trial=build/release/bench/storh-trial
read -r api_cpus pg_cpus wrk_cpus < <("$trial" --print-cpus "$@")

work=$(mktemp -d "${TMPDIR:-/tmp}/storhd-trials-XXXXXX")
chmod 755 "$work" # the postgres user must reach its cluster inside
trap 'scripts/pg.sh stop "$work/pg"; rm -rf "$work"' EXIT
conn=$(STORHD_PG_CPUS=$pg_cpus scripts/pg.sh start "$work/pg" $((20000 + RANDOM % 20000)))
psql "$conn" -q -f deploy/postgres/fixture.sql >/dev/null
deploy/postgres/mint.sh keys "$work/keys" >/dev/null

rev=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
git diff --quiet HEAD 2>/dev/null || rev="$rev+changes"
# --rpc-cache-bytes: the cache-miss scenario would otherwise fill the
# default 64 MiB response cache, and PSS would measure that bound
"$trial" --pg="$conn" --jwt-key="$work/keys/jwt.key" --jwt-pub="$work/keys/jwt.pub" \
  --api-cpus="$api_cpus" --pg-cpus="$pg_cpus" --wrk-cpus="$wrk_cpus" \
  --api-arg=--rpc-cache-bytes=4194304 --source-rev="$rev" \
  --command="bench/http/trials.sh $*" "$@"
