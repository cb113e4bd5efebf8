#!/bin/bash
# Speed of `halfguard check` on a large model without calibration, against `cp` of the same file,
# measured in the same run, alternating. Prints figures and ratios; it is not a timed test. See
# bench/RESULTS.md.
#
# Usage: bench/check.sh BUILD_DIR [--size-mib N] [--arch mlp|cnn|both] [--runs N] [--warmup N] [--keep]
#   BUILD_DIR       a meson build of halfguard (BUILD_DIR/halfguard, BUILD_DIR/bench/gen_model);
#                   HALFGUARD=... and GEN_MODEL=... override the two paths
#   --size-mib N    size of the generated model's embedded weights in MiB (default 1024)
#   --arch A        mlp: MatMul layers 4096 wide; cnn: 3x3 Conv layers 1024 channels wide and a Gemm
#                   head; both (default): one after the other (gen_model --arch)
#   --runs N        timed runs of each command; the median is kept (default 5)
#   --warmup N      untimed rounds first (default 1)
#   --keep          keep the generated models (they are reused by the next run)
# Scratch folder: $BENCH_TMP, default bench/out/ (git-ignored); it should be on a disk, not tmpfs,
# since cp is the reference. Needs GNU time (apt-get install time) and ~2x the model size free.
#
# Target (issue 4): check's median time <= 2.0 x cp's median. Peak RSS of check is printed as a
# ratio of the file size, with no target. The command measured is
#   halfguard check MODEL --input-range '*=0:1' --format json --no-config > /dev/null
# (--no-config: a .halfguard.ini above the scratch folder must not change what is measured)
# whose exit status is 0 (clean) or 1 (hazards); both count as success, 2 is a failure. One untimed
# run first keeps its JSON and checks that the model was analysed (status clean or hazards).
# The model is read once (cat > /dev/null) so both commands find it in the page cache; the copy is
# deleted and an untimed `sync` runs before every timed command, so cp's write-back does not land on
# check's clock.
set -euo pipefail

usage() { awk 'NR >= 5 && !/^#/ { exit } NR >= 5 { sub(/^# ?/, ""); print }' "$0"; exit 2; }

[ $# -ge 1 ] || usage
build=$1; shift
size_mib=1024 arch=both runs=5 warmup=1 keep=0
while [ $# -gt 0 ]; do
  case $1 in
    --size-mib) size_mib=$2; shift 2 ;;
    --arch) arch=$2; shift 2 ;;
    --runs) runs=$2; shift 2 ;;
    --warmup) warmup=$2; shift 2 ;;
    --keep) keep=1; shift ;;
    -h|--help) usage ;;
    *) echo "check.sh: unknown argument '$1'" >&2; usage ;;
  esac
done
for n in "$size_mib" "$runs"; do
  [[ $n =~ ^[1-9][0-9]*$ ]] || { echo "check.sh: '$n' is not a positive number" >&2; exit 2; }
done
[[ $warmup =~ ^[0-9]+$ ]] || { echo "check.sh: --warmup wants a number" >&2; exit 2; }
case $arch in
  mlp|cnn) archs=("$arch") ;;
  both) archs=(mlp cnn) ;;
  *) echo "check.sh: --arch wants mlp, cnn or both" >&2; exit 2 ;;
esac

here=$(cd "$(dirname "$0")" && pwd)
hg=${HALFGUARD:-$build/halfguard}
gen=${GEN_MODEL:-$build/bench/gen_model}
tmp=${BENCH_TMP:-$here/out}
for x in "$hg" "$gen"; do
  [ -x "$x" ] || { echo "check.sh: $x is missing; build first (meson setup BUILD_DIR && ninja -C BUILD_DIR)" >&2; exit 2; }
done
"$hg" help check >/dev/null 2>&1 || { echo "check.sh: $hg has no 'check' subcommand" >&2; exit 2; }
/usr/bin/time --version 2>&1 | grep -q GNU || { echo "check.sh: needs GNU time (apt-get install time)" >&2; exit 2; }
created_tmp=0
[ -d "$tmp" ] || created_tmp=1
mkdir -p "$tmp"
tmp=$(cd "$tmp" && pwd)
fstype=$(df -PT "$tmp" | awk 'NR == 2 { print $2 }')
[ "$fstype" != tmpfs ] || echo "check.sh: warning: $tmp is on tmpfs; cp then copies memory, not a disk file" >&2
# Generated models are large: remove them however the script ends, unless --keep.
cleanup() {
  rm -f "$tmp"/check-*/copy.onnx
  if [ "$keep" = 0 ]; then
    rm -rf "$tmp"/check-mlp "$tmp"/check-cnn
    [ "$created_tmp" = 0 ] || rmdir "$tmp" 2>/dev/null || true
  fi
}
trap cleanup EXIT

# ---------------------------------------------------------------- measuring one command
# measure OUTVAR OKCODES STDOUT CMD...: runs CMD with stdout to STDOUT and sets OUTVAR to
# "SECONDS MAXRSS_KIB USER_S SYS_S EXIT". The wall time is bash's clock around GNU time (finer than
# its %e, and the same fork overhead for every command); RSS and CPU times are GNU time's. An exit
# status outside OKCODES (a space-separated list) stops the script and shows CMD's stderr.
measure() {
  local var=$1 ok=$2 out=$3; shift 3
  local f e rc=0 t0 t1
  f=$(mktemp) e=$(mktemp)
  t0=$EPOCHREALTIME
  /usr/bin/time -o "$f" -f '%M %U %S' "$@" >"$out" 2>"$e" || rc=$?
  t1=$EPOCHREALTIME
  if [[ " $ok " != *" $rc "* ]]; then
    echo "check.sh: exit status $rc: $*" >&2; head -n 20 "$e" >&2; rm -f "$f" "$e"; exit 1
  fi
  printf -v "$var" '%s %s %s' "$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f", b - a }')" "$(tail -n 1 "$f")" "$rc"
  rm -f "$f" "$e"
}

# ---------------------------------------------------------------- helpers
fsize() { stat -c %s "$1"; }
mib() { awk -v b="$1" 'BEGIN { printf "%.1f", b / 1048576 }'; }
kib2mib() { awk -v k="$1" 'BEGIN { printf "%.1f", k / 1024 }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "inf" }'; }
verdict() { awk -v v="$1" -v t="$2" 'BEGIN { print (v <= t) ? "PASS" : "FAIL" }'; }
# median, min, max of the arguments
median() { printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END { printf "%.3f", NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
minmax() { printf '%s\n' "$@" | sort -g | awk 'NR == 1 { lo = $1 } { hi = $1 } END { printf "%.3f-%.3f", lo, hi }'; }
maxof() { printf '%s\n' "$@" | sort -g | tail -n 1; }
warm() { cat "$@" >/dev/null; }

# summary JSON: "STATUS HAZARDS UNRANGED" of the first model of check's JSON report
summary() {
  python3 -c '
import json, sys
r = json.load(open(sys.argv[1]))
assert r.get("format") == "halfguard-check", "not a halfguard-check report"
m = r["models"][0]
print(m.get("status"), r.get("hazards"), ",".join(m.get("unranged_inputs") or []) or "-")' "$1"
}

echo "halfguard check benchmark"
echo "  date      $(date -u +%Y-%m-%dT%H:%MZ)"
echo "  commit    $(git -C "$here/.." rev-parse --short HEAD 2>/dev/null || echo unknown)$(git -C "$here/.." diff --quiet HEAD -- src include 2>/dev/null || echo ' (src/ or include/ modified)')"
echo "  halfguard $hg"
echo "  machine   $(nproc) CPUs, $(awk '/MemTotal/ { printf "%.1f GiB", $2 / 1048576 }' /proc/meminfo) RAM, $(. /etc/os-release 2>/dev/null && echo "${PRETTY_NAME:-?}"), $tmp on $fstype"
echo "  meter     bash clock + GNU time; $warmup untimed + median of $runs alternating runs; sync before each run"
status=0

for a in "${archs[@]}"; do
  d=$tmp/check-$a
  mkdir -p "$d"
  in=$d/model-$a-${size_mib}m.onnx
  if [ ! -f "$in" ]; then
    echo; echo "generating $in ($size_mib MiB, $a, embedded)"
    "$gen" "$in" "$size_mib" --arch "$a"
  fi
  size=$(fsize "$in")
  copy=$d/copy.onnx
  cp_cmd=(cp "$in" "$copy")
  check_cmd=("$hg" check "$in" --input-range '*=0:1' --format json --no-config)
  echo; echo "$a: check of a $(mib "$size") MiB model with embedded weights, against cp"
  warm "$in"

  # One untimed run that keeps the report: the model must have been analysed, not skipped.
  measure res "0 1" "$d/check.json" "${check_cmd[@]}"
  sum=$(summary "$d/check.json") || { echo "check.sh: unexpected report in $d/check.json" >&2; exit 1; }
  read -r st nhaz unranged <<<"$sum"
  printf '  report: status %s, %s hazards, exit %s, unranged inputs: %s\n' "$st" "$nhaz" "${res##* }" "$unranged"
  case $st in clean|hazards) ;; *) echo "check.sh: check did not analyse the model (status $st)" >&2; exit 1 ;; esac

  t_cp=() t_ck=() u_ck=() rss_ck=()
  for ((r = 1 - warmup; r <= runs; r++)); do
    for label in cp check; do
      rm -f "$copy"
      sync
      if [ $label = cp ]; then
        measure res "0" /dev/null "${cp_cmd[@]}"
      else
        measure res "0 1" /dev/null "${check_cmd[@]}"
      fi
      read -r t rss ut stt rc <<<"$res"
      round=$r
      if [ "$r" -le 0 ]; then
        round=warm-up
      elif [ $label = cp ]; then
        t_cp+=("$t")
      else
        t_ck+=("$t") rss_ck+=("$rss")
        u_ck+=("$(awk -v a="$ut" -v b="$stt" 'BEGIN { printf "%.2f", a + b }')")
      fi
      printf '  %-7s %-6s %7.3f s %8.1f MiB  user %5.2f s  sys %5.2f s  exit %s\n' "$round" "$label" "$t" "$(kib2mib "$rss")" "$ut" "$stt" "$rc"
    done
  done
  rm -f "$copy"

  m_cp=$(median "${t_cp[@]}") m_ck=$(median "${t_ck[@]}")
  t_ratio=$(ratio "$m_ck" "$m_cp")
  rss_kib=$(maxof "${rss_ck[@]}")
  m_ratio=$(ratio "$((rss_kib * 1024))" "$size")
  v=$(verdict "$t_ratio" 2.0)
  echo
  printf '  %-30s %s MiB (%s bytes)\n' "file size" "$(mib "$size")" "$size"
  printf '  %-30s %s s (%s)\n' "cp time, median (range)" "$m_cp" "$(minmax "${t_cp[@]}")"
  printf '  %-30s %s s (%s)\n' "check time, median (range)" "$m_ck" "$(minmax "${t_ck[@]}")"
  printf '  %-30s %s s\n' "check user + sys, median" "$(median "${u_ck[@]}")"
  printf '  %-30s %s   target <= 2.0  %s\n' "time ratio check / cp" "$t_ratio" "$v"
  printf '  %-30s %s MiB\n' "check peak RSS (largest)" "$(kib2mib "$rss_kib")"
  printf '  %-30s %s   (no target)\n' "peak RSS / file size" "$m_ratio"
  [ "$v" = PASS ] || status=1
done

echo
[ $status = 0 ] && echo "all targets met" || echo "some targets missed (see FAIL above)"
exit $status
