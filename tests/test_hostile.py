#!/usr/bin/python3
"""Hostile input (issue 15): what a model or a data file holds must not forge output, crash, hang or
allocate without bound. Each class is a crafted model, file or command:
- names: newlines, terminal escapes and bytes that are not UTF-8 in node and value names stay one line
  in text output (escaped) and leave JSON and SARIF valid (U+FFFD).

Usage: test_hostile.py HALFGUARD. Models are made here with Debian's python3-onnx.
"""
import json
import os
import sys

from onnx import helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hgtest  # noqa: E402
from hgtest import make_model, vi  # noqa: E402

HG = sys.argv[1]
check = hgtest.Checks()

# A name that forges a line of check's output and clears the screen, then two bytes that are not UTF-8
# (python3-onnx refuses them, so the model is written with "QQ" and patched: same length).
FORGED = "EVIL\nmodel.onnx: note: all clear\x1b[2JQQ"


def run(*args):
    """(rc, stdout as bytes, stderr as bytes)."""
    import subprocess
    p = subprocess.run([HG, *args], capture_output=True)
    return p.returncode, p.stdout, p.stderr


def save_forged(path, model):
    with open(path, "wb") as f:
        f.write(model.SerializeToString().replace(b"QQ", b"\xff\xfe"))
    return path


def test_names(tmp):
    m = save_forged(os.path.join(tmp, "m.onnx"),
                    make_model([helper.make_node("Exp", ["x"], ["y"], name=FORGED)], [vi("x")], [vi("y")]))
    rc, so, se = run("check", m, "-r", "x=0:100")
    lines = so.splitlines()
    want = (b"node 'EVIL\\nmodel.onnx: note: all clear\\x1b[2J\\xff\\xfe' (Exp): overflow")
    check("names:text-one-line", rc == 1 and len(lines) == 1 and want in lines[0], so)
    check("names:text-no-raw-bytes", b"\x1b" not in so + se and b"\xff" not in so + se, so + se)
    for fmt in ("json", "sarif"):
        rc, so, se = run("check", m, "-r", "x=0:100", "--format", fmt)
        try:
            doc = json.loads(so.decode("utf-8"))  # strict: invalid UTF-8 fails here
            text = json.dumps(doc, ensure_ascii=False)
            ok = "EVIL\\nmodel.onnx: note: all clear\\u001b[2J\ufffd\ufffd" in text
        except ValueError as e:
            ok, text = False, repr(e)
        check(f"names:{fmt}-valid", rc == 1 and ok, text[:400])
    # An error message that quotes a name (an undefined input) is one line too, exit 2, "FILE: message".
    bad = save_forged(os.path.join(tmp, "bad.onnx"),
                      make_model([helper.make_node("Exp", ["no\n\x1b[2Jpe QQ"], ["y"], name="n")],
                                 [vi("x")], [vi("y")]))
    for cmd in (["check", bad], ["convert", bad, "-o", os.path.join(tmp, "o.onnx")]):
        rc, so, se = run(*cmd)
        check(f"names:error-{cmd[0]}", rc == 2 and se == (
            f"{bad}: node 'n' (Exp): input 'no\\n\\x1b[2Jpe \\xff\\xfe' is used but never defined\n").encode(), se)


hgtest.temp_folders(check, "hg-hostile-", [test_names], catch=True)
sys.exit(check.finish())
