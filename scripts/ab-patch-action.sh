#!/usr/bin/env bash
# The one step of action.yml (a composite GitHub Action a framework's repository calls on a pull
# request): `framebench ab --patch CRATE=CHECKOUT --base BASE`, its Markdown appended to the job
# summary, its exit code the step's (1 when a gate is crossed, 2 for bad input). It runs here as
# it runs there: tests/ab_patch.rs runs it in CI. The action itself has never run on GitHub.
#
#   CRATE=axum CHECKOUT=../axum/axum BASE=origin/main scripts/ab-patch-action.sh
#
# Variables: CRATE (required), CHECKOUT (the crate's folder or its workspace's; default .), BASE
# (the revision to compare against; empty: the pinned release), FAIL_IF (gates, as `framebench
# diff --fail-if`; default allocs>+0), SCENARIOS (comma-separated; default every one),
# FRAMEWORKS (comma-separated; default the one ab picks), SUMMARY (the file the Markdown is
# appended to; default $GITHUB_STEP_SUMMARY, else stdout), SCRATCH (ab's scratch folder).
# framebench itself: FRAMEBENCH_BIN (a built binary), else FRAMEBENCH_DIR (a checkout, built
# with FEATURES, default all), else a clone of FRAMEBENCH_REPOSITORY at FRAMEBENCH_REF.
set -euo pipefail

: "${CRATE:?set CRATE to the crate as Cargo.lock names it (axum, actix-web)}"
CHECKOUT=$(cd "${CHECKOUT:-.}" && pwd)
FAIL_IF=${FAIL_IF:-allocs>+0}
SUMMARY=${SUMMARY:-${GITHUB_STEP_SUMMARY:-/dev/stdout}}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

bin=${FRAMEBENCH_BIN:-}
if [ -z "$bin" ]; then
  dir=${FRAMEBENCH_DIR:-}
  if [ -z "$dir" ]; then
    : "${FRAMEBENCH_REPOSITORY:?set FRAMEBENCH_REPOSITORY (or FRAMEBENCH_DIR, or FRAMEBENCH_BIN)}"
    dir=$work/framebench
    git clone --quiet --depth 1 --branch "${FRAMEBENCH_REF:-main}" "$FRAMEBENCH_REPOSITORY" "$dir"
  fi
  features=()
  if [ -n "${FEATURES:-}" ]; then
    features=(--no-default-features --features "$FEATURES")
  fi
  (cd "$dir" && cargo build --release --quiet "${features[@]}")
  bin=$dir/target/release/framebench
fi

args=(ab --patch "$CRATE=$CHECKOUT" --fail-if "$FAIL_IF" --markdown "$work/ab.md")
[ -z "${BASE:-}" ] || args+=(--base "$BASE")
[ -z "${SCENARIOS:-}" ] || args+=(--scenarios "$SCENARIOS")
[ -z "${FRAMEWORKS:-}" ] || args+=(--frameworks "$FRAMEWORKS")
[ -z "${SCRATCH:-}" ] || args+=(--scratch "$SCRATCH")
code=0
"$bin" "${args[@]}" || code=$?
# The report is written whenever ab measured, a crossed gate included (exit 1).
if [ -s "$work/ab.md" ]; then
  cat "$work/ab.md" >>"$SUMMARY"
fi
exit "$code"
