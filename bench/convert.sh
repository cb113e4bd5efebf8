#!/bin/bash
# Speed of `halfguard convert` on a large model without calibration, against `cp` of the same file,
# measured in the same run, alternating. Prints figures and ratios; it is not a timed test. See
# bench/RESULTS.md.
#
# Usage: bench/convert.sh BUILD_DIR [--size-mib N] [--arch mlp|cnn|transformer|both|all] [--runs N] [--warmup N] [--keep]
#   BUILD_DIR       a meson build of halfguard (BUILD_DIR/halfguard, BUILD_DIR/bench/gen_model);
#                   HALFGUARD=... and GEN_MODEL=... override the two paths
#   --size-mib N    size of the generated model's embedded weights in MiB (default 1024)
#   --arch A        mlp: MatMul layers 4096 wide; cnn: 3x3 Conv layers 1024 channels wide and a Gemm
#                   head; transformer: pre-norm blocks 1024 wide, LayerNorm decomposed at opset 13
#                   (issue 14's case); both (default): mlp then cnn; all: the three (gen_model --arch)
#   --runs N        timed runs of each command; the median is kept (default 5)
#   --warmup N      untimed rounds first (default 1)
#   --keep          keep the generated models (they are reused by the next run)
# Scratch folder: $BENCH_TMP, default bench/out/ (git-ignored); it should be on a disk, not tmpfs,
# since cp is the reference. Needs GNU time (apt-get install time) and ~3x the model size free.
#
# Target (issue 5): convert's median time <= 3.0 x cp's median. Peak RSS of convert is printed as a
# ratio of the file size, with no target. The command measured is
#   halfguard convert MODEL -o OUT --input-range '*=0:1' > /dev/null
# with the default passes; its time includes writing OUT (convert saves atomically: a temporary file,
# fsync, rename), as cp's includes writing its copy. Exit status 0 counts as success. One untimed run
# first keeps convert's summary line (FP32 islands, Casts, FP16 share) and checks that OUT was written.
# The model is read once (cat > /dev/null) so both commands find it in the page cache; the copy and OUT
# are deleted and an untimed `sync` runs before every timed command, so one command's write-back does
# not land on the other's clock.
set -euo pipefail

sub=convert scratch=(copy.onnx out.onnx)
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "$0")/lib.sh"
bench_parse "$@"
bench_setup
bench_header src include passes

for a in "${archs[@]}"; do
  bench_model "$a"
  out=$d/out.onnx
  cp_cmd=(cp "$in" "$d/copy.onnx")
  cmd=("$hg" convert "$in" -o "$out" --input-range '*=0:1')
  echo; echo "$a: convert of a $(mib "$size") MiB model with embedded weights, against cp"
  warm "$in"

  # One untimed run that keeps the summary line: the model must have been converted and written.
  rm -f "$out"
  measure res "0" "$d/convert.txt" "${cmd[@]}"
  line=$(grep -F -- "-> $out:" "$d/convert.txt" | tail -n 1) || true
  if [ -z "$line" ] || [ ! -s "$out" ]; then
    echo "$me: convert wrote no summary line or no $out" >&2; cat "$d/convert.txt" >&2; exit 1
  fi
  printf '  summary: %s\n' "${line#*"-> $out: "}"
  printf '  output: %s MiB (%s x the input), exit %s\n' "$(mib "$(fsize "$out")")" "$(ratio "$(fsize "$out")" "$size")" "${res##* }"
  rm -f "$out" "$d/convert.txt"

  bench_rounds "0"
  bench_figures 3.0
done
bench_finish
