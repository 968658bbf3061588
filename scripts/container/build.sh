# shellcheck shell=bash
# Sourced by scripts/container.sh (after bootstrap.sh): build, the five
# images from the Dockerfile and deploy/ on the base image.
: "${state:?scripts/container/bootstrap.sh sets it}"
build() {
  base_image
  echo "container: building localhost/storhd, localhost/storhd-trial, localhost/storhd-postgres"
  podman build --pull=never --format docker --target runtime -t localhost/storhd . >"$state/build.log" 2>&1 ||
    { tail -n 30 "$state/build.log"; return 1; }
  podman build --pull=never --format docker --target trial -t localhost/storhd-trial . \
    >>"$state/build.log" 2>&1 || { tail -n 30 "$state/build.log"; return 1; }
  podman build --pull=never --format docker -t localhost/storhd-postgres deploy/postgres \
    >>"$state/build.log" 2>&1 || { tail -n 30 "$state/build.log"; return 1; }
  podman build --pull=never --format docker -t localhost/storhd-prometheus deploy/prometheus \
    >>"$state/build.log" 2>&1 || { tail -n 30 "$state/build.log"; return 1; }
  podman build --pull=never --format docker -t localhost/storhd-haproxy deploy/haproxy \
    >>"$state/build.log" 2>&1 || { tail -n 30 "$state/build.log"; return 1; }
  podman images --format '{{.Repository}}:{{.Tag}} {{.ID}} {{.Size}}' | grep storhd
}

