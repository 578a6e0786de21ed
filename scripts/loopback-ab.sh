#!/usr/bin/env bash
# Two framebench builds' loopback rate for one framework, in paired rounds: the loopback
# counterpart of `framebench ab` (in-process) for a change callgrind cannot count (a framework
# whose server does not count requests, such as rocket or ntex). Each round runs
# `framebench load --target FRAMEWORK` with the old build and with the new one, in turns (A B,
# B A, …), each build serving and loading itself with its default pinning (server and client on
# separate CPUs), and takes NEW / OLD of the two rates. It prints every round, then the median
# ratio with its distribution-free 95 % interval over the rounds, or `≈` when that interval
# holds 1.00 (a measurement, not a gate: exit 0 either way, unless a run fails).
#
#   OLD=/tmp/a/framebench NEW=/tmp/b/framebench FRAMEWORK=rocket scripts/loopback-ab.sh
#
# Variables: OLD, NEW (binaries, required), FRAMEWORK (required), SCENARIO (hello), CONNS (8),
# DURATION (3s), WARMUP (1s), ROUNDS (10, at least 6), THREADS (1).
set -euo pipefail
cd "$(dirname "$0")/.."

: "${OLD:?set OLD to the old build's framebench}"
: "${NEW:?set NEW to the new build's framebench}"
: "${FRAMEWORK:?set FRAMEWORK to the framework both builds serve}"
SCENARIO=${SCENARIO:-hello}
CONNS=${CONNS:-8}
DURATION=${DURATION:-3s}
WARMUP=${WARMUP:-1s}
ROUNDS=${ROUNDS:-10}
THREADS=${THREADS:-1}
if ((ROUNDS < 6)); then
  echo "ROUNDS=$ROUNDS: at least 6 rounds bound a median at 95 %" >&2
  exit 2
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# rate BIN: one load of the framework by BIN, its requests per second (from its --json); the
# build's revision goes to $work/revision.
rate() {
  "$1" load --target "$FRAMEWORK" --scenario "$SCENARIO" -c "$CONNS" --threads "$THREADS" \
    -d "$DURATION" --warmup "$WARMUP" --quiet --json "$work/cell.json" >"$work/out.txt" 2>&1 || {
    cat "$work/out.txt" >&2
    echo "$1 load failed" >&2
    exit 1
  }
  python3 -c '
import json, sys
run = json.load(open(sys.argv[1]))
cell = run["detail"]["cells"][0]
if cell["status"]["kind"] != "ok":
    sys.exit("cell not ok: " + json.dumps(cell["status"]))
open(sys.argv[2], "w").write(run["environment"]["git_revision"])
print(cell["rps"])' "$work/cell.json" "$work/revision"
}

echo "# $FRAMEWORK $SCENARIO over loopback: NEW / OLD in $ROUNDS paired rounds"
echo
rate "$OLD" >/dev/null
echo "- old: \`$OLD\`, at $(cat "$work/revision")"
rate "$NEW" >/dev/null
echo "- new: \`$NEW\`, at $(cat "$work/revision")"
echo "- one unrecorded run of each before the rounds; $CONNS connections, $THREADS server thread(s), ${DURATION} cells after ${WARMUP} of warm-up, each build's default pinning; $(date -u +%FT%TZ), $(nproc) CPUs"
echo
echo "| round | old req/s | new req/s | new / old |"
echo "|---:|---:|---:|---:|"
: >"$work/ratios"
for ((r = 1; r <= ROUNDS; r++)); do
  if ((r % 2)); then
    old=$(rate "$OLD")
    new=$(rate "$NEW")
  else
    new=$(rate "$NEW")
    old=$(rate "$OLD")
  fi
  ratio=$(awk -v a="$old" -v b="$new" 'BEGIN { printf "%.4f", b / a }')
  echo "$ratio" >>"$work/ratios"
  printf '| %d | %.0f | %.0f | %s |\n' "$r" "$old" "$new" "$ratio"
done
echo
# The median and the distribution-free interval of order statistics: the k-th smallest and the
# k-th largest ratio, with k the largest whose coverage 1 - 2 P(Bin(n, 1/2) < k) is at least 95 %.
sort -g "$work/ratios" | awk '
  { x[NR] = $1 }
  END {
    n = NR
    med = (n % 2) ? x[(n + 1) / 2] : (x[n / 2] + x[n / 2 + 1]) / 2
    k = 1
    for (j = 2; j <= n / 2; j++) {
      # P(Bin(n, 1/2) < j)
      p = 0
      for (i = 0; i < j; i++) { c = 1; for (m = 1; m <= i; m++) c = c * (n - m + 1) / m; p += c / 2 ^ n }
      if (1 - 2 * p >= 0.95) k = j
    }
    lo = x[k]; hi = x[n + 1 - k]
    if (lo <= 1 && hi >= 1) verdict = "≈ (the interval holds 1.00)"
    else verdict = sprintf("%+.1f %%", 100 * (med - 1))
    printf "new / old: median %.3f, 95 %% interval %.3f–%.3f: %s\n", med, lo, hi, verdict
  }'
