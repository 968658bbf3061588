#!/usr/bin/env bash
# The test suite under valgrind memcheck: a Debug build without sanitizers,
# every test executable run by `ctest -T memcheck`, and every storhd the
# tests start wrapped in valgrind too (STORHD_TEST_WRAPPER). Any memcheck
# error or definite leak makes valgrind exit 99, which fails the test. The
# trial smoke, the bench gate, the promtool checks and the contract check are
# left out: they run scripts (shell, Python) or a Go binary, and the trial
# measures load a valgrind-slowed server cannot carry. Needs the PostgreSQL
# of the tests: scripts/test.sh runs this with it, or
#   STORHD_TEST_PG=... scripts/memcheck.sh [ctest -R regex]
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh valgrind >/dev/null
cmake -S . -B build/memcheck -DCMAKE_BUILD_TYPE=Debug -DSTORHD_TEST_TIMEOUT_SCALE=3 -DSTORHD_TEST_PER_CASE=OFF >/dev/null
cmake --build build/memcheck -j"$(nproc)" >/dev/null
logs="$PWD/build/memcheck/valgrind"
rm -rf "$logs"
mkdir -p "$logs"
opts="--quiet --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite,indirect"
opts="$opts --show-leak-kinds=definite,indirect --num-callers=30"
export STORHD_TEST_WRAPPER="valgrind $opts --log-file=$logs/storhd-%p.log"
export STORHD_CRASH_KILLS=${STORHD_CRASH_KILLS:-6}
export STORHD_ATOMIC_TRIALS=${STORHD_ATOMIC_TRIALS:-3}
export STORHD_CRASH_DOCINDEX_KILLS=${STORHD_CRASH_DOCINDEX_KILLS:-2}
cd build/memcheck
# the contract check (Python) runs in the normal ctest passes, not under
# valgrind; so do the power-cut tests: their FUSE filesystem relays syncfs
# through a seccomp user notification, which valgrind cannot run (they run
# under ASan and UBSan instead); the many-tenants tests, which bound the
# process's descriptors and RSS, both of which valgrind itself changes; and
# test_mempolicy, which checks glibc's heap, replaced by valgrind's
ctest -T memcheck -j"$(nproc)" --output-on-failure \
  -E "http_trial_smoke|bench_gate|prometheus_|contract_|test_powerfs|test_powercut|test_tenants|test_mempolicy" -FA contract \
  --overwrite "MemoryCheckCommandOptions=$opts" "$@"
# ctest counts memcheck defects without failing on them: the storhd logs
# must be empty as well
bad=$(find "$logs" -name '*.log' -size +0 | wc -l)
if [ "$bad" -ne 0 ]; then
  echo "valgrind reported on storhd: $(find "$logs" -name '*.log' -size +0 | head -n 3)"
  exit 1
fi
echo "memcheck: no valgrind error in any test executable or any storhd they started"
