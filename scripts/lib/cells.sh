# Sourced by the scripts that record `framebench compare`'s tables (seeds.sh, pipeline.sh), from
# the repository's root. Defines cells_recorded.

# cells_recorded COMMAND...: runs COMMAND. Exit 1 (a cell failed the oracle or its server died,
# which the table records as FAIL: part of the result, such as ohkami's pipelined cell) counts
# as recorded; any other non-zero exit (a bad flag, a missing build) stops the script with it.
cells_recorded() {
  local status=0
  "$@" || status=$?
  [ "$status" -le 1 ] || exit "$status"
}
