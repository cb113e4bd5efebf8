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

sub=check scratch=(copy.onnx)
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "$0")/lib.sh"
bench_parse "$@"
bench_setup

# summary JSON: "STATUS HAZARDS UNRANGED" of the first model of check's JSON report
summary() {
  python3 -c '
import json, sys
r = json.load(open(sys.argv[1]))
assert r.get("format") == "halfguard-check", "not a halfguard-check report"
m = r["models"][0]
print(m.get("status"), r.get("hazards"), ",".join(m.get("unranged_inputs") or []) or "-")' "$1"
}

bench_header src include

for a in "${archs[@]}"; do
  bench_model "$a"
  cp_cmd=(cp "$in" "$d/copy.onnx")
  cmd=("$hg" check "$in" --input-range '*=0:1' --format json --no-config)
  echo; echo "$a: check of a $(mib "$size") MiB model with embedded weights, against cp"
  warm "$in"

  # One untimed run that keeps the report: the model must have been analysed, not skipped.
  measure res "0 1" "$d/check.json" "${cmd[@]}"
  sum=$(summary "$d/check.json") || { echo "$me: unexpected report in $d/check.json" >&2; exit 1; }
  read -r st nhaz unranged <<<"$sum"
  printf '  report: status %s, %s hazards, exit %s, unranged inputs: %s\n' "$st" "$nhaz" "${res##* }" "$unranged"
  case $st in clean|hazards) ;; *) echo "$me: check did not analyse the model (status $st)" >&2; exit 1 ;; esac

  bench_rounds "0 1"
  bench_figures 2.0
done
bench_finish
