#!/usr/bin/env bash
# A private PostgreSQL cluster for tests and the run command:
#   scripts/pg.sh start DIR PORT   initdb (once) and start; prints a conninfo
#   scripts/pg.sh stop DIR
# The server listens on a Unix socket in DIR only (no TCP), trusts local
# connections, and runs as the postgres user when started by root. With
# STORHD_PG_CPUS set (a taskset list), the server and its backends run there.
set -euo pipefail
bin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)
[ -n "$bin" ] || { echo "pg.sh: PostgreSQL is not installed (scripts/deps.sh postgresql)" >&2; exit 1; }
cmd=${1:?start|stop}
dir=$(realpath -m "${2:?DIR}")
as_pg() {
  if [ "$(id -u)" -eq 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}
case "$cmd" in
start)
  port=${3:?PORT}
  mkdir -p "$dir"
  [ "$(id -u)" -eq 0 ] && chown postgres: "$dir" && chmod 700 "$dir"
  if [ ! -f "$dir/PG_VERSION" ]; then
    as_pg "$bin/initdb" -D "$dir" -U postgres --auth=trust -E UTF8 --locale=C.UTF-8 >/dev/null
  fi
  pin=()
  [ -n "${STORHD_PG_CPUS:-}" ] && pin=(taskset -c "$STORHD_PG_CPUS")
  as_pg "${pin[@]}" "$bin/pg_ctl" -D "$dir" -l "$dir/server.log" -w -t 60 \
    -o "-p $port -k $dir -c listen_addresses=''" start >/dev/null
  echo "host=$dir port=$port user=postgres dbname=postgres"
  ;;
stop)
  [ -f "$dir/postmaster.pid" ] && as_pg "$bin/pg_ctl" -D "$dir" -m fast -w stop >/dev/null || true
  ;;
*)
  echo "usage: pg.sh start DIR PORT | stop DIR" >&2
  exit 2
  ;;
esac
