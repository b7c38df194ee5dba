#!/usr/bin/env bash
# A CPU profile of pico-kafka in the end-to-end benchmark (#39 step 3). While the reduced
# end-to-end benchmark of one sink runs (release build), perf samples every pico-kafka process
# it starts (DWARF stacks), and the CPU time of every process on the machine is counted over the
# same spans. inferno folds the runtime's stacks and draws the flame graph.
#
#   scripts/profile.sh [--sink postgres] [--full] [--label now] [--bin PATH] [--out docs/profile]
#
# --full runs the benchmark at full size (200 000 records, 5 repetitions; a few minutes per sink)
# instead of reduced (20 000, 2), for enough samples of the runtime.
#
# --bin profiles another pico-kafka binary (an older commit's, for a before/after pair). Writes
# <out>/pico-kafka-<label>.svg (the flame graph) and <out>/pico-kafka-<label>.txt (the hottest
# frames, the machine's CPU by process, the benchmark's rows). Needs perf (Debian's linux-perf)
# and root or perf_event_paranoid ≤ 1; installs inferno with cargo when it is missing.
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-/var/tmp/pico-sinks-target}"
export PATH="$HOME/.cargo/bin:$PATH"
sink=postgres label=now bin="" out=docs/profile size=--reduced size_name=reduced
while [ $# -gt 0 ]; do
  case "$1" in
    --sink) sink=$2; shift 2 ;;
    --full) size="" size_name=full; shift ;;
    --label) label=$2; shift 2 ;;
    --bin) bin=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    *) echo "unknown argument $1" >&2; exit 64 ;;
  esac
done
command -v perf >/dev/null || apt-get install -y linux-perf
command -v inferno-flamegraph >/dev/null || cargo install inferno --locked
bash scripts/bench.sh --build-only
eval "$(bash scripts/servers.sh)"
[ -n "$bin" ] || bin="$CARGO_TARGET_DIR/pico-kafka-bench-release"
# A copy under a name the watcher knows, whatever the binary was called.
runtime="$CARGO_TARGET_DIR/pico-kafka-profiled"
cp "$bin" "$runtime"
raw=$(mktemp -d)
mkdir -p "$out"

# CPU ticks (user + system) of every process: "pid name ticks" (spaces in a name become _).
ticks() {
  cat /proc/[0-9]*/stat 2>/dev/null |
    sed -E 's/^([0-9]+) \((.*)\) [A-Za-z] ([-0-9]+ ){10}([0-9]+) ([0-9]+) .*/\1 \4 \5 \2/' |
    awk '{ pid = $1; t = $2 + $3; $1 = $2 = $3 = ""; gsub(/^ +/, ""); gsub(/ /, "_"); print pid, $0, t }'
}

# Attaches perf to each pico-kafka process while it lives, and counts every process's CPU over
# the same span (from its spawn to its last moment seen alive).
watch() {
  local n=0 pid proc
  while true; do
    pid=$(pgrep -f "^$runtime" | awk 'NR == 1' || true)
    if [ -z "$pid" ]; then sleep 0.05; continue; fi
    n=$((n + 1))
    ticks >"$raw/cpu-$n.start"
    date +%s.%N >"$raw/wall-$n.start"
    perf record -F 499 --call-graph dwarf,16384 -p "$pid" -o "$raw/proc-$n.data" 2>/dev/null &
    proc=$!
    while kill -0 "$pid" 2>/dev/null; do
      ticks >"$raw/cpu.tmp" && mv "$raw/cpu.tmp" "$raw/cpu-$n.end"
      date +%s.%N >"$raw/wall-$n.end"
      sleep 0.2
    done
    wait "$proc" || true
  done
}

# Every process's CPU over the profiled spans, by name, as a share of the cores' time.
cpu_by_process() {
  local start n
  for start in "$raw"/cpu-*.start; do
    n=${start%.start}
    n=${n##*-}
    [ -f "$raw/cpu-$n.end" ] || continue
    awk -v from="$(cat "$raw/wall-$n.start")" -v to="$(cat "$raw/wall-$n.end")" '
      FNR == NR { before[$1] = $3; next }
      { d = $3 - before[$1]; if (d > 0) print $2, d }
      END { print "(wall)", to - from }' "$start" "$raw/cpu-$n.end"
  done | awk -v hz="$(getconf CLK_TCK)" -v cores="$(nproc)" '
    $1 == "(wall)" { wall += $2; next }
    { s[$1] += $2 / hz; used += $2 / hz }
    END {
      for (c in s) if (s[c] >= 0.005 * wall * cores)
        printf "%6.1f%%  %7.2f s  %s\n", 100 * s[c] / (wall * cores), s[c], c
      printf "%6.1f%%  %7.2f s  (idle)\n", 100 * (1 - used / (wall * cores)), wall * cores - used
    }' | sort -rn
}

watch &
watcher=$!
PICO_KAFKA_BIN="$runtime" "$CARGO_TARGET_DIR/release/pico-bench" end-to-end $size \
  --sink "$sink" >"$raw/bench.out"
sleep 1
kill "$watcher" 2>/dev/null || true

folded="$raw/stacks.folded"
for f in "$raw"/proc-*.data; do
  perf script -i "$f" 2>/dev/null | inferno-collapse-perf
done | awk '{ n = $NF; $NF = ""; sub(/ $/, ""); s[$0] += n } END { for (k in s) print k, s[k] }' |
  sort >"$folded"
inferno-flamegraph --title "pico-kafka to $sink, end to end ($size_name), $label" <"$folded" \
  >"$out/pico-kafka-$label.svg"
{
  echo "pico-kafka to $sink, end-to-end benchmark ($size_name, release), $label"
  echo "runtime binary: $bin"
  # inferno weighs each sample by its period: nanoseconds of CPU for perf's cpu-clock.
  echo "runs profiled: $(ls "$raw"/proc-*.data | wc -l); CPU time sampled: $(awk '{ t += $NF } END { printf "%.2f s", t / 1e9 }' "$folded")"
  echo
  echo "hottest frames (self samples, share of the runtime's samples):"
  awk '{ n = $NF; $NF = ""; sub(/ $/, ""); k = split($0, f, ";"); s[f[k]] += n; t += n }
       END { for (l in s) printf "%6.2f%%  %s\n", 100 * s[l] / t, l }' "$folded" | sort -rn | awk 'NR <= 15'
  echo
  echo "the machine's CPU while pico-kafka ran, by process ($(nproc) cores × wall time):"
  cpu_by_process | awk 'NR <= 12'
  echo
  awk '/^\| sink \| partitions/ { p = 1 } p { if ($0 !~ /^\|/) exit; print }' "$raw/bench.out"
} >"$out/pico-kafka-$label.txt"
rm -rf "$raw"
cat "$out/pico-kafka-$label.txt"
