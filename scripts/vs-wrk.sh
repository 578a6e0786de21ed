#!/usr/bin/env bash
# Runs wrk and `framebench load` against the same server, with the same connections, client
# threads and pinning, and prints requests per second, client CPU per request, p99 latency and
# the ratio driver/wrk. Then, driver only (wrk has neither without a Lua script), one pipelined
# row and one rate-mode row per server, so those modes are measured in the same table. Output is
# Markdown, with the environment, for docs/driver.md.
#
#   scripts/vs-wrk.sh                     # release build, raw actix axum, c = 10 100 500
#   DURATION=2s CONNS="10" TARGETS=raw scripts/vs-wrk.sh
#   FRAMEBENCH=target/release/framebench scripts/vs-wrk.sh   # an existing binary (no build)
#
# Variables: FRAMEBENCH, DURATION (5s), CONNS ("10 100 500"), TARGETS ("raw actix axum"), THREADS
# (server workers, 1), CLIENT_THREADS (1), SERVER_CPUS (0), CLIENT_CPUS (1), ROUNDS (3: each tool
# runs this many times, alternating, and its best run counts), PIPELINE (16: depth of the
# pipelined row), RATE_SHARE (0.5: the rate row's rate, as a share of the driver's best
# closed-loop rate at the same connections), MODES_AT (connections of the pipelined and rate
# rows: 100 if CONNS has it, else the first of CONNS; "none" skips them).
set -euo pipefail
cd "$(dirname "$0")/.."

# wrk is optional (FRAMEBENCH_WRK overrides where it is looked for, as in src/tools.rs): without
# it the comparison is skipped with one line and exit 0, unless FRAMEBENCH_REQUIRE names it.
# shellcheck source=scripts/lib/optional-tool.sh
. scripts/lib/optional-tool.sh
optional_tool wrk FRAMEBENCH_WRK wrk
wrk=$tool
if ! command -v taskset >/dev/null; then
  echo "taskset is not installed: skipping (install it with: apt-get install -y util-linux)"
  exit 0
fi

DURATION=${DURATION:-5s}
# wrk reads "0.5s" as no time at all and reports 0 req/s: whole seconds only.
[[ $DURATION =~ ^[1-9][0-9]*s?$ ]] ||
  { echo "DURATION must be whole seconds (wrk takes no fractions): $DURATION" >&2; exit 2; }
CONNS=${CONNS:-10 100 500}
TARGETS=${TARGETS:-raw actix axum}
THREADS=${THREADS:-1}
CLIENT_THREADS=${CLIENT_THREADS:-1}
SERVER_CPUS=${SERVER_CPUS:-0}
CLIENT_CPUS=${CLIENT_CPUS:-1}
ROUNDS=${ROUNDS:-3}
PIPELINE=${PIPELINE:-16}
RATE_SHARE=${RATE_SHARE:-0.5}
if [[ -z "${MODES_AT:-}" ]]; then
  if [[ " $CONNS " == *" 100 "* ]]; then MODES_AT=100; else MODES_AT=${CONNS%% *}; fi
fi
# shellcheck source=scripts/lib/pinned-server.sh
. scripts/lib/pinned-server.sh

# The server's sleeps: the sum over its threads (server_procs, scripts/lib/pinned-server.sh) of
# voluntary_ctxt_switches (each a sleep in epoll_wait, or on a lock, that something had to wake).
server_sleeps() {
  for p in $(server_procs); do cat /proc/"$p"/task/*/status 2>/dev/null; done |
    awk '$1 == "voluntary_ctxt_switches:" { s += $2 } END { printf "%.0f", s }'
}

# CPU seconds (user+sys) of a command, from bash's `time`. It runs in a subshell (`$(...)`), so
# the server's CPU seconds and sleeps during the command, and its CPU's share of the command's
# wall time (%), go to a file that `server_use` reads into srv_s, srv_sleeps and srv_busy: each
# row then shows whether the server was saturated under each tool and what each request cost it.
cpu_of() {
  local TIMEFORMAT='%3U %3S %3R' before after sleeps
  before=$(server_ns)
  sleeps=$(server_sleeps)
  { time "$@" >"$tmp/out" 2>&1; } 2>"$tmp/time"
  after=$(server_ns)
  sleeps=$(($(server_sleeps) - sleeps))
  awk -v a="$before" -v b="$after" -v z="$sleeps" 'NF == 3 { w = $3 }
    END { s = (b - a) / 1e9; printf "%.6f %d %.0f\n", s, z, (w > 0 ? 100 * s / w : 0) }' \
    "$tmp/time" >"$tmp/srv"
  awk 'NF == 3 { v = $1 + $2 } END { print v }' "$tmp/time"
}
server_use() { read -r srv_s srv_sleeps srv_busy <"$tmp/srv"; }

# The server columns: busy % / CPU µs per request / sleeps per 1000 requests.
server_cell() {
  awk -v b="$srv_busy" -v s="$srv_s" -v z="$srv_sleeps" -v n="$n" \
    'BEGIN { printf "%s %% / %.2f / %.1f", b, 1e6 * s / n, 1e3 * z / n }'
}

# Client CPU µs per completed request.
per_req() { awk -v s="$1" -v n="$2" 'BEGIN { printf "%.2f", 1e6 * s / n }'; }

# One wrk run: sets rps, n (requests), p99 (µs, from --latency), srv_s and srv_busy.
run_wrk() {
  cpu=$(cpu_of taskset -c "$CLIENT_CPUS" "$wrk" -t "$CLIENT_THREADS" -c "$1" -d "$DURATION" --latency "$url/")
  server_use
  rps=$(awk '/^Requests\/sec:/ { print $2 }' "$tmp/out")
  n=$(awk '/requests in/ { print $1 }' "$tmp/out")
  p99=$(awk '$1 == "99%" { v = $2; u = v; sub(/[a-z]+$/, "", v); sub(/^[0-9.]+/, "", u);
    printf "%.0f", v * (u == "s" ? 1e6 : u == "ms" ? 1e3 : 1) }' "$tmp/out")
}

# One driver run with extra flags: sets rps, n, p99 (µs) and work (the CPU seconds less the
# client's idle polling: time in empty non-blocking polls, which it spends instead of sleeping,
# on its own core, so that the server never pays for waking it).
run_driver() {
  local c=$1
  shift
  cpu=$(cpu_of "$FRAMEBENCH" load --target "$url" -c "$c" -d "$DURATION" --warmup 0s --quiet \
    --client-cpus "$CLIENT_CPUS" --client-threads "$CLIENT_THREADS" --json "$tmp/drv.json" "$@")
  server_use
  grep -q '"kind": "ok"' "$tmp/drv.json" || { echo "driver run failed: $(cat "$tmp/out")" >&2; exit 1; }
  rps=$(grep -o '"rps": [0-9.e+]*' "$tmp/drv.json" | awk '{ print $2 }')
  n=$(grep -o '"requests": [0-9][0-9]*' "$tmp/drv.json" | awk '{ print $2 }')
  p99=$(grep -o '"p99_us": [0-9.e+]*' "$tmp/drv.json" | awk '{ printf "%.0f", $2 }')
  idle=$(grep -o '"client_idle_polling_pct": [0-9.e+-]*' "$tmp/drv.json" | awk '{ print $2 }' || true)
  work=$(awk -v c="$cpu" -v p="${idle:-0}" -v n="$n" -v r="$rps" 'BEGIN { w = c - p / 100 * n / r; printf "%.3f", (w > 0 ? w : 0) }')
}

better() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a > b) }'; }

cmdline="DURATION=$DURATION CONNS=\"$CONNS\" TARGETS=\"$TARGETS\" THREADS=$THREADS CLIENT_THREADS=$CLIENT_THREADS SERVER_CPUS=$SERVER_CPUS CLIENT_CPUS=$CLIENT_CPUS ROUNDS=$ROUNDS PIPELINE=$PIPELINE RATE_SHARE=$RATE_SHARE MODES_AT=\"$MODES_AT\" scripts/vs-wrk.sh"
# The stamp every generated file starts with (docs/generated/README.md). FRAMEBENCH_COMMIT names
# the commit of a binary run outside its checkout (scripts/many-cores.sh on a lent machine).
commit=${FRAMEBENCH_COMMIT:-$(git rev-parse HEAD 2>/dev/null || echo unknown)}
echo "<!-- generated by \`$cmdline\` at ${commit:0:7}; do not edit -->"
echo "Measured at: $commit"
echo
echo "## driver vs wrk"
echo
echo "- command: \`$cmdline\`"
echo "- environment: $(rustc -V 2>/dev/null || echo "rustc ?") | $("$FRAMEBENCH" --version) | $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs) | $(nproc) cores | Linux $(uname -r)"
echo "- wrk: $("$wrk" -v 2>&1 | head -1)"
echo "- server pinned to cpu $SERVER_CPUS with --threads $THREADS; each client pinned to cpu $CLIENT_CPUS with $CLIENT_THREADS thread(s); best of $ROUNDS alternating runs per tool; $DURATION each"
echo
echo "| server | mode | conns | wrk req/s | driver req/s | driver / wrk | wrk CPU µs/req | driver CPU µs/req | driver working µs/req | server busy / µs/req / sleeps per 1k req, under wrk | under driver | wrk p99 µs | driver p99 µs |"
echo "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"

for target in $TARGETS; do
  start_server "$target" "$SERVER_CPUS" "$THREADS"
  for c in $CONNS; do
    best_wrk=0; best_drv=0; wrk_cost=0; drv_cost=0; drv_work=0; wrk_p99=0; drv_p99=0
    wrk_srv=–; drv_srv=–
    for _ in $(seq "$ROUNDS"); do
      run_wrk "$c"
      if better "$rps" "$best_wrk"; then
        best_wrk=$rps; wrk_cost=$(per_req "$cpu" "$n"); wrk_p99=$p99
        wrk_srv=$(server_cell)
      fi
      run_driver "$c"
      if better "$rps" "$best_drv"; then
        best_drv=$rps; drv_cost=$(per_req "$cpu" "$n"); drv_work=$(per_req "$work" "$n"); drv_p99=$p99
        drv_srv=$(server_cell)
      fi
    done
    ratio=$(awk -v a="$best_drv" -v b="$best_wrk" 'BEGIN { printf "%.3f", a / b }')
    printf '| %s | closed | %s | %.0f | %.0f | %s | %s | %s | %s | %s | %s | %s | %s |\n' "$target" "$c" \
      "$best_wrk" "$best_drv" "$ratio" "$wrk_cost" "$drv_cost" "$drv_work" "$wrk_srv" "$drv_srv" \
      "$wrk_p99" "$drv_p99"
    if [[ " $MODES_AT " == *" $c "* ]]; then
      # Driver only, one run each: pipelined at PIPELINE deep, then a constant rate (open loop,
      # latency from the intended send time) at RATE_SHARE of the best closed-loop rate above.
      run_driver "$c" --pipeline "$PIPELINE"
      printf '| %s | pipeline %s | %s | – | %.0f | – | – | %s | %s | – | %s | – | %s |\n' "$target" "$PIPELINE" \
        "$c" "$rps" "$(per_req "$cpu" "$n")" "$(per_req "$work" "$n")" "$(server_cell)" "$p99"
      rate=$(awk -v r="$best_drv" -v s="$RATE_SHARE" 'BEGIN { printf "%.0f", r * s }')
      run_driver "$c" --rate "$rate"
      printf '| %s | rate %s | %s | – | %.0f | – | – | %s | %s | – | %s | – | %s |\n' "$target" "$rate" "$c" \
        "$rps" "$(per_req "$cpu" "$n")" "$(per_req "$work" "$n")" "$(server_cell)" "$p99"
    fi
  done
  stop_server
done
echo
echo "CPU µs/req is the client's user+system time over the whole command divided by the requests it"
echo "completed (the driver's includes its start-up and oracle check, so it is slightly pessimistic)."
echo "Driver working µs/req leaves out its idle polling: empty non-blocking polls it makes instead of"
echo "sleeping (50 µs before each sleep), on its own core, so that the server never pays for waking it."
echo "wrk sleeps in epoll_wait instead; its column counts what each sleep and wake-up costs it and"
echo "has no polling to leave out."
echo "Server busy / µs/req / sleeps: the server's CPU time (its threads' schedstat) during the run that"
echo "counted, over that command's wall time (start-up included, so slightly low) and per request the"
echo "tool completed, and its threads' voluntary context switches per 1000 requests. Near 100 % busy"
echo "and with few sleeps under both tools, req/s is 1 / the server's cost per request, which a client"
echo "can lower only by sparing the server work (wake-ups, idle gaps), not by being cheaper itself."
echo "p99 is each tool's own: wrk's from --latency, the driver's from its histogram (in rate mode"
echo "measured from each request's intended send time, so a stall is charged in full)."
