#!/usr/bin/python3
"""Shape inference's complaints reach the user: a node whose inputs its shape rule finds
inconsistent (an Add of [2, 3] and [4, 5], which no broadcast joins) is named in a warning on stderr
by check and by convert, which still go on (the node's outputs are unknown, not the model invalid).
A consistent model gets no such warning.

Usage: test_shape_warnings.py HALFGUARD
"""
import os
import sys

from onnx import helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hgtest  # noqa: E402
from hgtest import save_model, vi  # noqa: E402

run = hgtest.tool(sys.argv[1])
check = hgtest.Checks()


def model(path, y_shape):
    nodes = [helper.make_node("Add", ["x", "y"], ["s"], name="bad_add"),
             helper.make_node("Relu", ["s"], ["out"], name="act")]
    return save_model(path, nodes, [vi("x", (2, 3)), vi("y", y_shape)], [vi("out", None)])


def main(tmp):
    bad = model(os.path.join(tmp, "bad.onnx"), (4, 5))
    good = model(os.path.join(tmp, "good.onnx"), (2, 3))
    want = "bad.onnx: warning: shape inference: node 'bad_add' (Add):"
    for cmd in (["check", bad, "-r", "*=-1:1", "--no-config"],
                ["convert", bad, "-o", os.path.join(tmp, "out.onnx"), "-r", "*=-1:1", "--no-config"]):
        rc, so, se = run(*cmd)
        check(f"{cmd[0]}:warns", want in se and rc in (0, 1), hgtest.show(rc, so, se))
    for cmd in (["check", good, "-r", "*=-1:1", "--no-config"],
                ["convert", good, "-o", os.path.join(tmp, "good16.onnx"), "-r", "*=-1:1", "--no-config"]):
        rc, so, se = run(*cmd)
        check(f"{cmd[0]}:quiet-when-consistent", "shape inference" not in se and rc == 0, hgtest.show(rc, so, se))


hgtest.temp_folders(check, "hg-shape-warnings-", [main])
sys.exit(check.finish())
