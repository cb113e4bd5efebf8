#!/usr/bin/python3
"""Random small CNNs for the per-channel intervals' soundness (issue 12): each a random chain of the
ops src/ranges_chan.c follows (Conv with groups, pads and strides; BatchNormalization with negative
scales; Relu, LeakyRelu, Clip; Add, Sub, Mul, Div by per-channel constants; residual Adds; MaxPool,
AveragePool with counted padding; Pad; Concat of two branches; GlobalAveragePool, Flatten, Gemm,
MatMul) with random weights of very different scales per channel, so that per-channel bounds differ
from per-tensor ones. tests/test_adversarial.py searches their input ranges for a value outside its
static range.

Usage: random_cnns.py OUTDIR [N] [SEED]   (writes cnnK.onnx, cnnK.data/input_0.pb and cases.json:
[{"name", "model", "data", "input_ranges"}])"""
import json
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def make(rng, k):
    nodes, inits = [], []
    count = [0]

    def name(p):
        count[0] += 1
        return f"{p}{count[0]}"

    def const(a, p="c"):
        n = name(p)
        inits.append(numpy_helper.from_array(np.asarray(a, np.float32), n))
        return n

    def node(op, ins, p, **attrs):
        out = name(p)
        nodes.append(helper.make_node(op, ins, [out], name=out + "_node", **attrs))
        return out

    c, hw = int(rng.integers(2, 6)), 9
    c_in = c
    lo = float(rng.choice([-3.0, 0.0, -1.0]))
    hi = float(rng.choice([1.0, 4.0, 255.0]))
    x = "x"
    history = []  # (value, channels, hw) of earlier tensors, for residual adds

    def scales(n):
        return (rng.standard_normal(n) * np.exp(rng.uniform(-3, 2, n))).astype(np.float32)

    for _ in range(int(rng.integers(3, 9))):
        kind = rng.choice(["conv", "conv", "bn", "act", "const", "res", "pool", "concat", "pad"])
        if kind == "conv":
            group = int(rng.choice([g for g in (1, 2, c) if c % g == 0]))
            cout = group * int(rng.integers(1, 4))
            ks = int(rng.choice([1, 3]))
            pad = int(rng.integers(0, 2)) if ks == 3 else 0
            stride = int(rng.choice([1, 1, 2])) if hw > 4 else 1
            w = rng.standard_normal((cout, c // group, ks, ks)).astype(np.float32)
            w *= scales(cout)[:, None, None, None] / np.sqrt(w[0].size)
            ins = [x, const(w, "w")] + ([const(rng.standard_normal(cout) * 0.5, "b")] if rng.random() < 0.7 else [])
            x = node("Conv", ins, "conv", kernel_shape=[ks, ks], pads=[pad] * 4, strides=[stride, stride],
                     group=group)
            c, hw = cout, (hw + 2 * pad - ks) // stride + 1
        elif kind == "bn":
            x = node("BatchNormalization", [x, const(scales(c)), const(rng.standard_normal(c)),
                                            const(rng.standard_normal(c) * 3), const(rng.uniform(0.01, 9, c))],
                     "bn", epsilon=1e-5)
        elif kind == "act":
            a = rng.choice(["Relu", "LeakyRelu", "Clip"])
            if a == "Clip":
                x = node("Clip", [x, const(-rng.uniform(0, 2)), const(rng.uniform(0, 6))], "clip")
            elif a == "LeakyRelu":
                x = node("LeakyRelu", [x], "lrelu", alpha=float(rng.uniform(0, 0.3)))
            else:
                x = node("Relu", [x], "relu")
        elif kind == "const":
            op = rng.choice(["Add", "Sub", "Mul", "Div"])
            v = scales(c) if op != "Div" else (np.sign(scales(c)) * rng.uniform(0.1, 3, c)).astype(np.float32)
            shape = [c, 1, 1] if rng.random() < 0.7 else [1, c, 1, 1]
            args = [x, const(v.reshape(shape))]
            x = node(op, args[::-1] if op in ("Add", "Mul") and rng.random() < 0.5 else args, op.lower())
        elif kind == "res":
            same = [h for h in history if h[1] == c and h[2] == hw]
            if same:
                x = node(rng.choice(["Add", "Sub"]), [x, same[int(rng.integers(len(same)))][0]], "res")
        elif kind == "pool" and hw >= 3:
            if rng.random() < 0.5:
                x = node("MaxPool", [x], "maxpool", kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])
                hw = (hw + 2 - 3) // 2 + 1
            else:
                x = node("AveragePool", [x], "avgpool", kernel_shape=[2, 2], strides=[1, 1], pads=[0, 0, 1, 1],
                         count_include_pad=int(rng.integers(0, 2)))
        elif kind == "concat":
            w = (rng.standard_normal((c, c, 1, 1)) * scales(c)[:, None, None, None]).astype(np.float32)
            y = node("Conv", [x, const(w, "w")], "branch", kernel_shape=[1, 1])
            x = node("Concat", [x, y], "concat", axis=1)
            c *= 2
        elif kind == "pad":
            pads = name("pads")
            inits.append(numpy_helper.from_array(np.array([0, 0, 1, 1, 0, 0, 1, 0], np.int64), pads))
            x = node("Pad", [x, pads, const(rng.uniform(-5, 5), "padval")], "pad", mode="constant")
            hw = None  # no longer square: the chain ends here
        history.append((x, c, hw))
        if hw is None:
            break
    x = node("GlobalAveragePool", [x], "gap")
    x = node("Flatten", [x], "flat", axis=1)
    m = int(rng.integers(2, 6))
    if rng.random() < 0.5:
        w = (rng.standard_normal((m, c)) * scales(m)[:, None]).astype(np.float32)
        x = node("Gemm", [x, const(w, "fc"), const(rng.standard_normal(m), "fcb")], "gemm", transB=1,
                 alpha=float(rng.uniform(0.5, 2)))
    else:
        w = (rng.standard_normal((c, m)) * scales(m)[None, :]).astype(np.float32)
        x = node("MatMul", [x, const(w, "fc")], "matmul")
    g = helper.make_graph(nodes, f"cnn{k}", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, c_in, 9, 9])],
                          [helper.make_tensor_value_info(x, TensorProto.FLOAT, [1, m])], inits)
    return g, c_in, lo, hi


def main(argv):
    out = argv[1]
    n = int(argv[2]) if len(argv) > 2 else 12
    seed = int(argv[3]) if len(argv) > 3 else 0
    os.makedirs(out, exist_ok=True)
    cases = []
    for k in range(n):
        rng = np.random.default_rng([seed, k])
        g, c0, lo, hi = make(rng, k)
        model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
        model.ir_version = 7
        onnx.checker.check_model(model, full_check=True)
        path = os.path.join(out, f"cnn{k}.onnx")
        onnx.save(model, path)
        data = os.path.join(out, f"cnn{k}.data")
        os.makedirs(data, exist_ok=True)
        x = rng.uniform(lo, hi, (1, c0, 9, 9)).astype(np.float32)
        with open(os.path.join(data, "input_0.pb"), "wb") as f:
            f.write(numpy_helper.from_array(x, "x").SerializeToString())
        cases.append({"name": f"cnn{k}", "model": path, "data": data, "input_ranges": [f"x={lo:g}:{hi:g}"]})
    with open(os.path.join(out, "cases.json"), "w") as f:
        json.dump(cases, f, indent=1)


if __name__ == "__main__":
    main(sys.argv)
