#!/bin/bash
# Device nodes as outputs (issue 15), which only root can make: a character device made with mknod in
# a temporary folder (the numbers of /dev/null, so writing to it is harmless) stays a character device
# after convert -o, --report and calibrate -o write to it; a block device (the numbers of /dev/loop0,
# never opened) is refused and stays a block device. Before the fix, as root, convert -o /dev/null
# replaced /dev/null with a regular file.
#
# Usage: test_outpath_root.sh HALFGUARD. Exits 77 (skipped) when not run as root.
set -uo pipefail
hg=$1
if [ "$(id -u)" -ne 0 ]; then
  echo "SKIP: making device nodes needs root"
  exit 77
fi
tmp=$(mktemp -d "${TMPDIR:-/tmp}/hg-outpath-root-XXXXXX")
trap 'rm -rf "$tmp"' EXIT
fail=0
ok() { echo "ok   $1"; }
bad() { echo "FAIL $1: $2"; fail=1; }

/usr/bin/python3 - "$tmp" "$(dirname "$0")" <<'EOF'
import sys
import numpy as np
from onnx import helper, numpy_helper
d = sys.argv[1]
sys.path.insert(0, sys.argv[2])
from hgtest import save_model, vi, write_inputs  # noqa: E402
w = numpy_helper.from_array(np.arange(4, dtype=np.float32).reshape(2, 2), "w")
save_model(f"{d}/m.onnx", [helper.make_node("Add", ["x", "w"], ["y"], name="add")], [vi("x")], [vi("y")], [w])
write_inputs(f"{d}/data", [("x", np.ones((2, 2), np.float32))])
EOF

mknod "$tmp/null" c 1 3 && chmod 666 "$tmp/null"
mknod "$tmp/block" b 7 0
is_chr() { [ "$(stat -c '%F %t %T' "$1")" = "character special file 1 3" ]; }

for args in "convert $tmp/m.onnx -o $tmp/null" \
            "convert $tmp/m.onnx -o $tmp/out.onnx --report $tmp/null" \
            "calibrate $tmp/m.onnx --data $tmp/data -o $tmp/null"; do
  # shellcheck disable=SC2086
  if "$hg" $args >"$tmp/log" 2>&1; then ok "exit 0: $args"; else bad "exit 0: $args" "$(cat "$tmp/log")"; fi
  if is_chr "$tmp/null"; then ok "still a character device"; else bad "still a character device" "$(stat -c %F "$tmp/null")"; fi
done

"$hg" convert "$tmp/m.onnx" -o "$tmp/block" >"$tmp/log" 2>&1
rc=$?
if [ $rc -eq 2 ] && grep -q "^$tmp/block: is a block device" "$tmp/log"; then ok "block device refused"
else bad "block device refused" "rc=$rc $(cat "$tmp/log")"; fi
if [ "$(stat -c %F "$tmp/block")" = "block special file" ]; then ok "still a block device"
else bad "still a block device" "$(stat -c %F "$tmp/block")"; fi

if ls -A "$tmp" | grep -q halfguard-tmp; then bad "no temporary" "$(ls -A "$tmp")"; else ok "no temporary"; fi
exit $fail
