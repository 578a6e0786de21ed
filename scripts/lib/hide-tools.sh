# Sourced by .ci/run and scripts/fresh-clone.sh: sets `hide`, the command prefix that runs a
# command as a new user would, with every optional tool hidden through the variables
# src/tools.rs reads (a path that does not exist) and FRAMEBENCH_REQUIRE unset. Call
# `hide_tools PEERS_DIR` first: the Go peers' binaries go to that folder, so none built before
# is found.
hide_tools() {
  local hidden=/nonexistent/framebench-hidden-tool
  hide=(
    env -u FRAMEBENCH_REQUIRE
    FRAMEBENCH_REDIS_SERVER=$hidden FRAMEBENCH_GO=$hidden FRAMEBENCH_WRK=$hidden
    FRAMEBENCH_VALGRIND=$hidden FRAMEBENCH_GUNGRAUN_RUNNER=$hidden FRAMEBENCH_FAKETIME=$hidden
    FRAMEBENCH_WSTEST=$hidden
    FRAMEBENCH_GO_PEERS_DIR="$1"
  )
}
