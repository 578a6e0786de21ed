#!/usr/bin/env bash
# Checks framework features alone (`cargo check --no-default-features --features FW`), each
# without warnings: a framework's code must build when it is the only one turned on.
#
#   scripts/check-features.sh              # every feature (about 23 min of one core here)
#   scripts/check-features.sh --share K/N  # the features of share K of N, plus every feature
#                                          # whose framework file the last commit changed
#
# Each check builds most of the dependency graph anew: turning one framework on changes the
# features of about 48 shared crates (tokio, hyper, serde, libc, syn…), so nothing of the others'
# checks is reused. CI checks a third of them per commit, rotating by the commit count, so that
# three commits in a row check them all (`.ci/run`; measured in docs/usage.md, "CI").
set -euo pipefail
cd "$(dirname "$0")/.."
share=
if [[ "${1:-}" == --share ]]; then
  share=${2:?--share K/N}
fi
# The features as cargo reads them from Cargo.toml (in alphabetical order): every one but
# `default` and the internal plumbing.
features=$(cargo metadata --no-deps --format-version 1 |
  python3 -c 'import json, sys
[package] = [p for p in json.load(sys.stdin)["packages"] if p["name"] == "framebench"]
print(*package["features"], sep="\n")' |
  grep -vx -e default -e hyper010 -e tokio-stack)
if [[ -n "$share" ]]; then
  k=${share%/*} n=${share#*/}
  changed=$(git diff --name-only HEAD~1 2>/dev/null | sed -n 's|^src/frameworks/\([a-z0-9_]*\)\.rs$|\1|p' | tr _ - || true)
  picked=
  i=0
  for fw in $features; do
    if (( i % n == k )) || grep -qx -e "$fw" <<<"$changed"; then picked="$picked $fw"; fi
    i=$((i + 1))
  done
  echo "checking share $k/$n of the features, and those the last commit changed:$picked"
  features=$picked
fi
for fw in $features; do
  started=$SECONDS
  out=$(cargo check --no-default-features --features "$fw" 2>&1) || { echo "$out"; exit 1; }
  if echo "$out" | grep -E '^warning' | grep -v 'future version of Rust' | grep -q .; then
    echo "$out"
    echo "--features $fw compiles with warnings"
    exit 1
  fi
  echo "--features $fw: ok ($((SECONDS - started)) s)"
done
