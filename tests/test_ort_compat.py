#!/usr/bin/python3
"""Converted models as ONNX Runtime (npm's onnxruntime-node 1.30, CPU, default optimization level)
runs them: two of its graph optimizations mishandle FP16 forms that convert used to write.

Usage: test_ort_compat.py HALFGUARD

1. Transpose(perm=[1,0,2]) -> MatMul(., W) with W a constant, in FP16 (torchvision's ViT writes it):
   ONNX Runtime's optimizer crashes at session creation. The conversion (cleanup moves the Transpose
   after the MatMul) must load and match FP32 to 1e-2; the same conversion without cleanup must
   crash, or the test no longer shows anything.
2. Two decomposed RMSNorms with an epsilon of 1e-6 on small activations (mean square near 1e-5):
   ONNX Runtime's SimplifiedLayerNormFusion reads an FP16 epsilon as 1e-5. convert keeps the Add of
   the epsilon FP32, so ONNX Runtime leaves the pattern alone: its output must match FP32 to 1e-2;
   with every node forced FP16 (--force-fp16-node) the error must pass 5e-2.
3. The same norms calibrated on larger activations (mean squares far above both epsilons): the Adds
   of the epsilon are FP16.
"""
import json
import os
import sys

import numpy as np
from onnx import TensorProto, helper, numpy_helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hgtest  # noqa: E402
import ortlib  # noqa: E402

hg = hgtest.tool(sys.argv[1])
check = hgtest.Checks(echo="end", limit=1500)
try:
    node_path = ortlib.ensure_ort()
except Exception as e:  # noqa: BLE001 -- no node/npm: nothing to run against
    print(f"skip: {e}")
    sys.exit(77)


def init(name, a):
    return numpy_helper.from_array(np.asarray(a, np.float32), name)


def rel(a, b):
    """rel-L2 of a against b: arrays, or lists of them (the largest)."""
    if isinstance(a, list):
        return max(rel(x, y) for x, y in zip(a, b))
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    return float(np.linalg.norm(a - b) / np.linalg.norm(b))


def ort(model, feeds, work):
    try:
        outs, _ = ortlib.run_ort(node_path, model, feeds, None, work)
        return outs, ""
    except RuntimeError as e:
        return None, str(e)


def convert(model, out, *args):
    rc, so, se = hg("convert", model, "-o", out, "-q", *args)
    return rc == 0, se


def test_transpose(tmp):
    rng = np.random.default_rng(1)
    nodes = [helper.make_node("Transpose", ["x"], ["t"], perm=[1, 0, 2], name="to_batch_first"),
             helper.make_node("MatMul", ["t", "w"], ["m"], name="proj"),
             helper.make_node("Relu", ["m"], ["y"], name="act")]
    model = hgtest.save_model(os.path.join(tmp, "t.onnx"), nodes, [hgtest.vi("x", (5, 2, 16))],
                              [hgtest.vi("y", (2, 5, 8))], [init("w", rng.normal(0, 0.3, (16, 8)))],
                              checker=True)
    feeds = {"x": rng.uniform(-1, 1, (5, 2, 16)).astype(np.float32)}
    feeds16 = {"x": feeds["x"].astype(np.float16)}  # the conversions read FP16 (no --keep-io-types)
    ref, err = ort(model, feeds, os.path.join(tmp, "ref"))
    check("transpose: the FP32 model runs", ref is not None, err)
    out = os.path.join(tmp, "t.fp16.onnx")
    ok, se = convert(model, out, "-r", "x=-1:1")
    got, err = ort(out, feeds16, os.path.join(tmp, "got")) if ok else (None, se)
    check("transpose: the conversion loads and runs in ONNX Runtime", got is not None, err)
    if got is not None and ref is not None:
        check("transpose: and matches FP32 to 1e-2", rel(got[0], ref[0]) < 1e-2, rel(got[0], ref[0]))
    raw = os.path.join(tmp, "t.nocleanup.onnx")
    ok, se = convert(model, raw, "-r", "x=-1:1", "--passes", "assign_precision,lower")
    bad, err = ort(raw, feeds16, os.path.join(tmp, "raw")) if ok else (None, se)
    check("transpose: without cleanup the FP16 form crashes ONNX Runtime (what the test guards against)",
          ok and bad is None, err or "it ran")


ROWS = 2048  # enough that FP16 pays for the Casts at the graph's edges


def rmsnorm(path, eps):
    """x -> MatMul -> RMSNorm -> residual Add -> RMSNorm -> y, the decomposition transformers' RMSNorms
    export (x * 1 / sqrt(mean(x^2) + eps) * w). With one norm alone ONNX Runtime runs the fused norm
    in FP32 and reads the epsilon right; with two, as in every decoder, it keeps them FP16 and takes
    1e-5."""
    def norm(i, x, y):
        return [helper.make_node("Pow", [x, "two"], [f"p{i}"], name=f"square{i}"),
                helper.make_node("ReduceMean", [f"p{i}"], [f"m{i}"], axes=[-1], name=f"mean{i}"),
                helper.make_node("Add", [f"m{i}", "eps"], [f"a{i}"], name=f"add_eps{i}"),
                helper.make_node("Sqrt", [f"a{i}"], [f"r{i}"], name=f"root{i}"),
                helper.make_node("Div", ["one", f"r{i}"], [f"inv{i}"], name=f"inverse{i}"),
                helper.make_node("Mul", [x, f"inv{i}"], [f"d{i}"], name=f"normalize{i}"),
                helper.make_node("Mul", [f"d{i}", "w"], [y], name=f"scale{i}")]
    rng = np.random.default_rng(9)
    nodes = [helper.make_node("MatMul", ["x", "wp"], ["h"], name="proj")] + norm(0, "h", "n0") + \
        [helper.make_node("Add", ["h", "n0"], ["h2"], name="residual")] + norm(1, "h2", "y")
    inits = [init("wp", rng.normal(0, 0.02, (64, 64))), init("two", 2.0), init("one", 1.0), init("eps", eps),
             init("w", np.linspace(0.5, 1.5, 64))]
    # n0 is an output too: the second norm would undo the first one's scale in y
    return hgtest.save_model(path, nodes, [hgtest.vi("x", (ROWS, 64))],
                             [hgtest.vi("y", (ROWS, 64)), hgtest.vi("n0", (ROWS, 64))], inits, checker=True)


def decisions(out):
    rep = json.load(open(out + ".json"))
    return {d["node"]: d["precision"] for d in rep["decisions"]}


def test_rmsnorm_epsilon(tmp):
    rng = np.random.default_rng(2)
    model = rmsnorm(os.path.join(tmp, "rms.onnx"), 1e-6)
    feeds = {"x": rng.uniform(-0.03, 0.03, (ROWS, 64)).astype(np.float32)}
    ref, err = ort(model, feeds, os.path.join(tmp, "ref"))
    check("rmsnorm: the FP32 model runs", ref is not None, err)
    out = os.path.join(tmp, "rms.fp16.onnx")
    ok, se = convert(model, out, "-r", "x=-0.03:0.03", "--report", out + ".json")
    check("rmsnorm: converts", ok, se)
    if ok:
        # The first norm's mean square is near 6e-6 for inputs in range, below FP16's normal range:
        # the synthetic probe sees it, and the mean stays FP32 with its epsilon. The second norm reads
        # the residual sum, of normal size.
        d = decisions(out)
        check("rmsnorm: the epsilon's Adds stay FP32, the squares FP16, the tiny first mean FP32",
              all(d.get(f"add_eps{i}") == "fp32" and d.get(f"square{i}") == "fp16" for i in (0, 1))
              and d.get("mean0") == "fp32" and d.get("mean1") == "fp16", d)
        ok2, se2 = convert(model, out + ".ranges.onnx", "-r", "x=-0.03:0.03", "--no-probe",
                           "--report", out + ".ranges.json")
        d2 = decisions(out + ".ranges") if ok2 else {}
        check("rmsnorm --no-probe: from the ranges alone both means FP16 (no bound shows them tiny)",
              ok2 and all(d2.get(f"add_eps{i}") == "fp32" and d2.get(f"mean{i}") == "fp16" for i in (0, 1)),
              se2 if not ok2 else d2)
    feeds16 = {"x": feeds["x"].astype(np.float16)}  # the conversions read FP16 (no --keep-io-types)
    got, err = ort(out, feeds16, os.path.join(tmp, "got")) if ok else (None, se)
    if check("rmsnorm: the conversion runs in ONNX Runtime", got is not None, err) and ref is not None:
        check("rmsnorm: and matches FP32 to 1e-2", rel(got, ref) < 1e-2, rel(got, ref))
    forced = os.path.join(tmp, "rms.forced.onnx")
    ok, se = convert(model, forced, "-r", "x=-0.03:0.03", "--force-fp16-node", ".*")
    bad, err = ort(forced, feeds16, os.path.join(tmp, "forced")) if ok else (None, se)
    if bad is not None and ref is not None:
        check("rmsnorm: all FP16 (--force-fp16-node), ONNX Runtime's fusion takes 1e-5 (error past 5e-2)",
              rel(bad, ref) > 5e-2, rel(bad, ref))
    else:
        check("rmsnorm: the forced conversion runs", False, err)


def test_rmsnorm_calibrated(tmp):
    rng = np.random.default_rng(3)
    model = rmsnorm(os.path.join(tmp, "rms.onnx"), 1e-6)
    calib = hgtest.write_inputs(os.path.join(tmp, "calib"), {"x": rng.normal(0, 3, (ROWS, 64)).astype(np.float32)})
    out = os.path.join(tmp, "rms.calib.onnx")
    ok, se = convert(model, out, "-r", "x=-15:15", "--calib", calib, "--report", out + ".json", "--keep-io-types")
    check("rmsnorm calibrated: converts", ok, se)
    if ok:
        d = decisions(out)
        check("rmsnorm calibrated: mean squares far above both epsilons need no FP32 epsilon",
              d.get("add_eps0") == "fp16" and d.get("add_eps1") == "fp16", d)


hgtest.temp_folders(check, "hg-ortcompat-", [test_transpose, test_rmsnorm_epsilon, test_rmsnorm_calibrated],
                    catch=True)
sys.exit(check.finish())
