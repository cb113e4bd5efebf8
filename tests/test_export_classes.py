#!/usr/bin/python3
"""The classes of failure measured on real PyTorch exports (issue 11), each as a minimal model that
convert once got wrong: every conversion must load and run in ONNX Runtime (npm's onnxruntime-node)
and agree with the FP32 original within a relative L2 error of 1e-2, judged by ONNX Runtime and, where
the interpreter has every op, by `halfguard verify`.

  unknown_op     MatMul -> Add -> an op of another domain -> MatMul: the op keeps its types, with Casts
                 on both sides (ONNX Runtime cannot run com.example ops, so the op is renamed to Relu in
                 a copy of the converted model, which ONNX Runtime must then load and run right; a
                 missing Cast shows up as "bound to different types"). convert's summary names the op.
  gelu20         MatMul -> Add -> Gelu (opset 20, the dynamo exporter's nn.GELU) -> MatMul.
  gridsample16   Conv -> GridSample (opset 16, RT-DETR's deformable attention) -> Conv.
  col2im18       Conv -> Reshape -> Col2Im (opset 18, the dynamo exporter's F.fold, as in MobileViTV2;
                 overlapping 2x2 blocks at stride 1, and 2x2 at stride 2 as MobileViTV2 folds) -> Conv.
                 ONNX Runtime's CPU Col2Im kernel is float-only; a float16 node still loads and runs
                 (its session inserts Casts around it), so convert may leave it FP16: the folds are
                 forced FP16 here, and must come out so.
  frozen_bn      12 blocks of Conv -> Mul -> Add -> Relu (DETR's frozen BatchNorm backbone) converted
                 from input ranges alone: static bounds reach 1e13 where values of about 5 are reached,
                 and a 2^-k from them flushed the real values to 0 (relative L2 error 0.9).

The false FP32 islands (an RMSNorm epsilon of 1e-5, a ReduceMean global average, a folded Conv bias
of 1e-10) are negative controls of the pathology suite, and check's count of what convert fixes by
itself is in test_check_cli.py.

Usage: test_export_classes.py HALFGUARD
"""
import os
import sys
import tempfile

import numpy as np
import onnx
from onnx import helper, numpy_helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hgtest  # noqa: E402
import ortlib  # noqa: E402
from hgtest import vi  # noqa: E402

HG = os.path.abspath(sys.argv[1])
RTOL = 1e-2
check = hgtest.Checks()


def save(path, nodes, inputs, outputs, inits, opset, domains=(), value_info=()):
    return hgtest.save_model(path, nodes, inputs, outputs, inits, opset=opset, domains=domains,
                             value_info=value_info, name=os.path.basename(path)[:-5])


def mlp_around(path, op, opset, domain="", attrs=None, rng=None):
    """x[2,16] -> MatMul -> Add -> OP -> MatMul -> y[2,8]."""
    w1 = numpy_helper.from_array(rng.normal(0, 0.3, (16, 32)).astype(np.float32), "w1")
    b1 = numpy_helper.from_array(rng.normal(0, 0.1, 32).astype(np.float32), "b1")
    w2 = numpy_helper.from_array(rng.normal(0, 0.3, (32, 8)).astype(np.float32), "w2")
    nodes = [helper.make_node("MatMul", ["x", "w1"], ["h"], name="mm1"),
             helper.make_node("Add", ["h", "b1"], ["a"], name="add1"),
             helper.make_node(op, ["a"], ["g"], name="act", domain=domain, **(attrs or {})),
             helper.make_node("MatMul", ["g", "w2"], ["y"], name="mm2")]
    return save(path, nodes, [vi("x", [2, 16])], [vi("y", [2, 8])], [w1, b1, w2], opset,
                [domain] if domain else (), [vi("g", [2, 32])])


def gridsample(path, rng):
    """x[1,4,8,8] -> Conv -> GridSample(grid[1,6,6,2] in [-1, 1]) -> Conv -> y."""
    w1 = numpy_helper.from_array(rng.normal(0, 0.3, (8, 4, 3, 3)).astype(np.float32), "w1")
    w2 = numpy_helper.from_array(rng.normal(0, 0.3, (4, 8, 1, 1)).astype(np.float32), "w2")
    nodes = [helper.make_node("Conv", ["x", "w1"], ["c"], name="conv1", pads=[1, 1, 1, 1]),
             helper.make_node("GridSample", ["c", "grid"], ["s"], name="sample", align_corners=0),
             helper.make_node("Conv", ["s", "w2"], ["y"], name="conv2")]
    return save(path, nodes, [vi("x", [1, 4, 8, 8]), vi("grid", [1, 6, 6, 2])], [vi("y", [1, 4, 6, 6])],
                [w1, w2], 16)


def frozen_bn(path, rng):
    """12 x (Conv -> Mul(scale) -> Add(shift) -> Relu), then GlobalAveragePool: DETR's backbone with
    BatchNorm frozen into a per-channel scale and shift."""
    nodes, inits, x = [], [], "x"
    for i in range(12):
        cin = 3 if i == 0 else 16
        inits += [numpy_helper.from_array(rng.normal(0, np.sqrt(2.0 / (cin * 9)), (16, cin, 3, 3))
                                          .astype(np.float32), f"w{i}"),
                  numpy_helper.from_array(rng.uniform(0.5, 1.5, (1, 16, 1, 1)).astype(np.float32), f"s{i}"),
                  numpy_helper.from_array(rng.normal(0, 0.1, (1, 16, 1, 1)).astype(np.float32), f"b{i}")]
        nodes += [helper.make_node("Conv", [x, f"w{i}"], [f"c{i}"], name=f"conv{i}", pads=[1, 1, 1, 1]),
                  helper.make_node("Mul", [f"c{i}", f"s{i}"], [f"m{i}"], name=f"bn_mul{i}"),
                  helper.make_node("Add", [f"m{i}", f"b{i}"], [f"a{i}"], name=f"bn_add{i}"),
                  helper.make_node("Relu", [f"a{i}"], [f"r{i}"], name=f"relu{i}")]
        x = f"r{i}"
    nodes.append(helper.make_node("GlobalAveragePool", [x], ["y"], name="gap"))
    return save(path, nodes, [vi("x", [1, 3, 16, 16])], [vi("y", [1, 16, 1, 1])], inits, 17)


def col2im(path, rng):
    """x[1,4,8,8] -> Conv(1x1, 16) -> Reshape[1,16,64] -> Col2Im(9x9, blocks 2x2, stride 1) -> Conv
    -> Conv(1x1, 4) -> Reshape[1,16,16] -> Col2Im(8x8, blocks 2x2, stride 2) -> y[1,4,8,8]."""
    w = lambda name, shape: numpy_helper.from_array(rng.normal(0, 0.3, shape).astype(np.float32), name)
    i64 = lambda name, v: numpy_helper.from_array(np.int64(v), name)
    inits = [w("w1", (16, 4, 1, 1)), w("w2", (4, 4, 2, 2)), w("w3", (4, 4, 1, 1)),
             i64("cols64", [1, 16, 64]), i64("cols16", [1, 16, 16]), i64("img9", [9, 9]),
             i64("img8", [8, 8]), i64("blk", [2, 2])]
    nodes = [helper.make_node("Conv", ["x", "w1"], ["c1"], name="conv1"),
             helper.make_node("Reshape", ["c1", "cols64"], ["r1"], name="to_cols1"),
             helper.make_node("Col2Im", ["r1", "img9", "blk"], ["f1"], name="fold_overlap"),
             helper.make_node("Conv", ["f1", "w2"], ["c2"], name="conv2"),
             helper.make_node("Conv", ["c2", "w3"], ["c3"], name="conv3"),
             helper.make_node("Reshape", ["c3", "cols16"], ["r3"], name="to_cols2"),
             helper.make_node("Col2Im", ["r3", "img8", "blk"], ["y"], name="fold_patches", strides=[2, 2])]
    return save(path, nodes, [vi("x", [1, 4, 8, 8])], [vi("y", [1, 4, 8, 8])], inits, 18)


def rel_l2(got, want):
    got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
    if not np.all(np.isfinite(got)):
        return float("inf")
    n = np.linalg.norm(want)
    return float(np.linalg.norm(got - want) / n) if n else float(np.linalg.norm(got))


def convert(src, dst, ranges, extra=()):
    rc, so, se = hgtest.run([HG, "convert", src, "-o", dst, "--keep-io-types", *hgtest.range_args(ranges),
                             *extra])
    return rc, so + se


def ort_outputs(node_path, model, feeds, work):
    try:
        return ortlib.run_ort(node_path, model, feeds, None, work)[0], None
    except RuntimeError as e:
        return None, str(e)


def case(name, tmp, node_path, src, ranges, feeds, ort_model=None, verify=True, expect_in_summary=None,
         extra=()):
    """Convert src from ranges alone (extra: further convert options); the result must run in ONNX
    Runtime (ort_model, when given, turns a model into one ONNX Runtime can run) and match the FP32
    original."""
    dst = os.path.join(tmp, name + ".fp16.onnx")
    rc, out = convert(src, dst, ranges, extra)
    if not check(f"{name}:convert", rc == 0, out):
        return
    if expect_in_summary:
        check(f"{name}:says-so", expect_in_summary in out, out)
    ref_src, conv = (ort_model(src, "orig"), ort_model(dst, "conv")) if ort_model else (src, dst)
    want, err = ort_outputs(node_path, ref_src, feeds, os.path.join(tmp, name + "-ort-orig"))
    if not check(f"{name}:ort-original", want is not None, err):
        return
    got, err = ort_outputs(node_path, conv, feeds, os.path.join(tmp, name + "-ort-conv"))
    if not check(f"{name}:ort-loads-converted", got is not None, err):
        return
    errs = [rel_l2(g, w) for g, w in zip(got, want)]
    check(f"{name}:ort-rel-l2", max(errs) <= RTOL, f"rel L2 {errs} > {RTOL}\n{out}")
    if verify:
        data = hgtest.write_inputs(os.path.join(tmp, name + ".data"), feeds)
        rc, so, se = hgtest.run([HG, "verify", src, dst, "--data", data])
        check(f"{name}:verify", rc == 0, so + se)


def main():
    node_path = ortlib.ensure_ort()
    rng = np.random.default_rng(11)
    with tempfile.TemporaryDirectory(prefix="hg-classes-") as tmp:
        x = rng.uniform(-1, 1, (2, 16)).astype(np.float32)

        def as_relu(path, tag):
            m = onnx.load(path)
            for n in m.graph.node:
                if n.op_type == "Frob":
                    n.op_type, n.domain = "Relu", ""
            out = os.path.join(tmp, f"unknown_op.{tag}.relu.onnx")
            onnx.save(m, out)
            return out
        src = mlp_around(os.path.join(tmp, "unknown_op.onnx"), "Frob", 17, "com.example", rng=rng)
        case("unknown_op", tmp, node_path, src, ["x=-1:1"], {"x": x}, ort_model=as_relu, verify=False,
             expect_in_summary="op halfguard does not know ('com.example.Frob')")
        src = mlp_around(os.path.join(tmp, "gelu20.onnx"), "Gelu", 20, rng=rng)
        case("gelu20", tmp, node_path, src, ["x=-1:1"], {"x": x})
        src = gridsample(os.path.join(tmp, "gridsample16.onnx"), rng)
        case("gridsample16", tmp, node_path, src, ["x=-1:1", "grid=-1:1"],
             {"x": rng.uniform(-1, 1, (1, 4, 8, 8)).astype(np.float32),
              "grid": rng.uniform(-1, 1, (1, 6, 6, 2)).astype(np.float32)})
        src = col2im(os.path.join(tmp, "col2im18.onnx"), rng)
        # So small a model stays FP32 behind --keep-io-types's Casts: the folds are forced FP16, so
        # that ONNX Runtime has to load and run float16 Col2Im nodes.
        case("col2im18", tmp, node_path, src, ["x=-1:1"],
             {"x": rng.uniform(-1, 1, (1, 4, 8, 8)).astype(np.float32)},
             extra=["--force-fp16-node", "^fold_"])
        # onnx 1.12's shape inference stops at Col2Im: carry input 0's type forward (Conv, Reshape and
        # Col2Im keep it; Cast sets it).
        m = onnx.load(os.path.join(tmp, "col2im18.fp16.onnx"))
        types = {i.name: i.type.tensor_type.elem_type for i in m.graph.input}
        types.update({t.name: t.data_type for t in m.graph.initializer})
        for n in m.graph.node:
            to = next((a.i for a in n.attribute if a.name == "to"), None)
            types[n.output[0]] = to if n.op_type == "Cast" else types.get(n.input[0])
        folds = [types.get(n.input[0]) for n in m.graph.node if n.op_type == "Col2Im"]
        check("col2im18:folds-fp16", folds == [onnx.TensorProto.FLOAT16] * 2, folds)
        src = frozen_bn(os.path.join(tmp, "frozen_bn.onnx"), rng)
        case("frozen_bn", tmp, node_path, src, ["x=-3:3"],
             {"x": rng.uniform(-3, 3, (1, 3, 16, 16)).astype(np.float32)})
    return check.finish()


if __name__ == "__main__":
    sys.exit(main())
