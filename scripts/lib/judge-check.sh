#!/usr/bin/env bash
# Checks scripts/lib/judge.sh's verdicts on fixed figures (run by .ci/run): each case is the
# arguments of `judge` and the verdict it must give; exits 1 at the first that differs.
set -euo pipefail
cd "$(dirname "$0")/../.."
# shellcheck source=scripts/lib/judge.sh
. scripts/lib/judge.sh

fail=0
expect() { # expect VERDICT JUDGE_ARGS...
  local want=$1 got
  shift
  got=$(judge "$@")
  [[ "$got" == "$want" ]] || { echo "judge $*: '$got', want '$want'" >&2; fail=1; }
}
expect "server below 90 %: the clients set the rate" 1.50 89 97 10 10
expect "server busy under both, but its CPU per answer differs: not comparable" 1.50 96 97 9.85 6.40
expect "server-bound: ≥ 0.97" 0.97 98 98 10 10
expect "server-bound: ≈ 0.97 (paired rounds 0.880–0.990)" 0.899 98 98 15.73 17.50 0.880 0.990
expect "server-bound: BELOW 0.97 (paired rounds 0.850–0.960)" 0.899 98 98 15.73 17.50 0.850 0.960
expect "server-bound: BELOW 0.97" 0.899 98 98 15.73 17.50

# pair keeps the lowest and highest ratio of the rounds.
pair_reset
pair 100 90; pair 100 105; pair 200 190
[[ "$pair_lo $pair_hi" == "0.900 1.050" ]] || { echo "pair: $pair_lo $pair_hi, want 0.900 1.050" >&2; fail=1; }
[[ $(cost 98 100000) == 9.80 ]] || { echo "cost 98 100000: $(cost 98 100000), want 9.80" >&2; fail=1; }
exit "$fail"
