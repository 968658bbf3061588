#!/usr/bin/env bash
# Two storhd binaries in one run, interleaved: each round runs every
# (scenario, binary) pair once, in a random order, each a fresh storh-trial
# trial (same pinning, same PostgreSQL, same tokens), then prints the
# medians per binary and the ratios new/old (bench/http/ab_summary.py).
# For a before/after of a change: build the old tree in its own build dir.
#   bench/http/ab.sh OLD_STORHD NEW_STORHD [ROUNDS] [more storh-trial args]
# Environment: SCENARIOS (rpc-hit,rpc-miss), TRIAL (the storh-trial binary,
# build/release/bench/storh-trial), OUT (build/ab-trials), WARMUP (2),
# DURATION (8).
set -euo pipefail
old=$(realpath "${1:?old storhd}")
new=$(realpath "${2:?new storhd}")
rounds=${3:-3}
shift $(($# < 3 ? $# : 3))
cd "$(dirname "$0")/../.."
trial=${TRIAL:-build/release/bench/storh-trial}
out=${OUT:-build/ab-trials}
scenarios=${SCENARIOS:-rpc-hit,rpc-miss}
read -r api_cpus pg_cpus wrk_cpus < <("$trial" --print-cpus "$@")
work=$(mktemp -d "${TMPDIR:-/tmp}/storhd-ab-XXXXXX")
chmod 755 "$work" # the postgres user must reach its cluster inside
trap 'scripts/pg.sh stop "$work/pg"; rm -rf "$work"' EXIT
conn=$(STORHD_PG_CPUS=$pg_cpus scripts/pg.sh start "$work/pg" $((20000 + RANDOM % 20000)))
psql "$conn" -q -f deploy/postgres/fixture.sql >/dev/null
deploy/postgres/mint.sh keys "$work/keys" >/dev/null
rm -rf "$out"
mkdir -p "$out"
printf '%s\n' "old $old" "new $new" "command bench/http/ab.sh $*" >"$out/binaries.txt"
for r in $(seq 1 "$rounds"); do
  for pair in $(for s in ${scenarios//,/ }; do echo "$s:old" "$s:new"; done | shuf); do
    sc=${pair%%:*} side=${pair##*:}
    bin=$old
    [ "$side" = new ] && bin=$new
    echo "round $r: $sc on $side"
    # --rpc-cache-bytes: as trials.sh, so rpc-miss does not measure the bound
    "$trial" --storhd="$bin" --pg="$conn" --jwt-key="$work/keys/jwt.key" \
      --jwt-pub="$work/keys/jwt.pub" --api-cpus="$api_cpus" --pg-cpus="$pg_cpus" \
      --wrk-cpus="$wrk_cpus" --api-arg=--rpc-cache-bytes=4194304 --scenarios="$sc" --trials=1 \
      --warmup="${WARMUP:-2}" --duration="${DURATION:-8}" --out="$out/r$r-$side-$sc" "$@" \
      >"$out/r$r-$side-$sc.log" 2>&1 || { cat "$out/r$r-$side-$sc.log"; exit 1; }
  done
done
python3 bench/http/ab_summary.py "$out"
