# Sourced by scripts/test.sh and scripts/hardening.sh: a private PostgreSQL
# cluster for the tests in a temporary directory, stopped and removed on
# exit. Exports STORHD_TEST_PG (conninfo), STORHD_TEST_PG_DIR and
# STORHD_TEST_PG_PORT (test_http_rpc stops and restarts it on purpose).
# The caller's EXIT trap is kept: testpg_stop runs first, then it. A caller
# that sets its own EXIT trap after sourcing this calls testpg_stop in it.
pgdir=$(mktemp -d "${TMPDIR:-/tmp}/storhd-pg-XXXXXX")
# Absolute, so the trap still finds pg.sh after the caller cds elsewhere.
pgctl="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/pg.sh"
testpg_stop() {
  [ -n "${pgdir:-}" ] || return 0
  "$pgctl" stop "$pgdir"
  rm -rf "$pgdir"
  pgdir=
}
testpg_prev_exit() { # the command of the EXIT trap already set, if any
  local -a t=()
  eval "t=($(trap -p EXIT))" # trap -- 'command' EXIT
  printf '%s' "${t[2]:-}"
}
# shellcheck disable=SC2064 # the earlier trap is read now, on purpose
trap "testpg_stop; $(testpg_prev_exit)" EXIT
STORHD_TEST_PG_PORT=$((20000 + RANDOM % 20000))
STORHD_TEST_PG=$("$pgctl" start "$pgdir" "$STORHD_TEST_PG_PORT")
STORHD_TEST_PG_DIR=$pgdir
export STORHD_TEST_PG STORHD_TEST_PG_DIR STORHD_TEST_PG_PORT
