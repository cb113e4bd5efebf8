#!/bin/bash
# Acceptance: `halfguard convert --passes none IN -o OUT` reproduces IN byte for byte, for every
# model.onnx of Debian's libonnx-testdata and every .onnx of the shared corpus.
# Usage: roundtrip.sh HALFGUARD [FILE...]   (files default to both collections)
set -u
hg=$1; shift
testdata=${HG_TESTDATA:-/usr/share/libonnx-testdata/data}
corpus=${HG_CORPUS:-$(dirname "$0")/../../shared/corpus}
out=$(mktemp -d); trap 'rm -rf "$out"' EXIT
if [ $# -eq 0 ]; then
  [ -d "$testdata" ] || { echo "missing $testdata (apt-get install libonnx-testdata)"; exit 1; }
  # a clone without ../shared: the test data alone
  [ -d "$corpus" ] || { echo "note: $corpus is absent: the test data only"; corpus=; }
  mapfile -t files < <( (find "$testdata" -name model.onnx; [ -z "$corpus" ] || find "$corpus" -name '*.onnx') | sort)
else
  files=("$@")
fi
pass=0; fail=0
for f in "${files[@]}"; do
  rm -f "$out/m.onnx"
  if "$hg" convert --passes none "$f" -o "$out/m.onnx" >/dev/null 2>"$out/err" && cmp -s "$f" "$out/m.onnx"; then
    pass=$((pass + 1))
  else
    fail=$((fail + 1))
    echo "FAIL $f: $(tail -n 1 "$out/err")"
  fi
done
echo "${#files[@]} models"
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ] && [ "$pass" -gt 0 ]
