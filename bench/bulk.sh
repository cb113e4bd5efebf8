#!/bin/bash
# Throughput of `halfguard convert` over a tree of small models (issue 14): one command with --jobs 1
# and with --jobs N, against one halfguard process per model in a shell loop, in the same run,
# alternating. Prints models per second; it is not a timed test. See bench/RESULTS.md.
#
# Usage: bench/bulk.sh BUILD_DIR [--models N] [--jobs N] [--runs N]
#   BUILD_DIR     a meson build of halfguard (BUILD_DIR/halfguard; HALFGUARD=... overrides it)
#   --models N    models in the tree (default 1000): ONNX's node tests (/usr/share/libonnx-testdata),
#                 in name order and again from the start, each model.onnx in a folder of its own
#   --jobs N      the parallel command's --jobs (default: the number of cores)
#   --runs N      timed runs of each command; the median is kept (default 3)
# Scratch folder: $BENCH_TMP/bulk, default bench/out/bulk (git-ignored). Every command converts with
# the default passes and options (synthetic calibration for inputs without a range), each output at
# its mirrored path, and its output folder is deleted and `sync` run before it is timed.
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "$0")/lib.sh"
[ $# -ge 1 ] || usage
build=$1; shift
models=1000 jobs=$(nproc) runs=3
bench_options models=models jobs=jobs runs=runs -- "$@"
bench_counts 0 "$models" "$jobs" "$runs"
hg=$(realpath "${HALFGUARD:-$build/halfguard}")
node=/usr/share/libonnx-testdata/data/node
[ -x "$hg" ] || { echo "$me: no $hg" >&2; exit 2; }
[ -d "$node" ] || { echo "$me: no $node (apt-get install libonnx-testdata)" >&2; exit 2; }
d=${BENCH_TMP:-$(dirname "$0")/out}/bulk
rm -rf "$d"; mkdir -p "$d/tree"

mapfile -t names < <(cd "$node" && for t in *; do [ -f "$t/model.onnx" ] && echo "$t"; done)
for ((i = 0; i < models; i++)); do
  t=${names[i % ${#names[@]}]}
  mkdir -p "$d/tree/$(printf '%04d' "$i")_$t"
  cp "$node/$t/model.onnx" "$d/tree/$(printf '%04d' "$i")_$t/model.onnx"
done
mapfile -t files < <(cd "$d" && find tree -name model.onnx | LC_ALL=C sort)

loop() { for f in "${files[@]}"; do mkdir -p "out/${f%/*}"; "$hg" convert "$f" -o "out/$f" > /dev/null 2>&1 || true; done; }
j1() { "$hg" convert tree -O out/tree --jobs 1 > /dev/null 2>&1 || true; }
jn() { "$hg" convert tree -O out/tree --jobs "$jobs" > /dev/null 2>&1 || true; }

declare -A times=()
cd "$d"
for ((r = 0; r < runs; r++)); do
  for c in j1 jn loop; do
    rm -rf out; sync
    t0=$(date +%s.%N); "$c"; t1=$(date +%s.%N)
    times[$c]+="$(echo "$t1 - $t0" | bc) "
  done
done
written=$(find out/tree -name model.onnx | wc -l)
echo "halfguard $("$hg" --version | cut -d' ' -f2), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "$models models (ONNX node tests), $written converted; median of $runs runs:"
for c in j1 jn loop; do
  # shellcheck disable=SC2086  # the runs, one word each
  m=$(median ${times[$c]})
  case $c in j1) label="convert tree --jobs 1" ;; jn) label="convert tree --jobs $jobs" ;; loop) label="one process per model" ;; esac
  printf '  %-26s %7.2f s  %7.1f models/s   (runs: %s)\n' "$label" "$m" "$(echo "$models / $m" | bc -l)" "${times[$c]% }"
done
rm -rf "$d"
