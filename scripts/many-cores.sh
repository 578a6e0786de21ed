#!/usr/bin/env bash
# The many-core measurements of docs/scaling.md (issue 61), on a lent machine of 16 CPUs that has
# neither Rust, Go nor a network. `--pack` makes, here, what the machine needs in
# .dev/pack.tar.xz (.dev/ is in .gitignore; carry that file): a stripped
# framebench built from a clean commit, the Go peers built with `go build`, and wrk and h2load
# with the libraries they load. On the machine, from the
# checkout's copy, each PART then writes its files into $RES and stops by $DEADLINE (unix
# seconds): a part that cannot finish by then is sent SIGINT, and `framebench scale` writes what it
# measured, which the next call's `hello` goes on with through `--resume`. Server threads on CPUs
# 0–7, the client on 8–15 (scale splits the machine in two halves itself).
#
#   scripts/many-cores.sh --pack                             # here
#   DEADLINE=$(( $(date +%s) + 540 )) scripts/many-cores.sh hello seed002 wrk h2c   # there
#
# Parts, in the order issue 61 puts them:
#   hello    framebench scale: hello on every serving framework, both runtimes, T = 1, 2, 4, 8,
#            1 s cells after 0.3 s of warm-up, 3 rounds          → 16-cpus.json, 16-cpus.md
#   seed002  framebench compare at 8 server threads, hello at 100 connections, plain and
#            pipelined 128 deep, 1 s cells, 3 rounds, $SEED002 frameworks
#                                        → 002-t8-16-cpus-plain.*, 002-t8-16-cpus-pipelined.*
#   wrk      scripts/vs-wrk.sh at T = 8: raw and actix, 256 connections, 8 threads a side
#                                                                → 16-cpus-vs-wrk.md
#   h2c      framebench scale over h2c, 100 streams on each of 32 connections, T = 1 and 8, on six
#            h2c servers; then scripts/vs-h2load.sh at T = 8        → 16-cpus-h2c.*, 16-cpus-vs-h2load.md
# Variables: RES (/tmp/fb-res: outside the checkout, whose carried .dev/ a call replaces),
# DEADLINE (now + 540), SEED002 (the seed article's frameworks and raw), THREADS (1,2,4,8: the
# widest is seed 002's, wrk's and h2c's T), CELL (1s) and WARMUP (0.3s); files are named after
# the machine's CPU count (16-cpus); RESUME_ONLY (set: hello only goes on with a sweep in $RES).
set -euo pipefail
cd "$(dirname "$0")/.."

if [[ "${1:-}" == --pack ]]; then
  [[ -z "$(git status --porcelain --untracked-files=no)" ]] ||
    { echo "the checkout has changes: commit them first, so that the binary names its commit" >&2; exit 1; }
  cargo build --release --quiet
  stage=$(mktemp -d)
  trap 'rm -rf "$stage"' EXIT
  mkdir -p "$stage/go-peers" "$stage/tools/lib"
  strip -o "$stage/framebench" target/release/framebench
  (cd peers/go && for p in nethttp fiber; do go build -ldflags='-s -w' -o "$stage/go-peers/$p" ./cmd/$p; done)
  for t in wrk h2load; do cp "$(command -v $t)" "$stage/tools/"; done
  # The libraries the two tools load beyond libc, libm, libstdc++ and libgcc, which the machine has.
  ldd "$stage/tools/wrk" "$stage/tools/h2load" | awk '/=> \// { print $3 }' |
    { grep -vE '/lib(c|m|pthread|stdc\+\+|gcc_s|dl|rt)\.so' || true; } | sort -u | xargs -r -I{} cp -L {} "$stage/tools/lib/"
  git rev-parse HEAD >"$stage/commit"
  # One xz archive: the working tree and what it carries must fit 64 MiB (the binary alone is 40).
  mkdir -p .dev
  tar -C "$stage" -cf - . | xz -T0 -6 >.dev/pack.tar.xz
  ls -l .dev/pack.tar.xz
  exit 0
fi

# There: unpack what --pack made (python's lzma where xz is missing).
if [[ ! -x .dev/framebench || .dev/pack.tar.xz -nt .dev/framebench ]]; then
  if command -v xz >/dev/null; then
    xz -dc .dev/pack.tar.xz | tar -C .dev -xf -
  else
    python3 -c 'import tarfile; tarfile.open(".dev/pack.tar.xz").extractall(".dev")'
  fi
  touch .dev/framebench
fi

RES=${RES:-/tmp/fb-res}
DEADLINE=${DEADLINE:-$(( $(date +%s) + 540 ))}
SEED002=${SEED002:-raw,actix,hyper,iron,nickel,rocket,gotham,may-minihttp}
THREADS=${THREADS:-1,2,4,8}
CELL=${CELL:-1s}
WARMUP=${WARMUP:-0.3s}
for v in "$CELL" "$WARMUP"; do
  [[ $v =~ ^[0-9]+(\.[0-9]+)?s$ ]] || { echo "CELL and WARMUP are seconds, as 1s or 0.3s: $v" >&2; exit 2; }
done
wide=${THREADS##*,}
h2c_threads=$([[ $wide == 1 ]] && echo 1 || echo "1,$wide")
# wrk and h2load take whole seconds.
whole=$(awk -v c="${CELL%s}" 'BEGIN { d = int(c + 0.5); print (d < 1 ? 1 : d) }')
fb=$PWD/.dev/framebench
FRAMEBENCH_COMMIT=$(cat .dev/commit)
export FRAMEBENCH_GO_PEERS_DIR=$PWD/.dev/go-peers FRAMEBENCH_WRK=$PWD/.dev/tools/wrk \
  FRAMEBENCH_H2LOAD=$PWD/.dev/tools/h2load FRAMEBENCH_COMMIT LD_LIBRARY_PATH=$PWD/.dev/tools/lib
mkdir -p "$RES"
# On the lent machine, what it measured comes back as one archive of $RES (and the log beside),
# written again after each part, so that a call killed at its limit still returns what ran.
pack_results() { [[ -z "${OUT:-}" ]] || tar -czf "$OUT/res.tgz" -C "$RES" .; }
trap pack_results EXIT
# The binary looks for the Go sources at the path it was built in, and without `go` there it would
# skip the peers rather than run the built ones: where that path is this copy, move them aside.
command -v go >/dev/null || [[ ! -d peers/go ]] || mv peers/go /tmp/peers-go-unused
# The halves scale takes: the server's CPUs first, the client's after; every file names the count.
cpus=$(nproc)
server_cpus=$(seq -s, 0 $(( cpus / 2 - 1 )))
client_cpus=$(seq -s, $(( cpus / 2 )) $(( cpus - 1 )))
tag=$cpus-cpus

# Runs framebench with "$@" until the deadline, sending SIGINT there (to framebench alone, not
# its servers), writing its --json and --markdown as $RES/partial/NAME.*, and moves them to
# $RES/NAME.* only when it ran whole (exit 0, or 1 where a row failed), so that a part stopped
# early runs again in the next call instead of passing for done. Skipped, with one line, when
# fewer than NEED seconds are left.
run_whole() {
  local name=$1 need=$2 left rc=0
  shift 2
  left=$(( DEADLINE - $(date +%s) ))
  if (( left < need )); then
    echo "skipped (needs ${need} s, ${left} s left): $name"
    return 0
  fi
  mkdir -p "$RES/partial"
  timeout --foreground -s INT -k 20 "$left" "$fb" "$@" --json "$RES/partial/$name.json" \
    --markdown "$RES/partial/$name.md" || rc=$?
  if (( rc == 0 || rc == 1 )) && [[ -f $RES/partial/$name.json ]]; then
    mv "$RES/partial/$name.json" "$RES/partial/$name.md" "$RES/"
  else
    echo "$name: exit $rc, not kept"
  fi
}

# Runs a comparison script ("$@", with its variables set by the caller) into $RES/FILE, bounded
# by the deadline, keeping the file only when the script ended well.
run_script() {
  local file=$1 need=$2 left
  shift 2
  left=$(( DEADLINE - $(date +%s) ))
  (( left >= need )) || { echo "skipped (needs ${need} s, ${left} s left): $file"; return 0; }
  if timeout -k 10 "$left" "$@" >"$RES/$file.part"; then
    mv "$RES/$file.part" "$RES/$file"
  else
    echo "$file: exit $?, not kept"
  fi
}

hello() {
  [[ -f $RES/hello.done ]] && { echo "hello: done already"; return 0; }
  # A second call on a machine that lost the first call's files would start the sweep again and
  # run out of time: it leaves hello alone instead.
  if [[ -n "${RESUME_ONLY:-}" && ! -f $RES/$tag.json ]]; then
    echo "hello: no partial sweep in $RES to resume (RESUME_ONLY)"
    return 0
  fi
  local args=(scale --threads "$THREADS" --scenarios hello -d "$CELL" --warmup "$WARMUP" --rounds 3
    --quiet --json "$RES/$tag.json" --markdown "$RES/$tag.md")
  [[ -f $RES/$tag.json ]] && args+=(--resume "$RES/$tag.json")
  local rc=0 left=$(( DEADLINE - $(date +%s) ))
  (( left >= 30 )) || { echo "skipped (needs 30 s, ${left} s left): hello"; return 0; }
  touch "$RES/hello.started"
  timeout --foreground -s INT -k 20 "$left" "$fb" "${args[@]}" || rc=$?
  # 0, or 1 when some row had a round that failed, with a file written by this run: the sweep
  # ran whole. 124 (the deadline's SIGINT) or 130: stopped early, resumed by the next call.
  if (( rc == 0 || rc == 1 )) && [[ $RES/$tag.json -nt $RES/hello.started ]]; then
    touch "$RES/hello.done"
  fi
  echo "hello: exit $rc"
}

seed002() {
  local p name
  for p in 1 128; do
    name=002-t$wide-$tag-$([[ $p == 1 ]] && echo plain || echo pipelined)
    [[ -f $RES/$name.json ]] && continue
    run_whole "$name" 60 compare --frameworks "$SEED002" --scenarios hello -c 100 --pipeline "$p" \
      --threads "$wide" --server-cpus "$server_cpus" --client-cpus "$client_cpus" -d "$CELL" \
      --warmup "$WARMUP" --rounds 3 --quiet
  done
}

wrk() {
  [[ -f $RES/$tag-vs-wrk.md ]] && return 0
  DURATION=${whole}s CONNS=256 TARGETS="raw actix" THREADS=$wide CLIENT_THREADS=$wide \
    SERVER_CPUS=$server_cpus CLIENT_CPUS=$client_cpus ROUNDS=3 MODES_AT=none FRAMEBENCH=$fb \
    run_script "$tag-vs-wrk.md" 40 scripts/vs-wrk.sh
}

h2c() {
  [[ -f $RES/$tag-h2c.json ]] ||
    run_whole "$tag-h2c" 60 scale --protocol h2c -m 100 -c 32 --threads "$h2c_threads" \
      --runtime work-stealing --frameworks raw,hyper,actix,xitca,ntex,go-nethttp --scenarios hello \
      -d "$CELL" --warmup "$WARMUP" --rounds 3 --quiet
  [[ -f $RES/$tag-vs-h2load.md ]] && return 0
  DURATION=$whole CONNS=$wide STREAMS=100 TARGETS="raw hyper" THREADS=$wide CLIENT_THREADS=$wide \
    SERVER_CPUS=$server_cpus CLIENT_CPUS=$client_cpus ROUNDS=3 FRAMEBENCH=$fb \
    run_script "$tag-vs-h2load.md" 30 scripts/vs-h2load.sh
}

echo "many-cores: $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), Linux $(uname -r), build $FRAMEBENCH_COMMIT, $(( DEADLINE - $(date +%s) )) s to the deadline"
for part in "$@"; do
  case $part in
    hello | seed002 | wrk | h2c)
      echo "== $part $(date -u +%H:%M:%S)"
      "$part" || echo "$part failed: exit $?"
      pack_results
      ;;
    *) echo "unknown part $part (hello, seed002, wrk, h2c)" >&2; exit 2 ;;
  esac
done
echo "== end $(date -u +%H:%M:%S)"
