#!/usr/bin/env bash
# Runs every test of the workspace. The README's test command; .ci/run calls it.
# Installs what the tests need on a fresh Debian machine (system packages for native servers),
# then runs the tests with cargo-nextest when present (plain cargo test otherwise) and doctests.
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-/var/tmp/pico-sinks-target}"
export CARGO_TERM_COLOR="${CARGO_TERM_COLOR:-never}"

bash scripts/setup.sh
eval "$(bash scripts/servers.sh)"
# setup.sh installed chromium: the HTML report's browser test may not skip.
export PICO_REQUIRE_BROWSER=1

if cargo nextest --version >/dev/null 2>&1; then
  cargo nextest run --workspace --no-fail-fast --failure-output final "$@"
else
  echo "cargo-nextest not found: running cargo test" >&2
  cargo test --workspace --no-fail-fast --lib --bins --tests "$@"
fi
# The controls of pico-iggy's and pico-nats's kill tests: each runtime broken on purpose (the
# `mutants` feature, off in every other build) must be caught losing records.
for runtime in pico-iggy pico-nats; do
  if cargo nextest --version >/dev/null 2>&1; then
    cargo nextest run -p "$runtime" --features mutants -E 'test(control)'
  else
    cargo test -p "$runtime" --features mutants --test kill control
  fi
done
cargo test --workspace --doc
# The API docs build without a warning (broken intra-doc links, bare URLs, …): rustdoc's own
# denied, cargo's (such as output collisions) caught from its output.
doc_log=$(mktemp)
RUSTDOCFLAGS="-D warnings" cargo doc --workspace --no-deps 2>&1 | tee "$doc_log" >&2
if grep -q '^warning' "$doc_log"; then
  echo "cargo doc warned: see above" >&2
  exit 1
fi
rm -f "$doc_log"
