# shellcheck shell=bash
# The host-speed reference: a fixed small compile (regex-syntax, pinned by Cargo.lock, from the
# registry already fetched, in a project of its own), so that a build time from one day can be
# read against another's on a VM whose speed moves. scripts/fresh-clone.sh and
# scripts/footprint.sh state their build times beside it.
#
#   . scripts/lib/host-speed.sh
#   host_speed_reference DIR    # builds in DIR; sets ref_crate, ref_version and ref_secs

host_speed_reference() {
  local dir=$1 started
  ref_crate=regex-syntax
  ref_version=$(awk -v n="$ref_crate" '$0 == "name = \"" n "\"" { getline; gsub(/version = |"/, ""); print; exit }' Cargo.lock)
  mkdir -p "$dir/src"
  cat >"$dir/Cargo.toml" <<TOML
[package]
name = "host-speed-reference"
version = "0.0.0"
edition = "2021"
publish = false

[dependencies]
$ref_crate = "=$ref_version"
TOML
  echo 'fn main() {}' >"$dir/src/main.rs"
  rm -rf "$dir/target"
  started=$(date +%s.%N)
  (cd "$dir" && CARGO_TARGET_DIR="$dir/target" cargo build --release --offline --quiet) \
    >"$dir/build.log" 2>&1 || { cat "$dir/build.log"; echo "the reference build failed" >&2; return 1; }
  ref_secs=$(echo "$(date +%s.%N) - $started" | bc | xargs printf '%.1f')
  echo "host-speed reference ($ref_crate $ref_version, release, alone): $ref_secs s"
}
