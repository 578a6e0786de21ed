#!/usr/bin/env bash
# Reruns each seed article's experiment (../shared/seeds) on framebench and writes one Markdown
# file per seed into docs/generated/seeds/ (plus JSON with the environment and a PNG plot), for
# docs/seeds.md.
#
#   scripts/seeds.sh                      # release build, 10 s per cell (about 15 minutes)
#   DURATION=2s scripts/seeds.sh          # a quick pass
#   SEEDS="001 004" scripts/seeds.sh      # some seeds only
set -euo pipefail
cd "$(dirname "$0")/.."
DURATION=${DURATION:-10s}
SEEDS=${SEEDS:-000 001 002 003 004}
if [[ -z "${FRAMEBENCH:-}" ]]; then
  cargo build --release --quiet
  FRAMEBENCH=${CARGO_TARGET_DIR:-target}/release/framebench
fi
out=docs/generated/seeds
mkdir -p "$out"

run() { # output name, then the compare arguments
  local seed=$1; shift
  local cmd=(compare "$@" -d "$DURATION" --quiet --markdown "$out/$seed.md" --json "$out/$seed.json" --plot "$out/$seed.png")
  echo "== seed $seed: framebench ${cmd[*]}"
  # A cell that fails the oracle or crashes is part of the result, not an error of the script.
  # Each file's first line names this exact command and the commit (docs/generated/README.md).
  "$FRAMEBENCH" "${cmd[@]}" || true
}

for seed in $SEEDS; do
  case $seed in
    # Iron vs nickel, logging to the console on and off, the four routes, 5/10/25 connections.
    000) run 000 --frameworks iron,nickel --scenarios template,not_found,static,paste \
           --logging stdout,off -c 5,10,25 ;;
    # Nickel vs Fiber, "hello" at 50, 100 and 500 connections (raw as the ceiling).
    001) run 001 --frameworks nickel,go-fiber,raw --scenarios hello -c 50,100,500 ;;
    # Hello at 100 connections, plain and pipelined 128 deep, every framework.
    002) run 002-plain --scenarios hello -c 100 --pipeline 1
         run 002-pipelined --scenarios hello -c 100 --pipeline 128 ;;
    # Iron vs nickel vs Go net/http proxying a key from a real redis-server, 20 connections.
    003) run 003 --frameworks iron,nickel,go-nethttp --scenarios redis -c 20 ;;
    # Actix with its Logger printing to stdout, formatting into a sink, and off, against Go's
    # net/http with the same three logging variants; 100 connections.
    004) run 004 --frameworks actix,go-nethttp --scenarios hello --logging stdout,sink,off -c 100 ;;
    *) echo "unknown seed $seed" >&2; exit 2 ;;
  esac
done
