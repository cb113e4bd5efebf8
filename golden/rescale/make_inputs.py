#!/usr/bin/python3
"""Writes the inputs of the region cases in golden/rescale (residual_add, split_concat, end_at_linear,
entry_from_outside, output_read_inside, neg_tiny_branch): ONNX models built with onnx.helper and
seeded weights, printed by `halfguard dump --full`. The .expected files are still made by
tests/golden.sh with HALFGUARD_GOLDEN_UPDATE=1. Usage: make_inputs.py HALFGUARD [OUTDIR]"""
import os
import subprocess
import sys
import tempfile
import numpy as np
import onnx
from onnx import helper as h, TensorProto as T, numpy_helper as nh
hg = sys.argv[1]
outdir = sys.argv[2] if len(sys.argv) > 2 else os.path.dirname(os.path.abspath(__file__))
tmpdir = tempfile.mkdtemp(prefix="hg-golden-")
os.makedirs(outdir, exist_ok=True)
rng = np.random.default_rng(7)
def W(name, shape, scale):
    return nh.from_array((rng.standard_normal(shape) * scale).astype(np.float32), name)
def B(name, n):
    return nh.from_array((rng.standard_normal(n) * 0.3).astype(np.float32), name)
def conv(i, x, y, cin=4, cout=4, scale=0.9, name=None, inits=None):
    inits += [W(f"w{i}", [cout, cin, 3, 3], scale), B(f"b{i}", cout)]
    return h.make_node("Conv", [x, f"w{i}", f"b{i}"], [y], name=name or f"conv{i}", pads=[1, 1, 1, 1])
def save(name, nodes, inits, header, outs=None):
    g = h.make_graph(nodes, name, [h.make_tensor_value_info("x", T.FLOAT, [1, 4, 8, 8])],
                     outs or [h.make_tensor_value_info("y", T.FLOAT, None)], inits)
    m = h.make_model(g, opset_imports=[h.make_opsetid("", 17)], ir_version=8)
    p = os.path.join(tmpdir, name + ".onnx")
    onnx.save(m, p)
    txt = subprocess.run([hg, "dump", "--full", p], capture_output=True, text=True, check=True).stdout
    open(os.path.join(outdir, name + ".onnxtxt"), "w").write(header + txt)

# 1. Residual blocks: the trunk's Adds read two scaled branches.
inits = []; nodes = [conv(0, "x", "t0", scale=1.0, inits=inits)]
t = "t0"
for blk in range(3):
    nodes += [conv(10 * blk + 1, t, f"a{blk}", scale=0.5, inits=inits), h.make_node("Relu", [f"a{blk}"], [f"ra{blk}"], name=f"relu{blk}a"),
              conv(10 * blk + 2, f"ra{blk}", f"c{blk}", scale=0.5, inits=inits),
              h.make_node("Add", [t, f"c{blk}"], [f"s{blk}"], name=f"add{blk}"),
              h.make_node("Relu", [f"s{blk}"], [f"t{blk + 1}"], name=f"relu{blk}")]
    t = f"t{blk + 1}"
nodes.append(h.make_node("GlobalAveragePool", [t], ["y"], name="gap"))
save("residual_add", nodes, inits, "# @args: --input-range x=0:1\n# @passes: rescale\n# Residual blocks without normalization: each Add reads the trunk and a branch, both scaled, so the\n# region spans blocks (the branches' first Convs, whose outputs fit, absorb 2^k in their weights);\n# the pooled output is undone by one Mul.\n")

# 2. Split into two branches and Concat them back.
inits = []
nodes = [conv(0, "x", "c0", scale=200.0, inits=inits), h.make_node("Relu", ["c0"], ["r0"], name="relu0")]
for i in range(2):
    nodes.append(conv(1 + i, "r0", f"p{i}", scale=8.0, inits=inits))
nodes += [h.make_node("Split", ["p0", "split_sizes"], ["q0", "q1"], name="split", axis=1),
          h.make_node("Relu", ["q0"], ["u0"], name="relu_q0"), h.make_node("Relu", ["q1"], ["u1"], name="relu_q1"),
          h.make_node("Concat", ["u0", "u1", "p1"], ["cat"], name="concat", axis=1)]
inits.append(nh.from_array(np.array([2, 2], np.int64), "split_sizes"))
inits += [W("w9", [4, 8, 3, 3], 0.05), B("b9", 4)]
nodes += [h.make_node("Conv", ["cat", "w9", "b9"], ["c9"], name="conv9", pads=[1, 1, 1, 1]),
          h.make_node("Relu", ["c9"], ["r9"], name="relu9"),
          conv(10, "r9", "c10", inits=inits), h.make_node("Relu", ["c10"], ["y"], name="relu10")]
save("split_concat", nodes, inits, "# @args: --input-range x=0:1\n# @passes: rescale\n# A Split and a Concat inside the region: every branch carries the same scale.\n")

# 3. A later linear op whose output fits again takes 2^k in its weights.
inits = []; nodes = []; x = "x"
for i in range(5):
    nodes += [conv(i, x, f"c{i}", scale=1.0, inits=inits), h.make_node("Relu", [f"c{i}"], [f"r{i}"], name=f"relu{i}")]
    x = f"r{i}"
inits += [W("w9", [4, 4, 1, 1], 1e-4), B("b9", 4)]
nodes += [h.make_node("Conv", [x, "w9", "b9"], ["c9"], name="squeeze_conv"), h.make_node("Sigmoid", ["c9"], ["y"], name="gate")]
save("end_at_linear", nodes, inits, "# @args: --input-range x=0:1\n# @passes: rescale\n# The region ends at a 1x1 Conv with small weights whose output fits FP16: it absorbs 2^k in its\n# weights (its bias unchanged), and nothing is added.\n")

# 4. An unscaled tensor entering the region: multiplied by 2^-k on the way in.
inits = []
nodes = [conv(0, "x", "c0", scale=1.0, inits=inits), h.make_node("Relu", ["c0"], ["r0"], name="relu0"),
         conv(1, "r0", "c1", scale=1.0, inits=inits), h.make_node("Relu", ["c1"], ["r1"], name="relu1"),
         conv(2, "r1", "c2", scale=1.0, inits=inits), h.make_node("Relu", ["c2"], ["r2"], name="relu2"),
         conv(3, "r2", "c3", scale=1.0, inits=inits),
         h.make_node("Sigmoid", ["x"], ["gate"], name="gate"),
         h.make_node("Add", ["c3", "gate"], ["s"], name="add"),
         h.make_node("Div", ["s", "norm"], ["y"], name="div")]
inits.append(nh.from_array(np.array(4096.0, np.float32), "norm"))
save("entry_from_outside", nodes, inits, "# @args: --input-range x=0:16\n# @passes: rescale\n# (x in [0, 16]: with per-channel intervals, x in [0, 1] is proven to fit FP16 and leaves nothing to rescale.)\n# The Add reads a Sigmoid of the input (not in the region): it enters through a Mul by 2^-k; the\n# constant Div after the Add absorbs 2^k.\n")

# 5. A scaled graph output that the region also reads on.
inits = []; nodes = []; x = "x"
for i in range(6):
    nodes += [conv(i, x, f"c{i}", scale=1.0, inits=inits), h.make_node("Relu", [f"c{i}"], [f"r{i}"], name=f"relu{i}")]
    x = f"r{i}"
nodes.append(h.make_node("InstanceNormalization", [x, "gamma", "beta"], ["y"], name="norm"))
inits += [nh.from_array(np.ones(4, np.float32), "gamma"), nh.from_array(np.zeros(4, np.float32), "beta")]
save("output_read_inside", nodes, inits, "# @args: --input-range x=0:16\n# @passes: rescale\n# (x in [0, 16]: with per-channel intervals, x in [0, 1] is proven to fit FP16 and leaves nothing to rescale.)\n# r4 is a graph output and read by the next Conv: the Conv reads it scaled (renamed r4_scaled), the\n# output keeps its name and its values through a Mul by 2^k.\n",
     outs=[h.make_tensor_value_info("y", T.FLOAT, None), h.make_tensor_value_info("r4", T.FLOAT, None)])

# 6. Negative: a branch so small that 2^-k would push it toward FP16's subnormals.
inits = []; nodes = []; x = "x"
for i in range(5):
    nodes += [conv(i, x, f"c{i}", scale=1.0, inits=inits), h.make_node("Relu", [f"c{i}"], [f"r{i}"], name=f"relu{i}")]
    x = f"r{i}"
inits += [W("wt", [4, 4, 3, 3], 1e-6), B("bt", 4)]
inits[-1] = nh.from_array(np.zeros(4, np.float32), "bt")
nodes += [h.make_node("Conv", ["x", "wt", "bt"], ["tiny"], name="tiny_conv", pads=[1, 1, 1, 1]),
          h.make_node("Add", [x, "tiny"], ["s"], name="add"),
          h.make_node("InstanceNormalization", ["s", "gamma", "beta"], ["y"], name="norm")]
inits += [nh.from_array(np.ones(4, np.float32), "gamma"), nh.from_array(np.zeros(4, np.float32), "beta")]
save("neg_tiny_branch", nodes, inits, "# @args: --input-range x=0:1\n# @passes: rescale\n# The last Add also reads a branch whose values stay below 4e-5: scaling it by 2^-k would push it\n# into FP16's subnormals, so the region (up to the InstanceNormalization) is left alone, with a note.\n")
