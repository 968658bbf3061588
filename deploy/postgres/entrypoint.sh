#!/bin/sh
# The PostgreSQL image's entrypoint: on the first start, a cluster in
# $PGDATA, the role and database storhd with the password of /keys/pg.pass,
# and the page-RPC fixture; then the server, listening on the network.
set -eu
bin=/usr/lib/postgresql/15/bin
for _ in $(seq 120); do # the keys step may still be running
  [ -s /keys/pg.pass ] && break
  sleep 0.5
done
pass=$(cat /keys/pg.pass)
if [ ! -s "$PGDATA/PG_VERSION" ]; then
  "$bin/initdb" -D "$PGDATA" -U postgres --auth-local=peer --auth-host=scram-sha-256 \
    -E UTF8 --locale=C.UTF-8 >/dev/null
  printf 'host all all 0.0.0.0/0 scram-sha-256\nhost all all ::/0 scram-sha-256\n' \
    >>"$PGDATA/pg_hba.conf"
  "$bin/pg_ctl" -D "$PGDATA" -w -o "-c listen_addresses=''" start >/dev/null
  # the password is 32 hex digits (made by the keys step): no quoting issue
  psql -v ON_ERROR_STOP=1 -q -c "CREATE ROLE storhd LOGIN PASSWORD '$pass'" \
    -c "CREATE DATABASE storhd OWNER storhd"
  psql -v ON_ERROR_STOP=1 -q -d storhd -c "SET ROLE storhd" \
    -f /usr/local/share/storhd-pg/fixture.sql >/dev/null
  "$bin/pg_ctl" -D "$PGDATA" -w -m fast stop >/dev/null
fi
exec "$bin/postgres" -D "$PGDATA" -c listen_addresses='*'
