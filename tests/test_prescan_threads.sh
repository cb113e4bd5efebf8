#!/bin/bash
# The analysis reads large weights in two threads (src/ranges.c, prescan_weights; from 256 MiB of
# weights, lowered here by HALFGUARD_TEST_PRESCAN_THREADS_MIN): a conversion with the threads writes
# the same bytes as one without, and under helgrind (when valgrind is there and the build is not
# sanitized) the threads share nothing unlocked. The helgrind run has --no-probe: the underflow
# probe runs the model, and helgrind reports OpenBLAS's own thread pool, which is not ours to check.
#
# Usage: test_prescan_threads.sh HALFGUARD GEN_MODEL SANITIZE
set -uo pipefail
hg=$1 gen=$2 sanitize=$3
tmp=$(mktemp -d "${TMPDIR:-/tmp}/hg-prescan-XXXXXX")
trap 'rm -rf "$tmp"' EXIT
fail=0
ok() { echo "ok   $1"; }
bad() { echo "FAIL $1: $2"; fail=1; }

# 6 MiB of weights in external data: 16 blocks of width 128, every weight past 64 KiB.
"$gen" "$tmp/m.onnx" 6 --arch transformer --dim 128 --external m.onnx.data > /dev/null || { echo "gen_model failed"; exit 1; }
conv() { mkdir -p "$tmp/$1" && "$hg" convert "$tmp/m.onnx" -o "$tmp/$1/out.onnx" -r '*=0:1' --no-config; }
conv one > "$tmp/one.txt" 2>&1 || bad one-thread "$(cat "$tmp/one.txt")"
HALFGUARD_TEST_PRESCAN_THREADS_MIN=1 conv two > "$tmp/two.txt" 2>&1 || bad two-threads "$(cat "$tmp/two.txt")"
if cmp -s "$tmp/one/out.onnx" "$tmp/two/out.onnx" && cmp -s "$tmp/one/out.onnx.data" "$tmp/two/out.onnx.data"; then
  ok same-bytes
else
  bad same-bytes "the converted model differs with the prescan threads"
fi
[ -s "$tmp/two/out.onnx.data" ] && ok data-written || bad data-written "no external data written"

if [ "$sanitize" = none ] && command -v valgrind > /dev/null; then
  mkdir -p "$tmp/hel"
  if HALFGUARD_TEST_PRESCAN_THREADS_MIN=1 valgrind --tool=helgrind --error-exitcode=1 --quiet \
      "$hg" convert "$tmp/m.onnx" -o "$tmp/hel/out.onnx" -r '*=0:1' --no-config --no-probe > "$tmp/hel.txt" 2>&1; then
    ok helgrind
  else
    bad helgrind "$(grep -m 20 -A 12 'Possible data race' "$tmp/hel.txt")"
  fi
  cmp -s "$tmp/one/out.onnx.data" "$tmp/hel/out.onnx.data" && ok helgrind-same-bytes || bad helgrind-same-bytes "differs"
else
  echo "(helgrind not run: sanitize=$sanitize or no valgrind)"
fi
exit $fail
