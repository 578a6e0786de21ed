#!/usr/bin/env bash
# Measures what one sleep and wake-up costs a thread on this machine (docs/driver.md, "Against
# wrk"): a C loop pinned to one CPU calls nanosleep N times with a timer slack of 1 µs, and
# prints, per requested sleep length, the wall time and the CPU time (user+system, getrusage)
# per call. On bare metal the CPU time per call is about a microsecond; in a VM where halting
# and timer programming exit to the hypervisor it can be tens of microseconds, and that is the
# price a server pays each time a client leaves it idle (and a client each time it sleeps).
#
#   scripts/sleep-cost.sh [CPU] [CALLS]      # defaults: the last cpu, 20000 calls per length
set -euo pipefail
cpu=${1:-$(($(nproc) - 1))}
calls=${2:-20000}
[[ $calls =~ ^[0-9]+$ && $calls -ge 10 ]] || { echo "error: CALLS must be a number of at least 10" >&2; exit 1; }
command -v cc >/dev/null || { echo "cc not found: install it with \`apt-get install gcc\`"; exit 0; }
command -v taskset >/dev/null || { echo "taskset not found: install it with \`apt-get install util-linux\`"; exit 0; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cat >"$tmp/sleep.c" <<'C'
#include <stdio.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <time.h>
static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + t.tv_nsec * 1e-9; }
static double cpu(void) {
  struct rusage u; getrusage(RUSAGE_SELF, &u);
  return u.ru_utime.tv_sec + u.ru_stime.tv_sec + (u.ru_utime.tv_usec + u.ru_stime.tv_usec) * 1e-6;
}
int main(int argc, char **argv) {
  long us = atol(argv[1]); int n = atoi(argv[2]);
  prctl(PR_SET_TIMERSLACK, 1000UL);
  struct timespec ts = { us / 1000000, (us % 1000000) * 1000 };
  double c0 = cpu(), t0 = now();
  for (int i = 0; i < n; i++) nanosleep(&ts, 0);
  double w = now() - t0, c = cpu() - c0;
  printf("| %ld | %.1f | %.1f |\n", us, 1e6 * w / n, 1e6 * c / n);
  return 0;
}
C
cc -O2 -o "$tmp/sleep" "$tmp/sleep.c"
taskset -c "$cpu" true 2>/dev/null || { echo "error: cannot run on cpu $cpu here" >&2; exit 1; }
echo "nanosleep on cpu $cpu, $calls calls per length; $(nproc) cores, Linux $(uname -r)"
echo
echo "| requested µs | wall µs per call | CPU µs per call |"
echo "|---:|---:|---:|"
for us in 1 10 100 1000; do
  n=$calls
  [ "$us" -ge 1000 ] && n=$((calls / 10))
  taskset -c "$cpu" "$tmp/sleep" "$us" "$n"
done
