#!/usr/bin/env bash
# Starts one `framebench serve` per framework named (pinned to cpu 0, 1 thread) and loads them
# in turn with short closed-loop cells from cpu 1, printing one line per cell: seconds since
# the start, the server's URL and its req/s in thousands. This is how docs/methodology/loopback.md
# ("Repeatability of the quick compare") measured the machine's noise over time; name the same
# framework several times to compare servers started side by side.
#
#   scripts/load-series.sh ROUNDS FRAMEWORK...       # e.g. 60 hyper hyper hyper hyper
#
# Variables: FRAMEBENCH, SCENARIO (hello), CONNS (16), DUR (80ms), WARMUP (20ms).
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=$1
shift
if [[ -z "${FRAMEBENCH:-}" ]]; then
  cargo build --release --quiet
  FRAMEBENCH=${CARGO_TARGET_DIR:-target}/release/framebench
fi
tmp=$(mktemp -d)
pids=()
trap 'for p in "${pids[@]}"; do kill -INT "$p" 2>/dev/null || true; done; wait; rm -rf "$tmp"' EXIT
urls=()
i=0
for fw in "$@"; do
  i=$((i + 1))
  taskset -c 0 "$FRAMEBENCH" serve "$fw" --threads 1 >"$tmp/serve.$i" 2>&1 &
  pids+=($!)
  for _ in $(seq 100); do grep -q listening "$tmp/serve.$i" && break; sleep 0.1; done
  url=$(sed -n 's/^listening on //p' "$tmp/serve.$i" | head -1)
  [[ -n "$url" ]] || { echo "$fw did not start: $(cat "$tmp/serve.$i")" >&2; exit 1; }
  urls+=("$url")
done
t0=$(date +%s.%N)
for _ in $(seq "$rounds"); do
  for url in "${urls[@]}"; do
    taskset -c 1 "$FRAMEBENCH" load --target "$url" --scenario "${SCENARIO:-hello}" -c "${CONNS:-16}" \
      -d "${DUR:-80ms}" --warmup "${WARMUP:-20ms}" --threads 1 --quiet --json "$tmp/cell.json" >/dev/null
    rps=$(grep -o '"rps": [0-9.e+]*' "$tmp/cell.json" | awk '{ printf "%.1f", $2 / 1000 }')
    echo "$(awk -v s="$t0" -v e="$(date +%s.%N)" 'BEGIN { printf "%.2f", e - s }') $url $rps"
  done
done
