#!/bin/bash
# The fuzzing campaign (issue 15): every libFuzzer target, each for MINUTES on its seed corpus. Builds
# halfguard with clang into BUILD_DIR with coverage and ASan+UBSan everywhere (the library too, so the
# fuzzer sees inside the readers), then runs fuzz_load (the model loader and saver) and fuzz_text,
# fuzz_npy, fuzz_pb, fuzz_stats, fuzz_ini (tests/fuzz_inputs.c). A crash input is written to
# bench/out/fuzz/TARGET/; add it to the target's seeds in tests/meson.build (tests/fuzz_seeds/) so the
# fuzz-replay tests keep it. Prints each target's last libFuzzer stats line (executions, coverage).
#
# Usage: bench/fuzz.sh [MINUTES [BUILD_DIR [TARGET...]]]   (default 30 minutes each, build-fuzz, all six)
# A run over 30 s on one input (-timeout) or past 2 GiB of RSS counts as a failure, as a crash does.
set -euo pipefail
minutes=${1:-30}
build=${2:-build-fuzz}
shift $(( $# > 2 ? 2 : $# ))
targets=${*:-load text npy pb stats ini}
cd "$(dirname "$0")/.."
if [ ! -f "$build/build.ninja" ]; then
  CC=clang meson setup "$build" --buildtype=debugoptimized -Db_lundef=false \
    -Dc_args=-fsanitize=fuzzer-no-link,address,undefined -Dc_link_args=-fsanitize=address,undefined
fi
ninja -C "$build"
testdata=/usr/share/libonnx-testdata/data
seeds() {
  case $1 in
    load) ls examples/*.onnx "$testdata"/node/test_if/model.onnx "$testdata"/node/test_loop11/model.onnx ;;
    text) ls golden/*/*.onnxtxt ;;
    npy) ls tests/fuzz_seeds/*.npy ;;
    pb) ls "$testdata"/node/test_abs/test_data_set_0/*.pb "$testdata"/node/test_cast_FLOAT_to_STRING/test_data_set_0/*.pb ;;
    stats) ls tests/fuzz_seeds/*.json ;;
    ini) ls tests/fuzz_seeds/*.ini ;;
  esac
}
status=0
for t in $targets; do
  exe=$build/tests/fuzz_${t}_libfuzzer
  corpus=bench/out/fuzz/$t/corpus
  mkdir -p "$corpus"
  seeds "$t" | while read -r f; do cp "$f" "$corpus/"; done
  echo "=== fuzz_$t: $minutes min"
  if ! "$exe" -max_total_time=$((minutes * 60)) -print_final_stats=1 -timeout=30 -rss_limit_mb=2048 -artifact_prefix="bench/out/fuzz/$t/" \
      "$corpus" > "bench/out/fuzz/$t/log.txt" 2>&1; then
    echo "fuzz_$t: CRASH, see bench/out/fuzz/$t/"
    status=1
  fi
  grep -E '^#[0-9]+ *DONE|stat::number_of_executed_units|cov:' "bench/out/fuzz/$t/log.txt" | tail -n 2
done
exit $status
