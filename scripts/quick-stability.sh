#!/usr/bin/env bash
# Runs the quick compare (`framebench --long`, its long table) twice in a row and prints how many of
# its loopback cells measured a req/s within 10 % of each other across the two runs, with the
# cells that did not, and the same share for the hello cells past saturation (churn rate, the
# bill at a fixed rate, the standing cost). Exits 1 when that share is below MIN_SHARE (90 %), so that a ranking the
# table cannot hold is a failure, not a footnote. Also prints each run's wall time (the quick
# compare must print its table within 4 minutes after the build).
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

# The long table's rows are `| framework | scenario | in-process | allocs/req | loopback/s | ...`;
# the hello table's below it `| framework | churn/s | bound | connects/s | connect | bill/req |
# usr/req | sys/req | p99 at rate | standing/s | ...`. A figure reads `123.4 k`, `950`, `12.34 µs`
# or `1.23 ms`; `skip`, `–`, `behind`, `OPEN` and failures are not figures and are left out. The
# gate (MIN_SHARE) is on the saturated loopback cells; the hello cells' shares are printed.
awk -F'|' -v tol="$TOLERANCE" -v min="$MIN_SHARE" '
  function value(text,   v) {
    gsub(/^ +| +$/, "", text)
    if (text !~ /^[0-9.]+( k| µs| ms)?$/) return -1
    v = text + 0
    if (text ~ / k$/) v *= 1000
    return v
  }
  function keep(kind, key, v) {
    if (v < 0) return
    if (file == 1) { first[kind, key] = v; order[kind, ++n[kind]] = key }
    else if ((kind, key) in first) second[kind, key] = v
  }
  function share(kind, label, unit,   i, key, a, b, diff, compared, within) {
    compared = 0; within = 0
    for (i = 1; i <= n[kind]; i++) {
      key = order[kind, i]
      if (!((kind, key) in second)) continue
      compared++
      a = first[kind, key]; b = second[kind, key]
      diff = 100 * (b > a ? b - a : a - b) / (a < b ? a : b)
      if (diff < tol) within++
      else printf "  outside %d %%: %s %s: %.2f vs %.2f %s (%.1f %%)\n", tol, label, key, a, b, unit, diff
    }
    result[kind] = compared ? 100 * within / compared : -1
    printf "%s: %d of %d cells (%.1f %%) within %d %% across the two runs\n", label, within, compared, result[kind], tol
  }
  FNR == 1 { file++; section = "" }
  $2 ~ /^ *framework *$/ { section = ($3 ~ /scenario/) ? "main" : ($3 ~ /churn/) ? "hello" : ""; next }
  NF >= 14 && section == "main" && $2 !~ /^ *-/ {
    key = $2 " " $3; gsub(/ +/, " ", key); gsub(/^ | $/, "", key)
    keep("loopback", key, value($6))
  }
  NF >= 14 && section == "hello" && $2 !~ /^ *-/ {
    key = $2; gsub(/ /, "", key)
    keep("churn", key, value($3))
    keep("bill", key, value($7))
    keep("standing", key, value($11))
  }
  END {
    share("churn", "hello churn req/s", "req/s")
    share("bill", "hello bill (CPU per request at the fixed rate)", "µs")
    share("standing", "hello standing cost (CPU per second near idle)", "ms")
    share("loopback", "saturated loopback req/s", "req/s")
    if (result["loopback"] < 0) { print "error: no loopback cell measured in both runs"; exit 1 }
    printf "gate: %.1f %% of the saturated loopback cells within %d %% (need %d %%)\n", result["loopback"], tol, min
    exit result["loopback"] < min
  }' "$out/run1.txt" "$out/run2.txt"
