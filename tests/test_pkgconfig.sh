#!/bin/bash
# The library as a user installs it (issue 16): `meson install` into a temporary root, then a small
# program that includes <halfguard/halfguard.h>, built with nothing but `pkg-config --cflags --libs
# halfguard` (GLib's flags come through Requires), loads a model, checks it and prints its verdict.
# It must compile, link and give the answer the CLI gives for the same model.
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
exit $fail
