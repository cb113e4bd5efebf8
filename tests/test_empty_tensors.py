#!/usr/bin/python3
"""Empty tensors through the saver. Detection exports carry initializers of 0 elements (torchvision's
Faster R-CNN and FCOS: an empty box list concatenated with the real ones), and protobuf-c hands an
empty bytes field to the output buffer as (length 0, NULL): passing that NULL to memcpy is undefined,
and the suite's ASan build (UBSan) aborted on it. convert --passes none must write the model back
byte for byte, and a full convert must keep the empty tensor empty.

Usage: test_empty_tensors.py HALFGUARD"""
import os
import sys

import numpy as np
import onnx
from onnx import helper, numpy_helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hgtest  # noqa: E402

hg = hgtest.tool(sys.argv[1])
check = hgtest.Checks()


def test_empty(tmp):
    empty = numpy_helper.from_array(np.zeros((0,), np.float32), "empty")
    src = hgtest.save_model(os.path.join(tmp, "m.onnx"),
                            [helper.make_node("Concat", ["x", "empty"], ["y"], axis=0, name="cat")],
                            [hgtest.vi("x", (4,))], [hgtest.vi("y", (4,))], [empty])
    same = os.path.join(tmp, "same.onnx")
    rc, so, se = hg("convert", "--passes", "none", src, "-o", same)
    check("passes-none", rc == 0 and open(same, "rb").read() == open(src, "rb").read(), hgtest.show(rc, so, se))
    out = os.path.join(tmp, "out.onnx")
    rc, so, se = hg("convert", src, "-o", out, "-r", "x=0:1", "--no-config")
    ok = check("convert", rc == 0, hgtest.show(rc, so, se))
    if ok:
        inits = {t.name: t for t in onnx.load(out).graph.initializer}
        e = next((t for n, t in inits.items() if n.startswith("empty")), None)
        check("still-empty", e is not None and list(e.dims) == [0] and numpy_helper.to_array(e).size == 0, inits.keys())


hgtest.temp_folders(check, "hg-empty-", [test_empty])
sys.exit(check.finish())
