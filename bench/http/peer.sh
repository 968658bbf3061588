#!/usr/bin/env bash
# storhd and a peer server in one run, interleaved: each round runs every
# (scenario, server) pair once, in a random order, each a fresh storh-trial
# trial with the same pinning, PostgreSQL, tokens and wrk load (the peer
# through storh-trial --peer), after checking that both answer the same
# request with byte-identical bodies; then prints the medians per server
# and the ratios storhd/peer (bench/http/ab_summary.py, OUT/summary.json).
#   bench/http/peer.sh STORHD PEER_DIR [ROUNDS] [more storh-trial args]
# PEER_DIR holds a page-RPC peer started by `node server.mjs` (or
# server.js): the project's own is bench/peers/node-rpc (Fastify, pg, jose,
# lru-cache; run `npm ci` in it first). It gets PORT, JWT_PUBLIC_KEY and
# PGHOST/PGPORT/PGUSER/PGDATABASE, and keeps its own defaults (pool 8,
# response cache 5 s, JWT cache 1000).
# Environment: SCENARIOS (rpc-hit,rpc-miss), TRIAL (the storh-trial binary,
# build/release/bench/storh-trial), OUT (build/peer-trials), WARMUP (2),
# DURATION (8), PEER_CMD (node server.mjs, or node server.js without it).
set -euo pipefail
storhd=$(realpath "${1:?storhd binary}")
peer_dir=$(realpath "${2:?peer directory}")
rounds=${3:-3}
shift $(($# < 3 ? $# : 3))
cd "$(dirname "$0")/../.."
trial=$(realpath "${TRIAL:-build/release/bench/storh-trial}")
out=${OUT:-build/peer-trials}
scenarios=${SCENARIOS:-rpc-hit,rpc-miss}
peer_cmd=${PEER_CMD:-node server.mjs}
[ -n "${PEER_CMD:-}" ] || [ -f "$peer_dir/server.mjs" ] || peer_cmd="node server.js"
read -r api_cpus pg_cpus wrk_cpus < <("$trial" --print-cpus "$@")
work=$(mktemp -d "${TMPDIR:-/tmp}/storhd-peer-XXXXXX")
chmod 755 "$work" # the postgres user must reach its cluster inside
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  scripts/pg.sh stop "$work/pg"
  rm -rf "$work"
}
trap cleanup EXIT
pg_port=$((20000 + RANDOM % 20000))
conn=$(STORHD_PG_CPUS=$pg_cpus scripts/pg.sh start "$work/pg" $pg_port)
psql "$conn" -q -f deploy/postgres/fixture.sql >/dev/null
deploy/postgres/mint.sh keys "$work/keys" >/dev/null
export JWT_PUBLIC_KEY=$work/keys/jwt.pub PGHOST=$work/pg PGPORT=$pg_port PGUSER=postgres \
  PGDATABASE=postgres

# the same request to both, once: the bodies must be byte-identical
token=$(deploy/postgres/mint.sh token "$work/keys" '{"tenant":7,"scope":"*"}')
free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
sport=$(free_port) pport=$(free_port)
mkdir -p "$work/root"
"$storhd" --root "$work/root" --listen "127.0.0.1:$sport" --access-log=false \
  --jwt-public-key "$JWT_PUBLIC_KEY" --rpc-conninfo "$conn" --rpc-functions page \
  >"$work/storhd.log" 2>&1 &
pids+=($!)
(cd "$peer_dir" && PORT=$pport exec $peer_cmd) >"$work/peer.log" 2>&1 &
pids+=($!)
body='{"limit":100,"pad":"same"}'
for side in storhd:$sport peer:$pport; do
  for i in $(seq 1 100); do
    curl -sf "http://127.0.0.1:${side#*:}/healthz" >/dev/null && break
    sleep 0.1
  done
  for pass in miss hit; do
    curl -sf -XPOST -H "Authorization: Bearer $token" -H 'Content-Type: application/json' \
      -d "$body" "http://127.0.0.1:${side#*:}/rpc/page" >"$work/${side%%:*}-$pass.json" ||
      { echo "peer.sh: ${side%%:*} did not answer /rpc/page"; cat "$work/${side%%:*}.log"; exit 1; }
  done
done
for pass in miss hit; do
  cmp "$work/storhd-$pass.json" "$work/peer-$pass.json" ||
    { echo "peer.sh: storhd and the peer answer different bodies ($pass)"; exit 1; }
done
echo "same answer from both: $(wc -c <"$work/storhd-miss.json") bytes, miss and hit"
for p in "${pids[@]}"; do kill "$p"; wait "$p" 2>/dev/null || true; done
pids=()

rm -rf "$out"
mkdir -p "$out"
printf '%s\n' "storhd $storhd" "peer $peer_dir: $peer_cmd" \
  "command bench/http/peer.sh $*" >"$out/binaries.txt"
for r in $(seq 1 "$rounds"); do
  for pair in $(for s in ${scenarios//,/ }; do echo "$s:storhd" "$s:peer"; done | shuf); do
    sc=${pair%%:*} side=${pair##*:}
    echo "round $r: $sc on $side"
    which=(--storhd="$storhd" --api-arg=--rpc-cache-bytes=4194304)
    [ "$side" = peer ] && which=(--peer="cd '$peer_dir' && exec $peer_cmd")
    "$trial" "${which[@]}" --pg="$conn" --jwt-key="$work/keys/jwt.key" \
      --jwt-pub="$JWT_PUBLIC_KEY" --api-cpus="$api_cpus" --pg-cpus="$pg_cpus" \
      --wrk-cpus="$wrk_cpus" --scenarios="$sc" --trials=1 \
      --warmup="${WARMUP:-2}" --duration="${DURATION:-8}" --out="$out/r$r-$side-$sc" "$@" \
      >"$out/r$r-$side-$sc.log" 2>&1 || { cat "$out/r$r-$side-$sc.log"; exit 1; }
  done
done
python3 bench/http/ab_summary.py "$out" peer storhd
