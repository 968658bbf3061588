#!/usr/bin/env bash
# Installs the Debian packages storhd builds, tests and runs with; packages
# already present are left alone, so a warm machine pays nothing.
set -euo pipefail
PKGS=(gcc make cmake pkg-config ca-certificates curl
      libmicrohttpd-dev libjansson-dev libxxhash-dev libcurl4-openssl-dev
      libsqlite3-dev libpq-dev postgresql libjwt-dev libssl-dev libfuse3-dev fuse3)
PKGS+=("$@")
missing=()
for p in "${PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
