#!/usr/bin/env bash
# storhd's images on a machine without a Docker engine, with Debian's rootful
# podman set up as shared/CONTAINERS.md of the project describes: overlay
# storage and runc, all state under build/podman, and (no registry being
# reachable) a debootstrap'd bookworm imported as debian:bookworm and
# debian:bookworm-slim, which the Dockerfiles start FROM.
#   scripts/container.sh               build the images, start PostgreSQL and
#                                      storhd on a private network, smoke-test
#                                      over HTTP, check that Prometheus scrapes
#                                      it and evaluates the rules, call the page
#                                      RPC through HAProxy over two replicas
#                                      (one stopped mid-run), run a short trial
#                                      (CI)
#   scripts/container.sh build         only build the images
#   scripts/container.sh trials [storh-trial options]
#                                      the trial suite with deploy/compose.yaml
#                                      (deploy/compose-trials.sh: Debian's
#                                      docker-compose against podman's Docker
#                                      API socket; this machine's CPUs split as
#                                      storh-trial does), results in
#                                      build/container-trials/
# The images: localhost/storhd (the service), localhost/storhd-trial (trial
# runner and key maker), localhost/storhd-postgres (PostgreSQL + fixture),
# localhost/storhd-prometheus and localhost/storhd-haproxy (Debian's
# prometheus and haproxy with deploy/'s configs).
# The parts: scripts/container/bootstrap.sh (podman set-up, base image),
# scripts/container/build.sh (the images), scripts/container/smoke.sh (the
# smoke test); this file only dispatches.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/container/bootstrap.sh
. scripts/container/bootstrap.sh
# shellcheck source=scripts/container/build.sh
. scripts/container/build.sh
# shellcheck source=scripts/container/smoke.sh
. scripts/container/smoke.sh

case "${1:-smoke}" in
build) build ;;
smoke)
  build
  smoke
  ;;
trials)
  shift
  scripts/deps.sh docker-compose >/dev/null
  build
  sock=$state/docker.sock
  podman system service --time=0 "unix://$sock" >"$state/service.log" 2>&1 &
  service=$!
  trap 'kill $service 2>/dev/null || true' EXIT
  for _ in $(seq 50); do [ -S "$sock" ] && break; sleep 0.1; done
  read -r api_cpus pg_cpus wrk_cpus < <(build/release/bench/storh-trial --print-cpus 2>/dev/null ||
                                        echo "0 1 1")
  DOCKER_HOST=unix://$sock COMPOSE=docker-compose SKIP_BUILD=1 API_CPUS=$api_cpus \
    PG_CPUS=$pg_cpus WRK_CPUS=$wrk_cpus deploy/compose-trials.sh "$@"
  ;;
*)
  echo "usage: scripts/container.sh [build|smoke|trials [storh-trial options]]" >&2
  exit 2
  ;;
esac
