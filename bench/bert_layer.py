#!/usr/bin/python3
"""One BERT-base-width encoder layer (issue 12's benchmark): hidden 768, 12 heads, FFN 3072,
N(0, 0.02) weights (seed 0), zero biases, LayerNormalization (opset 17) after each residual, as
PyTorch exports it (MatMul + Add, Reshape/Transpose per head, Softmax, Erf GELU). The input goes
through a LayerNormalization first, as the embeddings' (or the previous layer's) output does.

Usage: bert_layer.py OUT.onnx [--seq N]   (no --seq: the sequence is the symbolic dim 'seq')
Then, from ranges alone:
  halfguard convert OUT.onnx -o /tmp/x.onnx -r 'x=-0.3:0.3'
"""
import argparse

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

H, HEADS, FFN = 768, 12, 3072
D = H // HEADS


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--seq", type=int)
    args = ap.parse_args()
    rng = np.random.default_rng(0)
    inits, nodes = [], []

    def w(name, *shape):
        inits.append(numpy_helper.from_array((rng.standard_normal(shape) * 0.02).astype(np.float32), name))
        return name

    def const(name, arr):
        inits.append(numpy_helper.from_array(np.asarray(arr), name))
        return name

    def node(op, ins, out, **attrs):
        nodes.append(helper.make_node(op, ins, [out], name=out, **attrs))
        return out

    def linear(x, name, k, n):
        y = node("MatMul", [x, w(name + ".W", k, n)], name + ".mm")
        return node("Add", [y, const(name + ".b", np.zeros(n, np.float32))], name)

    def layernorm(x, name):
        return node("LayerNormalization", [x, const(name + ".g", np.ones(H, np.float32)),
                                           const(name + ".beta", np.zeros(H, np.float32))], name, axis=-1)

    seq = args.seq if args.seq else "seq"
    heads_shape = const("heads_shape", np.array([1, -1, HEADS, D], np.int64))
    merge_shape = const("merge_shape", np.array([1, -1, H], np.int64))

    def heads(x, name, perm):
        r = node("Reshape", [x, heads_shape], name + ".r")
        return node("Transpose", [r], name + ".t", perm=perm)

    x = layernorm("x", "ln0")
    q = heads(linear(x, "q", H, H), "qh", [0, 2, 1, 3])
    k = heads(linear(x, "k", H, H), "kh", [0, 2, 3, 1])
    v = heads(linear(x, "v", H, H), "vh", [0, 2, 1, 3])
    s = node("MatMul", [q, k], "scores")
    s = node("Div", [s, const("sqrt_d", np.array(np.sqrt(D), np.float32))], "scaled")
    p = node("Softmax", [s], "probs", axis=-1)
    o = node("MatMul", [p, v], "ctx")
    o = node("Transpose", [o], "ctx.t", perm=[0, 2, 1, 3])
    o = node("Reshape", [o, merge_shape], "ctx.r")
    o = linear(o, "attn_out", H, H)
    h1 = layernorm(node("Add", [o, x], "res1"), "ln1")
    f = linear(h1, "ffn_in", H, FFN)
    g = node("Erf", [node("Div", [f, const("sqrt2", np.array(np.sqrt(2), np.float32))], "gelu.div")], "gelu.erf")
    g = node("Add", [g, const("one", np.array(1, np.float32))], "gelu.add")
    g = node("Mul", [node("Mul", [f, g], "gelu.mul"), const("half", np.array(0.5, np.float32))], "gelu")
    f = linear(g, "ffn_out", FFN, H)
    y = layernorm(node("Add", [f, h1], "res2"), "y")

    graph = helper.make_graph(nodes, "bert_layer",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, seq, H])],
                              [helper.make_tensor_value_info(y, TensorProto.FLOAT, [1, seq, H])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    onnx.checker.check_model(model)
    onnx.save(model, args.out)


if __name__ == "__main__":
    main()
