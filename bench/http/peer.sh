#!/usr/bin/env bash
# storhd and its peers in one run, interleaved: each round runs every
# (scenario, server) pair once, in a random order, each a fresh storh-trial
# trial with the same pinning, PostgreSQL, tokens and wrk load (the peers
# through storh-trial --peer), after checking that they answer the same
# request with byte-identical bodies; then prints the medians per server
# and the ratios storhd/peer and storhd/limit (bench/http/ab_summary.py:
# OUT/summary.json and OUT/index.html).
#   bench/http/peer.sh STORHD PEER_DIR [ROUNDS] [more storh-trial args]
# The servers, per scenario:
#   peer   rpc-*: PEER_DIR, a page-RPC peer started by `node server.mjs` (or
#          server.js): the project's own is bench/peers/node-rpc (Fastify,
#          pg, jose, lru-cache; run `npm ci` in it first). It gets PORT,
#          JWT_PUBLIC_KEY and PGHOST/PGPORT/PGUSER/PGDATABASE, and keeps its
#          own defaults (pool 8, response cache 5 s, JWT cache 1000).
#          doc-get: nginx serving the record files storhd wrote
#          (bench/peers/nginx/run.sh static).
#   limit  nginx serving the same bytes from memory (open_file_cache): a
#          page RPC answer storhd gave (rpc-hit and rpc-miss) or the record
#          files (doc-get): what this machine serves for those answers
#          (bench/peers/nginx/run.sh limit). LIMIT=0 leaves it out.
# Environment: SCENARIOS (rpc-hit,rpc-miss,doc-get), TRIAL (the storh-trial
# binary, build/release/bench/storh-trial), OUT (build/peer-trials), WARMUP
# (2), DURATION (8), PEER_CMD (node server.mjs, or node server.js without
# it), LIMIT (1).
set -euo pipefail
storhd=$(realpath "${1:?storhd binary}")
peer_dir=$(realpath "${2:?peer directory}")
rounds=${3:-3}
shift $(($# < 3 ? $# : 3))
cd "$(dirname "$0")/../.."
trial=$(realpath "${TRIAL:-build/release/bench/storh-trial}")
out=${OUT:-build/peer-trials}
scenarios=${SCENARIOS:-rpc-hit,rpc-miss,doc-get}
limit=${LIMIT:-1}
nginx_run=$(realpath bench/peers/nginx/run.sh)
has() { [[ ",$scenarios," == *",$1"* ]]; }
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

# the same requests to each server, once: the bodies must be byte-identical
token=$(deploy/postgres/mint.sh token "$work/keys" '{"tenant":7,"scope":"*"}')
free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
up() {
  for _ in $(seq 1 100); do
    curl -sf "http://127.0.0.1:$1/healthz" >/dev/null && return 0
    sleep 0.1
  done
  return 1
}
rpc_get() { # PORT NAME: POST /rpc/page, its body into $work/NAME.json
  curl -sf -XPOST -H "Authorization: Bearer $token" -H 'Content-Type: application/json' \
    -d '{"limit":100,"pad":"same"}' "http://127.0.0.1:$1/rpc/page" >"$work/$2.json" ||
    { echo "peer.sh: $2 did not answer /rpc/page"; exit 1; }
}
# one record under a fixed id, stored through the server, then read back
rec_id=01a23c97-2312-7802-9be9-116d368f780b
doc_get() { # PORT NAME
  if ! printf '{"id":"%s","data":{"title":"Trial record","n":1}}\n' "$rec_id" |
    curl -sf -H "Authorization: Bearer $token" -H 'Content-Type: application/x-ndjson' \
      --data-binary @- "http://127.0.0.1:$1/v1/docs/trial/_bulk" >/dev/null ||
    ! curl -sf -H "Authorization: Bearer $token" "http://127.0.0.1:$1/v1/docs/trial/$rec_id" \
      >"$work/$2.json"; then
    echo "peer.sh: $2 did not store and serve a record"
    exit 1
  fi
}
same() { # A B
  cmp "$work/$1.json" "$work/$2.json" ||
    { echo "peer.sh: $1 and $2 answer different bodies"; exit 1; }
}
stop_all() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do while kill -0 "$p" 2>/dev/null; do sleep 0.1; done; done
  pids=()
}
export STORHD=$storhd ANSWER=$work/answer.json
sport=$(free_port)
mkdir -p "$work/root"
"$storhd" --root "$work/root" --listen "127.0.0.1:$sport" --access-log=false \
  --jwt-public-key "$JWT_PUBLIC_KEY" --rpc-conninfo "$conn" --rpc-functions page \
  >"$work/storhd.log" 2>&1 &
pids+=($!)
up "$sport" || { echo "peer.sh: storhd did not start"; cat "$work/storhd.log"; exit 1; }
rpc_get "$sport" storhd-miss
rpc_get "$sport" storhd-hit
same storhd-miss storhd-hit
cp "$work/storhd-miss.json" "$ANSWER" # the limit serves this answer
if has rpc; then
  pport=$(free_port)
  (cd "$peer_dir" && PORT=$pport exec $peer_cmd) >"$work/peer.log" 2>&1 &
  pids+=($!)
  up "$pport" || { echo "peer.sh: the peer did not start"; cat "$work/peer.log"; exit 1; }
  rpc_get "$pport" peer-miss
  rpc_get "$pport" peer-hit
  same storhd-miss peer-miss
  same storhd-hit peer-hit
  echo "same answer from storhd and the peer: $(wc -c <"$ANSWER") bytes, miss and hit"
fi
if has doc-get; then
  doc_get "$sport" storhd-doc
  nport=$(free_port)
  PORT=$nport "$nginx_run" static >"$work/nginx.log" 2>&1 &
  pids+=($!)
  up "$nport" || { echo "peer.sh: nginx did not start"; cat "$work/nginx.log"; exit 1; }
  doc_get "$nport" nginx-doc
  same storhd-doc nginx-doc
  echo "same record from storhd and nginx: $(wc -c <"$work/storhd-doc.json") bytes"
fi
if [ "$limit" = 1 ]; then
  lport=$(free_port)
  PORT=$lport "$nginx_run" limit >"$work/limit.log" 2>&1 &
  pids+=($!)
  up "$lport" || { echo "peer.sh: the limit did not start"; cat "$work/limit.log"; exit 1; }
  rpc_get "$lport" limit-rpc
  same storhd-miss limit-rpc
  if has doc-get; then
    doc_get "$lport" limit-doc
    same storhd-doc limit-doc
  fi
  echo "same answers from storhd and the limit"
fi
stop_all

rm -rf "$out"
mkdir -p "$out"
printf '%s\n' "storhd $storhd" "peer $peer_dir: $peer_cmd (doc-get: $nginx_run static)" \
  "limit $nginx_run limit" "command bench/http/peer.sh $*" >"$out/binaries.txt"
for r in $(seq 1 "$rounds"); do
  for pair in $(for s in ${scenarios//,/ }; do
    echo "$s:storhd" "$s:peer"
    [ "$limit" = 1 ] && echo "$s:limit"
  done | shuf); do
    sc=${pair%%:*} side=${pair##*:}
    echo "round $r: $sc on $side"
    which=(--storhd="$storhd" --api-arg=--rpc-cache-bytes=4194304)
    if [ "$side" = peer ] && [ "$sc" = doc-get ]; then
      which=(--peer="exec '$nginx_run' static")
    elif [ "$side" = peer ]; then
      which=(--peer="cd '$peer_dir' && exec $peer_cmd")
    elif [ "$side" = limit ]; then
      which=(--peer="exec '$nginx_run' limit")
    fi
    "$trial" "${which[@]}" --pg="$conn" --jwt-key="$work/keys/jwt.key" \
      --jwt-pub="$JWT_PUBLIC_KEY" --api-cpus="$api_cpus" --pg-cpus="$pg_cpus" \
      --wrk-cpus="$wrk_cpus" --scenarios="$sc" --trials=1 \
      --warmup="${WARMUP:-2}" --duration="${DURATION:-8}" --out="$out/r$r-$side-$sc" "$@" \
      >"$out/r$r-$side-$sc.log" 2>&1 || { cat "$out/r$r-$side-$sc.log"; exit 1; }
  done
done
python3 bench/http/ab_summary.py "$out" peer storhd limit
