#!/usr/bin/env bash
# Installs what storhd needs, builds it (Release) and runs it on the embedded
# default: storage root ./var/data, listening on 127.0.0.1:8080.
# Extra arguments go to storhd (e.g. --listen 127.0.0.1:9000).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh
cmake -S . -B build/release -DCMAKE_BUILD_TYPE=Release -DBUILD_TESTING=OFF >/dev/null
cmake --build build/release -j"$(nproc)"
mkdir -p var/data
# the private PostgreSQL cluster under the data dir (for a postgres mirror
# and the page RPC); its conninfo is exported as STORHD_PG
STORHD_PG=$(scripts/pg.sh start var/pg "${STORHD_PG_PORT:-55432}")
export STORHD_PG
trap 'scripts/pg.sh stop var/pg' EXIT
build/release/service/storhd --root "${STORHD_ROOT:-var/data}" \
  --listen "${STORHD_LISTEN:-127.0.0.1:8080}" "$@"
