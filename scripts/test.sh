#!/usr/bin/env bash
# Installs what the tests need, builds, and runs every test under ctest twice:
# a normal build, then an AddressSanitizer + UndefinedBehaviorSanitizer build.
# Tests start every server they use themselves.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh clang-format cppcheck wrk python3-jsonschema jq
jobs="$(nproc)"
export ASAN_OPTIONS="detect_leaks=1:abort_on_error=1"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"

echo "== style: clang-format (check) and cppcheck"
sources=$(git ls-files '*.c' '*.h' 2>/dev/null || find engines service tests -name '*.[ch]')
clang-format --dry-run --Werror $sources
cppcheck --quiet --error-exitcode=1 --enable=warning,portability --std=c11 --inline-suppr \
  --suppress=unknownMacro \
  -I engines -I service -I mirror -I tests/support engines service mirror bench

echo "== release build (warnings are errors at -O3 too)"
cmake -S . -B build/release -DCMAKE_BUILD_TYPE=Release -DBUILD_TESTING=OFF >/dev/null
cmake --build build/release -j"$jobs"

echo "== a private PostgreSQL cluster for the tests"
pgdir=$(mktemp -d "${TMPDIR:-/tmp}/storhd-pg-XXXXXX")
trap 'scripts/pg.sh stop "$pgdir"; rm -rf "$pgdir"' EXIT
STORHD_TEST_PG_PORT=$((20000 + RANDOM % 20000))
STORHD_TEST_PG=$(scripts/pg.sh start "$pgdir" "$STORHD_TEST_PG_PORT")
STORHD_TEST_PG_DIR=$pgdir
export STORHD_TEST_PG STORHD_TEST_PG_DIR STORHD_TEST_PG_PORT

echo "== bench ci (medians of 3 runs at 1k, gated against bench/baselines/ci-1k-all.json)"
bench/bench.sh ci 2>/dev/null

echo "== build and test (RelWithDebInfo)"
cmake -S . -B build/test -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build/test -j"$jobs"
(cd build/test && ctest --output-on-failure -j"$jobs")

echo "== build and test (ASan + UBSan)"
cmake -S . -B build/asan -DCMAKE_BUILD_TYPE=Debug -DSTORHD_ASAN=ON -DSTORHD_UBSAN=ON >/dev/null
cmake --build build/asan -j"$jobs"
(cd build/asan && ctest --output-on-failure -j"$jobs")
