#!/usr/bin/env bash
# The main job: run the conformance suite against every destination that can be provided on this
# machine, print the duplicate-behaviour table, and write docs/duplicate-behaviour.{md,json}.
# Extra arguments go to `pico-conformance run` (e.g. --sink stdout --scenario lost-ack).
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-/var/tmp/pico-sinks-target}"
bash scripts/setup.sh
exec cargo run -q -p pico-conformance -- run "$@"
