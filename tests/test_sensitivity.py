#!/usr/bin/python3
"""convert's warning for a model whose FP32 outputs move past verify's tolerance when only its inputs
are rounded to FP16 (hg_verify_input_sensitivity, run with the underflow probe), said where the
conversion rounds them.

Usage: test_sensitivity.py HALFGUARD

1. y = g - floor(g), g = 1000 x, x in [-3, 3] (a sawtooth; no finding keeps it FP32): FP16's rounding
   of x (up to 2^-11 of it) moves g by up to 0.7, so the warning names output 'y' with a rel-L2 far
   past 1e-2; verify of the conversion fails as the warning says it must. (sin(1000 x) no longer
   serves: its angle passes 16, and convert keeps it FP32.)
2. y = sin(x) over the same range: no warning, and the conversion verifies.
3. --no-probe, -q, and calibration data (no probe runs) give no warning.
4. A conversion that keeps the input FP32 (the pathology suite's Softmax over logits near 10000,
   which FP16 cannot hold: that node stays FP32 and reads the input as it is) gives none either,
   though rounding the input would move its output by 0.24.
"""
import os
import re
import sys

import numpy as np
from onnx import helper, numpy_helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hgtest  # noqa: E402

hg = hgtest.tool(sys.argv[1])
check = hgtest.Checks(echo="end", limit=2000)
WARN = re.compile(r"warning: rounding its inputs to FP16, as this conversion does, moves output 'y' by rel-L2 "
                  r"([0-9.e+-]+) in FP32")


def model(path, gain, saw):
    wave = ([helper.make_node("Floor", ["g"], ["f"], name="floor"), helper.make_node("Sub", ["g", "f"], ["y"], name="wave")]
            if saw else [helper.make_node("Sin", ["g"], ["y"], name="wave")])
    nodes = [helper.make_node("Mul", ["x", "gain"], ["g"], name="scale")] + wave
    return hgtest.save_model(path, nodes, [hgtest.vi("x", (64,))], [hgtest.vi("y", (64,))],
                             [numpy_helper.from_array(np.array(gain, np.float32), "gain")], checker=True)


def test_sensitivity(tmp):
    rng = np.random.default_rng(3)
    data = hgtest.write_inputs(os.path.join(tmp, "data"), {"x": rng.uniform(-3, 3, 64).astype(np.float32)})
    for name, gain, warned in (("fast", 1000.0, True), ("slow", 1.0, False)):
        m = model(os.path.join(tmp, name + ".onnx"), gain, saw=warned)
        out = os.path.join(tmp, name + ".fp16.onnx")
        rc, so, se = hg("convert", m, "-o", out, "-r", "x=-3:3")
        w = WARN.search(se)
        check(f"{name}: converts", rc == 0, se)
        if warned:
            check(f"{name}: warns, with a rel-L2 past 1e-2", w is not None and float(w.group(1)) > 0.1, se)
        else:
            check(f"{name}: no warning", w is None and "warning" not in se, se)
        rc, so, se = hg("verify", m, out, "--data", data)
        check(f"{name}: verify {'fails, as warned' if warned else 'passes'}", rc == (1 if warned else 0), so + se)
    m = os.path.join(tmp, "fast.onnx")
    for args, why in ((["--no-probe"], "--no-probe"), (["-q"], "-q"), (["--calib", data], "calibration data")):
        rc, so, se = hg("convert", m, "-o", os.path.join(tmp, "other.onnx"), "-r", "x=-3:3", *args)
        check(f"fast: no warning with {why}", rc == 0 and WARN.search(se) is None, se)


def test_input_kept(tmp):
    cases = {c["name"]: c for c in hgtest.pathology_cases(os.path.join(tmp, "cases"))}
    c = cases["precision_softmax_large"]
    rc, so, se = hg("convert", os.path.join(tmp, "cases", c["model"]), "-o", os.path.join(tmp, "p.onnx"),
                    *hgtest.range_args(c["input_ranges"]))
    check("kept FP32: converts with no warning", rc == 0 and "warning" not in se and "0 Casts" in so, so + se)


hgtest.temp_folders(check, "hg-sensitivity-", [test_sensitivity, test_input_kept], catch=True)
sys.exit(check.finish())
