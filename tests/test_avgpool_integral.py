#!/usr/bin/python3
"""avgpool_integral against the interpreter (issue 6: the integral-image box filter -> AveragePool).

Usage: test_avgpool_integral.py HALFGUARD

1. Each rewriting golden case (golden/avgpool_integral/, not neg_*) and the two pathology cases
   integral_image_nafnet and integral_image_features: the original and `convert --passes
   avgpool_integral` run through `halfguard run` (FP32 compute) on random inputs in [0, 255] (the
   features case in [0, 4], its declared range). The rewritten model must hold an AveragePool and no
   CumSum, and both results are compared with a float64 evaluation of the original graph (numpy,
   below):
   - the AveragePool sums each window of k*k values in FP32 and divides once: within
     (k*k + 2) * 2^-24 of the largest window mean (plus one FP16 half-ulp of the mean when the output
     is FP16);
   - the FP32 integral image is the less exact one: a prefix sum S after n additions along H and W
     carries up to n * 2^-24 * S of rounding, and the window takes four of them and divides by the
     area, so the original may be off by 4 * (H + W) * 2^-24 * S_max / area (S_max the largest prefix
     sum of the sample). On the NAFNet case (32x32 of [0, 255], k = 8) that is 0.06 absolute on
     means near 100; observed errors are a few percent of it. The two results must then agree within
     the sum of both bounds.
2. The negative golden cases stay unchanged by the pass (no AveragePool, CumSum kept), and the default
   `convert -r x=0:255` keeps them one FP32 island from the CumSum whose hazard is reported through
   the Pad, the Slices, the Adds and Subs and the division; `verify` passes.
3. The pathology cases through the default `convert` with their --input-range and --calib: the
   summary line and --report say 0 FP32 islands, 0 Casts, 100% of MACs FP16; the model holds an
   AveragePool, no CumSum, no Cast, every float tensor FP16; `halfguard verify` passes.
Needs Debian's python3-onnx (1.12) and numpy. Exit 0 when every check passes.
"""
import glob
import json
import os
import re
import sys
import tempfile

import numpy as np
import onnx
from onnx import TensorProto, numpy_helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hgtest  # noqa: E402
from hgtest import elem_types  # noqa: E402

HG = sys.argv[1] if len(sys.argv) > 1 else "build/halfguard"
GOLDEN = os.path.join(hgtest.ROOT, "golden", "avgpool_integral")
PATHOLOGY = ["integral_image_nafnet", "integral_image_features"]
# The 1-D form over axis 1 of a rank-2 signal, without a leading zero: from its input range alone it
# converts all FP16 (Slice, Reshape, AveragePool, Reshape) and verifies.
PREFIX = "prefix_sum_cancel"
EPS32 = 2.0 ** -24
check = hgtest.Checks(echo="now", limit=1500)


def hg(*args):
    rc, so, se = hgtest.run([HG, *args])
    return rc, so + se


def ops(m):
    return [n.op_type for n in m.graph.node]


# ---------------------------------------------------------------- a float64 reference


def attr(n, name, default):
    for a in n.attribute:
        if a.name == name:
            return onnx.helper.get_attribute_value(a)
    return default


def eval64(m, feeds):
    """The original graph in float64: only the ops the integral-image pattern uses."""
    env = {t.name: numpy_helper.to_array(t) for t in m.graph.initializer}
    env.update({k: v.astype(np.float64) for k, v in feeds.items()})
    for n in m.graph.node:
        x = [env[i] if i else None for i in n.input]
        if n.op_type == "Constant":
            y = numpy_helper.to_array(attr(n, "value", None))
        elif n.op_type == "Cast":
            y = x[0] if attr(n, "to", 1) in (TensorProto.FLOAT, TensorProto.FLOAT16, TensorProto.DOUBLE) \
                else x[0].astype(onnx.mapping.TENSOR_TYPE_TO_NP_TYPE[attr(n, "to", 1)])
            y = y.astype(np.float64)
        elif n.op_type == "CumSum":
            assert not attr(n, "exclusive", 0) and not attr(n, "reverse", 0)
            y = np.cumsum(x[0], axis=int(x[1].reshape(-1)[0]))
        elif n.op_type == "Pad":
            r = x[0].ndim
            pads = x[1].astype(np.int64)
            value = float(x[2].reshape(-1)[0]) if len(x) > 2 and x[2] is not None else 0.0
            y = np.pad(x[0], [(pads[i], pads[r + i]) for i in range(r)], constant_values=value)
        elif n.op_type == "Slice":
            r = x[0].ndim
            axes = x[3] if len(x) > 3 and x[3] is not None else range(len(x[1]))
            steps = x[4] if len(x) > 4 and x[4] is not None else [1] * len(x[1])
            sl = [slice(None)] * r
            for b, e, a, s in zip(x[1], x[2], axes, steps):
                sl[int(a) % r] = slice(int(b), min(int(e), 2**62), int(s))
            y = x[0][tuple(sl)]
        elif n.op_type in ("Add", "Sub", "Mul", "Div"):
            y = {"Add": np.add, "Sub": np.subtract, "Mul": np.multiply, "Div": np.divide}[n.op_type](
                x[0].astype(np.float64), x[1].astype(np.float64))
        else:
            raise RuntimeError(f"eval64: no rule for {n.op_type}")
        env[n.output[0]] = y
    return [env[o.name] for o in m.graph.output]


# ---------------------------------------------------------------- running models


def write_inputs(m, d, rng, hi):
    feeds = {}
    init = {t.name for t in m.graph.initializer}
    for k, vi in enumerate(i for i in m.graph.input if i.name not in init):
        tt = vi.type.tensor_type
        shape = [dim.dim_value if dim.HasField("dim_value") else 2 for dim in tt.shape.dim]  # symbolic: 2
        dt = np.float16 if tt.elem_type == TensorProto.FLOAT16 else np.float32
        a = rng.uniform(0, hi, shape).astype(dt)
        feeds[vi.name] = a
        hgtest.write_pb(os.path.join(d, f"input_{k}.pb"), a, vi.name)
    return feeds


def run(model, data, out):
    rc, msg = hg("run", model, "--data", data, "-o", out, "--threads", "1")
    if rc:
        raise RuntimeError(f"run {model}: {msg[-600:]}")
    return hgtest.read_outputs(out)


def integral_bound(m, feeds):
    """4 * (H + W) * 2^-24 * S_max / area for the original's FP32 prefix sums (section 1 above)."""
    x = next(iter(feeds.values())).astype(np.float64)
    cums = [n for n in m.graph.node if n.op_type == "CumSum"]
    inits = {t.name: numpy_helper.to_array(t) for t in m.graph.initializer}
    axes = [int(inits[n.input[1]].reshape(-1)[0]) % x.ndim for n in cums]
    s = np.abs(x)
    length = 0
    for a in axes:
        s = np.cumsum(s, axis=a)
        length += x.shape[a] + 1
    area = None
    for n in m.graph.node:
        if n.op_type in ("Div", "Mul"):
            for i in n.input:
                if i in inits:
                    c = float(inits[i].reshape(-1)[0])
                    area = c if n.op_type == "Div" else 1.0 / c
    if area is None:  # a Constant node
        c = [numpy_helper.to_array(attr(n, "value", None)) for n in m.graph.node if n.op_type == "Constant"]
        area = 1.0 / float(c[0].reshape(-1)[0])
    return 4 * length * EPS32 * float(s.max()) / area, area


def differential(name, src, tmp, rng, hi, seeds=3):
    orig = os.path.join(tmp, name + ".orig.onnx")
    rew = os.path.join(tmp, name + ".rew.onnx")
    rc, msg = hg("convert", "--passes", "none", src, "-o", orig)
    rc2, msg2 = hg("convert", "--passes", "avgpool_integral", src, "-o", rew)
    if not check(f"{name}:convert", rc == 0 and rc2 == 0, msg + msg2):
        return
    check(f"{name}:note", "AveragePool" in msg2 and "integral image" in msg2, msg2)
    mo, mr = onnx.load(orig), onnx.load(rew)
    # a Slice may only cut x itself (windows that start late or stop early), never an integral image
    inputs = {i.name for i in mr.graph.input}
    check(f"{name}:rewritten", "AveragePool" in ops(mr) and "CumSum" not in ops(mr)
          and all(n.input[0] in inputs for n in mr.graph.node if n.op_type == "Slice"), ops(mr))
    for seed in range(seeds):
        d = os.path.join(tmp, f"{name}.data{seed}")
        os.makedirs(d, exist_ok=True)
        feeds = write_inputs(mo, d, rng, hi)
        ref = eval64(mo, feeds)
        yo = run(orig, d, os.path.join(tmp, f"{name}.o{seed}"))
        yr = run(rew, d, os.path.join(tmp, f"{name}.r{seed}"))
        bound, area = integral_bound(mo, feeds)
        for k, (r, a, b) in enumerate(zip(ref, yo, yr)):
            scale = float(np.abs(r).max())
            fp16 = a.dtype == np.float16
            pool_tol = (area + 2) * EPS32 * scale + (2.0 ** -11 * scale if fp16 else 0.0)
            orig_tol = bound + (2.0 ** -11 * scale if fp16 else 0.0)
            ea = float(np.abs(a.astype(np.float64) - r).max())
            eb = float(np.abs(b.astype(np.float64) - r).max())
            eab = float(np.abs(a.astype(np.float64) - b.astype(np.float64)).max())
            check(f"{name}:seed{seed}:out{k}:shape", a.shape == b.shape == r.shape, (a.shape, b.shape, r.shape))
            check(f"{name}:seed{seed}:out{k}:averagepool-exact", eb <= pool_tol, f"{eb} > {pool_tol}")
            check(f"{name}:seed{seed}:out{k}:integral-within-bound", ea <= orig_tol, f"{ea} > {orig_tol}")
            check(f"{name}:seed{seed}:out{k}:agree", eab <= pool_tol + orig_tol, f"{eab} > {pool_tol + orig_tol}")
            print(f"     {name} seed {seed}: max |AveragePool - f64| {eb:.2e}, |integral FP32 - f64| {ea:.2e}"
                  f" (bound {orig_tol:.2e}), relative to max {scale:.3g}: {eab / scale:.1e}")


# ---------------------------------------------------------------- the pathology cases


SUMMARY = re.compile(r"(\d+) FP32 islands? \((\d+) nodes?[^)]*\); (\d+) Casts?; FP16: ([\d.]+)% of MACs")


def pathology(tmp):
    out = os.path.join(tmp, "pathology")
    try:
        cases = {c["name"]: c for c in hgtest.pathology_cases(out, *PATHOLOGY)}
    except RuntimeError as e:
        check("pathology:make_cases", False, e)
        return None
    check("pathology:make_cases", True)
    for name in PATHOLOGY:
        c = cases[name]
        src, data = os.path.join(out, c["model"]), os.path.join(out, c["data"])
        dst, report = os.path.join(tmp, name + ".fp16.onnx"), os.path.join(tmp, name + ".json")
        flags = hgtest.case_flags(c, out, options=False)
        rc, msg = hg("convert", src, "-o", dst, *flags, "--report", report, "-v")
        if not check(f"{name}:convert", rc == 0, msg):
            continue
        s = SUMMARY.search(msg)
        check(f"{name}:summary", s and s.groups()[:3] == ("0", "0", "0") and float(s.group(4)) == 100.0, msg)
        check(f"{name}:summary-note", "-> AveragePool 8x8 (pads 0,0,0,0)" in msg, msg)
        with open(report) as f:
            rep = json.load(f)
        fig = rep["figures"]
        check(f"{name}:report-figures", fig["fp32_islands"] == 0 and fig["fp32_nodes"] == 0 and fig["casts"] == 0
              and fig["macs_fp16"] == fig["macs"] > 0, fig)
        check(f"{name}:report-decisions", rep["decisions"] and all(d["precision"] == "fp16" for d in rep["decisions"]),
              rep["decisions"])
        check(f"{name}:report-pass", any(p["pass"] == "avgpool_integral" for p in rep["passes"]), rep["passes"])
        m = onnx.load(dst)
        check(f"{name}:ops", ops(m) == ["AveragePool"], ops(m))
        types = elem_types(m)
        check(f"{name}:all-fp16", types and all(t == TensorProto.FLOAT16 for t in types.values()), types)
        rc, msg = hg("verify", src, dst, "--data", data, "--format", "json")
        try:
            js = json.loads(msg[msg.index("{"):])
        except ValueError:
            js = None
        check(f"{name}:verify", rc == 0 and js and js["pass"] and all(o["rel_l2"] <= 1e-2 for o in js["outputs"]),
              msg)
    return out, cases


def prefix_sum(tmp):
    out = os.path.join(tmp, "pathology1d")
    c = hgtest.pathology_cases(out, PREFIX)[0]
    src = os.path.join(out, c["model"])
    dst = os.path.join(tmp, PREFIX + ".fp16.onnx")
    rs = hgtest.range_args(c["input_ranges"])
    rc, msg = hg("convert", src, "-o", dst, *rs, "--no-config", "-v")
    if not check(f"{PREFIX}:convert", rc == 0, msg):
        return
    s = SUMMARY.search(msg)
    check(f"{PREFIX}:summary", s and s.groups()[:3] == ("0", "0", "0") and float(s.group(4)) == 100.0, msg)
    check(f"{PREFIX}:note", "AveragePool 256 (pads 0,0; of x[1:4096] along axis 1; over axis 1, reshaped)" in msg, msg)
    m = onnx.load(dst)
    check(f"{PREFIX}:ops", ops(m) == ["Slice", "Reshape", "AveragePool", "Reshape"], ops(m))
    rc, msg = hg("verify", src, dst, "--random", "4", *rs, "--no-config")
    check(f"{PREFIX}:verify", rc == 0, msg)
    differential(PREFIX, src, tmp, np.random.default_rng(3), 1.0)


def negatives(tmp, rng):
    for src in sorted(glob.glob(os.path.join(GOLDEN, "neg_*.onnxtxt"))):
        name = os.path.basename(src)[:-len(".onnxtxt")]
        rew = os.path.join(tmp, name + ".rew.onnx")
        rc, msg = hg("convert", "--passes", "avgpool_integral", src, "-o", rew)
        if not check(f"{name}:convert", rc == 0, msg):
            continue
        m = onnx.load(rew)
        check(f"{name}:unchanged", "AveragePool" not in ops(m) and "CumSum" in ops(m), ops(m))
        check(f"{name}:note-why", "left the integral image" in msg, msg)
        dst, report = os.path.join(tmp, name + ".fp16.onnx"), os.path.join(tmp, name + ".json")
        rc, msg = hg("convert", src, "-o", dst, "-r", "x=0:255", "--report", report)
        if not check(f"{name}:default-convert", rc == 0, msg):
            continue
        with open(report) as f:
            dec = json.load(f)["decisions"]
        # from the first FP32 CumSum on, every node of the pattern (Pad, Slices, Adds, Subs, the
        # division) is FP32: one island
        first = next((i for i, d in enumerate(dec) if d["op"] == "CumSum" and d["precision"] == "fp32"), None)
        island = [d for d in dec[first:]] if first is not None else []
        want = set(ops(onnx.load(os.path.join(tmp, name + ".rew.onnx")))) - {"CumSum", "Constant"}
        check(f"{name}:fp32-island", island and all(d["precision"] == "fp32" for d in island)
              and want <= {d["op"] for d in island},
              [(d["node"], d["op"], d["precision"], d["reason"]) for d in dec])
        d = os.path.join(tmp, name + ".data")
        os.makedirs(d, exist_ok=True)
        write_inputs(onnx.load(os.path.join(tmp, name + ".rew.onnx")), d, rng, 255.0)
        rc, msg = hg("verify", rew, dst, "--data", d)
        check(f"{name}:verify", rc == 0, msg)


def main():
    rng = np.random.default_rng(6)
    with tempfile.TemporaryDirectory() as tmp:
        for src in sorted(glob.glob(os.path.join(GOLDEN, "*.onnxtxt"))):
            name = os.path.basename(src)[:-len(".onnxtxt")]
            if not name.startswith("neg_"):
                differential(name, src, tmp, rng, 255.0)
        got = pathology(tmp)
        if got:
            out, cases = got
            for name in PATHOLOGY:
                hi = float(cases[name]["input_ranges"][0].split(":")[1])
                differential(name, os.path.join(out, cases[name]["model"]), tmp, rng, hi)
        prefix_sum(tmp)
        negatives(tmp, rng)
    return check.finish()


if __name__ == "__main__":
    sys.exit(main())
