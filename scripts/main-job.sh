#!/usr/bin/env bash
# The main job: run the conformance suite against every destination that can be provided on this
# machine, print the duplicate-behaviour table, and write docs/duplicate-behaviour.{md,json}.
# Extra arguments go to `pico-conformance run` (e.g. --sink stdout --scenario lost-ack).
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-/var/tmp/pico-sinks-target}"
bash scripts/setup.sh
eval "$(bash scripts/servers.sh)"
# The first build compiles every client crate (10-25 minutes on 2 cores): cargo shows its
# progress here instead of a silent `cargo run -q`.
echo "building the conformance suite (first build: 10-25 minutes)..." >&2
cargo build -p pico-suite --bin pico-conformance
exec "$CARGO_TARGET_DIR/debug/pico-conformance" run "$@"
