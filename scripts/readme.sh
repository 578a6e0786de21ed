#!/usr/bin/env bash
# Rewrites README.md's two generated blocks: the framework table from `framebench list
# --markdown`, and the first screen from docs/generated/quick/screen.md (written by
# `cargo run --release -- --out docs/generated/quick`), less that file's stamp line.
# tests/docs.rs fails while either block is stale. FRAMEBENCH names the binary (default
# target/release/framebench).
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${FRAMEBENCH:-target/release/framebench}
table=$(mktemp)
screen=$(mktemp)
trap 'rm -f "$table" "$screen"' EXIT
"$bin" list --markdown >"$table"
tail -n +2 docs/generated/quick/screen.md >"$screen"

# replace FILE BEGIN END: the lines between the line BEGIN and the line END become FILE's.
replace() {
  local with=$1 begin=$2 end=$3
  grep -qxF -- "$begin" README.md || { echo "README.md has no line '$begin'" >&2; exit 1; }
  grep -qxF -- "$end" README.md || { echo "README.md has no line '$end'" >&2; exit 1; }
  awk -v with="$with" -v begin="$begin" -v end="$end" '
    $0 == begin { print; while ((getline line < with) > 0) print line; skip = 1; next }
    $0 == end { skip = 0 }
    !skip { print }
  ' README.md >README.md.new
  mv README.md.new README.md
}
replace "$table" '<!-- framebench list --markdown: begin -->' '<!-- framebench list --markdown: end -->'
replace "$screen" '<!-- docs/generated/quick/screen.md: begin -->' '<!-- docs/generated/quick/screen.md: end -->'
echo "README.md: framework table and first screen rewritten"
