#!/bin/bash
# Issue 14's large-model case: convert of a model whose FP32 weights (4.5 GiB by default) are in
# external data, against `cp` of its data file, measured in the same run. Prints figures and ratios;
# it is not a test and fails nothing. See bench/RESULTS.md.
#
# Usage: bench/large.sh BUILD_DIR [--size-mib N] [--dim N] [--runs N] [--passes LIST] [--verify] [--keep]
#   BUILD_DIR     a meson build (BUILD_DIR/halfguard, BUILD_DIR/bench/gen_model); HALFGUARD=... and
#                 GEN_MODEL=... override them
#   --size-mib N  the weights, in MiB (default 4608)
#   --dim N       the transformer's width (default 2048: 23 blocks at 4.5 GiB, as deep as the 1 GiB
#                 case at 1024; at 1024 the 95 blocks make rescale run its synthetic probe)
#   --runs N      rounds of (cp, convert), alternating; the best time and the largest RSS are kept
#                 (default 1)
#   --passes LIST convert's --passes (default: all)
#   --verify      also run `halfguard verify` of the output against the input on one synthetic
#                 input set (--random 1), timed
#   --keep        keep the generated model (reused by the next run)
# Scratch: $BENCH_TMP, default bench/out/large (git-ignored): about 2.5 x the model. Needs GNU time.
# The command measured: halfguard convert MODEL -o OUT -r '*=0:1' --no-config [--passes LIST].
# Targets: OUT under 2 GiB, peak RSS <= 300 MiB, wall <= 3 x cp of the data file, verify passes.
set -euo pipefail

me=$(basename "$0")
usage() { awk 'NR >= 5 && !/^#/ { exit } NR >= 5 { sub(/^# ?/, ""); print }' "$0"; exit 2; }
[ $# -ge 1 ] || usage
build=$1; shift
size=4608 dim=2048 runs=1 passes="" verify=0 keep=0
while [ $# -gt 0 ]; do
  case $1 in
    --size-mib) size=$2; shift 2 ;;
    --dim) dim=$2; shift 2 ;;
    --runs) runs=$2; shift 2 ;;
    --passes) passes=$2; shift 2 ;;
    --verify) verify=1; shift ;;
    --keep) keep=1; shift ;;
    *) echo "$me: unknown argument '$1'" >&2; usage ;;
  esac
done
hg=${HALFGUARD:-$build/halfguard}
gen=${GEN_MODEL:-$build/bench/gen_model}
d=${BENCH_TMP:-$(dirname "$0")/out/large}
mkdir -p "$d"
model=$d/large.onnx data=$d/large.onnx.data out=$d/out.onnx copy=$d/copy.data
[ -x /usr/bin/time ] || { echo "$me: needs GNU time (apt-get install time)" >&2; exit 2; }

cleanup() { rm -f "$out" "$out.data" "$copy"; [ "$keep" = 1 ] || rm -f "$model" "$data"; }
trap cleanup EXIT

if [ ! -s "$model" ] || [ ! -s "$data" ]; then
  echo "generating $size MiB transformer (dim $dim) with external data ..."
  "$gen" "$model" "$size" --arch transformer --dim "$dim" --external large.onnx.data > /dev/null
fi
data_bytes=$(stat -c %s "$data")
echo "model: $(stat -c %s "$model") bytes + data $data_bytes bytes ($(awk -v b="$data_bytes" 'BEGIN { printf "%.1f", b / 1048576 }') MiB)"
echo "halfguard: $hg ($(git -C "$(dirname "$0")" rev-parse --short HEAD 2>/dev/null || echo ?)), $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg)"
cat "$data" > /dev/null # in the page cache for both commands

# timed OUTFILE CMD...: GNU time's wall seconds, user, sys and peak RSS (KiB) into OUTFILE's last line
timed() { local f=$1; shift; /usr/bin/time -o "$f" -f "%e %U %S %M" "$@"; }
best_cp="" best_hg="" rss=0 ucpu="" scpu=""
cmd=("$hg" convert "$model" -o "$out" -r '*=0:1' --no-config)
[ -n "$passes" ] && cmd+=(--passes "$passes")
for ((i = 1; i <= runs; i++)); do
  rm -f "$copy" "$out" "$out.data"; sync
  timed "$d/t.cp" cp "$data" "$copy"
  read -r w _ _ _ < "$d/t.cp"
  best_cp=$(awk -v a="$w" -v b="${best_cp:-1e9}" 'BEGIN { print (a < b ? a : b) }')
  rm -f "$copy" "$out" "$out.data"; sync
  timed "$d/t.hg" "${cmd[@]}" > "$d/convert.txt"
  read -r w u s m < "$d/t.hg"
  best_hg=$(awk -v a="$w" -v b="${best_hg:-1e9}" 'BEGIN { print (a < b ? a : b) }')
  [ "$m" -gt "$rss" ] && rss=$m
  ucpu=$u scpu=$s
  echo "  round $i: cp ${best_cp} s, convert $w s (user $u s, sys $s s), peak RSS $((m / 1024)) MiB"
done
onnx_bytes=$(stat -c %s "$out")
out_data=$([ -e "$out.data" ] && stat -c %s "$out.data" || echo 0)
echo "  summary: $(sed -n "s|.*-> $out: ||p" "$d/convert.txt" | cut -c1-300)"
printf '  output: .onnx %s bytes (%s 2 GiB), data file %s bytes\n' "$onnx_bytes" \
  "$([ "$onnx_bytes" -lt 2147483648 ] && echo under || echo OVER)" "$out_data"
printf '  cp of the data file (best)     %s s\n' "$best_cp"
printf '  convert wall (best)            %s s   (last round: user %s s, sys %s s)\n' "$best_hg" "$ucpu" "$scpu"
awk -v h="$best_hg" -v c="$best_cp" 'BEGIN { r = h / c; printf "  time ratio convert / cp        %.2f   target <= 3.0  %s\n", r, r <= 3 ? "PASS" : "FAIL" }'
awk -v m="$rss" 'BEGIN { printf "  convert peak RSS               %.1f MiB   target <= 300  %s\n", m / 1024, m / 1024 <= 300 ? "PASS" : "FAIL" }'
if [ "$verify" = 1 ]; then
  set +e
  timed "$d/t.v" "$hg" verify "$model" "$out" --random 1 -r '*=0:1' --no-config > "$d/verify.txt" 2>&1
  rc=$?
  set -e
  read -r w u s m < "$d/t.v"
  printf '  verify (--random 1)            exit %s, %s s, peak RSS %.1f MiB  %s\n' "$rc" "$w" "$(awk -v m="$m" 'BEGIN { print m / 1024 }')" \
    "$([ "$rc" = 0 ] && echo PASS || echo FAIL)"
  grep -v '^$' "$d/verify.txt" | head -n 6 | sed 's/^/    /'
fi
