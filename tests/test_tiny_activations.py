#!/usr/bin/python3
"""Activations too small for FP16 (the underflow hazard on activations), end to end.

Usage: test_tiny_activations.py HALFGUARD

1. A depth-head-like chain (Convs 1x1 with weights near 1e-4, Relu, Conv again, Relu) whose outputs
   calibration sees all near 1e-8, as a random-init DPT head gives: check with --calib reports an
   underflow where the tiny values start (the second Conv) and not again below it; convert with the
   same calibration keeps every node that writes or reads those tensors FP32, and verify passes on
   fresh inputs. From ranges alone (x in [-1, 1]) the static bound of the second Conv is itself under
   2^-14, so check reports the same underflow (source static) and convert keeps the same nodes FP32.
   Forced all FP16 (--force-fp16-node '.*'), the same model fails verify: the FP16 outputs are 0
   where FP32's are not. That is what the hazard is for, and what the test fails on if it stops
   working.
2. A negative control, a layer scale of 1e-6 on a residual branch (x + 1e-6 * W x): the branch is
   below FP16's normal range too, but FP16's rounding of the sum already drops it, so neither check
   nor convert says anything and the model converts with no FP32 node; the same with a Transpose
   between the scale and the Add.
3. The same branch read by something other than the Add (a second output): reported.
4. A head the bounds cannot show (a 1024-wide MatMul with weights near 2e-6, then two more): the
   first product's static bound is about 1.6e-3, its values reach 1e-4, the next product's 1e-6.
   check from ranges alone reports nothing; convert from the same ranges runs its synthetic probe,
   keeps the tiny nodes FP32 (decisions marked synthetic, said in the summary) and verifies, where
   --no-probe converts all of it to FP16 and fails verify. The layer-scale control of 2, converted from
   ranges alone, keeps no node FP32 with the probe either.
5. Attention logits near 3e-5 (inputs in [-0.25, 0.25] by weights near 1e-5, a tiny bias added, a Reshape) read by a
   Softmax: what FP16 loses of them moves no probability by more than 2^-23, so neither the probe nor
   calibration keeps anything FP32, and the conversion verifies; the same logits also a graph output
   are reported (underflow at the MatMul) and stay FP32.
"""
import json
import os
import sys

import numpy as np
from onnx import TensorProto, helper, numpy_helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hgtest  # noqa: E402

hg = hgtest.tool(sys.argv[1])
check = hgtest.Checks(echo="end", limit=2000)
F32 = TensorProto.FLOAT


def init(name, a):
    return numpy_helper.from_array(np.asarray(a, np.float32), name)


def depth_head(path, rng):
    w1 = rng.normal(0, 0.02, (8, 4, 1, 1))
    w2 = rng.normal(0, 1e-4, (8, 8, 1, 1))
    w3 = np.abs(rng.normal(0, 1e-4, (1, 8, 1, 1)))
    nodes = [helper.make_node("Conv", ["x", "w1"], ["c1"], name="conv1"),
             helper.make_node("Relu", ["c1"], ["r1"], name="relu1"),
             helper.make_node("Conv", ["r1", "w2"], ["c2"], name="conv2"),
             helper.make_node("Relu", ["c2"], ["r2"], name="relu2"),
             helper.make_node("Conv", ["r2", "w3"], ["depth"], name="conv3")]
    return hgtest.save_model(path, nodes, [hgtest.vi("x", (1, 4, 16, 16))], [hgtest.vi("depth", (1, 1, 16, 16))],
                             [init("w1", w1), init("w2", w2), init("w3", w3)], checker=True)


def layer_scale(path, rng, also_out=False, transposed=False):
    """x + 1e-6 * (x W); transposed: both sides moved to [16, 1] before the Add (EdgeNeXt's layer
    scale is applied channels-last and moved back to the residual's layout)."""
    w = rng.normal(0, 0.2, (16, 16))
    nodes = [helper.make_node("MatMul", ["x", "w"], ["h"], name="branch"),
             helper.make_node("Mul", ["h", "gamma"], ["hs"], name="layer_scale")]
    if transposed:
        nodes += [helper.make_node("Transpose", ["hs"], ["hs_t"], perm=[1, 0], name="branch_back"),
                  helper.make_node("Transpose", ["x"], ["x_t"], perm=[1, 0], name="residual_back"),
                  helper.make_node("Add", ["x_t", "hs_t"], ["y"], name="residual")]
    else:
        nodes.append(helper.make_node("Add", ["x", "hs"], ["y"], name="residual"))
    outs = [hgtest.vi("y", (16, 1) if transposed else (1, 16))] + ([hgtest.vi("hs", (1, 16))] if also_out else [])
    return hgtest.save_model(path, nodes, [hgtest.vi("x", (1, 16))], outs,
                             [init("w", w), init("gamma", np.full(16, 1e-6))], checker=True)


def data(tmp, tag, shape, rng, k=2):
    return [hgtest.write_inputs(os.path.join(tmp, tag, str(i)), {"x": rng.uniform(-1, 1, shape).astype(np.float32)})
            for i in range(k)]


def hazards(model, calib, ranges):
    args = ["--format", "json"] + hgtest.range_args(ranges)
    for c in calib:
        args += ["--calib", c]
    rc, so, se = hg("check", model, *args)
    if not so.strip().startswith("{"):
        return None, se
    return [h for m in json.loads(so)["models"] for h in m["hazards"] if h["kind"] == "underflow"], se


def report(model, out, calib, ranges):
    rep = out + ".json"
    args = ["-o", out, "--report", rep, "-q"] + hgtest.range_args(ranges)
    for c in calib:
        args += ["--calib", c]
    rc, so, se = hg("convert", model, *args)
    return (json.load(open(rep)) if rc == 0 else None), se


def verify(orig, conv, folder):
    rc, so, se = hg("verify", orig, conv, "--data", folder)
    return rc, so + se


def test_depth_head(tmp):
    rng = np.random.default_rng(5)
    model = depth_head(os.path.join(tmp, "head.onnx"), rng)
    calib = data(tmp, "calib", (1, 4, 16, 16), rng)
    fresh = data(tmp, "fresh", (1, 4, 16, 16), rng, 1)[0]
    ranges = ["x=-1:1"]
    found, se = hazards(model, calib, ranges)
    check("head: check --calib runs", found is not None, se)
    nodes = sorted(h["node"] for h in found or [])
    check("head: underflow reported where the tiny values start (conv2), once", nodes == ["conv2"], nodes)
    found_static, _ = hazards(model, [], ranges)
    check("head: ranges alone show it where the static bound is that small (conv2, static)",
          [(h["node"], h["source"]) for h in found_static or []] == [("conv2", "static")], found_static)

    out = os.path.join(tmp, "head.calib.onnx")
    rep, se = report(model, out, calib, ranges)
    check("head: convert --calib runs", rep is not None, se)
    fp32 = sorted(d["node"] for d in (rep or {}).get("decisions", []) if d["precision"] == "fp32")
    check("head: every node writing or reading the tiny tensors stays FP32", fp32 == ["conv2", "conv3", "relu2"],
          fp32)
    why = {d["node"]: d["reason"] for d in (rep or {}).get("decisions", []) if d["precision"] == "fp32"}
    check("head: the reasons name the tiny tensors", "too small for FP16" in why.get("conv3", "") and
          "too small for FP16" in why.get("relu2", ""), why)
    rc, txt = verify(model, out, fresh)
    check("head: the calibrated conversion verifies", rc == 0, txt)

    out_static = os.path.join(tmp, "head.static.onnx")
    rep_s, se = report(model, out_static, [], ranges)
    check("head: convert from ranges runs", rep_s is not None, se)
    fp32 = sorted(d["node"] for d in (rep_s or {}).get("decisions", []) if d["precision"] == "fp32")
    check("head: from ranges, the same nodes stay FP32", fp32 == ["conv2", "conv3", "relu2"], fp32)
    rc, txt = verify(model, out_static, fresh)
    check("head: the conversion from ranges verifies", rc == 0, txt)
    out_forced = os.path.join(tmp, "head.forced.onnx")
    rc, so, se = hg("convert", model, "-o", out_forced, "-q", "-r", "x=-1:1", "--force-fp16-node", ".*")
    check("head: convert forced all FP16 runs", rc == 0, so + se)
    rc, txt = verify(model, out_forced, fresh)
    check("head: all-FP16 conversion of the same model fails verify (the outputs flush)", rc == 1, txt)


def test_layer_scale(tmp):
    rng = np.random.default_rng(6)
    model = layer_scale(os.path.join(tmp, "ls.onnx"), rng)
    calib = data(tmp, "calib", (1, 16), rng)
    found, se = hazards(model, calib, ["x=-1:1"])
    check("layer scale: no underflow for a branch that only an Add of normal values reads", found == [], found or se)
    out = os.path.join(tmp, "ls.out.onnx")
    rep, se = report(model, out, calib, ["x=-1:1"])
    fp32 = [d["node"] for d in (rep or {}).get("decisions", []) if d["precision"] == "fp32"]
    check("layer scale: converted with no FP32 node", rep is not None and fp32 == [], fp32 or se)

    model_t = layer_scale(os.path.join(tmp, "ls_t.onnx"), rng, transposed=True)
    found, se = hazards(model_t, calib, ["x=-1:1"])
    check("layer scale: nor when a Transpose moves the branch back before the Add", found == [], found or se)

    model2 = layer_scale(os.path.join(tmp, "ls_out.onnx"), rng, also_out=True)
    found, se = hazards(model2, calib, ["x=-1:1"])
    nodes = [h["node"] for h in found or []]
    check("layer scale read as an output: reported at the scale", nodes == ["layer_scale"], nodes or se)


def hidden_head(path, rng):
    w1 = rng.normal(0, 2e-6, (1024, 64))
    w2 = rng.normal(0, 0.05, (64, 32))
    w3 = rng.normal(0, 0.05, (32, 8))
    nodes = [helper.make_node("MatMul", ["x", "w1"], ["h1"], name="mm1"),
             helper.make_node("Relu", ["h1"], ["r1"], name="relu1"),
             helper.make_node("MatMul", ["r1", "w2"], ["h2"], name="mm2"),
             helper.make_node("MatMul", ["h2", "w3"], ["y"], name="mm3")]
    return hgtest.save_model(path, nodes, [hgtest.vi("x", (4, 1024))], [hgtest.vi("y", (4, 8))],
                             [init("w1", w1), init("w2", w2), init("w3", w3)], checker=True)


def test_probe(tmp):
    rng = np.random.default_rng(7)
    model = hidden_head(os.path.join(tmp, "hidden.onnx"), rng)
    fresh = data(tmp, "fresh", (4, 1024), rng, 1)[0]
    found, se = hazards(model, [], ["x=-1:1"])
    check("probe: check from ranges alone finds no underflow (no bound shows it)", found == [], found or se)
    out = os.path.join(tmp, "hidden.out.onnx")
    rc, so, se = hg("convert", model, "-o", out, "-r", "x=-1:1", "--report", out + ".json")
    rep = json.load(open(out + ".json")) if rc == 0 else {}
    dec = {d["node"]: d for d in rep.get("decisions", [])}
    fp32 = sorted(n for n, d in dec.items() if d["precision"] == "fp32")
    check("probe: convert keeps the tiny products FP32 (mm1's reach 1e-4, mm2's 1e-6)",
          rc == 0 and fp32 == ["mm2", "mm3"],
          fp32 or se)
    check("probe: those decisions rest on synthetic data, and the summary says so",
          all(dec[n]["source"] == "synthetic" for n in fp32) and rep["figures"]["decisions_synthetic"] == len(fp32)
          and f"{len(fp32)} of {len(dec)} decisions rest on synthetic data" in so, (so, rep.get("figures")))
    rc, txt = verify(model, out, fresh)
    check("probe: the conversion verifies", rc == 0, txt)
    out2 = os.path.join(tmp, "hidden.noprobe.onnx")
    rc, so, se = hg("convert", model, "-o", out2, "-q", "-r", "x=-1:1", "--no-probe", "--report", out2 + ".json")
    fp32 = [d["node"] for d in json.load(open(out2 + ".json"))["decisions"] if d["precision"] == "fp32"] if rc == 0 else None
    check("probe: --no-probe converts all of it to FP16", fp32 == [], fp32 or se)
    rc, txt = verify(model, out2, fresh)
    check("probe: and that fails verify (what the probe is for)", rc == 1, txt)

    ls = layer_scale(os.path.join(tmp, "ls.onnx"), rng)
    rep, se = report(ls, os.path.join(tmp, "ls.out.onnx"), [], ["x=-1:1"])
    fp32 = [d["node"] for d in (rep or {}).get("decisions", []) if d["precision"] == "fp32"]
    check("probe: the layer-scaled branch, from ranges alone, keeps no node FP32", rep is not None and fp32 == [],
          fp32 or se)


def tiny_logits(path, rng, also_out=False):
    nodes = [helper.make_node("MatMul", ["x", "w"], ["s"], name="scores"),
             helper.make_node("Add", ["s", "b"], ["sb"], name="bias"),
             helper.make_node("Reshape", ["sb", "shape"], ["r"], name="heads"),
             helper.make_node("Softmax", ["r"], ["p"], axis=-1, name="softmax")]
    outs = [hgtest.vi("p", (4, 2, 16))] + ([hgtest.vi("s", (4, 32))] if also_out else [])
    return hgtest.save_model(path, nodes, [hgtest.vi("x", (4, 64))], outs,
                             [init("w", rng.normal(0, 1e-5, (64, 32))), init("b", rng.normal(0, 1e-6, 32)),
                              numpy_helper.from_array(np.array([4, 2, 16], np.int64), "shape")], checker=True)


def test_softmax_reads(tmp):
    rng = np.random.default_rng(8)
    model = tiny_logits(os.path.join(tmp, "logits.onnx"), rng)
    def quarter(tag, k):
        return [hgtest.write_inputs(os.path.join(tmp, tag, str(i)),
                                    {"x": rng.uniform(-0.25, 0.25, (4, 64)).astype(np.float32)}) for i in range(k)]
    calib, fresh = quarter("calib", 2), quarter("fresh", 1)[0]
    found, se = hazards(model, calib, ["x=-0.25:0.25"])
    check("softmax: logits near 3e-5 read by a Softmax are no underflow (calibration)", found == [], found or se)
    for tag, cal in (("probe", []), ("calibration", calib)):
        out = os.path.join(tmp, f"logits.{tag}.onnx")
        rep, se = report(model, out, cal, ["x=-0.25:0.25"])
        fp32 = [d["node"] for d in (rep or {}).get("decisions", []) if d["precision"] == "fp32"]
        check(f"softmax: converted ({tag}) with no FP32 node", rep is not None and fp32 == [], fp32 or se)
        rc, txt = verify(model, out, fresh)
        check(f"softmax: the conversion ({tag}) verifies", rc == 0, txt)
    model2 = tiny_logits(os.path.join(tmp, "logits_out.onnx"), rng, also_out=True)
    found, se = hazards(model2, calib, ["x=-0.25:0.25"])
    check("softmax: the same logits as a graph output are reported where they start",
          [h["node"] for h in found or []] == ["scores"], found or se)


hgtest.temp_folders(check, "hg-tiny-", [test_depth_head, test_layer_scale, test_probe, test_softmax_reads],
                    catch=True)
sys.exit(check.finish())
