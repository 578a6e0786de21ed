#!/usr/bin/env bash
# Runs a callgrind bench twice in a row on the same build and prints how many cells' instruction
# counts differ between the two runs (gungraun prints "Instructions: NEW|OLD (No change)" on the
# second run). Exits 1 when any cell differs, unless ALLOW_DIFF=1.
#
#   scripts/callgrind-repeat.sh                       # every in-process cell
#   scripts/callgrind-repeat.sh '*::hello_*'          # the reduced hello set (CI)
#   BENCH=callgrind_loopback ALLOW_DIFF=1 scripts/callgrind-repeat.sh
set -euo pipefail
cd "$(dirname "$0")/.."
bench=${BENCH:-callgrind}
args=()
if [ $# -gt 0 ]; then
  args=(-- "$@")
fi

run() {
  cargo bench --quiet --bench "$bench" "${args[@]}" 2>&1
}

first=$(run) || { echo "$first"; echo "cargo bench --bench $bench failed"; exit 1; }
if echo "$first" | grep -q '^skipping `cargo bench'; then
  echo "$first" | grep '^skipping'
  exit 0
fi
second=$(run) || { echo "$second"; echo "cargo bench --bench $bench failed"; exit 1; }
total=$(echo "$second" | grep -c '^  Instructions:' || true)
same=$(echo "$second" | grep '^  Instructions:' | grep -c '(No change)' || true)
if [ "$total" = 0 ]; then
  echo "$second" | tail -20
  echo "no instruction counts in the second run"
  exit 1
fi
echo "$second" | awk '
  /^[a-z_]+::/ { id = $0 }
  /^  Instructions:/ && !/No change/ { print "differs: " id " " $2 " " $3 " " $4 }'
echo "callgrind repeat ($bench${1:+ $1}): $((total - same)) of $total cells differ between two runs"
[ "$same" = "$total" ] || [ "${ALLOW_DIFF:-0}" = 1 ]
