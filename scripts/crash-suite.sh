#!/usr/bin/env bash
# The runtime's crash suite: builds pico-kafka with the sinks the suite drives and the mutants its
# controls select (`--controls`; the feature is off in every other build), then runs
# pico-crash against a real broker (tansu natively, Kafka through docker, or
# PICO_KAFKA_BROKERS) and writes docs/crash-suite.{json,md}; with `--runtime iggy`, pico-iggy
# against an Iggy server started natively -> docs/crash-suite-iggy.{json,md}. Extra arguments
# go to pico-crash (e.g. --reduced, --sink postgres, --case kill, --no-write, --jobs 1: sinks
# at once, default 2);
# `--build-only` builds and stops.
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-/var/tmp/pico-sinks-target}"
bash scripts/setup.sh
eval "$(bash scripts/servers.sh)"
echo "building pico-kafka and pico-iggy (every sink, mutants) and pico-crash..." >&2
cargo build -p pico-kafka --features mutants --bin pico-kafka
cargo build -p pico-iggy --features mutants --bin pico-iggy
# A workspace build may rebuild the runtimes with other features: run copies of these.
cp "$CARGO_TARGET_DIR/debug/pico-kafka" "$CARGO_TARGET_DIR/pico-kafka-crash"
cp "$CARGO_TARGET_DIR/debug/pico-iggy" "$CARGO_TARGET_DIR/pico-iggy-crash"
export PICO_KAFKA_BIN="$CARGO_TARGET_DIR/pico-kafka-crash"
export PICO_IGGY_BIN="$CARGO_TARGET_DIR/pico-iggy-crash"
cargo build -p pico-suite --bin pico-crash
[ "${1:-}" != --build-only ] || exit 0
exec "$CARGO_TARGET_DIR/debug/pico-crash" "$@"
