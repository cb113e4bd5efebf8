#!/usr/bin/python3
"""The interval rules for activations written out as products: SiLU as Mul(x, Sigmoid(x)) (how timm,
torchvision and the dynamo exporter write SiLU and Swish), which never goes below -0.27846, and GELU as
TorchScript writes it below opset 20, x * (1 + Erf(x / sqrt 2)) * 0.5, which never goes below -0.17:
the product's interval is not x's own negative side.

Usage: test_activation_bounds.py HALFGUARD RANGES_MODEL

1. x in [-10, 10] -> Sigmoid -> Mul(x, s) (and Mul(s, x)): the Mul's static interval (convert's
   report) is [-0.2785, silu(10)] to within the rule's rounding slack, where the product of the two
   intervals gives [-10, 10].
2. Per channel: x in [-1, 1] -> 1x1 Conv (4 channels) -> SiLU -> 1x1 Conv: the second Conv's upper
   bound is what each channel's SiLU range gives (the first Conv's channel bound h_c into
   [-0.2785, silu(h_c)], then the weights' signs), not what [-h_c, h_c] gives; computed here in
   NumPy with a 1e-4 relative margin either way.
3. Sound on data: ranges_model (the suite's interval checker) finds no value outside its interval
   on 10 random inputs of each model, drawn over its range.
4. GELU written out, x in [-10, 10], the forms TorchScript writes (x * (1 + erf) then * 0.5, and
   (x * 0.5) * (1 + erf)) and TensorFlow's (x * (0.5 * (1 + erf))), Div by sqrt 2 or Mul by 1/sqrt 2;
   and the tanh form (HF's gelu_new, gelu_pytorch_tanh: 1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3)),
   the cube as Pow or as Mul(x, Mul(x, x))) in the same three arrangements: the GELU value's interval
   is [-0.16997, gelu(10)] (tanh form: [-0.17004, ...]) to within the rule's slack (the generic
   product gives [-10, 10]), and no value on random data, in FP32 and in the model converted to
   FP16, lies outside its interval.
5. CLIP's QuickGELU, x * Sigmoid(1.702 x), either operand order: [silu(1.702 lo) / 1.702 ...], so
   about [-0.1636, 10], sound on data in FP32 and all-FP16.
"""
import json
import os
import subprocess
import sys

import numpy as np
from onnx import helper, numpy_helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hgtest  # noqa: E402

hg = hgtest.tool(sys.argv[1])
check = hgtest.Checks(echo="end", limit=2000)
SILU_MIN = -0.2784645427610738


def silu(x):
    return x / (1 + np.exp(-x))


def intervals(model, ranges, tmp):
    out = os.path.join(tmp, "o.onnx")
    rc, so, se = hg("convert", model, "-o", out, "--passes", "assign_precision", "--report", out + ".json",
                    *hgtest.range_args(ranges))
    if rc != 0:
        return None, se
    return {d["node"]: d["interval"] for d in json.load(open(out + ".json"))["decisions"]}, se


def plain(path, order):
    return hgtest.save_model(path, [helper.make_node("Sigmoid", ["x"], ["s"], name="gate"),
                                    helper.make_node("Mul", order, ["y"], name="silu")],
                             [hgtest.vi("x", (64,))], [hgtest.vi("y", (64,))], [], checker=True)


def test_plain(tmp):
    top = silu(10.0)
    for name, order in (("xs", ["x", "s"]), ("sx", ["s", "x"])):
        iv, se = intervals(plain(os.path.join(tmp, name + ".onnx"), order), ["x=-10:10"], tmp)
        lo, hi = (iv or {}).get("silu", [None, None])
        check(f"{name}: the interval is [-0.2785, silu(10)] to within slack",
              lo is not None and SILU_MIN * (1 + 1e-5) <= lo <= SILU_MIN and top <= hi <= top * (1 + 1e-5),
              (iv, se))


def test_channels(tmp):
    rng = np.random.default_rng(4)
    w1 = rng.normal(0, 1, (4, 3, 1, 1)).astype(np.float32)
    w2 = rng.normal(0, 1, (2, 4, 1, 1)).astype(np.float32)
    m = hgtest.save_model(os.path.join(tmp, "cnn.onnx"),
                          [helper.make_node("Conv", ["x", "w1"], ["c1"], name="conv1"),
                           helper.make_node("Sigmoid", ["c1"], ["s"], name="gate"),
                           helper.make_node("Mul", ["c1", "s"], ["a"], name="silu"),
                           helper.make_node("Conv", ["a", "w2"], ["y"], name="conv2")],
                          [hgtest.vi("x", (1, 3, 8, 8))], [hgtest.vi("y", (1, 2, 8, 8))],
                          [numpy_helper.from_array(w1, "w1"), numpy_helper.from_array(w2, "w2")], checker=True)
    iv, se = intervals(m, ["x=-1:1"], tmp)
    h = np.abs(w1.astype(np.float64)).sum(axis=(1, 2, 3))  # conv1's channel c reaches [-h_c, h_c]
    lo_c, hi_c = np.full(4, SILU_MIN), silu(h)
    w = w2[:, :, 0, 0].astype(np.float64)
    want_hi = (np.maximum(w, 0) * hi_c + np.minimum(w, 0) * lo_c).sum(axis=1).max()
    generic_hi = (np.abs(w) * h).sum(axis=1).max()
    got = (iv or {}).get("conv2", [None, None])[1]
    check("channels: conv2's bound is what each channel's SiLU range gives",
          got is not None and want_hi * (1 - 1e-4) <= got <= want_hi * (1 + 1e-4) and want_hi < 0.8 * generic_hi,
          (got, want_hi, generic_hi, se))
    tool = sys.argv[2]
    for model, name, shape, lo, hi in ((m, "x", (1, 3, 8, 8), -1, 1),
                                       (plain(os.path.join(tmp, "xs.onnx"), ["x", "s"]), "x", (64,), -10, 10)):
        viol = 0
        for k in range(10):
            d = hgtest.write_inputs(os.path.join(tmp, f"data{k}"),
                                    {name: rng.uniform(lo, hi, shape).astype(np.float32)})
            p = subprocess.run([tool, model, d, f"{name}={lo}:{hi}"], capture_output=True, text=True)
            viol += p.returncode != 0 or " 0 violations" not in p.stdout
        check(f"sound on data: {os.path.basename(model)}, 10 random inputs, no value outside its interval",
              viol == 0, viol)


def gelu_model(path, form, by_mul, tanh=False):
    """by_mul: Mul by 1/sqrt 2 (erf) or the cube as Mul(x, Mul(x, x)) (tanh), else Div or Pow."""
    if tanh:  # HF gelu_new: 0.5 * x * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 * x^3)))
        cube = ([helper.make_node("Mul", ["x", "x"], ["x2"], name="square"),
                 helper.make_node("Mul", ["x", "x2"], ["x3"], name="cube")] if by_mul
                else [helper.make_node("Pow", ["x", "three"], ["x3"], name="cube")])
        ins = ["x", "three", "k", "c"]
        nodes = cube + [helper.make_node("Mul", ["k", "x3"], ["kx3"], name="k_cube"),
                        helper.make_node("Add", ["x", "kx3"], ["inner"], name="inner"),
                        helper.make_node("Mul", ["inner", "c"], ["q"], name="scale_in"),
                        helper.make_node("Tanh", ["q"], ["e"], name="tanh"),
                        helper.make_node("Add", ["one", "e"], ["e1"], name="plus_one")]
    else:
        ins = ["x", "inv_sqrt2"] if by_mul else ["x", "sqrt2"]
        nodes = [helper.make_node("Mul" if by_mul else "Div", ins, ["q"], name="scale_in"),
                 helper.make_node("Erf", ["q"], ["e"], name="erf"),
                 helper.make_node("Add", ["e", "one"], ["e1"], name="plus_one")]
    if form == "half-first":
        nodes += [helper.make_node("Mul", ["x", "half"], ["xh"], name="half"),
                  helper.make_node("Mul", ["xh", "e1"], ["y"], name="gelu")]
    elif form == "tf":  # TensorFlow's exporters: x * (0.5 * (1 + erf))
        nodes += [helper.make_node("Mul", ["half", "e1"], ["eh"], name="half"),
                  helper.make_node("Mul", ["x", "eh"], ["y"], name="gelu")]
    else:
        nodes += [helper.make_node("Mul", ["x", "e1"], ["g2"], name="double_gelu"),
                  helper.make_node("Mul", ["g2", "half"], ["y"], name="gelu")]
    consts = [numpy_helper.from_array(np.array(v, np.float32), n)
              for n, v in (("sqrt2", np.sqrt(2)), ("inv_sqrt2", 1 / np.sqrt(2)), ("one", 1.0), ("half", 0.5),
                           ("three", 3.0), ("k", 0.044715), ("c", np.sqrt(2 / np.pi)))]
    used = {i for n in nodes for i in n.input}
    return hgtest.save_model(path, nodes, [hgtest.vi("x", (64,))], [hgtest.vi("y", (64,))],
                             [c for c in consts if c.name in used], checker=True)


def test_gelu(tmp):
    from math import erf, sqrt, tanh
    rng = np.random.default_rng(6)
    for form, by_mul, th in [(f, b, t) for t in (False, True) for f in ("half-last", "half-first", "tf")
                             for b in (False, True)]:
        # erf: min -0.16997 at -0.7518; tanh form: min -0.17004 at -0.7525
        top = 0.5 * 10 * (1 + (tanh(sqrt(2 / np.pi) * (10 + 0.044715 * 1000)) if th else erf(10 / sqrt(2))))
        fmin = -0.17004075 if th else -0.16997121
        kind = "tanh" if th else "erf"
        tag = f"{kind},{form},{('mul-cube' if th else 'mul') if by_mul else ('pow' if th else 'div')}"
        name = f"gelu-{kind}-{form}{int(by_mul)}"
        m = gelu_model(os.path.join(tmp, name + ".onnx"), form, by_mul, tanh=th)
        iv, se = intervals(m, ["x=-10:10"], tmp)
        lo, hi = (iv or {}).get("gelu", [None, None])
        check(f"gelu ({tag}): the interval is [{fmin:.5f}, gelu(10)] to within slack",
              lo is not None and fmin - 1e-4 <= lo <= fmin and top <= hi <= top * (1 + 1e-4), (iv, se))
        fp16 = os.path.join(tmp, name + ".fp16.onnx")
        rc, so, se = hg("convert", m, "-o", fp16, "-r", "x=-10:10", "--force-fp16-node", ".*", "--no-probe")
        viol = 0
        for k in range(10):
            x = rng.uniform(-10, 10, 64).astype(np.float32)
            x[:8] = np.linspace(-4, -0.5, 8)  # where 1 + erf cancels and near the minimum
            d = hgtest.write_inputs(os.path.join(tmp, f"g{k}"), {"x": x})
            d16 = hgtest.write_inputs(os.path.join(tmp, f"g16_{k}"), {"x": x.astype(np.float16)})
            for model, data in ((m, d), (fp16, d16)):
                p = subprocess.run([sys.argv[2], model, data, "x=-10:10"], capture_output=True, text=True)
                viol += p.returncode != 0 or " 0 violations" not in p.stdout
        check(f"gelu ({tag}): sound on data, FP32 and all-FP16", rc == 0 and viol == 0, (viol, se))


def test_quick_gelu(tmp):
    """x * sigmoid(1.702 x), CLIP's QuickGELU, either operand order of both Muls."""
    a = np.float32(1.702)
    lo_want, top = SILU_MIN / float(a), silu(10.0 * float(a)) / float(a)
    rng = np.random.default_rng(8)
    for swap in (False, True):
        m = hgtest.save_model(os.path.join(tmp, f"qg{int(swap)}.onnx"),
                              [helper.make_node("Mul", ["a", "x"] if swap else ["x", "a"], ["ax"], name="scale"),
                               helper.make_node("Sigmoid", ["ax"], ["s"], name="gate"),
                               helper.make_node("Mul", ["s", "x"] if swap else ["x", "s"], ["y"], name="qgelu")],
                              [hgtest.vi("x", (64,))], [hgtest.vi("y", (64,))],
                              [numpy_helper.from_array(np.array(a, np.float32), "a")], checker=True)
        iv, se = intervals(m, ["x=-10:10"], tmp)
        lo, hi = (iv or {}).get("qgelu", [None, None])
        check(f"quick-gelu (swap={swap}): the interval is [-0.1636, silu(17.02) / 1.702] to within slack",
              lo is not None and lo_want - 1e-5 <= lo <= lo_want and top <= hi <= top * (1 + 1e-5) + 1e-5, (iv, se))
        fp16 = os.path.join(tmp, f"qg{int(swap)}.fp16.onnx")
        rc, so, se = hg("convert", m, "-o", fp16, "-r", "x=-10:10", "--force-fp16-node", ".*", "--no-probe")
        viol = 0
        for k in range(10):
            x = rng.uniform(-10, 10, 64).astype(np.float32)
            x[:8] = np.linspace(-3, 0, 8)  # around the minimum near x = -0.75
            for model, data in ((m, hgtest.write_inputs(os.path.join(tmp, f"q{k}"), {"x": x})),
                                (fp16, hgtest.write_inputs(os.path.join(tmp, f"q16_{k}"), {"x": x.astype(np.float16)}))):
                p = subprocess.run([sys.argv[2], model, data, "x=-10:10"], capture_output=True, text=True)
                viol += p.returncode != 0 or " 0 violations" not in p.stdout
        check(f"quick-gelu (swap={swap}): sound on data, FP32 and all-FP16", rc == 0 and viol == 0, (viol, se))


hgtest.temp_folders(check, "hg-activation-", [test_plain, test_channels, test_gelu, test_quick_gelu], catch=True)
sys.exit(check.finish())
