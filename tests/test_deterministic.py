#!/usr/bin/python3
"""Same input and flags, same bytes, in every process (README, convert): a rescale region whose three
graph outputs are undone by three Muls, converted eight times. The undo constants were named in the
order of a hash table keyed by addresses, so runs differed (three variants in eight runs before the
fix); now the outputs are byte-identical, and the summary shows the path was taken.

Usage: test_deterministic.py HALFGUARD
"""
import os
import sys

import numpy as np
from onnx import helper, numpy_helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hgtest  # noqa: E402
from hgtest import save_model, show, vi  # noqa: E402

run = hgtest.tool(sys.argv[1])
check = hgtest.Checks()


def model(path):
    """x @ w reaches 7.68e4 (rescaled by 2^-1); its Relu feeds a MatMul that absorbs the scale and
    three Abs graph outputs that each need an undo."""
    w = numpy_helper.from_array(np.full((256, 256), 300.0, np.float32), "w")
    w2 = numpy_helper.from_array(np.full((256, 256), 1e-3, np.float32), "w2")
    nodes = [helper.make_node("MatMul", ["x", "w"], ["h"], name="mm"),
             helper.make_node("Relu", ["h"], ["r"], name="act"),
             helper.make_node("MatMul", ["r", "w2"], ["z"], name="mm2")]
    outs = [vi("z", (64, 256))]
    for i in range(3):
        nodes.append(helper.make_node("Abs", ["r"], [f"y{i}"], name=f"abs{i}"))
        outs.append(vi(f"y{i}", (64, 256)))
    return save_model(path, nodes, [vi("x", (64, 256))], outs, [w, w2])


def main(tmp):
    m = model(os.path.join(tmp, "m.onnx"))
    outputs = []
    for i in range(8):
        out = os.path.join(tmp, f"out{i}.onnx")
        rc, so, se = run("convert", m, "-o", out, "-r", "x=-1:1", "--no-config", "-v")
        if not check(f"convert:{i}", rc == 0, show(rc, so, se)):
            return
        if i == 0:
            check("rescaled-with-three-undos", "undone by 3 Muls" in so, so)
        outputs.append(hgtest.read_bytes(out))
    check("same-bytes-every-run", len(set(outputs)) == 1, f"{len(set(outputs))} different outputs in 8 runs")


hgtest.temp_folders(check, "hg-deterministic-", [main])
sys.exit(check.finish())
