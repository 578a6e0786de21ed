#!/usr/bin/env bash
# Do framebench's three in-process timers agree? Runs the same cell (default `null hello`, the
# harness's own floor) through the quick compare's timer (`framebench quick-cell`), criterion
# (`cargo bench --bench in_process`) and `framebench profile`, alternating the three ROUNDS
# times (default 5), each pinned to the same core, and prints every figure, the median of each,
# and the quick compare's and profile's median as a fraction of criterion's.
#
#   scripts/harness-agreement.sh                 # null hello
#   FRAMEWORK=axum SCENARIO=json ROUNDS=7 scripts/harness-agreement.sh
set -euo pipefail
cd "$(dirname "$0")/.."
fw=${FRAMEWORK:-null}
scenario=${SCENARIO:-hello}
rounds=${ROUNDS:-5}
cpu=${CPU:-1}
[ "$(nproc)" -gt "$cpu" ] || cpu=0
cargo build --release --quiet
cargo bench --bench in_process --no-run --quiet 2>/dev/null
bin=${CARGO_TARGET_DIR:-target}/release/framebench
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
# Criterion writes its results here, not into target/criterion, which `framebench report` reads.
export CRITERION_HOME=$scratch/criterion
label='log=off,io=memory'
criterion_ns() {
  taskset -c "$cpu" cargo bench --quiet --bench in_process -- --warm-up-time 1 --measurement-time 3 \
    "^in_process/$scenario/$fw/$label\$" >"$scratch/criterion.log" 2>&1 ||
    { cat "$scratch/criterion.log"; echo "criterion failed"; exit 1; }
  python3 - "$CRITERION_HOME" "$scenario" "$fw" <<'PY'
import json, pathlib, sys
home, scenario, fw = sys.argv[1:]
[est] = pathlib.Path(home, f"in_process_{scenario}", fw).glob("*/new/estimates.json")
e = json.loads(est.read_text())
print(f"{(e.get('slope') or e['mean'])['point_estimate']:.1f}")
PY
}
quick_ns() { taskset -c "$cpu" "$bin" quick-cell "$fw" "$scenario"; }
profile_ns() {
  taskset -c "$cpu" "$bin" profile "$fw" "$scenario" --seconds 2 2>/dev/null |
    awk '/ns per request/ { print $(NF-3) }'
}
q=() c=() p=()
echo "in-process $fw $scenario, core $cpu, $rounds alternations (ns per request)"
printf '%-6s %10s %10s %10s\n' round quick criterion profile
for i in $(seq "$rounds"); do
  q+=("$(quick_ns)")
  c+=("$(criterion_ns)")
  p+=("$(profile_ns)")
  printf '%-6s %10s %10s %10s\n' "$i" "${q[-1]}" "${c[-1]}" "${p[-1]}"
done
python3 - "${q[*]}" "${c[*]}" "${p[*]}" <<'PY'
import statistics, sys
q, c, p = ([float(x) for x in a.split()] for a in sys.argv[1:])
mq, mc, mp = (statistics.median(v) for v in (q, c, p))
print(f"median  {mq:10.1f} {mc:10.1f} {mp:10.1f}")
print(f"quick / criterion: {mq / mc:.3f}; profile / criterion: {mp / mc:.3f}")
PY
