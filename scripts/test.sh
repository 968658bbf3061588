#!/usr/bin/env bash
# Installs what the tests need and builds; lints the OpenAPI document and
# compiles the TypeScript types generated from it; runs the short forms of the
# hardening suites (fuzzing, the load suite, valgrind memcheck of the whole
# test suite; scripts/hardening.sh runs their full forms) and the container
# smoke test; then every test under ctest: a normal build, the concurrent
# modules' tests in a ThreadSanitizer build, then every test in an
# AddressSanitizer + UndefinedBehaviorSanitizer build, whose summary closes
# the output. Tests start every server they use themselves.
# scripts/test.sh --quick is the edit-test loop: a RelWithDebInfo build and
# the unit-labelled tests only (`ctest -L unit`: no daemon, a minute or so).
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "${1:-}" = "--quick" ]; then
  cmake -S . -B build/test -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
  cmake --build build/test -j"$(nproc)"
  . scripts/testpg.sh # test_mirror's PostgreSQL half; stopped on exit
  status=0
  (cd build/test && ctest --output-on-failure -j"$(nproc)" -L '^unit$') || status=$?
  exit "$status"
fi
scripts/deps.sh clang-format cppcheck wrk python3-jsonschema jq valgrind e2fsprogs prometheus
jobs="$(nproc)"
export ASAN_OPTIONS="detect_leaks=1:abort_on_error=1"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"

echo "== style: clang-format (check), cppcheck, promtool check rules"
sources=$(git ls-files '*.c' '*.h' 2>/dev/null || find engines service tests -name '*.[ch]')
clang-format --dry-run --Werror $sources
cppcheck --quiet --error-exitcode=1 --enable=warning,portability --std=c11 --inline-suppr \
  --suppress=unknownMacro \
  -I engines -I service -I mirror -I client \
  -I engines/internal -I service/internal -I mirror/internal engines service mirror bench
# the deployment's alerting rules (ctest also unit-tests them: prometheus_test_rules)
promtool check rules deploy/prometheus/storhd.rules.yml

echo "== release build (warnings are errors at -O3 too)"
cmake -S . -B build/release -DCMAKE_BUILD_TYPE=Release -DBUILD_TESTING=OFF >/dev/null
cmake --build build/release -j"$jobs"

echo "== OpenAPI: Redocly lint (recommended rules, 0 errors), TypeScript types generated and compiled"
tests/contract/openapi_check.sh build/release/service/storhd

echo "== a private PostgreSQL cluster for the tests"
. scripts/testpg.sh

echo "== bench ci (medians of 3 runs at 1k, gated against bench/baselines/ci-1k-all.json)"
bench/bench.sh ci 2>/dev/null

echo "== fuzzing, short: 10 s per libFuzzer target (scripts/hardening.sh fuzz: 300 s)"
FUZZ_SECONDS=10 scripts/fuzz.sh

echo "== load, short: every main route at saturation for 5 s, 10,000 JWTs (full: 60 s)"
bench/http/load.sh --short

echo "== container: the Dockerfile built with podman, storhd with PostgreSQL smoke-tested over HTTP"
scripts/container.sh

echo "== valgrind memcheck of the test suite (and of every storhd it starts)"
scripts/memcheck.sh

echo "== build and test (RelWithDebInfo)"
cmake -S . -B build/test -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build/test -j"$jobs"
(cd build/test && ctest --output-on-failure -j"$jobs")

echo "== ThreadSanitizer: the concurrent modules' tests (ctest -L tsan; a race fails the test)"
cmake -S . -B build/tsan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSTORHD_TSAN=ON >/dev/null
cmake --build build/tsan -j"$jobs"
(cd build/tsan && ctest --output-on-failure -j"$jobs" -L '^tsan$' -FA '.*')

echo "== build and test (ASan + UBSan)"
cmake -S . -B build/asan -DCMAKE_BUILD_TYPE=Debug -DSTORHD_ASAN=ON -DSTORHD_UBSAN=ON >/dev/null
cmake --build build/asan -j"$jobs"
(cd build/asan && ctest --output-on-failure -j"$jobs")
