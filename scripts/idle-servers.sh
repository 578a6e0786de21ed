#!/usr/bin/env bash
# What idle servers cost the CPU they share (docs/methodology/loopback.md, "Repeatability of the quick
# compare"): starts every loopback framework's `framebench serve` on cpu 0, idle, and prints
# cpu 0's busy share over 10 s from /proc/stat, then the same with none running. Then, with
# redis-server installed, as many bare redis-servers on cpu 0 as there were servers, at redis's
# default `--hz 10` and at the harness's `--hz 1` (src/redis.rs), 10 s each.
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
# Wait until each one listens (or has exited): the first `serve` of a Go peer builds it first,
# and that build must not fall inside the reading. The Go build has its own 600 s bound.
started=0
i=0
for fw in $fws; do
  for _ in $(seq 6500); do
    grep -q '^listening on ' "$tmp/$fw" 2>/dev/null && { started=$((started + 1)); break; }
    kill -0 "${pids[$i]}" 2>/dev/null || { echo "$fw did not start: $(tail -1 "$tmp/$fw")"; break; }
    sleep 0.1
  done
  i=$((i + 1))
done
sleep 2
echo "servers: $(echo $fws | wc -w), listening: $started, redis-server processes: $(pgrep -c redis-server || true)"
echo "cpu 0 busy with them idle: $(busy) per mille"
for p in "${pids[@]}"; do kill -INT "$p" 2>/dev/null || true; done
wait
pids=()
echo "cpu 0 busy without them: $(busy) per mille"
if command -v redis-server >/dev/null; then
  n=$(echo $fws | wc -w)
  for hz in 10 1; do
    for k in $(seq "$n"); do
      # On a Unix socket in the scratch folder (port 0: no TCP port), so nothing is taken on
      # the machine.
      taskset -c 0 redis-server --port 0 --unixsocket "$tmp/redis-$k.sock" --save "" \
        --appendonly no --hz "$hz" >/dev/null 2>&1 &
      pids+=($!)
    done
    sleep 2
    echo "redis-server processes: $(pgrep -c redis-server || true)"
    echo "cpu 0 busy with $n idle redis-servers at --hz $hz: $(busy) per mille"
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
    wait
    pids=()
  done
fi
