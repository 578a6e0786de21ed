# Sourced by the scripts that load one `framebench serve` pinned to a CPU (vs-wrk.sh,
# vs-h2load.sh, server-profile.sh), from the repository's root. Sets FRAMEBENCH (a release build, built here
# when unset) and tmp (a directory removed on exit, with the server stopped), and defines
# start_server and stop_server, and measure, with cost, pair and judge (scripts/lib/judge.sh) for
# the scripts that say whether the server or the client set a rate.

if [[ -z "${FRAMEBENCH:-}" ]]; then
  cargo build --release --quiet
  FRAMEBENCH=${CARGO_TARGET_DIR:-target}/release/framebench
fi
tmp=$(mktemp -d)
server_pid=
cleanup() {
  stop_server
  rm -rf "$tmp"
}
trap cleanup EXIT

# start_server TARGET CPUS THREADS [FLAGS...]: serves TARGET pinned to CPUS, with any further
# `serve` flags (`--protocol h2c`); sets server_pid and url, or exits with the server's output if
# it did not start within 30 s.
start_server() {
  taskset -c "$2" "$FRAMEBENCH" serve "$1" --threads "$3" "${@:4}" >"$tmp/serve" 2>&1 &
  server_pid=$!
  for _ in $(seq 300); do grep -q listening "$tmp/serve" 2>/dev/null && break; sleep 0.1; done
  url=$(sed -n 's/^listening on //p' "$tmp/serve" | head -1)
  [[ -n "$url" ]] || { echo "$1 did not start: $(cat "$tmp/serve")" >&2; exit 1; }
}

stop_server() {
  if [[ -n "$server_pid" ]]; then
    kill "$server_pid" 2>/dev/null || true
    wait "$server_pid" 2>/dev/null || true
    server_pid=
  fi
}

# The server's processes and its CPU time in ns: `framebench serve` and its child processes
# (may-minihttp and the Go peers serve from a child), less any redis-server child, which idles
# in a hello load; the sum over their threads of the first field of schedstat (time on a CPU,
# from the scheduler's clock, so not rounded to ticks). A thread that exits during a run drops
# out of the sum (none does in these servers).
server_procs() {
  local kids grandkids p
  kids=$(pgrep -P "$server_pid" 2>/dev/null || true)
  grandkids=$(for p in $kids; do pgrep -P "$p" 2>/dev/null || true; done)
  for p in "$server_pid" $kids $grandkids; do
    [[ $(cat /proc/"$p"/comm 2>/dev/null) == redis-server ]] || echo "$p"
  done
}
server_ns() {
  for p in $(server_procs); do cat /proc/"$p"/task/*/schedstat 2>/dev/null; done |
    awk '{ s += $1 } END { printf "%.0f", s }'
}

# The server's write-family system calls so far (write, writev, sendmsg: /proc/PID/io's syscw),
# summed as server_ns sums its CPU time. How many answers a write carries says how a client's
# load shaped the server's batches.
server_writes() {
  for p in $(server_procs); do cat /proc/"$p"/io 2>/dev/null; done |
    awk '/^syscw:/ { s += $2 } END { printf "%.0f", s }'
}

# measure CMD...: runs CMD (output to $tmp/out) and sets wall (seconds), busy (the server's
# CPU time over the wall time, %) and writes (the server's write calls during it).
measure() {
  local before after t0 t1 w0
  before=$(server_ns)
  w0=$(server_writes)
  t0=$(date +%s.%N)
  "$@" >"$tmp/out" 2>&1 || { echo "$1 failed: $(tail -5 "$tmp/out")" >&2; exit 1; }
  t1=$(date +%s.%N)
  after=$(server_ns)
  writes=$(($(server_writes) - w0))
  wall=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.6f", b - a }')
  busy=$(awk -v a="$before" -v b="$after" -v w="$wall" 'BEGIN { printf "%.0f", 100 * (b - a) / 1e9 / w }')
}

# cost, pair and judge: scripts/lib/judge.sh.
# shellcheck source=scripts/lib/judge.sh
. "$(dirname "${BASH_SOURCE[0]}")/judge.sh"
