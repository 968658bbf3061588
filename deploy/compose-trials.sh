#!/usr/bin/env bash
# The HTTP trial suite in containers, with deploy/compose.yaml: builds the
# images (unless SKIP_BUILD=1), starts storhd with PostgreSQL (the keys step
# first), runs the trial container to its end, then removes the deployment
# and its volumes. Results: $RESULTS_DIR (default build/container-trials).
#   deploy/compose-trials.sh [storh-trial options]
# COMPOSE: the compose command (default "docker compose"); API_CPUS, PG_CPUS,
# WRK_CPUS: cpusets (default 0, 1-4 and 5-6, the reference report's split).
set -euo pipefail
cd "$(dirname "$0")/.."
read -r -a compose <<<"${COMPOSE:-docker compose}"
compose+=(-p storhd -f deploy/compose.yaml)
export API_CPUS=${API_CPUS:-0} PG_CPUS=${PG_CPUS:-1-4} WRK_CPUS=${WRK_CPUS:-5-6}
export RESULTS_DIR=${RESULTS_DIR:-$PWD/build/container-trials}
export TRIAL_ARGS="$*"
mkdir -p "$RESULTS_DIR"
up=(up -d api)
if [ "${SKIP_BUILD:-0}" = 1 ]; then
  up=(up -d --no-build api)
else
  "${compose[@]}" build
fi
TRIAL_IMAGE_API=$(docker image inspect --format '{{.Id}}' localhost/storhd)
TRIAL_IMAGE_PG=$(docker image inspect --format '{{.Id}}' localhost/storhd-postgres)
export TRIAL_IMAGE_API TRIAL_IMAGE_PG
"${compose[@]}" down -v >/dev/null 2>&1 || true
"${compose[@]}" "${up[@]}"
rc=0
"${compose[@]}" run --rm trial || rc=$?
"${compose[@]}" down -v
echo "compose trials: $RESULTS_DIR/index.html (exit $rc)"
exit $rc
