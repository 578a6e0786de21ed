#!/usr/bin/env bash
# Rewrites the generated blocks of README.md and docs/*.md (tests/testsuite/docs.rs fails while one
# is stale):
# - `<!-- framebench ARGS: begin -->` … `<!-- framebench ARGS: end -->`: the output of
#   `framebench ARGS` (inside a ```text fence when the block holds one), e.g. the framework
#   table (`list --markdown`) and usage.md's diff example, recomputed from committed data;
# - `<!-- FILE: begin -->` … `<!-- FILE: end -->` for a generated FILE a guide quotes (the
#   README's first screen and newcomer's times, driver.md's run against h2load, …), each less
#   its stamp line.
# FRAMEBENCH names the binary (default target/release/framebench).
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${FRAMEBENCH:-target/release/framebench}
with=$(mktemp)
trap 'rm -f "$with"' EXIT

# replace DOC BEGIN END: the lines of DOC between the line BEGIN and the line END become $with's.
replace() {
  local doc=$1 begin=$2 end=$3
  grep -qxF -- "$end" "$doc" || { echo "$doc has no line '$end'" >&2; exit 1; }
  awk -v with="$with" -v begin="$begin" -v end="$end" '
    $0 == begin { print; while ((getline line < with) > 0) print line; close(with); skip = 1; next }
    $0 == end { skip = 0 }
    !skip { print }
  ' "$doc" >"$doc.new"
  mv "$doc.new" "$doc"
}

for doc in README.md docs/*.md docs/methodology/*.md; do
  { grep -E '^<!-- framebench .*: begin -->$' "$doc" || true; } | while IFS= read -r begin; do
    args=${begin#<!-- framebench }
    args=${args%: begin -->}
    # Fenced when the line after the marker opens a code block.
    fenced=$(awk -v begin="$begin" 'found { print ($0 ~ /^```/); exit } $0 == begin { found = 1 }' "$doc")
    # shellcheck disable=SC2086 # ARGS are words, as the marker spells them.
    if [ "$fenced" = 1 ]; then
      { echo '```text'; "$bin" $args; echo '```'; } >"$with"
    else
      "$bin" $args >"$with"
    fi
    replace "$doc" "$begin" "<!-- framebench $args: end -->"
    echo "$doc: framebench $args"
  done
done
# Every guide's quotes of generated files (and of docs/history/'s dated runs written by a
# script), each less its stamp line.
for doc in README.md docs/*.md docs/methodology/*.md; do
  { grep -E '^<!-- docs/(generated|history)/.*: begin -->$' "$doc" || true; } | while IFS= read -r begin; do
    file=${begin#<!-- }
    file=${file%: begin -->}
    tail -n +2 "$file" >"$with"
    replace "$doc" "$begin" "<!-- $file: end -->"
    echo "$doc: $file"
  done
done
