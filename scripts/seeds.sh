#!/usr/bin/env bash
# Reruns each seed article's experiment on framebench, twice: under the project's controlled
# conditions (the same for every seed: --threads 2, memory I/O, DURATION per cell) and under the
# article's own condition (its pool size, its disk reads, its best-of-five, its debug build, its
# fixed request count), each written to docs/generated/seeds/ as Markdown (headed by its exact
# command and commit), JSON and, for the controlled runs, a PNG plot. docs/seeds.md reads them.
#
#   scripts/seeds.sh                      # release build; about 35 minutes on 2 cores
#   DURATION=2s ARTICLE=0 scripts/seeds.sh   # a quick pass, controlled runs only
#   SEEDS="001 004" scripts/seeds.sh      # some seeds only
#
# The many-core conditions (seed 002's 8 threads on a 4-core machine, seed 001's 10-core M1)
# belong to the scaling sweep: docs/scaling.md and docs/generated/scaling/.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/lib/cells.sh
source scripts/lib/cells.sh
DURATION=${DURATION:-5s}
ARTICLE=${ARTICLE:-1}
SEEDS=${SEEDS:-000 001 002 003 004}
if [[ -z "${FRAMEBENCH:-}" ]]; then
  cargo build --release --quiet
  FRAMEBENCH=${CARGO_TARGET_DIR:-target}/release/framebench
fi
out=${OUT:-docs/generated/seeds}
mkdir -p "$out"

run() { # output name, then the compare arguments; D=… before it sets that run's duration
  local seed=$1; shift
  local cmd=(compare "$@" -d "${D:-$DURATION}" --quiet --markdown "$out/$seed.md" --json "$out/$seed.json" --plot "$out/$seed.png")
  echo "== seed $seed: framebench ${cmd[*]}"
  # A cell that fails the oracle or crashes is part of the result, not an error of the script
  # (cells_recorded). Each file's first line names this exact command and the commit
  # (docs/generated/README.md).
  cells_recorded "$FRAMEBENCH" "${cmd[@]}"
}

# best_of NAME N ARGS...: the article's best of N runs of one compare; the runs' JSON files are
# kept in $out/NAME/, and scripts/best-of.py writes $out/NAME.md with the best, the median and
# the range of each cell.
best_of() {
  local name=$1 n=$2; shift 2
  mkdir -p "$out/$name"
  for i in $(seq "$n"); do
    echo "== seed $name, run $i of $n: framebench compare $* --quiet --json $out/$name/run-$i.json"
    cells_recorded "$FRAMEBENCH" compare "$@" --quiet --json "$out/$name/run-$i.json" >/dev/null
  done
  scripts/best-of.py "$out/$name.md" "framebench compare $*" "$out/$name"/run-*.json
}

# The debug build the article's "release mode not enabled" ran: only actix, in its own target
# folder so the release build is not touched. The release client (`$FRAMEBENCH`) runs it as
# the server through FRAMEBENCH_BIN, so only the server is unoptimized.
debug_actix() {
  local dir=${CARGO_TARGET_DIR:-target}/seeds-debug
  cargo build --quiet --no-default-features --features actix --target-dir "$dir" >&2
  echo "$dir/debug/framebench"
}

for seed in $SEEDS; do
  case $seed in
    # Iron vs nickel, logging to the console on and off, the four routes, 5/10/25 connections.
    000) run 000 --frameworks iron,nickel --scenarios template,not_found,static,paste \
           --logging stdout,off -c 5,10,25
         # The article's condition: a pool as large as the largest connection count (it saw
         # iron serve 25 and nickel 5, their defaults), and every file read from disk on each
         # request (its paste handler read the paste from disk: 99 req/s).
         if [[ $ARTICLE == 1 ]]; then
           run 000-article --frameworks iron,nickel --scenarios template,not_found,static,paste \
             --logging stdout,off -c 5,10,25 --threads 25 --io disk
         fi ;;
    # Nickel vs Fiber, "hello" at 50, 100 and 500 connections (raw as the ceiling).
    001) run 001 --frameworks nickel,go-fiber,raw --scenarios hello -c 50,100,500
         # The article's condition: a fixed request count (bombardier -n 5000000), scaled down
         # 5× so a cell ends in seconds here; -d bounds each cell.
         if [[ $ARTICLE == 1 ]]; then
           D=60s run 001-article --frameworks nickel,go-fiber,raw --scenarios hello -c 50,100,500 \
             --requests 1000000
         fi ;;
    # Hello at 100 connections, plain and pipelined 128 deep, every framework.
    002) run 002-plain --scenarios hello -c 100 --pipeline 1
         run 002-pipelined --scenarios hello -c 100 --pipeline 128
         # The article's condition: the best of five 10 s runs (wrk -d10s), over the frameworks
         # of its era that are in the registry (may-minihttp: the successor of its winner,
         # tokio-minihttp).
         if [[ $ARTICLE == 1 ]]; then
           for p in 1 128; do
             best_of "002-article-p$p" 5 --frameworks actix,hyper,iron,nickel,rocket,gotham,may-minihttp \
               --scenarios hello -c 100 --pipeline "$p" -d 10s
           done
         fi ;;
    # Iron vs nickel vs Go net/http proxying a key from a real redis-server, 20 connections.
    003) run 003 --frameworks iron,nickel,go-nethttp --scenarios redis -c 20 ;;
    # Actix with its Logger printing to stdout, formatting into a sink, and off, against Go's
    # net/http with the same three logging variants; 100 connections.
    004) run 004 --frameworks actix,go-nethttp --scenarios hello --logging stdout,sink,off -c 100
         # The article's condition: actix built without --release ("release mode not enabled")
         # against the release build, logging to stdout as it did, 30 s per cell (wrk -d30s).
         if [[ $ARTICLE == 1 ]]; then
           debug=$(debug_actix)
           FRAMEBENCH_BIN=$debug D=30s run 004-article-debug --frameworks actix --scenarios hello \
             --logging stdout,off -c 100
           D=30s run 004-article-release --frameworks actix --scenarios hello --logging stdout,off -c 100
         fi ;;
    *) echo "unknown seed $seed" >&2; exit 2 ;;
  esac
done
