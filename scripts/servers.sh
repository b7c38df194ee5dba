#!/usr/bin/env bash
# Test infrastructure for CI and developers: unpacks the server binaries that no package
# registry ships (Meilisearch, Quickwit, tansu, the Apache Iggy server), built from their public
# sources and kept in the shared folder beside the checkout, and prints the variables that point
# the suite's native providers (and pico-iggy's tests) at them. Use: eval "$(bash scripts/servers.sh)".
#
# The project never needs these files: without them the targets use a binary on PATH, the
# docker provider or an external URL, or are reported "not verified here" with the reason.
set -uo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
dest="${PICO_SERVERS_DIR:-/var/tmp/pico-servers}"
shared=""
for candidate in "${PICO_SHARED_DIR:-}" "$top/../shared" /work/shared; do
  if [ -n "$candidate" ] && [ -d "$candidate/servers" ]; then
    shared="$candidate/servers"
    break
  fi
done
if [ -z "$shared" ]; then
  echo "echo 'servers.sh: no shared servers folder (set PICO_SHARED_DIR): Meilisearch, Quickwit and tansu targets fall back to PATH/docker/external' >&2"
  exit 0
fi
if ! command -v zstd >/dev/null 2>&1; then
  echo "echo 'servers.sh: zstd is not installed: cannot unpack the shared servers' >&2"
  exit 0
fi
mkdir -p "$dest"
# name, file pattern, variable
for entry in "meilisearch:meilisearch-v*-linux-x86_64.zst:PICO_MEILISEARCH_BIN" \
             "quickwit:quickwit-*-linux-x86_64.zst:PICO_QUICKWIT_BIN" \
             "tansu:tansu-*-linux-x86_64.zst:PICO_TANSU_BIN" \
             "iggy-server:iggy-server-*-linux-x86_64.zst:PICO_IGGY_SERVER_BIN"; do
  name=${entry%%:*}; rest=${entry#*:}; pattern=${rest%%:*}; var=${rest#*:}
  archive=$(ls "$shared"/$pattern 2>/dev/null | sort | tail -n 1)
  if [ -z "$archive" ]; then
    echo "echo 'servers.sh: no $name archive in $shared' >&2"
    continue
  fi
  bin="$dest/$(basename "$archive" .zst)"
  if [ ! -x "$bin" ] || [ "$archive" -nt "$bin" ]; then
    zstd -q -d -f -o "$bin.tmp" "$archive" && chmod +x "$bin.tmp" && mv "$bin.tmp" "$bin" || {
      echo "echo 'servers.sh: unpacking $archive failed' >&2"
      continue
    }
  fi
  echo "export $var='$bin'"
done
