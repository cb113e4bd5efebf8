#!/bin/bash
# One golden case: golden/<pass>/<case>.onnxtxt runs through `convert --passes <pass>` and the text
# dump after the pass must equal golden/<pass>/<case>.expected. The saved model must load back.
# A line "# @args: ..." in the input adds options to convert (e.g. --shapes x:2x3); a line
# "# @passes: a,b,<pass>" runs those passes (the dump is still taken after <pass>), for a pass that
# needs another before it (lower after assign_precision).
# HALFGUARD_GOLDEN_UPDATE=1 rewrites the .expected file instead, so a change shows up as a diff.
# Usage: golden.sh HALFGUARD golden/<pass>/<case>.onnxtxt
set -u
hg=$1; input=$2
pass=$(basename "$(dirname "$input")")
expected=${input%.onnxtxt}.expected
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
read -r -a extra <<<"$(sed -n 's/^# @args: *//p' "$input" | tr '\n' ' ')"
passes=$(sed -n 's/^# @passes: *//p' "$input" | head -n 1)
if ! "$hg" convert --passes "${passes:-$pass}" --dump-after "$pass" "${extra[@]}" "$input" -o "$tmp/out.onnx" >"$tmp/dump" 2>"$tmp/err"; then
  echo "convert failed:"; cat "$tmp/err"; exit 1
fi
if ! "$hg" dump "$tmp/out.onnx" >/dev/null 2>"$tmp/err2"; then
  echo "the converted model does not load back:"; cat "$tmp/err2"; exit 1
fi
if [ "${HALFGUARD_GOLDEN_UPDATE:-}" = "1" ]; then
  cp "$tmp/dump" "$expected"; echo "updated $expected"; exit 0
fi
[ -f "$expected" ] || { echo "missing $expected (run with HALFGUARD_GOLDEN_UPDATE=1)"; exit 1; }
if diff -u "$expected" "$tmp/dump"; then
  echo "1 passed, 0 failed"
else
  echo "0 passed, 1 failed"; exit 1
fi
