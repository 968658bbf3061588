#!/usr/bin/env bash
# Installs what storhd needs, builds it (Release) and runs it on the embedded
# default: storage root ./var/data with an SQLite mirror beside it, listening
# on 127.0.0.1:8080, and the page RPC on a private PostgreSQL cluster under
# ./var/pg (socket only) with the reference fixture (page() and its table).
# Extra arguments go to storhd (e.g. --listen 127.0.0.1:9000).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh
cmake -S . -B build/release -DCMAKE_BUILD_TYPE=Release -DBUILD_TESTING=OFF >/dev/null
cmake --build build/release -j"$(nproc)"
mkdir -p var/data
STORHD_PG=$(scripts/pg.sh start var/pg "${STORHD_PG_PORT:-55432}")
export STORHD_PG
trap 'scripts/pg.sh stop var/pg' EXIT
psql "$STORHD_PG" -q -f deploy/postgres/fixture.sql >/dev/null 2>&1 # idempotent
build/release/service/storhd --root "${STORHD_ROOT:-var/data}" \
  --listen "${STORHD_LISTEN:-127.0.0.1:8080}" \
  --rpc-conninfo "$STORHD_PG" --rpc-functions page "$@"
