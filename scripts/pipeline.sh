#!/usr/bin/env bash
# Pipelined hello at depths 16 and 128 for every framework that serves (seed 002's
# pipelining comparison, rerun with the Rocket, Gotham and Go peers), plus the json scenario.
# Writes docs/generated/seeds/pipeline/pipeline-16.md, pipeline-128.md and json.md (or $OUT/), and prints them.
#
#   scripts/pipeline.sh                 # release build, 5 s per cell
#   DURATION=1s PROFILE=dev scripts/pipeline.sh   # a quick development run
set -euo pipefail
cd "$(dirname "$0")/.."
duration=${DURATION:-5s}
profile=${PROFILE:-release}
conns=${CONNECTIONS:-16}
out=${OUT:-docs/generated/seeds/pipeline}
mkdir -p "$out"
if [ "$profile" = release ]; then
  cargo build --release --quiet
  bin=${CARGO_TARGET_DIR:-target}/release/framebench
else
  cargo build --quiet
  bin=${CARGO_TARGET_DIR:-target}/debug/framebench
fi
# shellcheck source=scripts/lib/cells.sh
source scripts/lib/cells.sh
compare() { cells_recorded flock /tmp/measure.lock "$bin" compare "$@"; }
for depth in 16 128; do
  compare --scenarios hello --pipeline "$depth" -c "$conns" -d "$duration" --quiet \
    --markdown "$out/pipeline-$depth.md"
  echo "## pipelined hello, depth $depth"
  cat "$out/pipeline-$depth.md"
done
compare --scenarios json -c "$conns" -d "$duration" --quiet --markdown "$out/json.md"
echo "## json"
cat "$out/json.md"
