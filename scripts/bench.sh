#!/usr/bin/env bash
# The benchmarks: builds pico-bench (release by default: ratios of a debug build mean little;
# PICO_BENCH_PROFILE=dev reuses the test build, as CI does for its smoke run) and runs it.
# Arguments go to pico-bench: `all [--reduced] [--out DIR]`, `sink postgres clickhouse`, `render`;
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
[ "${1:-}" != --build-only ] || exit 0
dir=$([ "$profile" = dev ] && echo debug || echo "$profile")
exec "$CARGO_TARGET_DIR/$dir/pico-bench" "$@"
