#!/usr/bin/env bash
# Runs wrk and `framebench load` against the same server (raw, then one real framework), with
# the same connections, client threads and pinning, and prints requests per second, client CPU
# per request, and the ratio driver/wrk. Output is Markdown, with the environment, for
# docs/driver.md.
#
#   scripts/vs-wrk.sh                     # release build, 10 s per run, c = 10 and 100
#   DURATION=2s CONNS="10" scripts/vs-wrk.sh
#   FRAMEBENCH=target/debug/framebench scripts/vs-wrk.sh   # an existing binary (no build)
#
# Variables: FRAMEBENCH, DURATION (10s), CONNS ("10 100"), TARGETS ("raw axum"), THREADS (server
# workers, 2), CLIENT_THREADS (1), SERVER_CPUS (0), CLIENT_CPUS (1), ROUNDS (2: each tool runs
# this many times, alternating, and its best run counts).
set -euo pipefail
cd "$(dirname "$0")/.."

# wrk is optional (FRAMEBENCH_WRK overrides where it is looked for, as in src/tools.rs): without
# it the comparison is skipped with one line and exit 0, unless FRAMEBENCH_REQUIRE names it.
wrk=$(command -v "${FRAMEBENCH_WRK:-wrk}" || true)
if [ -z "$wrk" ] || [ ! -x "$wrk" ]; then
  msg="skipping the wrk comparison: wrk not found${FRAMEBENCH_WRK:+ at $FRAMEBENCH_WRK}: install it with \`apt-get install wrk\`"
  case ",$(echo "${FRAMEBENCH_REQUIRE:-}" | tr -d ' ' | tr 'A-Z' 'a-z')," in
    *,wrk,* | *,all,*) echo "error: FRAMEBENCH_REQUIRE requires it: $msg" >&2; exit 1 ;;
  esac
  echo "$msg"
  exit 0
fi
if ! command -v taskset >/dev/null; then
  echo "taskset is not installed: skipping (install it with: apt-get install -y util-linux)"
  exit 0
fi

DURATION=${DURATION:-10s}
CONNS=${CONNS:-10 100}
TARGETS=${TARGETS:-raw axum}
THREADS=${THREADS:-2}
CLIENT_THREADS=${CLIENT_THREADS:-1}
SERVER_CPUS=${SERVER_CPUS:-0}
CLIENT_CPUS=${CLIENT_CPUS:-1}
ROUNDS=${ROUNDS:-2}
if [[ -z "${FRAMEBENCH:-}" ]]; then
  cargo build --release --quiet
  FRAMEBENCH=${CARGO_TARGET_DIR:-target}/release/framebench
fi

tmp=$(mktemp -d)
server_pid=
cleanup() {
  if [[ -n "$server_pid" ]]; then kill "$server_pid" 2>/dev/null || true; wait "$server_pid" 2>/dev/null || true; fi
  rm -rf "$tmp"
}
trap cleanup EXIT

# CPU seconds (user+sys) of a command, from bash's `time`.
cpu_of() {
  local TIMEFORMAT='%3U %3S'
  { time "$@" >"$tmp/out" 2>&1; } 2>"$tmp/time"
  awk '{ print $1 + $2 }' "$tmp/time"
}

echo "## driver vs wrk"
echo
echo "- command: \`DURATION=$DURATION CONNS=\"$CONNS\" TARGETS=\"$TARGETS\" THREADS=$THREADS CLIENT_THREADS=$CLIENT_THREADS SERVER_CPUS=$SERVER_CPUS CLIENT_CPUS=$CLIENT_CPUS ROUNDS=$ROUNDS scripts/vs-wrk.sh\`"
echo "- environment: $(rustc -V) | $("$FRAMEBENCH" --version) | $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs) | $(nproc) cores | Linux $(uname -r)"
echo "- wrk: $("$wrk" -v 2>&1 | head -1)"
echo "- server pinned to cpu $SERVER_CPUS with --threads $THREADS; each client pinned to cpu $CLIENT_CPUS with $CLIENT_THREADS thread(s); best of $ROUNDS alternating runs per tool; $DURATION each"
echo
echo "| server | conns | wrk req/s | driver req/s | driver / wrk | wrk CPU µs/req | driver CPU µs/req |"
echo "|---|---:|---:|---:|---:|---:|---:|"

for target in $TARGETS; do
  taskset -c "$SERVER_CPUS" "$FRAMEBENCH" serve "$target" --threads "$THREADS" >"$tmp/serve" 2>&1 &
  server_pid=$!
  for _ in $(seq 300); do grep -q listening "$tmp/serve" 2>/dev/null && break; sleep 0.1; done
  url=$(sed -n 's/^listening on //p' "$tmp/serve" | head -1)
  [[ -n "$url" ]] || { echo "$target did not start: $(cat "$tmp/serve")" >&2; exit 1; }
  for c in $CONNS; do
    best_wrk=0; best_drv=0; wrk_cost=0; drv_cost=0
    for _ in $(seq "$ROUNDS"); do
      cpu=$(cpu_of taskset -c "$CLIENT_CPUS" "$wrk" -t "$CLIENT_THREADS" -c "$c" -d "$DURATION" "$url/")
      rps=$(awk '/^Requests\/sec:/ { print $2 }' "$tmp/out")
      n=$(awk '/requests in/ { print $1 }' "$tmp/out")
      if awk -v a="$rps" -v b="$best_wrk" 'BEGIN { exit !(a > b) }'; then
        best_wrk=$rps; wrk_cost=$(awk -v s="$cpu" -v n="$n" 'BEGIN { printf "%.2f", 1e6 * s / n }')
      fi
      cpu=$(cpu_of "$FRAMEBENCH" load --target "$url" -c "$c" -d "$DURATION" --warmup 0s --quiet \
        --client-cpus "$CLIENT_CPUS" --client-threads "$CLIENT_THREADS" --json "$tmp/drv.json")
      rps=$(grep -o '"rps": [0-9.e+]*' "$tmp/drv.json" | awk '{ print $2 }')
      n=$(grep -o '"requests": [0-9]*' "$tmp/drv.json" | awk '{ print $2 }')
      grep -q '"kind": "ok"' "$tmp/drv.json" || { echo "driver run failed: $(cat "$tmp/out")" >&2; exit 1; }
      if awk -v a="$rps" -v b="$best_drv" 'BEGIN { exit !(a > b) }'; then
        best_drv=$rps; drv_cost=$(awk -v s="$cpu" -v n="$n" 'BEGIN { printf "%.2f", 1e6 * s / n }')
      fi
    done
    ratio=$(awk -v a="$best_drv" -v b="$best_wrk" 'BEGIN { printf "%.3f", a / b }')
    printf '| %s | %s | %.0f | %.0f | %s | %s | %s |\n' "$target" "$c" "$best_wrk" "$best_drv" "$ratio" "$wrk_cost" "$drv_cost"
  done
  kill "$server_pid"; wait "$server_pid" 2>/dev/null || true; server_pid=
done
echo
echo "CPU µs/req is the client's user+system time over the whole command divided by the requests it"
echo "completed (the driver's includes its start-up and oracle check, so it is slightly pessimistic)."
