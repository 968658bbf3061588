#!/usr/bin/env bash
# The benchmark front: builds storh-bench (Release) and runs it from the
# project root. `bench/bench.sh native ...` builds the -O3 -march=native -flto
# variant instead (recorded as "variant" in the JSON).
#   bench/bench.sh run --dataset=50000 --engine=all
#   bench/bench.sh repeat --dataset=50000 --engine=all --repeat=3
#   bench/bench.sh range --datasets=1000,10000,50000
#   bench/bench.sh compare build/bench-main.json build/bench-current.json
#   bench/bench.sh compare-storh php.json,php2.json storhd.json,storhd2.json
#   bench/bench.sh gate base.json cur.json --threshold=10 --metric=doc.put
#   bench/bench.sh ci
set -euo pipefail
cd "$(dirname "$0")/.."
variant=default
if [ "${1:-}" = native ]; then
  variant=native
  shift
fi
scripts/deps.sh >/dev/null
dir="build/bench-$variant"
extra=()
[ "$variant" = native ] && extra=(-DSTORHD_NATIVE=ON)
cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=Release -DBUILD_TESTING=OFF "${extra[@]}" >/dev/null
cmake --build "$dir" -j"$(nproc)" --target storh_bench >/dev/null
exec "$dir/bench/storh-bench" "$@"
