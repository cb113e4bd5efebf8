#!/usr/bin/python3
"""Constants that sit at odd offsets in the file. The loader views large raw_data payloads where
they lie in the mapped model, and protobuf lays raw_data out with no alignment, so a weight's bytes
may start at an address that is no multiple of 4. The interval analysis folds a Transpose of such a
weight through the op's kernel (the constant seen through the Transpose, for the MatMul after it),
and the kernels read through typed pointers: under UBSan (the suite's ASan build) that was a
misaligned load, which aborted check, convert and inspect on the dynamo exports of StarCoder2,
Pegasus and Marian.

The model: y = MatMul(x, Transpose(W)) with W [48, 32] (6 KiB, viewed, not copied); the
Transpose's name is chosen so that W's bytes start at an offset of 1 mod 4 in the file (asserted).
check, convert and run must succeed, and run's output must be x Wᵀ.

Usage: test_unaligned_constants.py HALFGUARD"""
import os
import sys

import numpy as np
from onnx import TensorProto, helper, numpy_helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hgtest  # noqa: E402

hg = hgtest.tool(sys.argv[1])
check = hgtest.Checks()


def model(path, name, w, node_name):
    nodes = [helper.make_node("Transpose", [name], ["wt"], perm=[1, 0], name=node_name),
             helper.make_node("MatMul", ["x", "wt"], ["y"], name="mm")]
    return hgtest.save_model(path, nodes, [hgtest.vi("x", (2, 32))], [hgtest.vi("y", (2, 48))],
                             [numpy_helper.from_array(w, name)])


def test_unaligned(tmp):
    rng = np.random.default_rng(3)
    w = rng.uniform(-1, 1, (48, 32)).astype(np.float32)
    path = None
    for k in range(1, 9):  # a node name length that puts W's bytes at 1 mod 4
        p = os.path.join(tmp, f"m{k}.onnx")
        model(p, "w", w, "t" * k)
        off = open(p, "rb").read().find(w.tobytes())
        if off >= 0 and off % 4 == 1:
            path = p
            break
    if not check("odd-offset", path is not None, "no name length gave an odd offset"):
        return
    rc, so, se = hg("check", path, "-r", "x=-1:1", "--no-config")
    check("check", rc == 0, hgtest.show(rc, so, se))
    out = os.path.join(tmp, "out.onnx")
    rc, so, se = hg("convert", path, "-o", out, "-r", "x=-1:1", "--no-config")
    check("convert", rc == 0 and os.path.exists(out), hgtest.show(rc, so, se))
    x = rng.uniform(-1, 1, (2, 32)).astype(np.float32)
    data = hgtest.write_inputs(os.path.join(tmp, "data"), {"x": x})
    res = os.path.join(tmp, "res")
    rc, so, se = hg("run", path, "--data", data, "-o", res)
    got = hgtest.read_outputs(res) if rc == 0 else [None]
    check("run", rc == 0 and got[0] is not None and np.allclose(got[0], x @ w.T, rtol=1e-5, atol=1e-5),
          hgtest.show(rc, so, se))


hgtest.temp_folders(check, "hg-unaligned-", [test_unaligned])
sys.exit(check.finish())
