#!/usr/bin/env bash
# The HTTP trial suite as the reference load report ran it: a Colima Linux
# VM with 8 vCPUs on a Mac, storhd on 1 vCPU, PostgreSQL on 4 and wrk on 2
# (deploy/compose.yaml), three trials per scenario. Needs colima and the
# docker CLI with its compose plugin (brew install colima docker docker-compose).
#   deploy/colima/run.sh [storh-trial options]
# Results: build/colima-trials/results.json and index.html (the image ids
# of the API and PostgreSQL are recorded in results.json).
set -euo pipefail
cd "$(dirname "$0")/../.."
profile=${COLIMA_PROFILE:-storhd}
if ! colima status -p "$profile" >/dev/null 2>&1; then
  colima start -p "$profile" --cpu 8 --memory 8 --disk 40
fi
# colima names the docker context of a profile colima-<profile>
export DOCKER_CONTEXT=colima-$profile
[ "$(docker info --format '{{.NCPU}}')" -ge 7 ] ||
  { echo "the VM has fewer than 7 CPUs: colima delete -p $profile, then run this again" >&2; exit 1; }
RESULTS_DIR=$PWD/build/colima-trials API_CPUS=0 PG_CPUS=1-4 WRK_CPUS=5-6 \
  exec deploy/compose-trials.sh "$@"
