#!/bin/bash
# The library as a user installs it (issue 16): `meson install` into a temporary root, then a small
# program that includes <halfguard/halfguard.h>, built with nothing but `pkg-config --cflags --libs
# halfguard` (GLib's flags come through Requires), loads a model, checks it and prints its verdict.
# It must compile, link and give the answer the CLI gives for the same model. Then examples/convert_one.c,
# the one-call conversion (hg_convert_file), built the same way, must write the very bytes `halfguard
# convert` writes with the same options: with an input range and excluded ops and nodes, with
# calibration data, and with nothing (convert's default synthetic inputs).
#
# Usage: test_pkgconfig.sh BUILDDIR HALFGUARD. Exits 77 (skipped) without pkg-config or a C compiler.
set -uo pipefail
build=$1
hg=$2
command -v pkg-config >/dev/null && command -v cc >/dev/null || { echo "SKIP: no pkg-config or cc"; exit 77; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/hg-pkgconfig-XXXXXX")
trap 'rm -rf "$tmp"' EXIT
fail=0
ok() { echo "ok   $1"; }
bad() { echo "FAIL $1: $2"; fail=1; }

if ! out=$(meson install -C "$build" --no-rebuild --destdir "$tmp/root" 2>&1); then
  echo "FAIL install: $out"
  exit 1
fi
pc=$(find "$tmp/root" -name halfguard.pc | head -1)
[ -n "$pc" ] && ok "halfguard.pc installed" || { bad "pc" "no halfguard.pc under the install root"; exit 1; }
# The .pc names the install prefix; a copy points it at the temporary root (GLib's stay as they are).
mkdir "$tmp/pc"
sed "s|^prefix=|prefix=$tmp/root|" "$pc" > "$tmp/pc/halfguard.pc"
export PKG_CONFIG_PATH=$tmp/pc
flags=$(pkg-config --cflags --libs halfguard 2>&1) && ok "pkg-config --cflags --libs" || bad "pkg-config" "$flags"
case "$flags" in *glib-2.0*) ok "GLib's flags come with it";; *) bad "requires" "no glib-2.0 in: $flags";; esac

cat > "$tmp/use.c" <<'C'
#include <halfguard/halfguard.h>
#include <stdio.h>

int
main(int argc, char **argv)
{
    GError *error = NULL;
    HgModel *m = hg_model_load(argv[1], &error);
    if (!m) {
        fprintf(stderr, "%s: %s\n", argv[1], error->message);
        return 2;
    }
    HgInputRangeSpec r = {"x", -1, 1};
    HgCheckOptions o = {0};
    o.ranges = &r;
    o.n_ranges = 1;
    HgCheckResult *res = hg_check(m, &o, &error);
    if (!res) {
        fprintf(stderr, "%s: %s\n", argv[1], error->message);
        return 2;
    }
    printf("%s %u hazards\n", hg_version(), res->hazards->len);
    hg_check_result_free(res);
    hg_model_free(m);
    return 0;
}
C
# A sanitized build's library needs the program built with the same sanitizers.
san=$(meson introspect "$build" --buildoptions 2>/dev/null | /usr/bin/python3 -c \
  'import json, sys; print(next((o["value"] for o in json.load(sys.stdin) if o["name"] == "b_sanitize"), "none"))')
extra=()
[ -n "$san" ] && [ "$san" != none ] && extra=("-fsanitize=$san")
if cc "${extra[@]}" -o "$tmp/use" "$tmp/use.c" $flags 2>"$tmp/cc.err"; then
  ok "a program builds with the pkg-config flags alone"
else
  bad "build" "$(head -c 2000 "$tmp/cc.err")"
fi

/usr/bin/python3 - "$tmp" "$(dirname "$0")" <<'PY'
import sys
from onnx import helper
sys.path.insert(0, sys.argv[2])
from hgtest import save_model, vi  # noqa: E402
k = helper.make_tensor("k", 1, [], [1e5])
save_model(f"{sys.argv[1]}/m.onnx", [helper.make_node("Mul", ["x", "k"], ["y"], name="big")], [vi("x")], [vi("y")], [k])
PY
if [ -x "$tmp/use" ]; then
  libdir=$(dirname "$(find "$tmp/root" -name 'libhalfguard.so*' | head -1)")
  got=$(LD_LIBRARY_PATH=$libdir "$tmp/use" "$tmp/m.onnx" 2>&1)
  want=$("$hg" check "$tmp/m.onnx" -r x=-1:1 --no-config --format json | /usr/bin/python3 -c \
    'import json,sys; print(len(json.load(sys.stdin)["models"][0]["hazards"]))')
  case "$got" in
    *" $want hazards") [ "$want" -ge 1 ] && ok "it runs: '$got', as check finds $want" || bad "run" "check found none";;
    *) bad "run" "got '$got', check finds $want";;
  esac
fi

# The one-call conversion: examples/convert_one.c against the installed library.
src=$(cd "$(dirname "$0")/.." && pwd)
if cc "${extra[@]}" -Werror -Wall -o "$tmp/convert_one" "$src/examples/convert_one.c" $flags 2>"$tmp/cc1.err"; then
  ok "examples/convert_one.c builds with the pkg-config flags alone"
else
  bad "build convert_one" "$(head -c 2000 "$tmp/cc1.err")"
fi
model=$src/examples/tiny_unet.onnx
mkdir -p "$tmp/calib/s0" "$tmp/calib/s1"
/usr/bin/python3 - "$tmp/calib" <<'PY'
import sys
import numpy as np
rng = np.random.default_rng(1)
for k in range(2):
    np.save(f"{sys.argv[1]}/s{k}/image.npy", rng.uniform(-1000, 1000, (1, 3, 32, 32)).astype(np.float32))
PY
# name | convert_one's options | halfguard convert's options
cases=(
  "ranges|-r image=0:1 --exclude-op Relu --exclude-node ^Conv_2$ --keep-io-types|-r image=0:1 --op_types_to_exclude Relu --nodes_to_exclude ^Conv_2$ --keep_io_types"
  "calib|--calib $tmp/calib --threads 1|--calib $tmp/calib --threads 1"
  "default|--threads 2|--threads 2"
)
if [ -x "$tmp/convert_one" ]; then
  for c in "${cases[@]}"; do
    IFS='|' read -r name lib cli <<<"$c"
    # shellcheck disable=SC2086
    if ! got=$(LD_LIBRARY_PATH=$libdir "$tmp/convert_one" "$model" "$tmp/lib-$name.onnx" $lib 2>&1); then
      bad "convert_one $name" "$got"; continue
    fi
    # shellcheck disable=SC2086
    if ! want=$("$hg" convert "$model" -o "$tmp/cli-$name.onnx" --no-config $cli 2>/dev/null); then
      bad "convert $name" "halfguard convert failed"; continue
    fi
    if ! cmp -s "$tmp/lib-$name.onnx" "$tmp/cli-$name.onnx"; then
      bad "same bytes ($name)" "hg_convert_file and halfguard convert differ"
    elif cmp -s "$model" "$tmp/lib-$name.onnx"; then
      bad "converted ($name)" "the output is the input"
    else
      ok "hg_convert_file writes what halfguard convert writes ($name): $(stat -c %s "$tmp/lib-$name.onnx") bytes"
    fi
  done
  # The options change the model, so each case tests that its options arrive: excluded ops stay FP32;
  # activations beyond FP16 in the calibration data get Conv weights rescaled.
  cmp -s "$tmp/lib-ranges.onnx" "$tmp/lib-default.onnx" && bad "options" "ranges and exclusions changed nothing"
  cmp -s "$tmp/lib-calib.onnx" "$tmp/lib-default.onnx" && bad "options" "the calibration data changed nothing"
  # The exclusions arrived: every Relu and Conv_2 compute in FP32, Conv_1 in FP16.
  kept=$(/usr/bin/python3 - "$tmp/lib-ranges.onnx" <<'PY'
import sys
import onnx
m = onnx.shape_inference.infer_shapes(onnx.load(sys.argv[1]))
t = {v.name: v.type.tensor_type.elem_type for v in list(m.graph.value_info) + list(m.graph.output)}
print(" ".join(f"{n.name}:{t.get(n.output[0])}" for n in m.graph.node if n.name in ("Relu_0", "Relu_2", "Conv_1", "Conv_2")))
PY
)
  # (elem_type 1 is float, 10 float16)
  if [[ " $kept " == *" Relu_0:1 "* && " $kept " == *" Relu_2:1 "* && " $kept " == *" Conv_2:1 "* &&
        " $kept " == *" Conv_1:10 "* ]]; then
    ok "excluded ops and nodes stay FP32 ($kept)"
  else
    bad "exclusions" "$kept"
  fi
  err=$(LD_LIBRARY_PATH=$libdir "$tmp/convert_one" "$tmp/none.onnx" "$tmp/x.onnx" 2>&1)
  rc=$?
  case "$rc:$err" in 2:"$tmp/none.onnx: "*) ok "a missing model: '$err', exit 2";; *) bad "missing model" "exit $rc: $err";; esac
  [ -e "$tmp/x.onnx" ] && bad "missing model" "an output was written"
fi
exit $fail
