# shellcheck shell=bash
# Sourced by scripts/container.sh: the podman environment (Debian's rootful
# podman with overlay storage and runc, all state under build/podman, the
# packages it needs) and base_image, the debootstrap'd bookworm imported as
# debian:bookworm and debian:bookworm-slim. Sets: state. Exports
# CONTAINERS_STORAGE_CONF and CONTAINERS_CONF.
scripts/deps.sh podman runc netavark aardvark-dns iptables catatonit debootstrap curl jq \
  python3-jsonschema >/dev/null
state=$PWD/build/podman
mkdir -p "$state"
cat >"$state/storage.conf" <<EOF
[storage]
driver = "overlay"
runroot = "$state/run"
graphroot = "$state/graph"
EOF
# podman asks for more open files and processes than root may grant here
nofile=$(ulimit -Hn)
nproc=$(ulimit -Hu)
if [ "$nproc" = unlimited ] || [ "$nproc" -gt 32768 ]; then nproc=32768; fi
cat >"$state/containers.conf" <<EOF
[containers]
default_ulimits = ["nofile=$nofile:$nofile", "nproc=$nproc:$nproc"]
[engine]
runtime = "runc"
[network]
network_backend = "netavark"
EOF
export CONTAINERS_STORAGE_CONF=$state/storage.conf CONTAINERS_CONF=$state/containers.conf

# The base image, once: debootstrap from this machine's Debian mirror.
base_image() {
  podman image exists localhost/debian:bookworm && return 0
  local sources=/etc/apt/sources.list.d/debian.sources mirror security rootfs
  mirror=$(awk '/^URIs:/{print $2; exit}' "$sources" 2>/dev/null || true)
  security=$(awk '/^URIs:/{n++; if (n == 2) {print $2; exit}}' "$sources" 2>/dev/null || true)
  mirror=${mirror:-http://deb.debian.org/debian}
  security=${security:-http://deb.debian.org/debian-security}
  rootfs=$state/rootfs
  rm -rf "$rootfs"
  echo "container: debootstrap bookworm from $mirror"
  debootstrap --variant=minbase bookworm "$rootfs" "$mirror" >"$state/debootstrap.log" 2>&1
  printf 'deb %s bookworm main\ndeb %s bookworm-updates main\ndeb %s bookworm-security main\n' \
    "$mirror" "$mirror" "$security" >"$rootfs/etc/apt/sources.list"
  chroot "$rootfs" sh -c 'apt-get update -qq && apt-get -y -qq upgrade && apt-get clean' >/dev/null
  tar -C "$rootfs" -c . | podman import - localhost/debian:bookworm >/dev/null
  # -slim as Debian's own: no docs, man pages or locales, now or when a
  # stage installs packages (dpkg path-exclude), and no apt lists
  printf '%s\n' 'path-exclude /usr/share/doc/*' 'path-include /usr/share/doc/*/copyright' \
    'path-exclude /usr/share/info/*' 'path-exclude /usr/share/man/*' \
    'path-exclude /usr/share/groff/*' 'path-exclude /usr/share/lintian/*' \
    'path-exclude /usr/share/locale/*' >"$rootfs/etc/dpkg/dpkg.cfg.d/slim"
  find "$rootfs/usr/share/doc" -mindepth 1 ! -name copyright ! -type d -delete
  rm -rf "$rootfs"/usr/share/{info,man,groff,lintian,locale}/* "$rootfs"/var/lib/apt/lists/*
  tar -C "$rootfs" -c . | podman import - localhost/debian:bookworm-slim >/dev/null
  podman tag localhost/debian:bookworm docker.io/library/debian:bookworm
  podman tag localhost/debian:bookworm-slim docker.io/library/debian:bookworm-slim
  rm -rf "$rootfs"
}

