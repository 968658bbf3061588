#!/usr/bin/env bash
# The hardening suites in their full form; scripts/test.sh runs each of them
# in a short form. Summary lines go to build/hardening/summary.txt, the whole
# output of each suite to build/hardening/<suite>.log.
#   crash      250 SIGKILLs at random points under writes, torn writes
#              injected before every other restart (STORHD_CRASH_KILLS)
#   powercut   400 power cuts on powerfs (200 strict, 200 randomized) under
#              writes (STORHD_POWERCUT_CUTS)
#   disk full  on a small tmpfs and on a loop-mounted ext4
#   security   every route's names, scopes, tokens, sizes, slow clients, SQL
#   fuzzing    each libFuzzer target for FUZZ_SECONDS (default 300)
#   load       bench/http/load.sh: 60 s per route at saturation, 10,000 JWTs
#   memcheck   the whole test suite under valgrind (scripts/memcheck.sh)
#   tenants    STORHD_TENANTS (default 5000) logs, queues and collections
#              under a descriptor limit of 256 (tests/fault/test_tenants.c)
#   scripts/hardening.sh [suite ...]   (default: all, about 45 minutes)
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh wrk jq python3-jsonschema valgrind e2fsprogs >/dev/null
suites=${*:-crash powercut diskfull security fuzz load memcheck tenants}
out=build/hardening
mkdir -p "$out"
: >"$out/summary.txt"
cmake -S . -B build/test -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build/test -j"$(nproc)" >/dev/null
. scripts/testpg.sh
# runs a suite, keeps its log, and copies the lines matching pattern
suite() {
  local name=$1 pattern=$2
  shift 2
  echo "== $name"
  if "$@" >"$out/$name.log" 2>&1; then
    grep -E "$pattern" "$out/$name.log" | tee -a "$out/summary.txt"
  else
    tail -n 30 "$out/$name.log"
    echo "$name: FAILED (see $out/$name.log)" | tee -a "$out/summary.txt"
    return 1
  fi
}
failed=0
for s in $suites; do
  case $s in
  crash) STORHD_CRASH_KILLS=${STORHD_CRASH_KILLS:-250} suite crash "^crash:" build/test/tests/test_crash || failed=1 ;;
  powercut) STORHD_POWERCUT_CUTS=${STORHD_POWERCUT_CUTS:-400} suite powercut "^powercut:" build/test/tests/test_powercut || failed=1 ;;
  diskfull)
    suite diskfull-tmpfs "^disk full" build/test/tests/test_diskfull || failed=1
    STORHD_DISKFULL_FS=ext4 suite diskfull-ext4 "^disk full" build/test/tests/test_diskfull || failed=1
    ;;
  security) suite security "^(names|scopes|tokens|sizes|slow clients|security):" build/test/tests/test_http_security || failed=1 ;;
  fuzz) FUZZ_SECONDS=${FUZZ_SECONDS:-300} suite fuzz "executions" scripts/fuzz.sh || failed=1 ;;
  load) suite load "^(doc-|log-|queue-|rpc-|jwt |load)" bench/http/load.sh || failed=1 ;;
  memcheck) suite memcheck "tests passed|^memcheck:" scripts/memcheck.sh || failed=1 ;;
  tenants) STORHD_TENANTS=${STORHD_TENANTS:-5000} suite tenants "tenants:" build/test/tests/test_tenants tenants_under_budget || failed=1 ;;
  *) echo "no suite $s" && failed=1 ;;
  esac
done
exit $failed
