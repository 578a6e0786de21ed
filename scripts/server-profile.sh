#!/usr/bin/env bash
# Where the server's CPU goes under each client (docs/driver.md, "Against wrk"): starts one
# framework with `framebench serve --threads 1` pinned to SERVER_CPUS, loads it for DURATION with
# wrk and then with `framebench load` (same connections, one client thread pinned to CLIENT_CPUS),
# records the server's CPU with `perf record -C` during each, and prints per tool the share of
# the server CPU's samples under the kernel paths a client can change:
#
# - sock_def_readable: the client socket's wake-up callback (epoll's ep_poll_callback, and a
#   try_to_wake_up when the client sleeps in epoll_wait), run on the server's CPU by its send;
# - process_backlog: the client socket's whole TCP receive path, which on loopback the server's
#   send runs on the server's CPU (sock_def_readable is part of it);
# - __mod_timer: timer updates (the client socket's delayed ACK, the server socket's RTO);
# - do_idle: the server's CPU with nothing to do (the server was waiting for requests);
# - do_epoll_wait: the server's own epoll_wait calls, which a client that sends a turn's requests
#   together makes fewer (also counted per request, at the syscall tracepoint).
#
#   scripts/server-profile.sh                       # actix, 100 connections, 5 s per tool
#   TARGET=axum CONNS=500 scripts/server-profile.sh
#
# Variables: FRAMEBENCH, TARGET (actix), CONNS (100), DURATION (5s), SERVER_CPUS (0),
# CLIENT_CPUS (1). Needs wrk and perf (linux-perf); without either it says so and exits 0.
set -euo pipefail
cd "$(dirname "$0")/.."
# wrk is found as vs-wrk.sh finds it (FRAMEBENCH_WRK overrides, as in src/tools.rs).
wrk=$(command -v "${FRAMEBENCH_WRK:-wrk}" || true)
for tool in perf taskset; do command -v "$tool" >/dev/null || missing=$tool; done
[[ -n "$wrk" && -x "$wrk" ]] || missing=wrk${FRAMEBENCH_WRK:+ at $FRAMEBENCH_WRK}
if [[ -n "${missing:-}" ]]; then
  echo "skipping the server profile: $missing not found (apt-get install -y wrk linux-perf util-linux)"
  exit 0
fi
TARGET=${TARGET:-actix}
CONNS=${CONNS:-100}
DURATION=${DURATION:-5s}
SERVER_CPUS=${SERVER_CPUS:-0}
CLIENT_CPUS=${CLIENT_CPUS:-1}
[[ $DURATION =~ ^[1-9][0-9]*s$ ]] || { echo "error: DURATION must be whole seconds, e.g. 5s" >&2; exit 1; }
# shellcheck source=scripts/lib/pinned-server.sh
. scripts/lib/pinned-server.sh
perf_pid=
stat_pid=
# Stops the recorders too, if the script ends early (pinned-server.sh's cleanup stops the server).
trap 'kill $perf_pid $stat_pid 2>/dev/null || true; cleanup' EXIT
# perf may be installed but not allowed to record a CPU (perf_event_paranoid, no CAP_PERFMON).
if ! perf record -q -C "$SERVER_CPUS" -e cpu-clock -o "$tmp/probe.data" -- true >"$tmp/probe" 2>&1; then
  echo "skipping the server profile: perf cannot record cpu $SERVER_CPUS here: $(grep -m1 . "$tmp/probe" || true)"
  exit 0
fi
start_server "$TARGET" "$SERVER_CPUS" 1
secs=${DURATION%s}

echo "## Server CPU under each client: $TARGET, $CONNS connections, $DURATION each"
echo
echo "- environment: $(rustc -V) | $("$FRAMEBENCH" --version) | $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs) | $(nproc) cores | Linux $(uname -r)"
echo "- server pinned to cpu $SERVER_CPUS with --threads 1; client pinned to cpu $CLIENT_CPUS, 1 thread; perf record -C $SERVER_CPUS -e cpu-clock -g"
echo
echo "| client | req/s | sock_def_readable | process_backlog | __mod_timer | do_idle | do_epoll_wait | server epoll_wait per request |"
echo "|---|---:|---:|---:|---:|---:|---:|---:|"
for tool in wrk driver; do
  # The recording starts with the client and stops before it does, so it holds load only.
  perf record -q -C "$SERVER_CPUS" -e cpu-clock -g -o "$tmp/$tool.data" -- sleep "$(awk -v s="$secs" 'BEGIN { print s - 0.5 }')" \
    >/dev/null 2>&1 &
  perf_pid=$!
  # The server CPU's epoll_wait calls over the same window, counted at the syscall tracepoints
  # (epoll_pwait too: the Go runtime and aarch64 builds use it).
  perf stat -x, -C "$SERVER_CPUS" -e syscalls:sys_enter_epoll_wait,syscalls:sys_enter_epoll_pwait -o "$tmp/$tool.stat" -- \
    sleep "$(awk -v s="$secs" 'BEGIN { print s - 0.5 }')" >/dev/null 2>&1 &
  stat_pid=$!
  if [[ $tool == wrk ]]; then
    taskset -c "$CLIENT_CPUS" "$wrk" -t 1 -c "$CONNS" -d "$DURATION" "$url/" >"$tmp/out"
    rps=$(awk '/^Requests\/sec:/ { printf "%.0f", $2 }' "$tmp/out")
  else
    "$FRAMEBENCH" load --target "$url" -c "$CONNS" -d "$DURATION" --warmup 0s --quiet \
      --client-cpus "$CLIENT_CPUS" --client-threads 1 --json "$tmp/drv.json" >"$tmp/out" 2>&1
    rps=$(grep -o '"rps": [0-9.e+]*' "$tmp/drv.json" | awk '{ printf "%.0f", $2 }')
  fi
  wait "$perf_pid" || true
  wait "$stat_pid" || true
  perf_pid=
  stat_pid=
  # A recorder that failed leaves no file or an empty one: its cells read "–".
  waits=$(awk -F, '/sys_enter_epoll_p?wait/ && $1 ~ /^[0-9]+$/ { w += $1; n++ } END { if (n) print w }' \
    "$tmp/$tool.stat" 2>/dev/null || true)
  per_req=$(awk -v w="$waits" -v r="$rps" -v s="$secs" 'BEGIN { if (w ~ /^[0-9]+$/ && r > 0) printf "%.3f", w / (r * (s - 0.5)); else print "–" }')
  perf report -i "$tmp/$tool.data" --children --sort sym --stdio -g none >"$tmp/$tool.txt" 2>/dev/null || : >"$tmp/$tool.txt"
  share() {
    if [[ ! -s "$tmp/$tool.txt" ]]; then echo "–"; return; fi
    awk -v s="$1" '$NF == s && $1 ~ /%$/ { print $1; found = 1; exit } END { if (!found) print "0.00%" }' "$tmp/$tool.txt"
  }
  echo "| $tool | $rps | $(share sock_def_readable) | $(share process_backlog) | $(share __mod_timer) | $(share do_idle) | $(share do_epoll_wait) | $per_req |"
done
echo
echo "Shares are of all samples on the server's CPU, each counting everything called under it;"
echo "epoll_wait (and epoll_pwait) calls per request are over the recorded window, at the tool's"
echo "average rate. A cell reads – when perf recorded nothing for it."
