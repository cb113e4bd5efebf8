#!/usr/bin/python3
"""--dim-max in the interval analysis (issue 12): where a bound needs a length of a symbolic dim (the
rounding slack of Softmax x V, of a GlobalAveragePool; the terms of a CumSum), check (and convert -v) says what it
assumed: 2^20 elements without --dim-max, the given size with it; and the bound follows the assumption.
Usage: test_dim_max_ranges.py HALFGUARD"""
import os
import sys
import tempfile

import onnx
from onnx import TensorProto, helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hgtest  # noqa: E402

tool = sys.argv[1]
check = hgtest.Checks()
with tempfile.TemporaryDirectory(prefix="hg-dimmax-") as d:
    # x [1, 4, H, W] -> GlobalAveragePool; H and W named, so the note names them
    g = helper.make_graph([helper.make_node("GlobalAveragePool", ["x"], ["y"], name="gap")], "g",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, "H", "W"])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, 1, 1])])
    path = os.path.join(d, "gap.onnx")
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), path)
    rc, so, se = hgtest.run([tool, "check", path, "--no-config", "-r", "x=0:60000"])
    check("without --dim-max the 2^20 assumption is reported for H",
          "bounds assume symbolic dim 'H': at most 2^20 elements" in se and "--dim-max H=N" in se, se)
    rc2, so2, se2 = hgtest.run([tool, "check", path, "--no-config", "-r", "x=0:60000", "--dim-max", "H=16",
                                "--dim-max", "W=16"])
    check("with --dim-max the given sizes are reported", "symbolic dim 'H' at most 16 (--dim-max)" in se2
          and "2^20" not in se2, se2)
    # The average of values up to 60000 over 2^20 terms carries a slack of 2^20 * 2^-23 * 60000 = 7500:
    # past 65504 it overflows; over 256 terms it does not.
    # (an overflow convert rescales away is noted, not counted)
    check("the 2^20 assumption bounds the average past 65504", "overflow" in so + se, so + se)
    check("--dim-max 16 x 16 bounds it under 65504", rc2 == 0 and "overflow" not in so2 + se2, so2 + se2)
    # convert says the same under -v, apart from its changes: an assumption is not a change.
    out = os.path.join(d, "gap16.onnx")
    rc, so, se = hgtest.run([tool, "convert", path, "-o", out, "--no-config", "-r", "x=0:60000", "-v"])
    check("convert -v reports the 2^20 assumption", rc == 0 and "\n  what the bounds assume:\n" in so
          and "bounds assume symbolic dim 'H': at most 2^20 elements" in so, so + se)
    rc, so, se = hgtest.run([tool, "convert", path, "-o", out, "--no-config", "-r", "x=0:60000", "-v",
                             "--dim-max", "H=16", "--dim-max", "W=16"])
    first = so.splitlines()[0] if so else ""
    check("convert -v reports --dim-max, not as a change", rc == 0 and "at most 16 (--dim-max)" in so
          and "2^20" not in so and "other change" not in first, so + se)
    # CumSum over a symbolic axis: positions from an attention mask (BLOOM's ALiBi). Without --dim-max
    # the running sum of [0, 1] values has no bound (a sequence may be any length); with it, the
    # length bounds it, and the bound is reported.
    g = helper.make_graph([helper.make_node("Cast", ["m"], ["mf"], name="to_float", to=TensorProto.FLOAT),
                           helper.make_node("CumSum", ["mf", "ax"], ["pos"], name="positions")], "g",
                          [helper.make_tensor_value_info("m", TensorProto.INT64, [1, "seq"])],
                          [helper.make_tensor_value_info("pos", TensorProto.FLOAT, [1, "seq"])],
                          [helper.make_tensor("ax", TensorProto.INT64, [], [1])])
    path = os.path.join(d, "cumsum.onnx")
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), path)
    rc, so, se = hgtest.run([tool, "check", path, "--no-config", "-r", "m=0:1"])
    check("cumsum: unbounded over a symbolic axis", rc == 1 and "positions" in so and "overflow" in so, so + se)
    rc, so, se = hgtest.run([tool, "check", path, "--no-config", "-r", "m=0:1", "--dim-max", "seq=2000"])
    check("cumsum: --dim-max seq=2000 bounds it at 2000 (integers, exact in FP16), and says so",
          rc == 0 and "overflow" not in so and "symbolic dim 'seq' at most 2000 (--dim-max)" in se, so + se)
    rc, so, se = hgtest.run([tool, "check", path, "--no-config", "-r", "m=0:1", "--dim-max", "seq=100000"])
    check("cumsum: --dim-max seq=100000 leaves it past 65504", rc == 1 and "overflow" in so, so + se)
sys.exit(check.finish())
