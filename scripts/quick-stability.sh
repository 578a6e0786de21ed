#!/usr/bin/env bash
# Runs the quick compare (`framebench --long`, its long table) twice in a row and prints how many of
# its loopback cells measured a req/s within 10 % of each other across the two runs, with the
# cells that did not. Exits 1 when that share is below MIN_SHARE (90 %), so that a ranking the
# table cannot hold is a failure, not a footnote. Also prints each run's wall time (the quick
# compare must print its table within 3 minutes after the build).
#
#   scripts/quick-stability.sh                         # release build, then two runs
#   FRAMEBENCH=target/release/framebench scripts/quick-stability.sh   # an existing binary
#   KEEP=/tmp/quick scripts/quick-stability.sh         # keep both outputs in that folder
#
# Variables: FRAMEBENCH, TOLERANCE (10, percent), MIN_SHARE (90, percent), KEEP.
set -euo pipefail
cd "$(dirname "$0")/.."
TOLERANCE=${TOLERANCE:-10}
MIN_SHARE=${MIN_SHARE:-90}
if [[ -z "${FRAMEBENCH:-}" ]]; then
  cargo build --release --quiet
  FRAMEBENCH=${CARGO_TARGET_DIR:-target}/release/framebench
fi
out=${KEEP:-$(mktemp -d)}
mkdir -p "$out"
[[ -n "${KEEP:-}" ]] || trap 'rm -rf "$out"' EXIT

for run in 1 2; do
  start=$(date +%s.%N)
  # Exit 1 means a cell failed the oracle: part of the result, shown in the table.
  status=0
  "$FRAMEBENCH" --long >"$out/run$run.txt" 2>"$out/run$run.err" || status=$?
  if [[ $status -gt 1 ]]; then
    echo "error: the quick compare exited $status in run $run: $(tail -3 "$out/run$run.err")" >&2
    exit 1
  fi
  echo "run $run: $(awk -v s="$start" -v e="$(date +%s.%N)" 'BEGIN { printf "%.1f", e - s }') s wall, exit $status"
done

# Rows are `| framework | scenario | in-process | allocs/req | loopback/s | ...`; a rate reads
# `123.4 k` or `950`; `skip`, `–` and failures are not rates and are left out.
awk -F'|' -v tol="$TOLERANCE" -v min="$MIN_SHARE" '
  function rate(text,   v) {
    gsub(/^ +| +$/, "", text)
    if (text !~ /^[0-9.]+( k)?$/) return -1
    v = text + 0
    if (text ~ / k$/) v *= 1000
    return v
  }
  FNR == 1 { file++ }
  NF >= 14 && $2 !~ /framework|^-/ {
    key = $2 "|" $3
    r = rate($6)
    if (r < 0) next
    if (file == 1) { first[key] = r; order[++n] = key }
    else if (key in first) second[key] = r
  }
  END {
    compared = 0; within = 0
    for (i = 1; i <= n; i++) {
      key = order[i]
      if (!(key in second)) continue
      compared++
      a = first[key]; b = second[key]
      diff = 100 * (b > a ? b - a : a - b) / (a < b ? a : b)
      if (diff < tol) within++
      else {
        split(key, k, "|"); gsub(/ /, "", k[1]); gsub(/ /, "", k[2])
        printf "  outside %d %%: %s %s: %.0f vs %.0f req/s (%.1f %%)\n", tol, k[1], k[2], a, b, diff
      }
    }
    if (compared == 0) { print "error: no loopback cell measured in both runs"; exit 1 }
    share = 100 * within / compared
    printf "%d of %d loopback cells (%.1f %%) within %d %% across the two runs (need %d %%)\n", within, compared, share, tol, min
    exit share < min
  }' "$out/run1.txt" "$out/run2.txt"
