#!/usr/bin/env bash
# Builds the libFuzzer drivers with clang and runs each for FUZZ_SECONDS
# (default 30) from its seed corpus; a crash stops with the reproducer.
#   scripts/fuzz.sh            every target
#   scripts/fuzz.sh fuzz_jwt   one target
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh clang libclang-rt-14-dev >/dev/null
CC=clang cmake -S . -B build/fuzz -DSTORHD_FUZZ=ON -DBUILD_TESTING=OFF -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
targets=${*:-fuzz_jsonc fuzz_frame fuzz_queue fuzz_query fuzz_route fuzz_jwt}
cmake --build build/fuzz -j"$(nproc)" --target $targets >/dev/null
for t in $targets; do
  work="build/fuzz/corpus-$t"
  mkdir -p "$work"
  echo "== $t"
  ASAN_OPTIONS=detect_leaks=1 "build/fuzz/fuzz/$t" -max_total_time="${FUZZ_SECONDS:-30}" \
    -artifact_prefix="build/fuzz/$t-" "$work" "fuzz/corpus/$t" 2>&1 | grep -E "^#[0-9]+.*DONE|Done|ERROR|SUMMARY" || true
done
