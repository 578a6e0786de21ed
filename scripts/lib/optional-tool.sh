# Sourced by the scripts that compare the driver with another client (vs-wrk.sh, vs-h2load.sh,
# vs-tls.sh), from the repository's root. Defines find_tool and optional_tool.

# find_tool NAME VARIABLE PACKAGE: sets `tool` to the path of NAME (or of $VARIABLE when set, as
# src/tools.rs reads it). Without it: one line naming the package to install and status 1, or
# exit 1 from the calling script when FRAMEBENCH_REQUIRE names the tool (or says `all`).
find_tool() {
  local name=$1 var=$2 package=$3 override path msg
  override=${!var:-}
  path=$(command -v "${override:-$name}" || true)
  if [ -n "$path" ] && [ -x "$path" ]; then
    tool=$path
    return 0
  fi
  msg="skipping the $name comparison: $name not found${override:+ at $override}: install it with \`apt-get install $package\`"
  case ",$(echo "${FRAMEBENCH_REQUIRE:-}" | tr -d ' ' | tr 'A-Z' 'a-z')," in
    *,"$name",* | *,all,*) echo "error: FRAMEBENCH_REQUIRE requires it: $msg" >&2; exit 1 ;;
  esac
  echo "$msg"
  return 1
}

# optional_tool NAME VARIABLE PACKAGE: find_tool, and without the tool exit 0 from the calling
# script (the comparison is skipped). Call it directly, not in `$(...)`, so that its exit ends
# the script.
optional_tool() {
  find_tool "$@" || exit 0
}
