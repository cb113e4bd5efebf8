#!/usr/bin/python3
"""The interpreter runs Loop (TorchScript exports Mask R-CNN's per-class box decoding with it), and what
needs the interpreter follows: run, calibrate, verify.

Usage: test_run_loop.py HALFGUARD

The model: a = x * 2 in the main graph; Loop(M, cond, a) whose body, at iteration i with carried s,
- runs a nested Loop of 2 iterations that adds s (its parent body's value) and x (the main graph's,
  two graphs up) to its own carried t, from t = 0: u = ((s + x) + s) + x;
- carries s' = s + u * i (i cast to float) and scans s' (stacked along a new first axis);
- continues while i + 1 < stop (stop a main-graph input).
y = Loop's final s + 1, and the scan output z. For trip counts M of 4, 0 and 10 with stop 3, and with
M omitted (the condition alone ends it):
- `halfguard run` gives y and z as numpy computes them (exact in FP32 here), z of shape [0, 2, 3] when
  no iteration runs (the body's declared shape);
- `halfguard calibrate` records y and the Loop's outputs (values past a Loop were not computed before);
- `convert -r x=-2:2` keeps the Loop with its body, and `verify` of the original against it passes.
A Loop with neither a trip count nor a condition is refused ("would not end", exit 2), and so is one
whose condition never clears or that nests loops past the run's iteration cap, one whose scan output changes shape
between iterations, and one whose body does not match its inputs and outputs.
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


def model(path, with_trip=True, with_cond=True):
    inner = helper.make_graph(
        [helper.make_node("Add", ["t", "s"], ["t1"]), helper.make_node("Add", ["t1", "x"], ["t2"]),
         helper.make_node("Identity", ["ci"], ["co"])],
        "inner", [vi("j", (), TensorProto.INT64), vi("ci", (), TensorProto.BOOL), vi("t")],
        [vi("co", (), TensorProto.BOOL), vi("t2")])
    body = helper.make_graph(
        [helper.make_node("Loop", ["two_i", "", "zeros"], ["u"], body=inner),
         helper.make_node("Cast", ["i"], ["fi"], to=TensorProto.FLOAT),
         helper.make_node("Mul", ["u", "fi"], ["ui"]),
         helper.make_node("Add", ["s", "ui"], ["s1"]),
         helper.make_node("Identity", ["s1"], ["scan"]),
         helper.make_node("Add", ["i", "one_i"], ["next"]),
         helper.make_node("Less", ["next", "stop"], ["more"])],
        "body", [vi("i", (), TensorProto.INT64), vi("c", (), TensorProto.BOOL), vi("s")],
        [vi("more", (), TensorProto.BOOL), vi("s1"), vi("scan")],
        [helper.make_tensor("two_i", TensorProto.INT64, [], [2]), helper.make_tensor("one_i", TensorProto.INT64, [], [1]),
         helper.make_tensor("zeros", TensorProto.FLOAT, [2, 3], [0.0] * 6)])
    nodes = [helper.make_node("Mul", ["x", "two"], ["a"]),
             helper.make_node("Loop", ["m" if with_trip else "", "go" if with_cond else "", "a"], ["s_final", "z"],
                              name="loop", body=body),
             helper.make_node("Add", ["s_final", "one"], ["y"])]
    inits = [helper.make_tensor("two", TensorProto.FLOAT, [], [2.0]), helper.make_tensor("one", TensorProto.FLOAT, [], [1.0]),
             helper.make_tensor("go", TensorProto.BOOL, [], [True])]
    ins = ([vi("m", (), TensorProto.INT64)] if with_trip else []) + [vi("stop", (), TensorProto.INT64), vi("x")]
    g = helper.make_graph(nodes, "loop_model", ins, [vi("y"), vi("z", None)], inits)
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=8), path)
    return path


def reference(m, stop, x):
    s = x * 2
    scans = []
    i = 0
    while (m is None or i < m):
        u = np.zeros_like(x)
        for _ in range(2):
            u = (u + s) + x
        s = s + u * np.float32(i)
        scans.append(s)
        i += 1
        if not i < stop:
            break
    z = np.stack(scans) if scans else np.zeros((0, 2, 3), np.float32)
    return s + 1, z


def main():
    rng = np.random.default_rng(5)
    with tempfile.TemporaryDirectory(prefix="hg-loop-") as tmp:
        src = model(os.path.join(tmp, "loop.onnx"))
        conv = os.path.join(tmp, "loop.fp16.onnx")
        rc, so, se = run("convert", src, "-o", conv, "-r", "x=-2:2", "-r", "m=0:10", "-r", "stop=0:10", "--no-config")
        check("convert", rc == 0, se)
        if rc == 0:
            ops = [n.op_type for n in onnx.load(conv).graph.node]
            check("convert:keeps-loop", ops.count("Loop") == 1, ops)
        cond_only = model(os.path.join(tmp, "cond_only.onnx"), with_trip=False)
        for m, stop, path in ((4, 10, src), (0, 3, src), (10, 3, src), (None, 3, cond_only)):
            tag = f"m={m},stop={stop}"
            x = rng.uniform(-2, 2, (2, 3)).astype(np.float32)
            feeds = ({"m": np.array(m, np.int64)} if m is not None else {}) | {"stop": np.array(stop, np.int64), "x": x}
            data = hgtest.write_inputs(os.path.join(tmp, tag), feeds)
            out = os.path.join(tmp, tag + ".out")
            rc, so, se = run("run", path, "--data", data, "-o", out)
            if check(f"{tag}:run", rc == 0, se):
                y, z = hgtest.read_outputs(out)[:2]
                ry, rz = reference(m, stop, x)
                check(f"{tag}:carried", np.array_equal(y, ry), (y, ry))
                check(f"{tag}:scan", z.shape == rz.shape and np.array_equal(z, rz), (z.shape, rz.shape))
            if path != src:
                continue
            stats = os.path.join(tmp, tag + ".stats.json")
            rc, so, se = run("calibrate", src, "--data", data, "-o", stats)
            if check(f"{tag}:calibrate", rc == 0, se):
                t = json.load(open(stats))["tensors"]
                check(f"{tag}:calibrate-downstream", "y" in t and "s_final" in t, sorted(t))
            if os.path.exists(conv):
                rc, so, se = run("verify", src, conv, "--data", data)
                check(f"{tag}:verify", rc == 0, so + se)
        # Neither a trip count nor a condition: refused before it starts.
        endless = model(os.path.join(tmp, "endless.onnx"), with_trip=False, with_cond=False)
        data = hgtest.write_inputs(os.path.join(tmp, "endless"), {"stop": np.array(3, np.int64),
                                                                  "x": np.ones((2, 3), np.float32)})
        rc, so, se = run("run", endless, "--data", data, "-o", os.path.join(tmp, "endless.out"))
        check("no-end", rc == 2 and "'loop' (Loop)" in se and "would not end" in se, (rc, se))
        # A condition that never clears: stopped at the cap, named.
        data = hgtest.write_inputs(os.path.join(tmp, "forever"), {"stop": np.array(2**62, np.int64),
                                                                  "x": np.zeros((2, 3), np.float32)})
        rc, so, se = run("run", cond_only, "--data", data, "-o", os.path.join(tmp, "forever.out"))
        # (the body's own 2-iteration Loop counts too, and may be the one that meets the cap)
        check("iteration-cap", rc == 2 and "(Loop)" in se and "has not ended" in se, (rc, se))
        # Loops nested so that each ends but their product is past the cap (1100 x 1000 iterations):
        # the cap counts the run's iterations in all, so the inner loop stops it.
        inner = helper.make_graph([helper.make_node("Identity", ["ci"], ["co"]), helper.make_node("Add", ["t", "one"], ["t2"])],
                                  "inner", [vi("j", (), TensorProto.INT64), vi("ci", (), TensorProto.BOOL), vi("t", ())],
                                  [vi("co", (), TensorProto.BOOL), vi("t2", ())])
        outer = helper.make_graph([helper.make_node("Loop", ["m_in", "", "u"], ["u2"], name="inner_loop", body=inner),
                                   helper.make_node("Identity", ["c"], ["co"])],
                                  "outer", [vi("i", (), TensorProto.INT64), vi("c", (), TensorProto.BOOL), vi("u", ())],
                                  [vi("co", (), TensorProto.BOOL), vi("u2", ())])
        g = helper.make_graph([helper.make_node("Loop", ["m_out", "", "x"], ["y"], name="outer_loop", body=outer)], "nested",
                              [vi("x", ())], [vi("y", ())],
                              [helper.make_tensor("m_out", TensorProto.INT64, [], [1100]),
                               helper.make_tensor("m_in", TensorProto.INT64, [], [1000]),
                               helper.make_tensor("one", TensorProto.FLOAT, [], [1.0])])
        nested = os.path.join(tmp, "nested.onnx")
        onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=8), nested)
        data = hgtest.write_inputs(os.path.join(tmp, "nested"), {"x": np.array(0.0, np.float32)})
        rc, so, se = run("run", nested, "--data", data, "-o", os.path.join(tmp, "nested.out"))
        check("iteration-cap:nested", rc == 2 and "'inner_loop' (Loop)" in se and "has not ended" in se, (rc, se))
        # A scan output whose shape changes between iterations cannot be stacked: an error naming the
        # Loop, nothing written. The body scans Range(0, i + 1): [1], then [2].
        body = helper.make_graph(
            [helper.make_node("Add", ["i", "one_i"], ["n"]), helper.make_node("Range", ["zero_i", "n", "one_i"], ["r"]),
             helper.make_node("Identity", ["c"], ["co"])],
            "body", [vi("i", (), TensorProto.INT64), vi("c", (), TensorProto.BOOL)],
            [vi("co", (), TensorProto.BOOL), vi("r", None, TensorProto.INT64)],
            [helper.make_tensor("one_i", TensorProto.INT64, [], [1]), helper.make_tensor("zero_i", TensorProto.INT64, [], [0])])
        g = helper.make_graph([helper.make_node("Loop", ["m", ""], ["z"], name="ragged", body=body)], "ragged",
                              [vi("m", (), TensorProto.INT64)], [vi("z", None, TensorProto.INT64)])
        ragged = os.path.join(tmp, "ragged.onnx")
        onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=8), ragged)
        for m, ok in ((1, True), (2, False)):
            data = hgtest.write_inputs(os.path.join(tmp, f"ragged{m}"), {"m": np.array(m, np.int64)})
            out = os.path.join(tmp, f"ragged{m}.out")
            rc, so, se = run("run", ragged, "--data", data, "-o", out)
            if ok:
                check("ragged:one-iteration", rc == 0 and np.array_equal(hgtest.read_outputs(out)[0], [[0]]), (rc, se))
            else:
                check("ragged:refused", rc == 2 and "'ragged' (Loop)" in se and "differs in type or shape" in se
                      and not os.path.exists(os.path.join(out, "output_0.pb")), (rc, se))
        # A body whose outputs do not match the Loop's: refused before the first iteration.
        short = helper.make_graph([helper.make_node("Identity", ["c"], ["co"])], "body",
                                  [vi("i", (), TensorProto.INT64), vi("c", (), TensorProto.BOOL), vi("s")],
                                  [vi("co", (), TensorProto.BOOL)])
        g = helper.make_graph([helper.make_node("Loop", ["m", "", "x"], ["y"], name="short", body=short)], "short",
                              [vi("m", (), TensorProto.INT64), vi("x")], [vi("y")])
        bad = os.path.join(tmp, "short.onnx")
        onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=8), bad)
        data = hgtest.write_inputs(os.path.join(tmp, "short"), {"m": np.array(2, np.int64), "x": np.ones((2, 3), np.float32)})
        rc, so, se = run("run", bad, "--data", data, "-o", os.path.join(tmp, "short.out"))
        check("body-mismatch", rc == 2 and "'short' (Loop)" in se and "loop-carried" in se, (rc, se))
    return check.finish()


if __name__ == "__main__":
    sys.exit(main())
