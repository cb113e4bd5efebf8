#!/bin/bash
# Round-trip benchmark: `halfguard convert --passes none IN -o OUT` against `cp IN OUT`, measured in
# the same run, interleaved. Prints figures and ratios; it is not a timed test. See bench/RESULTS.md.
#
# Usage: bench/run.sh BUILD_DIR [--size-mib N] [--ext-size-mib N] [--runs N] [--warmup N] [--only 1|2] [--keep]
#   BUILD_DIR       a meson build of halfguard (BUILD_DIR/halfguard, BUILD_DIR/bench/gen_model);
#                   HALFGUARD=... and GEN_MODEL=... override the two paths
#   --size-mib N    case 1: model with embedded weights of N MiB (default 1024)
#   --ext-size-mib N case 2: model with external data of N MiB (default 4096)
#   --runs N        timed runs of each command, best time kept (default 3)
#   --warmup N      untimed rounds first (default 1; the first writes after generating are the noisiest)
#   --only 1|2      run one case only
#   --keep          keep the generated models (they are reused by the next run)
# Scratch folder: $BENCH_TMP, default bench/out/ (git-ignored). Needs GNU time (apt-get install time)
# or python3 for the measurements (BENCH_METER=python3 forces the latter), and ~3x the model sizes
# of free disk.
#
# Case 1 (embedded weights): time ratio halfguard/cp, target <= 2.0; peak RSS / file size, target <= 2.2.
# Case 2 (external data): peak RSS, target <= 300 MiB; time against cp of the data file (no target).
# The page cache is warmed before measuring and `sync` runs (untimed) before every timed command, so
# one command's write-back does not land on the next one's clock.
set -euo pipefail

# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "$0")/lib.sh"

[ $# -ge 1 ] || usage
build=$1; shift
size_mib=1024 ext_size_mib=4096 runs=3 warmup=1 only= keep=0
bench_options size-mib=size_mib ext-size-mib=ext_size_mib runs=runs warmup=warmup only=only keep=!keep -- "$@"
bench_counts "$warmup" "$size_mib" "$ext_size_mib" "$runs"
bench_tools
bench_scratch
# Generated models are large: remove them however the script ends, unless --keep.
cleanup() {
  if [ "$keep" = 0 ]; then
    rm -rf "$tmp/case1" "$tmp/case2"
    [ "$created_tmp" = 0 ] || rmdir "$tmp" 2>/dev/null || true
  fi
}
trap cleanup EXIT

# ---------------------------------------------------------------- measuring one command
# measure OUTVAR CMD...: runs CMD, sets OUTVAR to "SECONDS MAXRSS_KIB". GNU time when it is there,
# else python3 (wait4 gives the child's own rusage).
if [ "${BENCH_METER:-}" != python3 ] && /usr/bin/time -f '%e %M' true >/dev/null 2>&1 && /usr/bin/time --version 2>&1 | grep -q GNU; then
  meter="GNU time"
  measure() {
    local var=$1; shift
    local f; f=$(mktemp)
    if ! /usr/bin/time -o "$f" -f '%e %M' "$@" >/dev/null; then
      echo "run.sh: failed: $*" >&2; rm -f "$f"; exit 1
    fi
    printf -v "$var" '%s' "$(tail -n 1 "$f")"
    rm -f "$f"
  }
elif command -v python3 >/dev/null; then
  meter="python3 os.wait4"
  measure() {
    local var=$1; shift
    local r
    r=$(python3 -c '
import os, sys, time
t = time.monotonic()
pid = os.fork()
if pid == 0:
    fd = os.open(os.devnull, os.O_WRONLY); os.dup2(fd, 1)
    try:
        os.execvp(sys.argv[1], sys.argv[1:])
    finally:
        os._exit(127)
_, status, ru = os.wait4(pid, 0)
dt = time.monotonic() - t
if os.waitstatus_to_exitcode(status) != 0:
    sys.exit(1)
print("%.2f %d" % (dt, ru.ru_maxrss))' "$@") || { echo "run.sh: failed: $*" >&2; exit 1; }
    printf -v "$var" '%s' "$r"
  }
else
  echo "run.sh: needs GNU time (apt-get install time) or python3" >&2
  exit 2
fi

# ---------------------------------------------------------------- helpers (and lib.sh's)
minf() { awk -v a="$1" -v b="$2" 'BEGIN { print (a == "" || b < a) ? b : a }'; }
maxf() { awk -v a="$1" -v b="$2" 'BEGIN { print (a == "" || b > a) ? b : a }'; }

# Best time and largest peak RSS of each labelled command over $runs interleaved rounds, after
# $warmup untimed ones.
# bench LABEL1 'CMD1' LABEL2 'CMD2' ...; each CMD is run with eval after removing $clean.
declare -A best_t max_rss
bench() {
  local -a labels=() cmds=()
  while [ $# -gt 0 ]; do labels+=("$1"); cmds+=("$2"); shift 2; done
  for l in "${labels[@]}"; do best_t[$l]=; max_rss[$l]=; done
  for ((r = 1 - warmup; r <= runs; r++)); do
    for i in "${!labels[@]}"; do
      rm -rf "${clean[@]}"
      sync
      local res round=$r
      eval "measure res ${cmds[$i]}"
      if [ "$r" -le 0 ]; then
        round=warm-up
      else
        best_t[${labels[$i]}]=$(minf "${best_t[${labels[$i]}]}" "${res% *}")
        max_rss[${labels[$i]}]=$(maxf "${max_rss[${labels[$i]}]}" "${res#* }")
      fi
      printf '  %-7s %-10s %6.2f s %8.1f MiB\n' "$round" "${labels[$i]}" "${res% *}" "$(kib2mib "${res#* }")"
    done
  done
}

same() { if cmp -s "$1" "$2"; then echo "yes"; else echo "NO"; fi; }

echo "halfguard round-trip benchmark"
echo "  date      $(date -u +%Y-%m-%dT%H:%MZ)"
echo "  commit    $(git -C "$here/.." rev-parse --short HEAD 2>/dev/null || echo unknown)"
echo "  halfguard $hg"
echo "  machine   $(nproc) CPUs, $(awk '/MemTotal/ { printf "%.1f GiB", $2 / 1048576 }' /proc/meminfo) RAM, $tmp on $(df -PT "$tmp" | awk 'NR == 2 { print $2 }')"
echo "  meter     $meter; $warmup untimed + best of $runs runs; sync before each run"
status=0

# ---------------------------------------------------------------- case 1: embedded weights
if [ -z "$only" ] || [ "$only" = 1 ]; then
  d=$tmp/case1
  mkdir -p "$d"
  in=$d/model-${size_mib}m.onnx
  if [ ! -f "$in" ]; then
    echo; echo "generating $in ($size_mib MiB, embedded)"
    "$gen" "$in" "$size_mib"
  fi
  size=$(fsize "$in")
  clean=("$d/cp.onnx" "$d/cpsync.onnx" "$d/hg.onnx")
  echo; echo "case 1: round trip of a $(mib "$size") MiB model with embedded weights"
  warm "$in"
  bench cp "cp '$in' '$d/cp.onnx'" \
        cp+fsync "sh -c 'cp \"\$0\" \"\$1\" && sync \"\$1\"' '$in' '$d/cpsync.onnx'" \
        halfguard "'$hg' convert --passes none '$in' -o '$d/hg.onnx'"
  identical=$(same "$in" "$d/hg.onnx")
  t_ratio=$(ratio "${best_t[halfguard]}" "${best_t[cp]}")
  rss_b=$((max_rss[halfguard] * 1024))
  m_ratio=$(ratio "$rss_b" "$size")
  v1=$(verdict "$t_ratio" 2.0) v2=$(verdict "$m_ratio" 2.2)
  echo
  printf '  %-34s %s MiB (%s bytes)\n' "file size" "$(mib "$size")" "$size"
  printf '  %-34s %s s\n' "cp time" "${best_t[cp]}"
  printf '  %-34s %s s (for reference: halfguard fsyncs only when it replaces a file)\n' "cp + fsync time" "${best_t[cp+fsync]}"
  printf '  %-34s %s s\n' "halfguard time" "${best_t[halfguard]}"
  printf '  %-34s %s   target <= 2.0  %s\n' "time ratio halfguard / cp" "$t_ratio" "$v1"
  printf '  %-34s %s\n' "time ratio halfguard / (cp+fsync)" "$(ratio "${best_t[halfguard]}" "${best_t[cp+fsync]}")"
  printf '  %-34s %s MiB\n' "halfguard peak RSS" "$(kib2mib "${max_rss[halfguard]}")"
  printf '  %-34s %s   target <= 2.2  %s\n' "peak RSS / file size" "$m_ratio" "$v2"
  printf '  %-34s %s\n' "output identical to input (cmp)" "$identical"
  [ "$v1$v2" = PASSPASS ] && [ "$identical" = yes ] || status=1
  rm -f "${clean[@]}"
fi

# ---------------------------------------------------------------- case 2: external data
if [ -z "$only" ] || [ "$only" = 2 ]; then
  d=$tmp/case2
  mkdir -p "$d/in"
  name=model-${ext_size_mib}m
  in=$d/in/$name.onnx
  if [ ! -f "$in" ] || [ ! -f "$d/in/$name.onnx.data" ]; then
    echo; echo "generating $in ($ext_size_mib MiB, external data in $name.onnx.data)"
    "$gen" "$in" "$ext_size_mib" --external "$name.onnx.data"
  fi
  dsize=$(fsize "$d/in/$name.onnx.data")
  mkdir -p "$d/out"
  clean=("$d/cp.data" "$d/cpsync.data" "$d/out/$name.onnx" "$d/out/$name.onnx.data")
  echo; echo "case 2: round trip of a model with $(mib "$dsize") MiB of external data"
  warm "$in" "$d/in/$name.onnx.data"
  bench cp "cp '$d/in/$name.onnx.data' '$d/cp.data'" \
        cp+fsync "sh -c 'cp \"\$0\" \"\$1\" && sync \"\$1\"' '$d/in/$name.onnx.data' '$d/cpsync.data'" \
        halfguard "'$hg' convert --passes none '$in' -o '$d/out/$name.onnx'"
  identical=$(same "$in" "$d/out/$name.onnx")
  identical_data=$(same "$d/in/$name.onnx.data" "$d/out/$name.onnx.data")
  rss_mib=$(kib2mib "${max_rss[halfguard]}")
  v3=$(verdict "$rss_mib" 300)
  echo
  printf '  %-34s %s MiB in %s; model %s bytes\n' "external data" "$(mib "$dsize")" "$name.onnx.data" "$(fsize "$in")"
  printf '  %-34s %s MiB   target <= 300  %s\n' "halfguard peak RSS" "$rss_mib" "$v3"
  printf '  %-34s %s s\n' "cp time (data file)" "${best_t[cp]}"
  printf '  %-34s %s s\n' "cp + fsync time (data file)" "${best_t[cp+fsync]}"
  printf '  %-34s %s s\n' "halfguard time" "${best_t[halfguard]}"
  printf '  %-34s %s   (no target)\n' "time ratio halfguard / cp" "$(ratio "${best_t[halfguard]}" "${best_t[cp]}")"
  printf '  %-34s %s\n' "time ratio halfguard / (cp+fsync)" "$(ratio "${best_t[halfguard]}" "${best_t[cp+fsync]}")"
  printf '  %-34s model %s, data %s\n' "output identical to input (cmp)" "$identical" "$identical_data"
  [ "$v3" = PASS ] && [ "$identical$identical_data" = yesyes ] || status=1
  rm -rf "${clean[@]}"
fi

echo
[ $status = 0 ] && echo "all targets met" || echo "some targets missed (see FAIL / NO above)"
exit $status
