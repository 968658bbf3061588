# Sourced by trials.sh and load.sh: builds storhd and storh-trial (Release),
# starts a private PostgreSQL cluster on the PostgreSQL CPUs with the
# reference fixture (deploy/postgres/fixture.sql) and makes a throw-away RSA
# key pair. Sets: trial (the runner), conn, keys, api_cpus, pg_cpus,
# wrk_cpus, rev; the caller's arguments pick the CPUs (--api-cpus, ...).
scripts/deps.sh wrk jq >/dev/null
cmake -S . -B build/release -DCMAKE_BUILD_TYPE=Release -DBUILD_TESTING=OFF >/dev/null
cmake --build build/release -j"$(nproc)" --target storhd storh_trial >/dev/null
trial=build/release/bench/storh-trial
read -r api_cpus pg_cpus wrk_cpus < <("$trial" --print-cpus "$@")

work=$(mktemp -d "${TMPDIR:-/tmp}/storhd-trials-XXXXXX")
chmod 755 "$work" # the postgres user must reach its cluster inside
# The caller's EXIT trap is kept: env_stop runs first, then it. A caller
# that sets its own EXIT trap after sourcing this calls env_stop in it.
env_stop() {
  [ -n "${work:-}" ] || return 0
  scripts/pg.sh stop "$work/pg"
  rm -rf "$work"
  work=
}
env_prev_exit() { # the command of the EXIT trap already set, if any
  local -a t=()
  eval "t=($(trap -p EXIT))" # trap -- 'command' EXIT
  printf '%s' "${t[2]:-}"
}
# shellcheck disable=SC2064 # the earlier trap is read now, on purpose
trap "env_stop; $(env_prev_exit)" EXIT
conn=$(STORHD_PG_CPUS=$pg_cpus scripts/pg.sh start "$work/pg" $((20000 + RANDOM % 20000)))
psql "$conn" -q -f deploy/postgres/fixture.sql >/dev/null
keys="$work/keys"
deploy/postgres/mint.sh keys "$keys" >/dev/null

rev=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
git diff --quiet HEAD 2>/dev/null || rev="$rev+changes"
