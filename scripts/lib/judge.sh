# Sourced by scripts/lib/pinned-server.sh (for vs-tls.sh and vs-wsload.sh) and by .ci/run's
# check of it: whether the driver keeps up with a witness client on one server, from the two
# tools' rates, the server's busy share and its CPU per answer. Pure functions of their
# arguments, so that .ci/run can check the verdicts on fixed figures.

# cost BUSY RATE: the server's CPU in µs per answer (a response, an echoed message, a
# connection served): its busy share (%) over the rate (/s).
cost() { awk -v b="$1" -v r="$2" 'BEGIN { printf "%.2f", b * 1e4 / r }'; }

# pair_reset, then pair WITNESS_RATE DRIVER_RATE once per round: the paired rounds' ratios
# (driver / witness, the two runs of a round back to back), kept as pair_lo and pair_hi. A
# round's two runs see the same spell of the machine; two best runs may come from different
# spells (this VM's rates move by a quarter between sessions and by a tenth within minutes).
pair_reset() { pair_lo=; pair_hi=; }
pair() {
  local r
  r=$(awk -v w="$1" -v d="$2" 'BEGIN { printf "%.3f", (w > 0 ? d / w : 0) }')
  if [[ -z "$pair_lo" ]] || awk -v a="$r" -v b="$pair_lo" 'BEGIN { exit !(a < b) }'; then pair_lo=$r; fi
  if [[ -z "$pair_hi" ]] || awk -v a="$r" -v b="$pair_hi" 'BEGIN { exit !(a > b) }'; then pair_hi=$r; fi
}

# judge RATIO BUSY_W BUSY_D COST_W COST_D [LO HI]: the verdict on driver / witness (RATIO, best
# run over best run; LO and HI, the paired rounds' lowest and highest ratios). The 0.97 bar
# applies where the server set the rate under both tools (busy ≥ 90 %) and did the same work
# per answer under both (costs within a quarter of each other): a client that writes
# differently (one syscall per message against a batch) changes what the server does, and then
# the ratio is about that, not about the clients. A row is BELOW only where the data separates
# it from the bar: its best-run ratio and every paired round below 0.97; where some round
# reached it, the row reads ≈ 0.97 with the rounds' range.
judge() {
  local ratio=$1 wb=$2 db=$3 cw=$4 cd=$5 lo=${6:-} hi=${7:-}
  if [[ $wb -lt 90 || $db -lt 90 ]]; then
    echo "server below 90 %: the clients set the rate"
  elif awk -v w="$cw" -v d="$cd" 'BEGIN { exit !(w > 1.25 * d || d > 1.25 * w) }'; then
    echo "server busy under both, but its CPU per answer differs: not comparable"
  elif awk -v r="$ratio" 'BEGIN { exit !(r >= 0.97) }'; then
    echo "server-bound: ≥ 0.97"
  elif [[ -n "$hi" ]] && awk -v r="$hi" 'BEGIN { exit !(r >= 0.97) }'; then
    echo "server-bound: ≈ 0.97 (paired rounds $lo–$hi)"
  else
    echo "server-bound: BELOW 0.97${hi:+ (paired rounds $lo–$hi)}"
  fi
}
