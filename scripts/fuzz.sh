#!/usr/bin/env bash
# Builds the libFuzzer drivers with clang and runs each for FUZZ_SECONDS
# (default 30) from its seed corpus and its regressions. A crash fails the
# script and names the input; copy it to fuzz/regressions/<target>/, where
# the fuzz_replay_* ctests replay it from then on.
#   scripts/fuzz.sh            every target
#   scripts/fuzz.sh fuzz_jwt   one target
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh clang libclang-rt-14-dev >/dev/null
CC=clang cmake -S . -B build/fuzz -DSTORHD_FUZZ=ON -DBUILD_TESTING=OFF -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
targets=${*:-fuzz_jsonc fuzz_frame fuzz_queue fuzz_qbody fuzz_query fuzz_route fuzz_jwt}
cmake --build build/fuzz -j"$(nproc)" --target $targets >/dev/null
total=0
failed=0
for t in $targets; do
  work="build/fuzz/corpus-$t"
  log="build/fuzz/$t.log"
  mkdir -p "$work"
  dirs=("$work" "fuzz/corpus/$t")
  [ -d "fuzz/regressions/$t" ] && dirs+=("fuzz/regressions/$t")
  if ASAN_OPTIONS=detect_leaks=1 TMPDIR="$PWD/build/fuzz" "build/fuzz/fuzz/$t" \
       -max_total_time="${FUZZ_SECONDS:-30}" -artifact_prefix="build/fuzz/$t-" "${dirs[@]}" >"$log" 2>&1; then
    runs=$(grep -oE 'Done [0-9]+ runs' "$log" | awk '{print $2}' | tail -n 1)
    echo "$t: ${runs:-0} executions, no crash"
    total=$((total + ${runs:-0}))
  else
    echo "$t: FAILED"
    grep -E "ERROR|SUMMARY|Test unit written" "$log" || tail -n 20 "$log"
    failed=$((failed + 1))
  fi
done
echo "fuzz: $total executions over $(echo $targets | wc -w) targets, $failed failed"
[ "$failed" -eq 0 ]
