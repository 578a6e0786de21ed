#!/usr/bin/env bash
# Measures this machine's own speed noise (docs/methodology/loopback.md, "Repeatability of the quick
# compare"): a CPU-bound C loop pinned to one CPU prints, per 0.2 s window, the seconds elapsed,
# its iterations and the steal ticks of that CPU from /proc/stat.
#
#   scripts/cpu-noise.sh [CPU] [SECONDS]      # defaults: cpu 0, 20 s
set -euo pipefail
cpu=${1:-0}
secs=${2:-20}
command -v cc >/dev/null || { echo "cc not found: install it with \`apt-get install gcc\`"; exit 0; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cat >"$tmp/loop.c" <<'C'
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + t.tv_nsec * 1e-9; }
static long steal(int cpu) {
  FILE *f = fopen("/proc/stat", "r"); char line[512], name[16]; long s = -1;
  snprintf(name, sizeof name, "cpu%d ", cpu);
  while (fgets(line, sizeof line, f))
    if (!strncmp(line, name, strlen(name))) {
      long v[8]; sscanf(line + strlen(name), "%ld %ld %ld %ld %ld %ld %ld %ld", &v[0], &v[1], &v[2], &v[3], &v[4], &v[5], &v[6], &v[7]);
      s = v[7];
    }
  fclose(f); return s;
}
int main(int argc, char **argv) {
  int cpu = atoi(argv[1]); double dur = atof(argv[2]), t0 = now(), t = t0; long st = steal(cpu);
  volatile unsigned long x = 0;
  while (t - t0 < dur) {
    double w = t; unsigned long n = 0;
    while (now() - w < 0.2) { for (int i = 0; i < 10000; i++) x += i; n++; }
    t = now(); long s2 = steal(cpu);
    printf("%.1f %lu %ld\n", t - t0, n, s2 - st); st = s2;
  }
  return 0;
}
C
cc -O2 "$tmp/loop.c" -o "$tmp/loop"
taskset -c "$cpu" "$tmp/loop" "$cpu" "$secs"
