#!/usr/bin/python3
"""Writes examples/tiny_unet.onnx, the model the README's first command converts.

A small image-to-image network with the FP16 hazards halfguard exists for: a chain of convolutions
with no normalization whose activations grow, a decomposed LayerNorm (opset 13, as PyTorch exports
it) with epsilon 1e-12, and a dead branch an exporter left behind. Deterministic: the same bytes on
every run. Needs Debian's python3-onnx.
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

rng = np.random.default_rng(20261122)


def conv_weight(name, cout, cin, k, gain):
    fan_in = cin * k * k
    w = rng.standard_normal((cout, cin, k, k)).astype(np.float32) * np.float32(gain / np.sqrt(fan_in))
    return numpy_helper.from_array(w, name)


def main(path):
    inits, nodes = [], []
    chans = [3, 16, 16, 16, 3]
    x = "image"
    for i in range(4):
        w = conv_weight(f"conv{i}.weight", chans[i + 1], chans[i], 3, 4.0)
        b = numpy_helper.from_array(np.full(chans[i + 1], 0.5, np.float32), f"conv{i}.bias")
        inits += [w, b]
        y = f"conv{i}_out"
        nodes.append(helper.make_node("Conv", [x, w.name, b.name], [y], name=f"Conv_{i}",
                                      pads=[1, 1, 1, 1], kernel_shape=[3, 3]))
        if i < 3:
            nodes.append(helper.make_node("Relu", [y], [f"relu{i}_out"], name=f"Relu_{i}"))
            x = f"relu{i}_out"
        else:
            x = y
    # Decomposed LayerNorm over the last axis (width), epsilon 1e-12.
    c = lambda name, v: inits.append(numpy_helper.from_array(np.array(v, np.float32), name)) or name
    nodes += [
        helper.make_node("ReduceMean", [x], ["ln_mean"], name="ReduceMean_0", axes=[-1]),
        helper.make_node("Sub", [x, "ln_mean"], ["ln_d"], name="Sub_0"),
        helper.make_node("Pow", ["ln_d", c("ln_two", 2.0)], ["ln_sq"], name="Pow_0"),
        helper.make_node("ReduceMean", ["ln_sq"], ["ln_var"], name="ReduceMean_1", axes=[-1]),
        helper.make_node("Add", ["ln_var", c("ln_eps", 1e-12)], ["ln_ve"], name="Add_0"),
        helper.make_node("Sqrt", ["ln_ve"], ["ln_std"], name="Sqrt_0"),
        helper.make_node("Div", ["ln_d", "ln_std"], ["ln_norm"], name="Div_0"),
        helper.make_node("Mul", ["ln_norm", c("ln_gamma", np.ones(32))], ["ln_scaled"], name="Mul_0"),
        helper.make_node("Add", ["ln_scaled", c("ln_beta", np.zeros(32))], ["output"], name="Add_1"),
    ]
    # A branch nothing reads, as exporters sometimes leave.
    nodes.append(helper.make_node("Neg", ["conv0_out"], ["unused"], name="Neg_dead"))
    graph = helper.make_graph(
        nodes, "tiny_unet",
        [helper.make_tensor_value_info("image", TensorProto.FLOAT, [1, 3, 32, 32])],
        [helper.make_tensor_value_info("output", TensorProto.FLOAT, [1, 3, 32, 32])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=7,
                              producer_name="halfguard-examples")
    onnx.checker.check_model(model, full_check=True)
    onnx.save(model, path)


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "tiny_unet.onnx"))
