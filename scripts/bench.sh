#!/usr/bin/env bash
# The benchmarks: builds pico-bench (release by default: ratios of a debug build mean little;
# PICO_BENCH_PROFILE=dev reuses the test build, as CI does for its smoke run) and runs it.
# Arguments go to pico-bench: `all [--reduced] [--out DIR]`, `sink postgres clickhouse [--out DIR]`,
# `end-to-end [--reduced] [--sink postgres] [--out DIR]`, `soak`, `render`;
# `--build-only` builds it and stops (the main job builds everything before it times a suite).
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-/var/tmp/pico-sinks-target}"
bash scripts/setup.sh
eval "$(bash scripts/servers.sh)"
profile="${PICO_BENCH_PROFILE:-release}"
echo "building pico-bench ($profile profile; a first release build takes 15-25 minutes)..." >&2
# No benchmark uses SurrealDB: the release build leaves out its engine (the dev build is CI's
# test build, with default features, reused as it is).
features=()
[ "$profile" = dev ] || features=(--no-default-features)
cargo build --profile "$profile" -p pico-suite --bin pico-bench "${features[@]}"
dir=$([ "$profile" = dev ] && echo debug || echo "$profile")
# pico-kafka end to end runs the runtime's own binary, of the same profile, with the sinks it
# measures (the dev build: the test build's, every sink); copied aside, as a workspace build
# may rebuild it with other features.
runtime_features=()
[ "$profile" = dev ] || runtime_features=(--no-default-features --features postgres,clickhouse,s3,delta)
cargo build --profile "$profile" -p pico-kafka --bin pico-kafka "${runtime_features[@]}"
cp "$CARGO_TARGET_DIR/$dir/pico-kafka" "$CARGO_TARGET_DIR/pico-kafka-bench-$profile"
export PICO_KAFKA_BIN="$CARGO_TARGET_DIR/pico-kafka-bench-$profile"
[ "${1:-}" != --build-only ] || exit 0
exec "$CARGO_TARGET_DIR/$dir/pico-bench" "$@"
