#!/usr/bin/env bash
# The runtime's crash suite: builds pico-kafka with the sinks the suite drives and the mutants its
# controls select (`--controls`; the feature is off in every other build), then runs
# pico-crash against a real broker (tansu natively, Kafka through docker, or
# PICO_KAFKA_BROKERS) and writes docs/crash-suite.{json,md}; with `--runtime iggy`, pico-iggy
# against an Iggy server started natively -> docs/crash-suite-iggy.{json,md}; with `--runtime
# nats`, pico-nats against nats-server -> docs/crash-suite-nats.{json,md}. Extra arguments
# go to pico-crash (e.g. --reduced, --sink postgres, --case kill, --no-write, --jobs 1: sinks
# at once, default 2);
# `--build-only` builds and stops.
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-/var/tmp/pico-sinks-target}"
bash scripts/setup.sh
eval "$(bash scripts/servers.sh)"
# The runtime this run drives (`--runtime iggy`, `--runtime nats`; pico-kafka by default);
# `--build-only` builds the three, the main job's. Only that one is built and
# copied: the main job runs pico-iggy's suite while
# pico-kafka's runs, and a build of pico-kafka then (a benchmark build may have rebuilt it
# with other features) would load the machine under its cases.
runtime=kafka previous=
for arg in "$@"; do
  [ "$previous" != --runtime ] || runtime=$arg
  case "$arg" in --runtime=*) runtime=${arg#--runtime=} ;; esac
  previous=$arg
done
[ "${1:-}" != --build-only ] || runtime=all
# A workspace build may rebuild the runtimes with other features: runs use copies, each put in
# place by a rename (processes of the previous copy may still be running).
place() {
  cp "$CARGO_TARGET_DIR/debug/$1" "$CARGO_TARGET_DIR/$1-crash.new"
  mv -f "$CARGO_TARGET_DIR/$1-crash.new" "$CARGO_TARGET_DIR/$1-crash"
}
echo "building the runtime ($runtime; every sink, mutants) and pico-crash..." >&2
if [ "$runtime" = kafka ] || [ "$runtime" = all ]; then
  cargo build -p pico-kafka --features mutants --bin pico-kafka
  place pico-kafka
fi
if [ "$runtime" = iggy ] || [ "$runtime" = all ]; then
  cargo build -p pico-iggy --features mutants --bin pico-iggy
  place pico-iggy
fi
if [ "$runtime" = nats ] || [ "$runtime" = all ]; then
  cargo build -p pico-nats --features mutants --bin pico-nats
  place pico-nats
fi
export PICO_NATS_BIN="$CARGO_TARGET_DIR/pico-nats-crash"
export PICO_KAFKA_BIN="$CARGO_TARGET_DIR/pico-kafka-crash"
export PICO_IGGY_BIN="$CARGO_TARGET_DIR/pico-iggy-crash"
cargo build -p pico-suite --bin pico-crash
[ "${1:-}" != --build-only ] || exit 0
exec "$CARGO_TARGET_DIR/debug/pico-crash" "$@"
