#!/usr/bin/env bash
# What idle servers cost the CPU they share (docs/methodology.md, "Repeatability of the quick
# compare"): starts every loopback framework's `framebench serve` on cpu 0, idle, and prints
# cpu 0's busy share over 10 s from /proc/stat, then the same with none running.
#
# Variables: FRAMEBENCH.
set -euo pipefail
cd "$(dirname "$0")/.."
if [[ -z "${FRAMEBENCH:-}" ]]; then
  cargo build --release --quiet
  FRAMEBENCH=${CARGO_TARGET_DIR:-target}/release/framebench
fi
busy() { # cpu 0's busy share over 10 s, per mille
  local u n s i b0 t0
  read -r _ u n s i _ < <(grep '^cpu0 ' /proc/stat); b0=$((u + n + s)); t0=$((b0 + i))
  sleep 10
  read -r _ u n s i _ < <(grep '^cpu0 ' /proc/stat)
  echo $(((u + n + s - b0) * 1000 / (u + n + s + i - t0)))
}
tmp=$(mktemp -d)
pids=()
trap 'for p in "${pids[@]}"; do kill -INT "$p" 2>/dev/null || true; done; wait; rm -rf "$tmp"' EXIT
fws=$("$FRAMEBENCH" list | awk '/loopback/ { print $1 }')
for fw in $fws; do
  taskset -c 0 "$FRAMEBENCH" serve "$fw" --threads 1 >"$tmp/$fw" 2>&1 &
  pids+=($!)
done
sleep 5
echo "servers: $(echo $fws | wc -w), redis-server processes: $(pgrep -c redis-server || true)"
echo "cpu 0 busy with them idle: $(busy) per mille"
for p in "${pids[@]}"; do kill -INT "$p" 2>/dev/null || true; done
wait
pids=()
echo "cpu 0 busy without them: $(busy) per mille"
