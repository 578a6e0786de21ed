#!/usr/bin/env bash
# Past one machine, on one machine: three network namespaces joined by veth pairs stand for a
# server host and two client hosts. The server host runs `framebench serve --allow-remote
# --stats`; each client host runs `framebench load --shard I/2 --start-at T --hdr-log` against
# the server's address on its own link; `framebench merge` combines their results. Checks:
#
# - the merged request count, plus the requests the clients sent outside their recorded
#   windows (the oracle check before each load; a `--requests` run has no warm-up and waits for
#   every answer), equals the server's own count (`serve --stats`), exactly;
# - the merged req/s equals the two processes' sum over the common window (their requests in it,
#   read from their interval logs by Python, over its length) within 1 %;
# - an independent reader, Python's `hdrh` (PyPI `hdrhistogram`, in a virtual environment),
#   decodes both interval logs and gets the merged count and the merged p99 exactly.
#
# Traffic stays inside the namespaces (10.77.1.0/24 and 10.77.2.0/24, links that exist only
# between them); every wait is bounded; the namespaces and the server are removed on every exit.
# Exit 77 (skip) with one line where namespaces cannot be made (not root, no `ip`).
#
#   scripts/hosts-netns.sh                  # needs target/release/framebench (cargo build --release)
#   FRAMEBENCH=path/to/framebench scripts/hosts-netns.sh
#   HDRH_PYTHON=/path/to/python scripts/hosts-netns.sh   # a Python that has hdrh already
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${FRAMEBENCH:-${CARGO_TARGET_DIR:-target}/release/framebench}
skip() {
  echo "skipping the namespace test: $*"
  exit 77
}
[[ $(id -u) == 0 ]] || skip "it needs root to create network namespaces (sudo, or CI)"
command -v ip >/dev/null || skip "no \`ip\` command (apt-get install -y iproute2)"
[[ -x $bin ]] || { echo "error: no framebench binary at $bin (cargo build --release)" >&2; exit 1; }

work=$(mktemp -d)
ns=fb$$
server_ns=${ns}s
clients=("${ns}a" "${ns}b")
server_pid=
cleanup() {
  [[ -n $server_pid ]] && kill -KILL "$server_pid" 2>/dev/null || true
  for n in "$server_ns" "${clients[@]}"; do ip netns del "$n" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT
ip netns add "$server_ns" 2>/dev/null || skip "\`ip netns add\` is not permitted here"
for k in 1 2; do
  client=${clients[$((k - 1))]}
  ip netns add "$client"
  ip link add "${ns}c$k" type veth peer name "${ns}s$k"
  ip link set "${ns}c$k" netns "$client"
  ip link set "${ns}s$k" netns "$server_ns"
  ip -n "$client" addr add "10.77.$k.2/24" dev "${ns}c$k"
  ip -n "$server_ns" addr add "10.77.$k.1/24" dev "${ns}s$k"
  ip -n "$client" link set "${ns}c$k" up
  ip -n "$client" link set lo up
  ip -n "$server_ns" link set "${ns}s$k" up
done
ip -n "$server_ns" link set lo up

# The server: hyper counts its responses (`serve --stats`). Bounded start: 20 s for its line.
port=18080
ip netns exec "$server_ns" "$bin" serve hyper --addr "0.0.0.0:$port" --allow-remote \
  --stats "$work/server.json" >"$work/serve.out" 2>"$work/serve.err" &
server_pid=$!
for _ in $(seq 200); do
  grep -q "listening on" "$work/serve.out" 2>/dev/null && break
  kill -0 "$server_pid" 2>/dev/null || { cat "$work/serve.err" >&2; exit 1; }
  sleep 0.1
done
grep -q "listening on" "$work/serve.out" || { echo "error: the server did not start" >&2; exit 1; }

# Two clients, each half of 16 connections and of 60,000 requests, the same window.
start_at=$(( $(date +%s) + 3 ))
pids=()
for k in 1 2; do
  ip netns exec "${clients[$((k - 1))]}" timeout 60 "$bin" load \
    --target "http://10.77.$k.1:$port" --allow-remote --shard "$k/2" -c 16 --requests 60000 \
    --start-at "$start_at" --hdr-log "$work/client$k.hdr" --hdr-interval 100ms \
    --json "$work/client$k.json" --quiet >"$work/client$k.out" 2>&1 &
  pids+=($!)
done
for k in 1 2; do
  wait "${pids[$((k - 1))]}" || { cat "$work/client$k.out" >&2; exit 1; }
done
kill -TERM "$server_pid"
for _ in $(seq 100); do kill -0 "$server_pid" 2>/dev/null || break; sleep 0.1; done
wait "$server_pid" || { cat "$work/serve.err" >&2; exit 1; }
server_pid=

"$bin" merge "$work/client1.json" "$work/client2.json" --json "$work/merged.json" \
  --server-stats "$work/server.json"

# The independent reader.
python=${HDRH_PYTHON:-}
if [[ -z $python ]]; then
  python3 -m venv "$work/venv"
  "$work/venv/bin/pip" install --quiet --disable-pip-version-check hdrhistogram
  python=$work/venv/bin/python
fi
"$python" - "$work" <<'EOF'
import json, sys
from hdrh.histogram import HdrHistogram
from hdrh.log import HistogramLogReader

work = sys.argv[1]
detail = lambda name: json.load(open(f"{work}/{name}.json"))["detail"]
merged = detail("merged")["cells"][0]
parts = [detail(f"client{k}")["cells"][0] for k in (1, 2)]
server = json.load(open(f"{work}/server.json"))

served = merged["requests"] + merged["unrecorded"] + merged["prechecked"]
print(f"server's own count {server['requests']}; merged {merged['requests']} measured + "
      f"{merged['unrecorded']} warm-up + {merged['prechecked']} oracle checks = {served}")
assert server["requests"] == served, "the merged count is not the server's"

# The sum over the common window, read from the logs themselves: each process's requests in the
# window both were measuring (its intervals, in proportion to their overlap with it), over the
# window's length. Each process's own rate is over its own window, which differs from the common
# one by the start skew and the shard that finished first: printed, not compared.
start = max(p["recorded_from_unix"] for p in parts)
end = min(p["recorded_from_unix"] + p["seconds"] for p in parts)
within = 0.0
for k in (1, 2):
    reader = HistogramLogReader(f"{work}/client{k}.hdr", HdrHistogram(1, 3_600_000_000_000, 3))
    while (h := reader.get_next_interval_histogram()) is not None:
        s, e = h.get_start_time_stamp() / 1000.0, h.get_end_time_stamp() / 1000.0
        overlap = max(0.0, min(e, end) - max(s, start))
        within += h.get_total_count() * min(1.0, overlap / max(e - s, 1e-9))
    reader.close()
window_sum = within / (end - start)
own = sum(p["rps"] for p in parts)
print(f"merged {merged['rps']:.0f} req/s over the common window ({end - start:.3f} s); the "
      f"processes' sum over it {window_sum:.0f} (each over its own window: {own:.0f})")
assert abs(merged["rps"] - window_sum) <= 0.01 * window_sum, \
    "merged req/s is not the sum over the common window within 1 %"

histogram = HdrHistogram(1, 3_600_000_000_000, 3)
for k in (1, 2):
    reader = HistogramLogReader(f"{work}/client{k}.hdr", HdrHistogram(1, 3_600_000_000_000, 3))
    while reader.add_next_interval_histogram(dest_histogram=histogram) is not None:
        pass
    reader.close()
p99 = histogram.get_value_at_percentile(99) / 1000.0
print(f"hdrh: {histogram.get_total_count()} requests, p99 {p99} µs; "
      f"merge: {merged['requests']}, p99 {merged['latency']['p99_us']} µs")
assert histogram.get_total_count() == merged["requests"], "hdrh counts another total"
assert p99 == merged["latency"]["p99_us"], "hdrh computes another p99"
print("ok: two client namespaces, one server namespace, merged exactly")
EOF
