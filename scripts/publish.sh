#!/usr/bin/env bash
# One publication: regenerates the files of docs/generated/ that this machine can produce, all
# from one clean commit taken at the start, part by part, into a scratch folder
# (target/publish/<commit>/), and moves them into docs/generated/ only at the end, so that no
# part sees a tree an earlier part dirtied. Each part records the commit it measured and its
# window; a rerun at the same commit skips the parts already done (they may run on different
# days), and a run at another commit is refused while a publication of another commit is
# unfinished (remove its folder to abandon it).
#
#   scripts/publish.sh                     # every part, then the move and docs/generated/README.md
#   scripts/publish.sh results quick       # only these parts (then the move of what is done)
#   scripts/publish.sh --status            # per published file: its commit, and how many commits
#                                          # have changed src/, benches/, peers/ or Cargo.lock since
#   scripts/publish.sh --list              # the parts, in order, with what each writes
#   scripts/publish.sh --index             # docs/generated/README.md again, from the last
#                                          # publication's manifest, after a file that keeps its
#                                          # own commit (16-cpus, footprint) came or went
#
# The parts, in order, with their wall time on this project's 2-core machine (the README's and
# the guides' generated blocks are refreshed by scripts/readme.sh at the end):
#   fresh-clone  scripts/fresh-clone.sh: first, since it needs a clean tree (about 20 min)
#   results      the callgrind counts (in-process and loopback), `allocs`, `deltas`, `time`
#                and `time --loopback`, then `framebench report`: results.md, results.json and
#                the charts (about 15 min; criterion's benches are not run: the published times
#                are `time`'s interleaved rounds)
#   quick        the quick compare: quick/screen.md, long.md, results.json, summary.svg (4 min)
#   drift        scripts/drift.sh, the full run: drift.md (2 min)
#   conformance  `check --conformance`, HTTP/1.1 and h2c (2 min)
#   h2c          scripts/h2c-results.sh with 1 s cells after 0.5 s and 3 rounds (cut from 3 s
#                after 1 s: the rounds' range, not the cell's length, is the interval; 15 min)
#   vs-h2load    scripts/vs-h2load.sh (3 min)
#   vs-tls       scripts/vs-tls.sh: the driver over TLS against wrk (https), h2load (h2) and
#                openssl s_time (full and resumed handshakes) (vs-tls.md) (9 min)
#   scaling      `scale --threads 1`, 1 s cells after 0.5 s (cut from 2 s after 1 s): scaling/2-cpus.*
#                (10 min)
#   seeds        scripts/seeds.sh with 3 s cells (cut from 5 s: 25 min) and scripts/pipeline.sh
#                with 2 s cells (5 min)
#   memory       `framebench memory` at 1,000 and 10,000 idle connections and after 1 MiB and
#                16 MiB bodies, every framework: memory.md, memory.json, memory.svg (10 min)
#   delay        `compare --scenarios delay` at 200, 1,000 and 10,000 connections, 3 rounds of 3 s
#                cells: delay.md (each cell against the ideal and the wait), delay.json, delay.svg
#                (15 min)
#   tls          `compare --transport tcp,tls`, keep-alive hello and json in 3 rounds (tls.*, its chart
#                a panel of bars per transport and connection count); full and resumed
#                handshakes, a connection per request (tls-handshakes-*.md); HTTP/2 over TLS at
#                10 streams (tls-h2.*); `memory --tls` at 1,000
#                idle connections (memory-tls.*) (30 min)
#   ws           `compare --protocol ws`: steady, 16 in flight and 10 messages per connection, 3
#                rounds each (ws-*.md, .json, .svg) (15 min)
#   vs-wsload    scripts/vs-wsload.sh: the driver against the gorilla witness (vs-wsload.md) (2 min)
#   autobahn     `check --conformance --protocol ws --autobahn all`: Autobahn|Testsuite's every case
#                against every WebSocket echo (autobahn.md; its HTML stays under target/) (42 min)
#   footprint    scripts/footprint.sh: footprint.md, .json, .svg (45 min); kept, not rerun, while
#                Cargo.lock, Cargo.toml and src/frameworks/ are unchanged since the commit its
#                file names; when they changed, it runs first and alone, whichever parts were
#                asked for, and the publication goes on at the commit that holds it
# Files that need a lent many-core machine keep their own commit and have `16-cpus` in their
# names; they are not regenerated here.
set -euo pipefail
cd "$(dirname "$0")/.."

PARTS=(fresh-clone results quick drift conformance h2c vs-h2load vs-tls scaling seeds memory delay tls ws vs-wsload autobahn footprint)
root=${CARGO_TARGET_DIR:-target}/publish

# The full commit a generated Markdown file names within its first 30 lines, or nothing.
measured_at() {
  head -30 "$1" | grep -oE 'Measured at: [0-9a-f]{40}' | head -1 | awk '{ print $3 }' || true
}

changed_since() { # commits that changed what is measured since $1
  git rev-list --count "$1..HEAD" -- src benches peers Cargo.lock 2>/dev/null || echo "?"
}

# docs/generated/README.md: the publication's commit and parts, then per Markdown file the
# commit it names and its window.
index() {
  local commit=$1 manifest=$2
  echo "<!-- generated by \`scripts/publish.sh\`; do not edit -->"
  echo "# Generated files"
  echo
  echo "Every file in this folder was written by a command; nothing here is hand-edited. They are"
  echo "published together by \`scripts/publish.sh\`, from one clean commit, part by part; each file"
  echo "names the commit it was measured at on a \`Measured at:\` line within its first 30 lines."
  echo "\`scripts/publish.sh --status\` says how many commits have changed what is measured since."
  echo "Files whose names contain \`16-cpus\` need a lent many-core machine and keep their own commit"
  echo "(\`scripts/many-cores.sh\` measures them there; docs/scaling.md names each run). The footprint"
  echo "(\`footprint.*\`, 45 minutes of builds) keeps its own commit while Cargo.lock, Cargo.toml and"
  echo "src/frameworks/ are unchanged since."
  echo
  echo "Publication: $commit. Parts and their windows (UTC):"
  echo
  echo "| part | window |"
  echo "|---|---|"
  while read -r part window; do echo "| $part | $window |"; done <"$manifest"
  echo
  echo "| file | measured at | window |"
  echo "|---|---|---|"
  find docs/generated -name '*.md' ! -path docs/generated/README.md | sort | while read -r f; do
    local sha window
    sha=$(measured_at "$f")
    window=$(head -30 "$f" | grep -m1 -oE 'Window: [^,]*' | sed 's/Window: //' || true)
    echo "| \`${f#docs/generated/}\` | ${sha:0:7}${sha:+} | ${window:-–} |"
  done
}

if [ "${1:-}" = --index ]; then
  last=$({ grep -oE '^Publication: [0-9a-f]{40}' docs/generated/README.md || true; } | awk '{ print $2 }')
  [ -n "$last" ] && [ -f "$root/$last/manifest" ] || {
    echo "publish.sh --index: no manifest of publication ${last:-?} under $root/ (it is written where that publication ran)" >&2
    exit 1
  }
  index "$last" "$root/$last/manifest" >docs/generated/README.md
  exit 0
fi

if [ "${1:-}" = --list ]; then
  sed -n '/^# The parts, in order/,/^# names;/p' "$0" | sed 's/^# \{0,1\}//'
  exit 0
fi

if [ "${1:-}" = --status ]; then
  printf '%-58s %-9s %s\n' "file" "commit" "commits since that changed src/, benches/, peers/ or Cargo.lock"
  find docs/generated -name '*.md' ! -name README.md | sort | while read -r f; do
    sha=$(measured_at "$f")
    if [ -z "$sha" ]; then
      printf '%-58s %-9s %s\n' "${f#docs/generated/}" "-" "no Measured at: line"
    else
      printf '%-58s %-9s %s\n' "${f#docs/generated/}" "${sha:0:7}" "$(changed_since "$sha")"
    fi
  done
  exit 0
fi

for arg in "$@"; do
  [[ " ${PARTS[*]} " == *" $arg "* ]] || { echo "publish.sh: unknown part '$arg' (one of: ${PARTS[*]})" >&2; exit 2; }
done
want=("$@")
[ ${#want[@]} -gt 0 ] || want=("${PARTS[@]}")

# What is measured and what measures it must be the commit's; the files a publication writes
# (docs/, README.md) may differ, as they do between two parts of one publication.
if [ -n "$(git status --porcelain --untracked-files=no -- src benches peers fixtures scripts build.rs Cargo.toml Cargo.lock .cargo)" ]; then
  echo "publish.sh: the tree has changes outside docs/ and README.md: commit them first (a publication names one clean commit)" >&2
  exit 1
fi
commit=$(git rev-parse HEAD)
for other in "$root"/*/; do
  [ -d "$other" ] || continue
  other=$(basename "$other")
  if [ "$other" != "$commit" ] && [ ! -e "$root/$other/moved" ]; then
    echo "publish.sh: an unfinished publication of $other is in $root/$other; HEAD is $commit: check out $other to go on, or remove that folder" >&2
    exit 1
  fi
done
# A publication skips nothing: every tool framebench knows is required, so that a missing one
# stops its part rather than publishing a skip line (the autobahn part of c7b6f81's publication
# once wrote "wstest not found" for every server and was marked done, as FRAMEBENCH_WSTEST was not
# exported). wstest is found the way .ci/run finds it; fresh-clone.sh hides every tool itself.
eval "$(scripts/autobahn.sh)"
export FRAMEBENCH_REQUIRE=all
state=$root/$commit
out=$state/generated
mkdir -p "$out" "$state/done"
echo "publication of $commit into $out"

bin=${CARGO_TARGET_DIR:-target}/release/framebench
build() {
  cargo build --release --locked --quiet
  # The binary must be of this commit, not a dirty tree's.
  "$bin" --version >/dev/null
}

now() { date -u '+%d %b %Y %H:%M'; }

part_fresh_clone() {
  OUT="$out/fresh-clone.md" scripts/fresh-clone.sh
}

part_results() {
  build
  local t=$state/target
  rm -rf "$t"
  mkdir -p "$t"
  # The callgrind targets write under the target folder cargo uses; their summaries are copied.
  rm -rf "${CARGO_TARGET_DIR:-target}/gungraun"
  FRAMEBENCH_REQUIRE=callgrind cargo bench --locked --bench callgrind
  FRAMEBENCH_REQUIRE=callgrind cargo bench --locked --bench callgrind_loopback
  mkdir -p "$t/gungraun"
  cp -r "${CARGO_TARGET_DIR:-target}/gungraun/." "$t/gungraun/"
  # `allocs` exits 1 when a cell's repeats disagree (ohkami's bytes on the body scenarios); the
  # file holds every cell with its error, and the report prints them as such.
  "$bin" allocs --json "$t/allocs/allocs.json" >/dev/null || [ -s "$t/allocs/allocs.json" ]
  "$bin" deltas --json "$t/deltas/deltas.json" >/dev/null
  "$bin" time --json "$t/time/in_process.json" >/dev/null
  "$bin" time --loopback --json "$t/time/loopback.json" >/dev/null
  "$bin" report --target-dir "$t" --out "$out/results.md"
  # A pair of scenarios whose time ratio misses its instruction ratio (the report's
  # consistency section) is published only with a stated cause or after a rerun that clears it.
  if [ -n "$(unexplained "$out/results.md")" ]; then
    echo "results: time ratios that miss their instruction ratios; timing again once:"
    unexplained "$out/results.md"
    "$bin" time --json "$t/time/in_process.json" >/dev/null
    "$bin" report --target-dir "$t" --out "$out/results.md"
  fi
  if [ -n "$(unexplained "$out/results.md")" ]; then
    echo "publish.sh: these pairs still miss after a rerun, and $CAUSES states no cause for them:" >&2
    unexplained "$out/results.md" >&2
    exit 1
  fi
}

# Measured causes of time ratios that miss their instruction ratio, one per line:
# `framework scenario/scenario: the cause, and the measurement that shows it`.
CAUSES=docs/methodology/ratio-causes.txt
# The rows of the report's "Time ratios between scenarios" table with no line in $CAUSES.
unexplained() {
  awk '/^### Time ratios between scenarios/ { on = 1; next } /^#/ { on = 0 }
    on && /^\| [a-z]/ && !/^\| framework/ { gsub(/ /, "", $3); print $2 " " $3 }' FS='|' "$1" |
    while read -r fw pair; do
      grep -q "^$fw ${pair}:" "$CAUSES" 2>/dev/null || echo "$fw $pair"
    done
}

part_quick() {
  build
  "$bin" --out "$out/quick" >/dev/null
}

part_drift() {
  build
  FRAMEBENCH=$bin OUT="$out/drift.md" scripts/drift.sh >/dev/null
}

part_conformance() {
  build
  "$bin" check --conformance --markdown "$out/conformance.md" >/dev/null
  "$bin" check --conformance --protocol h2c --markdown "$out/conformance-h2c.md" >/dev/null
}

part_h2c() {
  build
  FRAMEBENCH=$bin DURATION=1s WARMUP=0.5s OUT="$out" scripts/h2c-results.sh
}

part_vs_h2load() {
  build
  FRAMEBENCH=$bin scripts/vs-h2load.sh >"$out/vs-h2load.md"
}

part_vs_tls() {
  build
  FRAMEBENCH=$bin scripts/vs-tls.sh >"$out/vs-tls.md"
}

part_scaling() {
  build
  mkdir -p "$out/scaling"
  "$bin" scale --threads 1 --io disk -d 1s --warmup 0.5s --json "$out/scaling/2-cpus.json" \
    --markdown "$out/scaling/2-cpus.md" >/dev/null
}

part_seeds() {
  build
  FRAMEBENCH=$bin DURATION=3s OUT="$out/seeds" scripts/seeds.sh
  FRAMEBENCH=$bin DURATION=2s OUT="$out/seeds/pipeline" scripts/pipeline.sh
}

part_memory() {
  build
  "$bin" memory --connections 1000,10000 --json "$out/memory.json" --markdown "$out/memory.md" \
    --chart "$out/memory.svg" >/dev/null
}

# compare_cells ARGS...: `framebench compare ARGS`. Its exit 1 means a cell did not end ok (FAIL,
# OPEN: actix's WebSocket churn, which keeps each closed connection open 0.5 s), and the files
# show that cell with its reason: a finding to publish, so the part goes on, saying so on stderr.
# Any other exit stops the publication.
compare_cells() {
  local rc=0
  "$bin" compare "$@" || rc=$?
  case $rc in
    0) ;;
    1) echo "publish.sh: a cell did not end ok, published as such: compare $*" >&2 ;;
    *) return "$rc" ;;
  esac
}

part_delay() {
  build
  compare_cells --scenarios delay -c 200,1000,10000 -d 3s --warmup 0.5s --rounds 3 \
    --json "$out/delay.json" --markdown "$out/delay.md" --plot "$out/delay.svg" >/dev/null
}

part_tls() {
  build
  compare_cells --transport tcp,tls --scenarios hello,json -c 10,100 -d 2s --warmup 0.5s \
    --rounds 3 --json "$out/tls.json" --markdown "$out/tls.md" --bars "$out/tls.svg" >/dev/null
  local resumption
  for resumption in off on; do
    compare_cells --tls --tls-resumption "$resumption" --requests-per-connection 1 \
      --scenarios hello -c 10 -d 2s --warmup 0.5s --rounds 3 \
      --json "$out/tls-handshakes-$resumption.json" \
      --markdown "$out/tls-handshakes-$resumption.md" >/dev/null
  done
  # HTTP/2 over TLS (ALPN h2), 10 streams per connection, beside h2c.md's cleartext cells.
  compare_cells --tls --protocol h2 -m 10 --scenarios hello -c 10 -d 2s --warmup 0.5s \
    --rounds 3 --json "$out/tls-h2.json" --markdown "$out/tls-h2.md" >/dev/null
  "$bin" memory --tls --connections 1000 --bodies none --json "$out/memory-tls.json" \
    --markdown "$out/memory-tls.md" --chart "$out/memory-tls.svg" >/dev/null
}

part_ws() {
  build
  local shape flags
  for shape in steady pipelined churn; do
    case $shape in
      steady) flags=() ;;
      pipelined) flags=(--pipeline 16) ;;
      churn) flags=(--requests-per-connection 10) ;;
    esac
    compare_cells --protocol ws -c 10,100 -d 2s --warmup 0.5s --rounds 3 "${flags[@]}" \
      --json "$out/ws-$shape.json" --markdown "$out/ws-$shape.md" --plot "$out/ws-$shape.svg" \
      >/dev/null
  done
}

part_vs_wsload() {
  build
  FRAMEBENCH=$bin scripts/vs-wsload.sh >"$out/vs-wsload.md"
}

part_autobahn() {
  build
  "$bin" check --conformance --protocol ws --autobahn all --markdown "$out/autobahn.md" >/dev/null
}

# Whether the committed footprint still holds: Cargo.lock, Cargo.toml and src/frameworks/
# unchanged since the commit footprint.md names.
footprint_holds() {
  local at
  at=$(measured_at docs/generated/footprint.md 2>/dev/null || true)
  [ -n "$at" ] && git diff --quiet "$at" HEAD -- Cargo.lock Cargo.toml src/frameworks 2>/dev/null
}

part_footprint() {
  if footprint_holds; then
    echo "footprint: kept (measured at $(measured_at docs/generated/footprint.md | cut -c1-7); Cargo.lock, Cargo.toml and src/frameworks/ unchanged since)"
    return
  fi
  build
  FRAMEBENCH=$bin OUT="$out" scripts/footprint.sh
}

# A stale footprint goes first, alone: at a commit whose committed footprint is stale the
# docs test fails, and with it the fresh clone's `cargo test` (c7b6f81's publication found that
# after its other parts had run). The footprint keeps its own commit, so it is measured here,
# moved into docs/generated/, and the publication goes on at the commit that holds it.
if ! footprint_holds; then
  if [ ! -e "$state/done/footprint" ]; then
    echo "== footprint, first and alone: the committed one is stale (from $(now) UTC)"
    started=$(now)
    part_footprint
    echo "$started–$(date -u '+%H:%M') UTC" >"$state/done/footprint"
  fi
  cp "$out"/footprint.* docs/generated/
  touch "$state/moved"
  echo "moved footprint.* (measured at ${commit:0:7}) into docs/generated/: commit them, then run scripts/publish.sh again at that commit for the other parts"
  exit 0
fi


for part in "${PARTS[@]}"; do
  [[ " ${want[*]} " == *" $part "* ]] || continue
  if [ -e "$state/done/$part" ]; then
    echo "== $part: done at $commit ($(cat "$state/done/$part")), skipped"
    continue
  fi
  echo "== $part (from $(now) UTC)"
  started=$(now)
  "part_${part//-/_}"
  [ "$(git rev-parse HEAD)" = "$commit" ] || { echo "publish.sh: HEAD moved during $part" >&2; exit 1; }
  echo "$started–$(date -u '+%H:%M') UTC" >"$state/done/$part"
done

# The move: every part done so far replaces its files in docs/generated/.
for part in "${PARTS[@]}"; do
  [ -e "$state/done/$part" ] || continue
  echo "$part $(cat "$state/done/$part")"
done >"$state/manifest"
cp -r "$out/." docs/generated/
scripts/readme.sh
index "$commit" "$state/manifest" >docs/generated/README.md
touch "$state/moved"
echo "moved the files of $(wc -l <"$state/manifest") part(s) into docs/generated/; commit them"
