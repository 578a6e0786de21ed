#!/usr/bin/env bash
# The h2c results of docs/generated/h2c.md and h2c.svg: every server that speaks h2c, on hello,
# json and static, at 1, 10 and 100 streams per connection over h2c, each beside its own HTTP/1.1
# rate of the same run (`compare --protocol h2c,http1`), one server thread, server and client
# pinned to separate CPUs. The h2c servers are read from `framebench list --protocol h2c`.
#
#   scripts/h2c-results.sh                       # release build, 8 connections, 3 s cells, 3 rounds
#   DURATION=1s CONNS=4 scripts/h2c-results.sh   # shorter
#   FRAMEBENCH=target/release/framebench scripts/h2c-results.sh
#
# Each cell runs ROUNDS times, the servers interleaved (`--rounds`): one run on this VM fell in a
# slow spell that moved some servers' cells by a quarter, which a cell's own spread cannot show.
#
# Variables: FRAMEBENCH, DURATION (3s), WARMUP (1s), CONNS (8), STREAMS (1,10,100), THREADS (1),
# ROUNDS (3), OUT (docs/generated).
set -euo pipefail
cd "$(dirname "$0")/.."

if [[ -z "${FRAMEBENCH:-}" ]]; then
  cargo build --release --quiet
  FRAMEBENCH=${CARGO_TARGET_DIR:-target}/release/framebench
fi
DURATION=${DURATION:-3s}
WARMUP=${WARMUP:-1s}
CONNS=${CONNS:-8}
STREAMS=${STREAMS:-1,10,100}
THREADS=${THREADS:-1}
ROUNDS=${ROUNDS:-3}
OUT=${OUT:-docs/generated}

servers=$("$FRAMEBENCH" list --protocol h2c | awk -F'|' '$3 ~ /yes/ { gsub(/[ `]/, "", $2); print $2 }' | paste -sd, -)
[[ -n "$servers" ]] || { echo "no framework compiled in serves h2c" >&2; exit 1; }
echo "h2c servers: $servers" >&2
"$FRAMEBENCH" compare --frameworks "$servers" --protocol h2c,http1 \
  --scenarios hello,json,static -c "$CONNS" -m "$STREAMS" --threads "$THREADS" \
  -d "$DURATION" --warmup "$WARMUP" --rounds "$ROUNDS" --quiet \
  --json "$OUT/h2c.json" --markdown "$OUT/h2c.md" --bars "$OUT/h2c.svg"
