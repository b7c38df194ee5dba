#!/usr/bin/env bash
# A Docker-compatible engine for the conformance suite's docker provider on a machine without
# Docker: rootful podman serving the Docker API on a unix socket, and locally built images
# (no registry needed) standing in for the official ones.
#
#   docker/podman/podman.sh install          apt-get install podman, runc, debootstrap
#   docker/podman/podman.sh image postgres   build localhost/pico-postgres:15 (once)
#   docker/podman/podman.sh start            start the API service; prints export DOCKER_HOST=...
#   docker/podman/podman.sh stop             remove containers, stop the service
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
H=/var/tmp/pico-podman
mkdir -p "$H/tmp"
cp "$HERE/containers.conf" "$HERE/storage.conf" "$H/"
export CONTAINERS_CONF=$H/containers.conf CONTAINERS_STORAGE_CONF=$H/storage.conf
SOCK=$H/podman.sock

case "${1:-}" in
install)
  if ! command -v podman >/dev/null || ! command -v runc >/dev/null || ! command -v debootstrap >/dev/null; then
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
      podman runc debootstrap netavark aardvark-dns iptables uidmap >/dev/null
  fi ;;
image)
  [ "${2:-}" = postgres ] || { echo "usage: $0 image postgres" >&2; exit 2; }
  if podman image exists localhost/pico-postgres:15; then exit 0; fi
  ROOT=$H/rootfs-postgres
  rm -rf "$ROOT"
  debootstrap --variant=minbase bookworm "$ROOT" >"$H/debootstrap.log" 2>&1 ||
    { tail -20 "$H/debootstrap.log" >&2; exit 1; }
  mkdir -p "$ROOT/etc/postgresql-common"
  echo "create_main_cluster = false" >"$ROOT/etc/postgresql-common/createcluster.conf"
  chroot "$ROOT" /bin/sh -c "apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends postgresql-15 >/dev/null && apt-get clean"
  install -m 0755 "$HERE/postgres-entrypoint.sh" "$ROOT/usr/local/bin/pico-postgres-entrypoint"
  tar -C "$ROOT" -c . | podman import \
    --change 'ENTRYPOINT ["/usr/local/bin/pico-postgres-entrypoint"]' \
    --change 'EXPOSE 5432' - localhost/pico-postgres:15 >/dev/null
  rm -rf "$ROOT" ;;
start)
  rm -f "$SOCK"
  podman system service --time=0 "unix://$SOCK" >"$H/service.log" 2>&1 &
  echo $! >"$H/service.pid"
  for _ in $(seq 1 100); do
    [ "$(curl -s --unix-socket "$SOCK" http://d/_ping || true)" = OK ] && break
    sleep 0.05
  done
  [ "$(curl -s --unix-socket "$SOCK" http://d/_ping || true)" = OK ] ||
    { cat "$H/service.log" >&2; exit 1; }
  echo "export DOCKER_HOST=unix://$SOCK" ;;
stop)
  podman rm -a -f -t 1 >/dev/null 2>&1 || true
  [ -f "$H/service.pid" ] && kill "$(cat "$H/service.pid")" 2>/dev/null || true ;;
*)
  sed -n '2,12p' "$0"; exit 2 ;;
esac
