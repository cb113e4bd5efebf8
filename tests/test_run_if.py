#!/usr/bin/python3
"""The interpreter runs If (TorchScript exports DeBERTa's relative positions with it), and what needs
the interpreter follows: run, calibrate, verify.

Usage: test_run_if.py HALFGUARD

The model: a = x * 2 in the main graph; If(c) whose then-branch reads a and x (outer values) and
holds a nested If(d) that reads a from two graphs up and b from its own parent branch, whose
else-branch reads only x; y = If(c) + 1 after it. For each of the four (c, d):
- `halfguard run` gives y as numpy computes it (the branches' arithmetic is exact in FP32 here);
- `halfguard calibrate` records y and the If's output (values downstream of an If were not computed
  before, and their decisions rested on no data);
- `convert -r x=-2:2` keeps the If with its branches, and `verify` of the original against it passes.
A branch that reads an op the interpreter lacks is refused with "no kernel" (exit 2), not run; a
branch's tensors count against --max-memory (64 MiB in a branch stops a run capped at 16 MiB).
"""
import json
import os
import sys
import tempfile

import numpy as np
import onnx
from onnx import TensorProto, helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hgtest  # noqa: E402

run = hgtest.tool(sys.argv[1])
check = hgtest.Checks(echo="now", limit=1500)


def vi(name, shape=(2, 3), elem=TensorProto.FLOAT):
    return helper.make_tensor_value_info(name, elem, list(shape) if shape is not None else None)


def model(path, inner_op="Sub"):
    # nested: then -> Sub(b, a) (or inner_op), else -> Neg(b)
    n_then = helper.make_graph([helper.make_node(inner_op, ["b", "a"], ["p"])], "n_then", [], [vi("p")])
    n_else = helper.make_graph([helper.make_node("Neg", ["b"], ["q"])], "n_else", [], [vi("q")])
    then = helper.make_graph([helper.make_node("Add", ["a", "x"], ["b"]),
                              helper.make_node("If", ["d"], ["t"], then_branch=n_then, else_branch=n_else)],
                             "then", [], [vi("t")])
    els = helper.make_graph([helper.make_node("Relu", ["x"], ["e"])], "else", [], [vi("e")])
    nodes = [helper.make_node("Mul", ["x", "two"], ["a"]),
             helper.make_node("If", ["c"], ["r"], name="branch", then_branch=then, else_branch=els),
             helper.make_node("Add", ["r", "one"], ["y"])]
    inits = [helper.make_tensor("two", TensorProto.FLOAT, [], [2.0]), helper.make_tensor("one", TensorProto.FLOAT, [], [1.0])]
    g = helper.make_graph(nodes, "if_model", [vi("c", (), TensorProto.BOOL), vi("d", (), TensorProto.BOOL), vi("x")],
                          [vi("y")], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    onnx.save(m, path)
    return path


def reference(c, d, x):
    a = x * 2
    if c:
        b = a + x
        r = b - a if d else -b
    else:
        r = np.maximum(x, 0)
    return r + 1


def main():
    rng = np.random.default_rng(11)
    with tempfile.TemporaryDirectory(prefix="hg-if-") as tmp:
        src = model(os.path.join(tmp, "if.onnx"))
        conv = os.path.join(tmp, "if.fp16.onnx")
        rc, so, se = run("convert", src, "-o", conv, "-r", "x=-2:2", "-r", "c=0:1", "-r", "d=0:1", "--no-config")
        check("convert", rc == 0, se)
        if rc == 0:
            m = onnx.load(conv)
            check("convert:keeps-if", [n.op_type for n in m.graph.node].count("If") == 1, [n.op_type for n in m.graph.node])
        for c in (True, False):
            for d in (True, False):
                tag = f"c={int(c)},d={int(d)}"
                x = rng.uniform(-2, 2, (2, 3)).astype(np.float32)
                data = hgtest.write_inputs(os.path.join(tmp, tag), {"c": np.array(c), "d": np.array(d), "x": x})
                out = os.path.join(tmp, tag + ".out")
                rc, so, se = run("run", src, "--data", data, "-o", out)
                if check(f"{tag}:run", rc == 0, se):
                    y = hgtest.read_outputs(out)[0]
                    check(f"{tag}:value", np.array_equal(y, reference(c, d, x)), (y, reference(c, d, x)))
                stats = os.path.join(tmp, tag + ".stats.json")
                rc, so, se = run("calibrate", src, "--data", data, "-o", stats)
                if check(f"{tag}:calibrate", rc == 0, se):
                    t = json.load(open(stats))["tensors"]
                    check(f"{tag}:calibrate-downstream", "y" in t and "r" in t, sorted(t))
                if os.path.exists(conv):
                    rc, so, se = run("verify", src, conv, "--data", data)
                    check(f"{tag}:verify", rc == 0, so + se)
        # A branch op the interpreter lacks: refused, not skipped.
        bad = model(os.path.join(tmp, "bad.onnx"), inner_op="BitShift")
        data = hgtest.write_inputs(os.path.join(tmp, "bad"), {"c": np.array(True), "d": np.array(True),
                                                              "x": np.ones((2, 3), np.float32)})
        rc, so, se = run("run", bad, "--data", data, "-o", os.path.join(tmp, "bad.out"))
        check("no-kernel", rc == 2 and "no kernel" in se, (rc, se))
        # A branch's tensors count against --max-memory as the main graph's do: 64 MiB of zeros in a
        # branch, under a cap of 16 MiB, stops the run naming the branch's node.
        big = helper.make_node("ConstantOfShape", ["shape"], ["zeros"], name="branch_zeros",
                               value=helper.make_tensor("v", TensorProto.FLOAT, [1], [0.0]))
        then = helper.make_graph([big, helper.make_node("ReduceSum", ["zeros"], ["t"], keepdims=0)], "then",
                                 [], [vi("t", ())], [helper.make_tensor("shape", TensorProto.INT64, [2], [4096, 4096])])
        els = helper.make_graph([helper.make_node("Identity", ["x"], ["e"])], "else", [], [vi("e", ())])
        g = helper.make_graph([helper.make_node("If", ["c"], ["y"], then_branch=then, else_branch=els)], "mem",
                              [vi("c", (), TensorProto.BOOL), vi("x", ())], [vi("y", ())])
        mem = os.path.join(tmp, "mem.onnx")
        onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=8), mem)
        data = hgtest.write_inputs(os.path.join(tmp, "mem"), {"c": np.array(True), "x": np.array(1.0, np.float32)})
        rc, so, se = run("run", mem, "--data", data, "-o", os.path.join(tmp, "mem.out"), "--max-memory", "16M")
        check("branch-memory-cap", rc == 2 and "'branch_zeros'" in se and "memory cap" in se, (rc, se))
        rc, so, se = run("run", mem, "--data", data, "-o", os.path.join(tmp, "mem.out2"), "--max-memory", "256M")
        check("branch-memory-under-cap", rc == 0, (rc, se))
    return check.finish()


if __name__ == "__main__":
    sys.exit(main())
