#!/usr/bin/env bash
# The driver over TLS against the field's own TLS clients, each on the same server process with
# the same pinning, alternating runs (best of ROUNDS per tool):
#   - wrk over https: HTTP/1.1 keep-alive, against `load --tls`, at each of CONNS;
#   - h2load over TLS, ALPN h2: against `load --tls --protocol h2`, CONNS × STREAMS;
#   - `openssl s_time -new`: a new connection, a full handshake and `GET /` each, one at a time,
#     against `load --tls -c 1 --requests-per-connection 1 --tls-resumption off`;
#   - `openssl s_time -reuse -tls1_2`: the same with TLS 1.2 session-ID resumption, beside the
#     driver's `--tls-resumption on` (TLS 1.3 tickets: s_time cannot resume under TLS 1.3).
# The server and the driver share one certificate, made here by openssl with SAN localhost and
# 127.0.0.1 and handed to both through FRAMEBENCH_TLS_CERT_PEM and FRAMEBENCH_TLS_KEY_PEM (the
# driver trusts exactly it). Each row says how busy the server's core was under each tool: the
# driver must be at least 0.97 × the witness where the server set the rate (busy ≥ 90 % under
# both) with the same CPU per answer under both (`judge`, scripts/lib/judge.sh), and a
# row that misses either says so. Output is Markdown for
# docs/driver.md; the exit status is 0 whatever the ratios (a measurement, not a gate).
#
#   scripts/vs-tls.sh
#   DURATION=2 ROUNDS=1 WRK_TARGETS=axum H2_TARGETS=hyper STIME_TARGETS=hyper scripts/vs-tls.sh
#   FRAMEBENCH=target/release/framebench scripts/vs-tls.sh     # an existing binary (no build)
#
# Variables: FRAMEBENCH, DURATION (3: whole seconds), H2_DURATION (DURATION + 2), CONNS ("10 100"), STREAMS (10),
# WRK_TARGETS ("raw actix axum"), H2_TARGETS ("hyper axum actix"), STIME_TARGETS ("raw hyper
# actix"), THREADS (server workers, 1), SERVER_CPUS (0), CLIENT_CPUS (1), ROUNDS (3), H2_ROUNDS (ROUNDS + 2). A tool that
# is missing skips its section with one line (FRAMEBENCH_REQUIRE names those that must be there).
set -euo pipefail
cd "$(dirname "$0")/.."

# shellcheck source=scripts/lib/optional-tool.sh
. scripts/lib/optional-tool.sh
if ! command -v openssl >/dev/null; then
  echo "openssl is not installed: skipping (install it with: apt-get install -y openssl)"
  exit 0
fi
if ! command -v taskset >/dev/null; then
  echo "taskset is not installed: skipping (install it with: apt-get install -y util-linux)"
  exit 0
fi

# whole_seconds NAME: the variable NAME without a trailing `s`, or exit 2 unless whole seconds
# (wrk, h2load and s_time take no fractions).
whole_seconds() {
  local v=${!1%s}
  [[ $v =~ ^[1-9][0-9]*$ ]] || { echo "$1 must be whole seconds (wrk, h2load and s_time take no fractions): ${!1}" >&2; exit 2; }
  printf -v "$1" '%s' "$v"
}
DURATION=${DURATION:-3}
whole_seconds DURATION
CONNS=${CONNS:-10 100}
STREAMS=${STREAMS:-10}
WRK_TARGETS=${WRK_TARGETS:-raw actix axum}
H2_TARGETS=${H2_TARGETS:-hyper axum actix}
STIME_TARGETS=${STIME_TARGETS:-raw hyper actix}
THREADS=${THREADS:-1}
SERVER_CPUS=${SERVER_CPUS:-0}
CLIENT_CPUS=${CLIENT_CPUS:-1}
ROUNDS=${ROUNDS:-3}
# HTTP/2 rows vary more between runs (actix at c100 × m10: 0.83 to 1.04 × h2load over four
# best-of-3 runs), so they take more rounds. Their runs are longer too: at c100 × m10 a
# server's CPU per answer moves between 3 s runs under h2load alone, and less over 5 s runs;
# `H2_TARGETS=hyper CONNS=100 H2_ROUNDS=8 H2_DURATION=3 scripts/vs-tls.sh` shows the spread.
H2_ROUNDS=${H2_ROUNDS:-$((ROUNDS + 2))}
H2_DURATION=${H2_DURATION:-$((DURATION + 2))}
whole_seconds H2_DURATION
# The current section's run length: DURATION, or H2_DURATION for h2load's.
dur=$DURATION
# shellcheck source=scripts/lib/pinned-server.sh
. scripts/lib/pinned-server.sh

# The run's certificate, for the server and the driver alike.
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 1 \
  -subj /CN=localhost -addext "subjectAltName=DNS:localhost,IP:127.0.0.1" \
  -addext "basicConstraints=critical,CA:FALSE" \
  -keyout "$tmp/key.pem" -out "$tmp/cert.pem" >/dev/null 2>&1
FRAMEBENCH_TLS_CERT_PEM=$(cat "$tmp/cert.pem")
FRAMEBENCH_TLS_KEY_PEM=$(cat "$tmp/key.pem")
export FRAMEBENCH_TLS_CERT_PEM FRAMEBENCH_TLS_KEY_PEM

# One driver run with extra flags: sets rps and busy, or exits if the cell did not end ok.
run_driver() {
  measure "$FRAMEBENCH" load --target "$url" --tls -d "${dur}s" --warmup 0s --quiet \
    --client-cpus "$CLIENT_CPUS" --client-threads 1 --json "$tmp/drv.json" "$@"
  grep -q '"kind": "ok"' "$tmp/drv.json" || { echo "driver run failed: $(cat "$tmp/out")" >&2; exit 1; }
  rps=$(grep -o '"rps": [0-9.e+]*' "$tmp/drv.json" | head -1 | awk '{ print $2 }')
  # The share of its handshakes that resumed, where it counted them (a connection per request).
  resumed=$(tr -d ' \n' <"$tmp/drv.json" | grep -o '"done":[0-9]*,"resumed":[0-9]*' | head -1 |
    awk -F'[:,]' '{ printf "%.0f %%", ($2 > 0 ? 100 * $4 / $2 : 0) }')
}

run_wrk() {
  measure taskset -c "$CLIENT_CPUS" "$wrk" -t 1 -c "$1" -d "${DURATION}s" "$url/"
  rps=$(awk '/^Requests\/sec:/ { print $2 }' "$tmp/out")
  ! grep -q 'Non-2xx\|Socket errors' "$tmp/out" || { echo "wrk: $(grep -E 'Non-2xx|Socket errors' "$tmp/out")" >&2; exit 1; }
}

run_h2load() {
  measure taskset -c "$CLIENT_CPUS" "$h2load" -c "$1" -m "$2" -t 1 -D "$dur" "$url/"
  read -r done ok < <(awk '/^requests:/ { print $6, $8 }' "$tmp/out")
  [[ "$done" == "$ok" && "$done" -gt 0 ]] || { echo "h2load: $done done, $ok succeeded" >&2; exit 1; }
  grep -q 'Application protocol: h2' "$tmp/out" || { echo "h2load did not negotiate h2: $(grep -i protocol "$tmp/out")" >&2; exit 1; }
  rps=$(awk '/^finished in/ { gsub(",", ""); print $4 }' "$tmp/out")
}

# One s_time run (-new, or -reuse with TLS 1.2): sets rps (connections per wall second, which
# s_time reports only in whole seconds) and resumed (the share of them s_time marked `r`, reused,
# rather than `*`, new).
run_stime() {
  local mode=$1
  shift
  measure timeout $((DURATION + 30)) taskset -c "$CLIENT_CPUS" openssl s_time -connect "${url#https://}" \
    -www / -time "$DURATION" "$mode" "$@"
  local n
  n=$(awk '/connections in [0-9.]+s;/ { print $1; exit }' "$tmp/out")
  [[ -n "$n" && "$n" -gt 0 ]] || { echo "s_time: $(tail -3 "$tmp/out")" >&2; exit 1; }
  rps=$(awk -v n="$n" -v w="$wall" 'BEGIN { printf "%.1f", n / w }')
  resumed=$(grep -v connections "$tmp/out" | tr -cd 'r*' |
    awk '{ r = gsub(/r/, ""); s = gsub(/\*/, ""); printf "%.0f %%", (r + s > 0 ? 100 * r / (r + s) : 0) }')
}

better() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a > b) }'; }

# per_answer: the last run's server writes per answer (per connection in the s_time rows).
per_answer() { awk -v n="$writes" -v r="$rps" -v w="$wall" 'BEGIN { printf "%.2f", (r * w > 0 ? n / (r * w) : 0) }'; }

# best_of ROUNDS WITNESS_RUN DRIVER_FLAGS... over ROUNDS alternating runs: sets best_w, best_d,
# and each best run's server busy %, server writes per answer and resumed share.
best_of() {
  local rounds=$1 witness=$2
  shift 2
  best_w=0; best_d=0; busy_w=0; busy_d=0; wr_w=0; wr_d=0; res_w=–; res_d=–
  pair_reset
  local w
  for _ in $(seq "$rounds"); do
    resumed=–
    eval "$witness"
    w=$rps
    if better "$rps" "$best_w"; then best_w=$rps; busy_w=$busy; wr_w=$(per_answer); res_w=$resumed; fi
    run_driver "$@"
    if better "$rps" "$best_d"; then best_d=$rps; busy_d=$busy; wr_d=$(per_answer); res_d=${resumed:-–}; fi
    pair "$w" "$rps"
  done
}

# row SERVER LOAD [resumed]: a table row; with a third argument, the resumed shares too.
row() {
  local ratio resumed=–
  ratio=$(awk -v a="$best_d" -v b="$best_w" 'BEGIN { printf "%.3f", a / b }')
  [[ -z "${3:-}" ]] || resumed="$res_w / $res_d"
  local us_w us_d
  us_w=$(cost "$busy_w" "$best_w")
  us_d=$(cost "$busy_d" "$best_d")
  printf '| %s | %s | %.0f | %.0f | %s | %s %% | %s %% | %s / %s | %s / %s | %s | %s |\n' "$1" "$2" "$best_w" "$best_d" \
    "$ratio" "$busy_w" "$busy_d" "$us_w" "$us_d" "$wr_w" "$wr_d" "$resumed" "$(judge "$ratio" "$busy_w" "$busy_d" "$us_w" "$us_d" "$pair_lo" "$pair_hi")"
}

cmdline="DURATION=$DURATION H2_DURATION=$H2_DURATION CONNS=\"$CONNS\" STREAMS=$STREAMS WRK_TARGETS=\"$WRK_TARGETS\" H2_TARGETS=\"$H2_TARGETS\" STIME_TARGETS=\"$STIME_TARGETS\" THREADS=$THREADS SERVER_CPUS=$SERVER_CPUS CLIENT_CPUS=$CLIENT_CPUS ROUNDS=$ROUNDS H2_ROUNDS=$H2_ROUNDS scripts/vs-tls.sh"
commit=${FRAMEBENCH_COMMIT:-$(git rev-parse HEAD 2>/dev/null || echo unknown)}
echo "<!-- generated by \`$cmdline\` at ${commit:0:7} on $(date -u +%Y-%m-%dT%H:%MZ); do not edit -->"
echo "Measured at: $commit"
echo
echo "## driver vs wrk, h2load and openssl s_time, over TLS"
echo
echo "- command: \`$cmdline\`"
echo "- environment: $(rustc -V 2>/dev/null || echo 'rustc ?') | $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs) | $(nproc) cores | Linux $(uname -r) | $(openssl version)"
echo "- server pinned to cpu $SERVER_CPUS with \`serve --tls --threads $THREADS\` (\`--protocol h2\` for h2load); each client pinned to cpu $CLIENT_CPUS, one thread; best of $ROUNDS alternating runs per tool, ${DURATION} s each ($H2_ROUNDS of ${H2_DURATION} s for h2load); one ECDSA P-256 certificate made by openssl for the server and the driver"
echo "- server busy: the server's CPU time (schedstat, all its threads) over each run's wall time, under the witness and under the driver"
echo "- server writes per answer: its write calls (/proc/PID/io syscw) over the answers of the best run, under each tool"
echo
echo "| server | load | witness /s | driver /s | driver / witness | server busy, witness | server busy, driver | server µs per answer, witness / driver | server writes per answer, witness / driver | resumed, witness / driver | |"
echo "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---|"

if find_tool wrk FRAMEBENCH_WRK wrk >"$tmp/skip-wrk"; then
  wrk=$tool
  for target in $WRK_TARGETS; do
    start_server "$target" "$SERVER_CPUS" "$THREADS" --tls
    for c in $CONNS; do
      best_of "$ROUNDS" "run_wrk $c" -c "$c"
      row "$target" "wrk https, c$c (req/s)"
    done
    stop_server
  done
else
  skipped_wrk=1
fi
if find_tool h2load FRAMEBENCH_H2LOAD nghttp2-client >"$tmp/skip-h2load"; then
  h2load=$tool
  dur=$H2_DURATION
  for target in $H2_TARGETS; do
    start_server "$target" "$SERVER_CPUS" "$THREADS" --tls --protocol h2
    for c in $CONNS; do
      best_of "$H2_ROUNDS" "run_h2load $c $STREAMS" --protocol h2 -c "$c" -m "$STREAMS"
      row "$target" "h2load h2, c$c × m$STREAMS (req/s)"
    done
    stop_server
  done
  dur=$DURATION
else
  skipped_h2load=1
fi
for target in $STIME_TARGETS; do
  start_server "$target" "$SERVER_CPUS" "$THREADS" --tls
  best_of "$ROUNDS" "run_stime -new" -c 1 --requests-per-connection 1 --tls-resumption off
  row "$target" "s_time -new, full handshakes, c1 (conn/s)" resumed
  best_of "$ROUNDS" "run_stime -reuse -tls1_2" -c 1 --requests-per-connection 1 --tls-resumption on
  row "$target" "s_time -reuse -tls1_2 / driver TLS 1.3 resumed, c1 (conn/s)" resumed
  stop_server
done
echo
[[ -z "${skipped_wrk:-}" ]] || { cat "$tmp/skip-wrk"; echo; }
[[ -z "${skipped_h2load:-}" ]] || { cat "$tmp/skip-h2load"; echo; }
echo "Each tool loads the same server process, one after the other; the best run of each counts. wrk and"
echo "h2load count a request when its answer is read; s_time counts a connection when it has read the"
echo "answer to its \`GET /\` (HTTP/1.0) and the server closed, and the driver, with a connection per"
echo "request, when the answer is read. s_time -reuse resumes TLS 1.2 sessions by ID, which the driver"
echo "does not offer: its row sets the driver's TLS 1.3 resumptions beside them, not the same handshake."
echo "Resumed: the share of the best run's connections that resumed a session, as s_time marks them"
echo "(\`r\`) and as the driver counts them (rustls's handshake kind)."
echo "- server busy: the server's CPU time over the run's wall time; 90 % or more under both tools means"
echo "  the server set the rate."
echo "- server µs per answer: the server's CPU per response (per connection in the s_time rows) under"
echo "  each tool. Where the two differ by more than a quarter, the tools asked different work of the"
echo "  server, and the row is marked not comparable rather than judged against 0.97."
echo "- server writes per answer: fewer means the server answered in larger batches, which makes each"
echo "  answer cheaper; a gap here beside a gap in CPU per answer says the two tools shaped the load"
echo "  differently."
echo "- BELOW 0.97 only where the data separates the row from the bar: its best runs' ratio and the ratio"
echo "  of every paired round (the two tools' runs of one round, back to back) below it; where some round"
echo "  reached it, the row reads ≈ 0.97 with the paired rounds' range."
