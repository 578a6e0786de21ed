#!/usr/bin/env bash
# Tests the valgrind targets' preflight (`framebench::bench::callgrind_preflight`; callgrind,
# callgrind_loopback and allocs_dhat): without valgrind, without gungraun-runner, or with a
# runner of another version, each of these bench executables prints one line per cause with the
# install command and exits 0, so `cargo bench` goes on to the criterion targets; with
# FRAMEBENCH_REQUIRE=callgrind it exits 1. Then
# `cargo bench -- --test 'in_process/hello/'` with the runner hidden exits 0 and runs every
# matching criterion cell. Run by .ci/run; needs nothing installed but Rust.
set -euo pipefail
cd "$(dirname "$0")/.."
hidden=/nonexistent/framebench-hidden-tool
want=$(awk '$0 == "name = \"gungraun\"" { getline; gsub(/version = |"/, ""); print; exit }' Cargo.lock)
failures=0
passed=0

fail() {
  echo "FAIL: $*"
  failures=$((failures + 1))
}

# The bench executables, as `cargo bench` builds them.
build_log=$(cargo bench --no-run --bench callgrind --bench callgrind_loopback --bench allocs_dhat 2>&1)
mapfile -t exes < <(echo "$build_log" | sed -n 's/.*Executable benches\/\(callgrind[_a-z]*\|allocs_dhat\)\.rs (\(.*\))$/\2/p')
if [ "${#exes[@]}" -ne 3 ]; then
  echo "$build_log"
  echo "FAIL: expected the three valgrind bench executables"
  exit 1
fi
# The in-process callgrind bench, the one that reads libfaketime.
callgrind_exe=$(echo "$build_log" | sed -n 's/.*Executable benches\/callgrind\.rs (\(.*\))$/\1/p')

# expect CODE NEEDLE... -- ENV... : runs each executable as cargo bench does, with ENV.
expect() {
  local code=$1 needles=() envs=()
  shift
  while [ "$1" != -- ]; do needles+=("$1"); shift; done
  shift
  envs=("$@")
  for exe in "${exes[@]}"; do
    local err rc=0
    err=$(env -u FRAMEBENCH_REQUIRE "${envs[@]}" "$exe" '*::hello*' --bench 2>&1 >/dev/null) || rc=$?
    if [ "$rc" != "$code" ]; then
      fail "$(basename "$exe") with ${envs[*]}: exit $rc, want $code: $err"
      continue
    fi
    if echo "$err" | grep -q panicked; then
      fail "$(basename "$exe") with ${envs[*]}: panicked: $err"
      continue
    fi
    for n in "${needles[@]}"; do
      if ! echo "$err" | grep -qF -- "$n"; then
        fail "$(basename "$exe") with ${envs[*]}: stderr lacks '$n': $err"
        continue 2
      fi
    done
    # One line per cause: each names what is skipped and how to install the tool.
    if [ "$code" = 0 ] && echo "$err" | grep -v '^skipping `cargo bench --bench \(callgrind[_a-z]*\|allocs_dhat\)`: .* install it with `' | grep -q .; then
      fail "$(basename "$exe") with ${envs[*]}: a line that is not a skip line: $err"
      continue
    fi
    passed=$((passed + 1))
  done
}

fake=$(mktemp -d)
trap 'rm -rf "$fake"' EXIT
printf '#!/bin/sh\necho "gungraun-runner 0.0.1"\n' > "$fake/gungraun-runner"
chmod +x "$fake/gungraun-runner"
no_runner_path=$(echo "$PATH" | tr ':' '\n' | while read -r d; do [ -x "$d/gungraun-runner" ] || echo "$d"; done | paste -sd:)

expect 0 "gungraun-runner not found" "cargo install gungraun-runner --version $want --locked" -- \
  FRAMEBENCH_GUNGRAUN_RUNNER=$hidden
expect 0 "gungraun-runner not found" "cargo install gungraun-runner --version $want --locked" -- \
  PATH="$no_runner_path"
expect 0 "valgrind not found" "apt-get install valgrind" -- FRAMEBENCH_VALGRIND=$hidden
expect 0 "gungraun-runner 0.0.1 found" "gungraun is $want" -- \
  FRAMEBENCH_GUNGRAUN_RUNNER="$fake/gungraun-runner"
expect 0 "valgrind not found" "gungraun-runner not found" -- \
  FRAMEBENCH_VALGRIND=$hidden FRAMEBENCH_GUNGRAUN_RUNNER=$hidden
expect 1 "FRAMEBENCH_REQUIRE" "gungraun-runner not found" -- \
  FRAMEBENCH_GUNGRAUN_RUNNER=$hidden FRAMEBENCH_REQUIRE=callgrind

# Without libfaketime, with valgrind and the runner present: one line, and the counts still run
# (a filter that matches no benchmark keeps this quick).
if command -v valgrind >/dev/null && [ "$(gungraun-runner --version 2>/dev/null | awk '{ print $2 }')" = "$want" ]; then
  rc=0
  err=$(env -u FRAMEBENCH_REQUIRE FRAMEBENCH_FAKETIME=$hidden "$callgrind_exe" 'nothing::matches::*' --bench 2>&1) || rc=$?
  if [ "$rc" = 0 ] && echo "$err" | grep -qF 'libfaketime not found' && echo "$err" | grep -qF 'apt-get install faketime' &&
    [ "$(echo "$err" | grep -c skipping)" = 1 ]; then
    passed=$((passed + 1))
  else
    fail "callgrind without libfaketime: exit $rc: $err"
  fi
else
  echo "not tested here: callgrind without libfaketime (needs valgrind and gungraun-runner $want)"
fi

# The whole `cargo bench` with the runner hidden: the callgrind targets step aside, every
# matching criterion cell runs (once each, in criterion's test mode).
out=$(env -u FRAMEBENCH_REQUIRE FRAMEBENCH_GUNGRAUN_RUNNER=$hidden \
  cargo bench -- --test 'in_process/hello/' 2>&1) || fail "cargo bench with the runner hidden: exit $?"
cells=$(echo "$out" | grep -A1 '^Testing in_process/hello/' | grep -c '^Success' || true)
runner_lines=$(echo "$out" | grep -c 'gungraun-runner not found' || true)
if [ "$runner_lines" != 3 ]; then
  fail "want one runner line per valgrind target, got $runner_lines"
else
  passed=$((passed + 1))
fi
if [ "$cells" -lt 10 ]; then
  echo "$out" | tail -30
  fail "want every in_process/hello cell run, got $cells"
else
  passed=$((passed + 1))
  echo "cargo bench with the runner hidden: $cells in_process/hello cells ran"
fi

echo "bench preflight: $passed passed, $failures failed"
[ "$failures" = 0 ]
