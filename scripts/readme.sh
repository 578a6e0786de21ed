#!/usr/bin/env bash
# Rewrites README.md's generated blocks: the framework table from `framebench list --markdown`;
# the first screen from docs/generated/quick/screen.md (written by `cargo run --release -- --out
# docs/generated/quick`) and the newcomer's times from docs/generated/fresh-clone.md (written by
# scripts/fresh-clone.sh), each less its stamp line. tests/docs.rs fails while a block is stale. FRAMEBENCH names the binary (default
# target/release/framebench).
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${FRAMEBENCH:-target/release/framebench}
table=$(mktemp)
quoted=$(mktemp)
trap 'rm -f "$table" "$quoted"' EXIT
"$bin" list --markdown >"$table"

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
# Each generated file the README quotes, less its stamp line (tests/docs.rs, QUOTED).
for file in docs/generated/quick/screen.md docs/generated/fresh-clone.md; do
  tail -n +2 "$file" >"$quoted"
  replace "$quoted" "<!-- $file: begin -->" "<!-- $file: end -->"
done
echo "README.md: framework table, first screen and newcomer's times rewritten"
