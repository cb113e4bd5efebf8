#!/usr/bin/python3
"""The rescale pass changes nothing in FP32: for every golden/rescale case that it rewrites, the
interpreter's FP32 outputs before and after `convert --passes rescale` agree bit for bit on random
inputs in the case's range (powers of two are exact, barring overflow and underflow). And the
pathology conv chain (8 Conv+ReLU growing past 65504) and residual net (7 blocks without
normalization) convert with at least 95% of their MACs in FP16 and pass verify. Usage: test_rescale.py HALFGUARD"""
import glob
import json
import os
import re
import sys
import tempfile

import numpy as np
import onnx

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hgtest  # noqa: E402

run = hgtest.tool(sys.argv[1])
root = hgtest.ROOT
check = hgtest.Checks()


def outputs(model, data, out):
    rc, _, se = run("run", model, "--data", data, "-o", out)
    if rc:
        return None, se
    return hgtest.read_outputs(out), ""


with tempfile.TemporaryDirectory(prefix="hg-rescale-") as tmp:
    for case in sorted(glob.glob(os.path.join(root, "golden", "rescale", "*.onnxtxt"))):
        name = os.path.basename(case)[:-len(".onnxtxt")]
        text = open(case).read()
        args = re.findall(r"^# @args: *(.*)$", text, re.M)
        args = args[0].split() if args else []
        out = os.path.join(tmp, name + ".onnx")
        rc, so, se = run("convert", "--passes", "rescale", *args, case, "-o", out, "-v")
        check(f"{name}:converts", rc == 0, se)
        rewrote = "weights x 2^-" in so or "normalized CumSum" in so
        check(f"{name}:rewrites-as-named", rewrote == (not name.startswith("neg_")), so)
        if rewrote:  # each rewrite says what it saves by assign_precision's costs, and it saves
            costs = re.findall(r"rewrite costs ([\d.e+-]+) against ([\d.e+-]+) for an FP32 island", so)
            check(f"{name}:weighed", bool(costs) and all(hgtest.rewrite_pays(float(a), float(b)) for a, b in costs), so)
        if name.startswith("neg_island"):  # left alone because the island is cheaper, and it says so
            m = re.search(r"in FP32: the island costs ([\d.e+-]+), the rewrite ([\d.e+-]+)", so)
            check(f"{name}:island-cheaper", m is not None and not hgtest.rewrite_pays(float(m.group(2)), float(m.group(1))), so)
        if not rewrote or rc:
            continue
        m = re.search(r"--input-range x=([-\d.e]+):([-\d.e]+)", " ".join(args))
        lo, hi = (float(m.group(1)), float(m.group(2))) if m else (0.0, 1.0)
        orig = os.path.join(tmp, name + ".orig.onnx")
        run("convert", "--passes", "none", case, "-o", orig)
        # a symbolic dim (probe_short_input's length) at 256, long enough for its strided Convs
        dims = [d.dim_value if d.HasField("dim_value") else 256
                for d in onnx.load(orig).graph.input[0].type.tensor_type.shape.dim]
        rng = np.random.default_rng(11)
        for seed in range(3):
            x = rng.uniform(lo, hi, dims).astype(np.float32)
            data = hgtest.write_inputs(os.path.join(tmp, f"{name}.data{seed}"), [("x", x)])
            a, e1 = outputs(orig, data, os.path.join(tmp, f"{name}.a{seed}"))
            b, e2 = outputs(out, data, os.path.join(tmp, f"{name}.b{seed}"))
            same = a is not None and b is not None and len(a) == len(b) and all(
                u.dtype == v.dtype and np.array_equal(u, v) for u, v in zip(a, b))
            detail = e1 + e2
            if a is not None and b is not None and not same:
                worst = max(float(np.max(np.abs(u.astype(np.float64) - v))) for u, v in zip(a, b))
                detail = f"max diff {worst}"
            check(f"{name}:bit-exact-fp32[{seed}]", same, detail)

    # The pathology conv chain and residual net, through the whole pipeline, with and without rescale.
    pdir = os.path.join(tmp, "pathology")
    cases = {c["name"]: c for c in hgtest.pathology_cases(pdir)}
    for name, tag in (("conv_chain_no_norm", "conv_chain"), ("resnet_no_norm", "resnet")):
        c = cases[name]
        rng_args = hgtest.range_args(c["input_ranges"])
        model, data = os.path.join(pdir, c["model"]), os.path.join(pdir, c["data"])
        out = os.path.join(tmp, f"{tag}.fp16.onnx")
        report = os.path.join(tmp, f"{tag}.json")
        rc, so, se = run("convert", model, "-o", out, "--calib", data, "--report", report, *rng_args, "-v")
        check(f"{tag}:converts", rc == 0, se)
        if rc == 0:
            fig = json.load(open(report))["figures"]
            share = fig["macs_fp16"] / fig["macs"] if fig["macs"] else 0
            print(f"{name}: {so.strip()}")
            check(f"{tag}:rescaled", "rescale" in so and "weights x 2^-" in so, so)
            check(f"{tag}:>=95%-MACs-FP16", share >= 0.95, f"{share:.4f}")
            rc, so, se = run("verify", model, out, "--data", data)
            check(f"{tag}:verify", rc == 0, so + se)
        rc, so, se = run("convert", model, "-o", out, "--calib", data, "--passes",
                         "fold_shapes,fuse_layernorm,clamp_constants,assign_precision,lower,cleanup", *rng_args)
        m = re.search(r"FP16: ([\d.]+)% of MACs", so)
        print(f"{name} without rescale: {so.strip()}")
        check(f"{tag}:rescale-beats-island", m is not None and float(m.group(1)) < 95, so)
    # The residual net's region spans its blocks: every Add reads two scaled tensors, no Mul is added
    # (later linear ops absorb 2^k), and nothing stays FP32.
    rc, so, se = run("convert", os.path.join(pdir, "resnet_no_norm.onnx"), "-o", os.path.join(tmp, "r.onnx"),
                     "--calib", os.path.join(pdir, "resnet_no_norm.data"), "-r", "image=0:1", "-v")
    check("resnet:one-region", so.count("region of") == 1 and "undone by" not in so and
          "0 FP32 islands" in so and "0 Casts" in so, so)

    # The synthetic probe is asked only for 2^-k past 2^-3 (PROBE_MIN_K in passes/rescale.c): below
    # that the scale costs at most 2^(k-25) where values reach FP16's subnormals, whatever they reach.
    # A MatMul reads (x - x (1 + 2^-23))^2: bounded at 4, about 1e-14 in fact, so in-range inputs make
    # products near 1e-9 where the bound says up to 4.8e5 (w x 16: k = 3) or 9.6e5 (w x 32: k = 4).
    # With k = 3 the region is scaled without running the model; with k = 4 the probe runs and refuses.
    src = open(os.path.join(root, "golden", "rescale", "matmul_to_rmsnorm.onnxtxt")).read()
    for mult, k in ((16, 3), (32, 4)):
        text = re.sub(r"float\[8,8\] w = \{([^}]*)\}",
                      lambda m: "float[8,8] w = {" + ", ".join(repr(float(v) * mult) for v in m.group(1).split(",")) +
                      "},\n  float c = {1.00000011920928955}", src)
        text = text.replace("  h = MatMul(x, w)", "  xc = Mul(x, c)\n  d = Sub(x, xc)\n  d2 = Mul(d, d)\n  h = MatMul(d2, w)")
        case = os.path.join(tmp, f"probe_k{k}.onnxtxt")
        with open(case, "w") as f:
            f.write(text)
        rc, so, se = run("convert", "-r", "x=-1:1", case, "-o", os.path.join(tmp, f"probe_k{k}.onnx"), "-v")
        check(f"probe-k{k}:converts", rc == 0, se)
        if k <= 3:
            check(f"probe-k{k}:scaled-unprobed", f"weights x 2^-{k} in 'proj'" in so and "unscaled" not in so, so)
        else:
            check(f"probe-k{k}:probed-and-refused", "left the region of 'proj' unscaled" in so and
                  "(synthetic probe)" in so and f"2^-{k} would leave it" in so, so)

sys.exit(check.finish())
