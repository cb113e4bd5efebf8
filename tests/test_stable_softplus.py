#!/usr/bin/python3
"""The stable_softplus pass against the interpreter, and its two pathology cases end to end.

Usage: test_stable_softplus.py HALFGUARD

1. Every golden case of golden/stable_softplus/ that the pass rewrites (not neg_*) runs, original
   (`convert --passes none`) and rewritten (`convert --passes stable_softplus` with the case's
   @args), through the interpreter in FP32 on inputs inside its range: uniform, then rows holding
   the range's ends, 0, and +-11.1 (where FP16's exp overflows). The rewrite is the same function,
   log(1 + e^x) = max(x, 0) + log(1 + e^-|x|); in FP32 the two forms round differently for x > 0, so
   the outputs must agree to 1e-6 relative (1e-7 absolute), and be finite where the original is.
   The rewritten model must hold no Exp or Softplus that reads x itself, and each rewrite's note must
   name the node.
2. The pathology cases internal_overflow_softplus and softplus_exp_log (tests/pathology), converted
   from their input ranges alone (no calibration): 0 FP32 islands, 100% of MACs in FP16, the
   rewrite reported under stable_softplus in --report, and `verify` passing on random inputs in
   range. Without the pass (`--passes` of every other) the same cases keep an FP32 island: the test
   fails if the pass stops doing the work.
"""
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
GOLDEN = os.path.join(hgtest.ROOT, "golden", "stable_softplus")
PATHOLOGY = ["internal_overflow_softplus", "softplus_exp_log"]
check = hgtest.Checks(echo="fail", limit=3000)


def run_model(model, feed, tmp, tag):
    return hgtest.run_npy(run, model, feed, tmp, tag)


def feeds_for(path, lo, hi, rng):
    m = onnx.load(path)
    ins = [(vi.name, [d.dim_value for d in vi.type.tensor_type.shape.dim]) for vi in m.graph.input]
    feeds = []
    for s in range(4):
        feeds.append({n: rng.uniform(lo, hi, dims).astype(np.float32) for n, dims in ins})
    special = np.array([lo, hi, 0.0, 11.1, -11.1, 11.0, 12.0, hi / 2], dtype=np.float32)
    feeds.append({n: np.resize(special, dims).astype(np.float32) for n, dims in ins})
    return feeds


def golden(tmp, rng):
    n = 0
    for fn in sorted(os.listdir(GOLDEN)):
        if not fn.endswith(".onnxtxt") or fn.startswith("neg_"):
            continue
        name = fn[:-len(".onnxtxt")]
        src = os.path.join(GOLDEN, fn)
        args = " ".join(re.findall(r"^# @args: *(.*)$", open(src).read(), re.M)).split()
        lo, hi = map(float, [a for a in args if "=" in a][0].split("=", 1)[1].split(":"))
        orig, new = (os.path.join(tmp, f"{name}.{t}.onnx") for t in ("orig", "new"))
        rc, _, se = run("convert", "--passes", "none", src, "-o", orig)
        check(f"golden:{name}:load", rc == 0, se)
        rc, so, se = run("convert", "--passes", "stable_softplus", *args, src, "-o", new, "-v")
        if not check(f"golden:{name}:convert", rc == 0, se):
            continue
        check(f"golden:{name}:note", "exp now reads -|x|" in so, so)
        g = onnx.load(new).graph
        xs = {vi.name for vi in g.input}
        check(f"golden:{name}:no-exp-of-x",
              not any(nd.op_type in ("Exp", "Softplus") and nd.input[0] in xs for nd in g.node),
              [(nd.op_type, list(nd.input)) for nd in g.node])
        for i, feed in enumerate(feeds_for(orig, lo, hi, rng)):
            a, ea = run_model(orig, feed, tmp, f"{name}.{i}.orig")
            b, eb = run_model(new, feed, tmp, f"{name}.{i}.new")
            if not check(f"golden:{name}:run:{i}", a is not None and b is not None and len(a) == len(b), ea + eb):
                continue
            for k, (x, y) in enumerate(zip(a, b)):
                fin = np.isfinite(x)
                check(f"golden:{name}:finite:{i}:{k}", np.isfinite(y[fin]).all(), y)
                err = np.abs(x[fin].astype(np.float64) - y[fin].astype(np.float64))
                tol = 1e-7 + 1e-6 * np.abs(x[fin].astype(np.float64))
                check(f"golden:{name}:agree:{i}:{k}", (err <= tol).all(),
                      f"max abs {err.max():.3g} at {x[fin].flat[int(err.argmax())]}")
        n += 1
    check("golden:cases", n >= 2, n)
    print(f"golden: {n} rewriting cases agree with their originals in FP32")


def pathology(tmp):
    pdir = os.path.join(tmp, "pathology")
    cases = {c["name"]: c for c in hgtest.pathology_cases(pdir, *PATHOLOGY)}
    for name in PATHOLOGY:
        c = cases[name]
        src = os.path.join(pdir, c["model"])
        rs = hgtest.range_args(c["input_ranges"])
        out, rep = os.path.join(tmp, name + ".fp16.onnx"), os.path.join(tmp, name + ".json")
        rc, so, se = run("convert", src, "-o", out, "--no-config", "--report", rep, *rs)
        if not check(f"{name}:convert", rc == 0, se):
            continue
        check(f"{name}:islands", "0 FP32 islands" in so and "FP16: 100% of MACs" in so, so)
        r = json.load(open(rep))
        check(f"{name}:report", any(p["pass"] == "stable_softplus" and "exp now reads" in p["message"] for p in r["passes"]),
              r["passes"])
        rc, so, se = run("verify", src, out, "--random", "4", "--no-config", *rs)
        check(f"{name}:verify", rc == 0, so + se)
        others = [p for p in ("fold_shapes", "fuse_layernorm", "prescale", "avgpool_integral", "clamp_constants",
                              "rescale", "assign_precision", "lower", "cleanup")]
        rc, so, se = run("convert", src, "-o", out + ".without", "--no-config", "--passes", ",".join(others), *rs)
        check(f"{name}:without-pass", rc == 0 and "1 FP32 island" in so, so + se)
        print(f"{name}: all FP16 from ranges alone, verify passes")


def main():
    rng = np.random.default_rng(7)
    with tempfile.TemporaryDirectory(prefix="hg-softplus-") as tmp:
        golden(tmp, rng)
        pathology(tmp)
    sys.exit(check.finish())


if __name__ == "__main__":
    main()
