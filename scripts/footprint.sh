#!/usr/bin/env bash
# What each framework costs before its first request: the release build of framebench with its
# feature alone, the stripped binary's size beyond the floors-only build's, the time from `exec`
# of `framebench serve X` to its first 200 (`framebench startup`, 20 interleaved rounds beside
# raw's, in that framework's own binary) and its memory after that answer. The Go peers add
# their `go build` and their own binary.
#
# The builds share one target folder: the floors-only build first (cold, every common crate),
# then one framework's feature at a time, which recompiles that framework's crates and
# framebench. Its time is what the framework's feature adds to a build whose other crates are
# built; the floors-only cold build and the host-speed reference (scripts/lib/host-speed.sh)
# are stated beside it.
#
# Writes docs/generated/footprint.md, footprint.json and footprint.svg (or into $OUT) through
# `framebench footprint`. The file may keep its own commit while Cargo.lock, Cargo.toml and
# src/frameworks/ are unchanged since (tests/testsuite/docs.rs); rerun it when they change.
#
#   scripts/footprint.sh                # every framework's feature: about 45 min on 2 cores
#   scripts/footprint.sh axum actix     # only these features
#   FRAMEBENCH=path/to/framebench OUT=/tmp/fp scripts/footprint.sh go   # a given binary writes
set -euo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-docs/generated}
work=${CARGO_TARGET_DIR:-target}/footprint
shared=$work/target
rounds=${ROUNDS:-20}
if [ -n "$(git status --porcelain --untracked-files=no -- src Cargo.toml Cargo.lock peers build.rs)" ]; then
  echo "footprint.sh: src/, Cargo.toml, Cargo.lock or peers/ have uncommitted changes: commit first (the file names one commit)" >&2
  exit 2
fi
if [ $# -gt 0 ]; then
  features=("$@")
else
  read -r -a features < <(sed -n 's/^default = \[\(.*\)\]/\1/p' Cargo.toml | tr -d '",')
fi
known=" $(sed -n 's/^default = \[\(.*\)\]/\1/p' Cargo.toml | tr -d '",') "
for f in "${features[@]}"; do
  [[ "$known" == *" $f "* ]] || { echo "footprint.sh: unknown framework feature '$f' (one of:$known)" >&2; exit 2; }
done
command -v strip >/dev/null || { echo "footprint.sh: needs strip (apt-get install binutils)" >&2; exit 2; }

rm -rf "$work"
mkdir -p "$work/bin" "$work/startup"
work=$(realpath "$work")
shared=$work/target
cargo fetch --locked --quiet
# The binary that writes the file at the end: $FRAMEBENCH, or this commit's with every framework.
if [ -z "${FRAMEBENCH:-}" ]; then
  cargo build --release --locked --quiet
  FRAMEBENCH=${CARGO_TARGET_DIR:-target}/release/framebench
fi
# shellcheck source=scripts/lib/host-speed.sh
. scripts/lib/host-speed.sh
host_speed_reference "$work/reference"

# build NAME FEATURES...: a release build of the framebench binary into the shared folder;
# sets `secs` and `bytes` (of a stripped copy, kept in $work/bin/NAME).
build() {
  local name=$1 started
  shift
  started=$(date +%s.%N)
  CARGO_TARGET_DIR=$shared cargo build --release --locked --offline --quiet --bin framebench \
    --no-default-features "$@" >"$work/$name.log" 2>&1 || { cat "$work/$name.log"; exit 1; }
  secs=$(echo "$(date +%s.%N) - $started" | bc | xargs printf '%.1f')
  cp "$shared/release/framebench" "$work/bin/$name"
  strip "$work/bin/$name"
  bytes=$(stat -c %s "$work/bin/$name")
  echo "$name: built in $secs s, $bytes bytes stripped"
}

started_utc=$(date -u '+%d %b %Y %H:%M')
build floors
floors_secs=$secs
floors_bytes=$bytes
entries=""
for f in "${features[@]}"; do
  build "$f" --features "$f"
  go_peers=""
  if [ "$f" = go ] && command -v go >/dev/null; then
    # Each peer built alone, as a feature is after the floors: modules downloaded first, and a
    # build cache holding the standard library only, copied afresh for each.
    (cd peers/go && go mod download)
    std_cache=$(mktemp -d)
    GOCACHE=$std_cache go build std
    for peer in nethttp fiber; do
      cache=$(mktemp -d)
      cp -r "$std_cache/." "$cache/"
      p_started=$(date +%s.%N)
      (cd peers/go && GOCACHE=$cache GOFLAGS=-mod=readonly go build -o "$work/bin/go-$peer" "./cmd/$peer")
      p_secs=$(echo "$(date +%s.%N) - $p_started" | bc | xargs printf '%.1f')
      rm -rf "$cache"
      strip "$work/bin/go-$peer"
      go_peers="$go_peers${go_peers:+,}{\"framework\":\"go-$peer\",\"build_s\":$p_secs,\"bytes\":$(stat -c %s "$work/bin/go-$peer")}"
      echo "go-$peer: go build in $p_secs s"
    done
    rm -rf "$std_cache"
  fi
  # Start-up in this framework's own binary, beside raw's (always compiled in).
  # FRAMEBENCH_BIN: a framework served by a child framebench process (may-minihttp) is served
  # from this binary too, which is not named `framebench`.
  FRAMEBENCH_BIN="$work/bin/$f" "$work/bin/$f" startup --rounds "$rounds" \
    --json "$work/startup/$f.json" >"$work/startup/$f.txt"
  cat "$work/startup/$f.txt"
  entries="$entries${entries:+,}{\"feature\":\"$f\",\"build_s\":$secs,\"bytes\":$bytes,\"startup\":\"startup/$f.json\",\"go_peers\":[$go_peers]}"
done
window="$started_utc–$(date -u '+%H:%M') UTC"
cat >"$work/builds.json" <<EOF
{"schema":"framebench-footprint-builds/1","window":"$window","rounds":$rounds,"reference":{"crate":"$ref_crate $ref_version","build_s":$ref_secs},"floors":{"build_s":$floors_secs,"bytes":$floors_bytes},"features":[$entries]}
EOF
mkdir -p "$out"
"$FRAMEBENCH" footprint "$work/builds.json" \
  --markdown "$out/footprint.md" --json "$out/footprint.json" --chart "$out/footprint.svg"
