#!/bin/bash
# The repository's .pre-commit-hooks.yaml, run for real by Debian's pre-commit on a temporary git
# repository: a model with an FP16 hazard cannot be committed and the hazard lines are shown; so does
# a model with an input that no range covers, with check's note (stderr) telling how to give one; a
# clean model, a suppressed hazard and a Git LFS pointer commit.
#
# Usage: test_precommit.sh HALFGUARD_BUILD_DIR   (the folder holding the halfguard executable)
# pre-commit clones a hooks repository at a rev, so the hook file is committed alone to a temporary
# repository and the project's .pre-commit-config.yaml points there. HOME, PRE_COMMIT_HOME and the git
# configuration are temporary: nothing outside is read or written, and no network is needed
# (language: system installs nothing). Exits 77 (skipped) when pre-commit is not installed.
set -uo pipefail

[ $# -eq 1 ] || { echo "usage: $0 HALFGUARD_BUILD_DIR" >&2; exit 2; }
build=$(cd "$1" && pwd) || exit 2
src=$(cd "$(dirname "$0")/.." && pwd)
hooks_file=$src/.pre-commit-hooks.yaml
if ! command -v pre-commit >/dev/null; then
  echo "SKIP: pre-commit is not installed (apt-get install pre-commit)"
  exit 77
fi
[ -x "$build/halfguard" ] || { echo "FAIL: no $build/halfguard"; exit 1; }
[ -f "$hooks_file" ] || { echo "FAIL: no $hooks_file"; exit 1; }

tmp=$(mktemp -d "${TMPDIR:-/tmp}/hg-precommit-XXXXXX")
trap 'rm -rf "$tmp"' EXIT
# Nothing from the caller's git or pre-commit setup: this may itself run inside a git hook.
unset GIT_DIR GIT_WORK_TREE GIT_INDEX_FILE GIT_OBJECT_DIRECTORY GIT_ALTERNATE_OBJECT_DIRECTORIES \
      PRE_COMMIT PRE_COMMIT_CONFIG SKIP
export HOME=$tmp/home PRE_COMMIT_HOME=$tmp/pre-commit-cache XDG_CACHE_HOME=$tmp/cache
export GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL=$tmp/home/.gitconfig
export GIT_AUTHOR_NAME=test GIT_AUTHOR_EMAIL=test@example.invalid
export GIT_COMMITTER_NAME=test GIT_COMMITTER_EMAIL=test@example.invalid
export PATH="$build:$PATH"
mkdir -p "$HOME"
git config --global init.defaultBranch main
git config --global commit.gpgsign false

passed=0; failed=0
ok() { echo "ok   $1"; passed=$((passed + 1)); }
fail() { echo "FAIL $1"; [ $# -gt 1 ] && sed 's/^/     | /' <<<"$2"; failed=$((failed + 1)); }

# The hooks repository: only the hook file, committed.
git init -q "$tmp/hooks"
cp "$hooks_file" "$tmp/hooks/"
git -C "$tmp/hooks" add .pre-commit-hooks.yaml
git -C "$tmp/hooks" commit -q -m hooks
rev=$(git -C "$tmp/hooks" rev-parse HEAD)

# The project: input ranges in its .halfguard.ini, the hook installed as git's pre-commit hook.
proj=$tmp/proj
git init -q "$proj"
cd "$proj" || exit 1
cat > .pre-commit-config.yaml <<EOF
repos:
  - repo: $tmp/hooks
    rev: $rev
    hooks:
      - id: halfguard-check
EOF
printf '[ranges *]\nx = 0:100\n' > .halfguard.ini
git add .pre-commit-config.yaml .halfguard.ini
git commit -q -m setup --no-verify
if ! out=$(pre-commit install 2>&1); then
  fail "pre-commit install" "$out"
  echo "$passed passed, $failed failed"
  exit 1
fi

# Y = X * 1000 at node 'scale' (X in [0, 100] overflows FP16; 1000 itself fits), and Y = Relu(X).
/usr/bin/python3 - "$tmp/models" <<'EOF'
import os, sys
import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
out = sys.argv[1]
os.makedirs(out)
def save(name, nodes, inits=()):
    vi = lambda n: helper.make_tensor_value_info(n, TensorProto.FLOAT, [2, 2])
    g = helper.make_graph(nodes, "g", [vi("x")], [vi("y")], list(inits))
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=8),
              os.path.join(out, name))
save("scale.onnx", [helper.make_node("Mul", ["x", "k"], ["y"], name="scale")],
     [numpy_helper.from_array(np.array(1000.0, np.float32), "k")])
save("relu.onnx", [helper.make_node("Relu", ["x"], ["y"], name="relu")])
# The same Relu on an input named z, which the repository's [ranges] group does not cover.
g = helper.make_graph([helper.make_node("Relu", ["z"], ["y"], name="relu")], "g",
                      [helper.make_tensor_value_info("z", TensorProto.FLOAT, [2, 2])],
                      [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 2])])
onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=8),
          os.path.join(out, "free.onnx"))
EOF
[ $? -eq 0 ] || { fail "making the models"; echo "$passed passed, $failed failed"; exit 1; }

# commit LABEL: git commit of what is staged; sets $rc and $out, and whether HEAD moved.
commit() {
  local before after
  before=$(git rev-parse HEAD)
  out=$(git commit -m "$1" 2>&1 </dev/null)
  rc=$?
  after=$(git rev-parse HEAD)
  moved=$([ "$before" != "$after" ] && echo yes || echo no)
}

# 1. A hazard: the commit is refused, the hook's lines are shown.
mkdir -p models
cp "$tmp/models/scale.onnx" models/bad.onnx
git add models/bad.onnx
commit "a hazardous model"
if [ $rc -ne 0 ] && [ "$moved" = no ]; then ok "hazard: commit refused"; else fail "hazard: commit refused (rc=$rc)" "$out"; fi
if grep -qE "^halfguard check .*Failed" <<<"$out"; then ok "hazard: hook reported Failed"; else fail "hazard: hook reported Failed" "$out"; fi
if grep -qE "^models/bad\.onnx: node 'scale' \(Mul\): overflow: " <<<"$out"; then
  ok "hazard: hazard line shown"
else
  fail "hazard: hazard line shown" "$out"
fi
if grep -q "exit code: 1" <<<"$out"; then ok "hazard: exit code 1"; else fail "hazard: exit code 1" "$out"; fi
# The count by kind (stderr) is shown too, after the findings.
if grep -qxF "halfguard check: 1 hazard: 1 overflow" <<<"$out"; then
  ok "hazard: count by kind shown"
else
  fail "hazard: count by kind shown" "$out"
fi
git rm -q --cached models/bad.onnx && rm -f models/bad.onnx

# 1b. An input without a range: the commit is refused, and the output shows both the finding
# (stdout) and check's note with the fix (stderr), which a passing hook would hide.
cp "$tmp/models/free.onnx" models/free.onnx
git add models/free.onnx
commit "a model whose input has no range"
if [ $rc -ne 0 ] && [ "$moved" = no ]; then ok "unranged: commit refused"; else fail "unranged: commit refused (rc=$rc)" "$out"; fi
if grep -qE "^models/free\.onnx: input 'z': unranged-input: .*--input-range 'z=LO:HI'" <<<"$out"; then
  ok "unranged: finding shown"
else
  fail "unranged: finding shown" "$out"
fi
if grep -qE "^models/free\.onnx: note: input 'z' \(float\) has no range.*fix: -r 'z=LO:HI'.*\[ranges models/free\.onnx\] in .*\.halfguard\.ini" <<<"$out"; then
  ok "unranged: stderr note with the fix shown"
else
  fail "unranged: stderr note with the fix shown" "$out"
fi
git rm -q --cached models/free.onnx && rm -f models/free.onnx

# 2. A clean model commits.
cp "$tmp/models/relu.onnx" models/good.onnx
git add models/good.onnx
commit "a clean model"
if [ $rc -eq 0 ] && [ "$moved" = yes ]; then ok "clean: committed"; else fail "clean: committed (rc=$rc)" "$out"; fi
if grep -qE "^halfguard check .*Passed" <<<"$out"; then ok "clean: hook ran and passed"; else fail "clean: hook ran and passed" "$out"; fi

# 3. The hazard, suppressed with a reason in the repository's .halfguard.ini, commits.
cp "$tmp/models/scale.onnx" models/bad.onnx
printf '\n[suppress scaling]\nnode = scale\nkind = overflow\nreason = x is pre-scaled by 1e-3 upstream\n' >> .halfguard.ini
git add models/bad.onnx .halfguard.ini
commit "a suppressed hazard"
if [ $rc -eq 0 ] && [ "$moved" = yes ]; then ok "suppressed: committed"; else fail "suppressed: committed (rc=$rc)" "$out"; fi
if grep -qE "^halfguard check .*Passed" <<<"$out"; then ok "suppressed: hook ran and passed"; else fail "suppressed: hook ran and passed" "$out"; fi

# 4. A suppression without a reason is an error: the commit is refused.
printf '\n[suppress careless]\nnode = relu\n' >> .halfguard.ini
cp "$tmp/models/relu.onnx" models/other.onnx
git add models/other.onnx .halfguard.ini
commit "a suppression without a reason"
if [ $rc -ne 0 ] && [ "$moved" = no ] && grep -q "exit code: 2" <<<"$out"; then
  ok "no-reason: commit refused with exit code 2"
else
  fail "no-reason: commit refused with exit code 2 (rc=$rc)" "$out"
fi
git rm -q --cached models/other.onnx && rm -f models/other.onnx
git checkout -q HEAD -- .halfguard.ini

# 5. A Git LFS pointer (the model not pulled) is skipped with a notice; the commit goes through.
printf 'version https://git-lfs.github.com/spec/v1\noid sha256:4d7a214614ab2935c943f9e0ff69d22eadbb8f32b1258daaa5e2ca24d17e2393\nsize 123\n' > models/big.onnx
git add models/big.onnx
commit "an LFS pointer"
if [ $rc -eq 0 ] && [ "$moved" = yes ]; then ok "lfs: committed"; else fail "lfs: committed (rc=$rc)" "$out"; fi

# 6. Files that are not models do not run the hook.
echo notes > notes.txt
git add notes.txt
commit "not a model"
if [ $rc -eq 0 ] && grep -qE "^halfguard check .*Skipped" <<<"$out"; then ok "non-model: hook skipped"; else fail "non-model: hook skipped (rc=$rc)" "$out"; fi

# 7. pre-commit run --all-files sees the committed hazard once the suppression is gone.
printf '[ranges *]\nx = 0:100\n' > .halfguard.ini
git add .halfguard.ini
out=$(pre-commit run --all-files 2>&1 </dev/null); rc=$?
if [ $rc -ne 0 ] && grep -qE "^models/bad\.onnx: node 'scale' \(Mul\): overflow: " <<<"$out" \
   && ! grep -q "^models/good\.onnx:" <<<"$out"; then
  ok "run --all-files: the hazard found, the clean model not named"
else
  fail "run --all-files: the hazard found, the clean model not named (rc=$rc)" "$out"
fi

echo "$passed passed, $failed failed"
[ $failed -eq 0 ] && [ $passed -gt 0 ]
