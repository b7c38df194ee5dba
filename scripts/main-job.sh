#!/usr/bin/env bash
# The main job: every long suite against real servers, each writing its generated report.
#   1. the conformance suite on every destination this machine can provide, three targets at
#      once (its cells mostly wait on their servers), the ones that took longest in the last
#      report first
#      -> docs/duplicate-behaviour.{json,md,html} and the verdict block of each sink's README,
#      then its controls (sinks broken on purpose, each to be caught) -> the controls table;
#   2. the crash suite (at full size at the same time as the conformance suite): pico-kafka
#      killed, panicked and cut off against a real Kafka-protocol broker, three sinks at once,
#      then its controls (pico-kafka broken on purpose, each to be caught)
#      -> docs/crash-suite.{json,md}; pico-iggy against an Iggy server, PostgreSQL and S3, once
#      the conformance suite ended -> docs/crash-suite-iggy.{json,md}; then pico-nats against
#      nats-server (JetStream), the same two sinks -> docs/crash-suite-nats.{json,md};
#   3. then, alone, the benchmarks, each sink beside its raw bulk path
#      -> docs/benchmarks.{json,md,svg}.
# `--reduced` runs all three at the smaller size CI uses; `--no-write` writes nothing to docs/
# (the benchmark report then goes to a temporary directory). Any other argument selects part of
# the conformance suite (`--sink stdout --scenario lost-ack`) and skips the other two.
# Fails when any suite fails (loss, a contradicted claim, a crash case over its bound).
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-/var/tmp/pico-sinks-target}"
bash scripts/setup.sh
eval "$(bash scripts/servers.sh)"

size=() write=() subset=()
for arg in "$@"; do
  case "$arg" in
    --reduced) size=(--reduced) ;;
    --no-write) write=(--no-write) ;;
    *) subset+=("$arg") ;;
  esac
done

# Everything is built before any suite is timed. The first build compiles every client crate
# (10-25 minutes on 2 cores, a release build of the benchmarks 15-25 more): cargo shows its
# progress here.
echo "building the conformance suite (first build: 10-25 minutes)..." >&2
cargo build -p pico-suite --bin pico-conformance
if [ ${#subset[@]} -eq 0 ]; then
  bash scripts/crash-suite.sh --build-only
  bash scripts/bench.sh --build-only
fi
echo "== build took ${SECONDS} s" >&2
built=$SECONDS
# Each suite's standard output is kept, so that the job's end can repeat the `FAILED` lines of
# a failed suite (a CI log shows its tail, which later suites' reports push them out of), and
# its elapsed time and exit status go to $status (a suite may run in the background).
outputs=$(mktemp -d)
status="$outputs/status"
: > "$status"
# Runs one suite: its output to the terminal and to $outputs/<name>.out, its time and status
# to $status.
suite() {
  local name=$1 t0=$SECONDS rc=0
  shift
  "$@" | tee "$outputs/$name.out" || rc=$?
  echo "$name $((SECONDS - t0)) $rc" >> "$status"
  echo "== $name took $((SECONDS - t0)) s" >&2
}
conformance() {
  suite conformance "$CARGO_TARGET_DIR/debug/pico-conformance" run --jobs 3 "${size[@]}" "${write[@]}" "${subset[@]}"
  [ ${#subset[@]} -eq 0 ] || return 0
  # The controls: sinks broken on purpose, each of which the suite must catch.
  suite controls "$CARGO_TARGET_DIR/debug/pico-conformance" controls "${size[@]}" "${write[@]}"
}
# Three sinks at once: each case mostly waits on session timeouts and holds (five at once left a
# group case without its rebalance on tansu under the load). Its lines carry `[crash]` when it
# runs beside the conformance suite.
crash() {
  suite crash bash scripts/crash-suite.sh --jobs 3 --controls "${size[@]}" "${write[@]}"
}
# pico-iggy against its own Iggy server, every case. In the broker case iggy-server
# 0.9.0-edge.5 keeps, after its crash, the group member whose connection died with it, and
# nobody polls that member's partitions again (pico-iggy's tests/group.rs measures it): the
# case measures what the broker held back (⊘) apart from what the runtime lost.
# At full size its controls too (pico-iggy broken on purpose, each to be caught; about 7
# minutes): CI's reduced run leaves them to pico-iggy's own kill-test controls (scripts/test.sh)
# to stay within its hour.
crash_iggy() {
  local controls=()
  [ ${#size[@]} -gt 0 ] || controls=(--controls)
  suite crash-iggy bash scripts/crash-suite.sh --runtime iggy --sink postgres --sink s3 \
    --jobs 2 "${controls[@]}" "${size[@]}" "${write[@]}"
}
# pico-nats against its own nats-server, every case, PostgreSQL and S3. Its controls are
# pico-nats's own kill-test controls (scripts/test.sh).
crash_nats() {
  suite crash-nats bash scripts/crash-suite.sh --runtime nats --sink postgres --sink s3 \
    --jobs 2 "${size[@]}" "${write[@]}"
}
if [ ${#subset[@]} -gt 0 ]; then
  conformance
else
  # The conformance and crash suites run at once, at either size: both mostly wait on their
  # servers, session timeouts and holds, and one after the other they took 1 814 s of CI's
  # 4 338 s at the reduced size (eb04e70, this machine), where CI must stay well within 90
  # minutes. Neither verdict depends on timing the machine alone: a crash case's bound is the
  # records in flight at its interruptions, counted, not a duration.
  # pico-iggy's crash suite follows the conformance suite, which ends first (its own broker:
  # it does not wait on pico-kafka's).
  # pico-nats's follows pico-iggy's (about 4 minutes at the reduced size).
  {
    conformance
    crash_iggy 2>&1 | sed -u 's/^/[crash-iggy] /'
    crash_nats 2>&1 | sed -u 's/^/[crash-nats] /'
  } &
  crash 2>&1 | sed -u 's/^/[crash] /'
  wait
fi
if [ ${#subset[@]} -eq 0 ]; then
  # The benchmarks run alone, so that nothing else loads the machine while they time.
  out=docs
  [ ${#write[@]} -eq 0 ] || out=$(mktemp -d)
  suite benchmarks bash scripts/bench.sh all "${size[@]}" --out "$out"
fi
times=() failed=()
while read -r name seconds rc; do
  times+=("$name $seconds s")
  [ "$rc" -eq 0 ] || failed+=("$name")
done < "$status"
echo "elapsed per suite: ${times[*]/%/,} total $((SECONDS - built)) s after a ${built} s build" >&2
if [ ${#failed[@]} -gt 0 ]; then
  for name in "${failed[@]}"; do
    echo "== what failed in $name:" >&2
    grep -E '^(FAILED|GOAL NOT MET)' "$outputs/$name.out" >&2 || echo "(no FAILED line: see its output above)" >&2
  done
  echo "main job FAILED: ${failed[*]}" >&2
  exit 1
fi
echo "main job passed"
