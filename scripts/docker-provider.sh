#!/usr/bin/env bash
# Exercises the conformance suite's docker provider on a machine without Docker: podman serves
# the Docker API, and locally built images stand in for the official ones (no registry is
# reachable here). Setup problems (packages, debootstrap) are a loud skip; a failing scenario
# through the docker provider fails the script.
set -uo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-/var/tmp/pico-sinks-target}"
skip() { echo "DOCKER PROVIDER SKIPPED — $1"; exit 0; }

if [ "$(id -u)" != 0 ]; then skip "podman setup needs root"; fi
bash docker/podman/podman.sh install || skip "podman, runc or debootstrap could not be installed"
bash docker/podman/podman.sh image postgres || skip "the local postgres image could not be built"
env_line=$(bash docker/podman/podman.sh start) || skip "the podman API service did not start"
eval "$env_line"
trap 'bash docker/podman/podman.sh stop' EXIT

PICO_POSTGRES_IMAGE=localhost/pico-postgres:15 \
  cargo run -q -p pico-suite --bin pico-conformance -- run --provider docker \
  --sink postgres --sink redshift --no-write
