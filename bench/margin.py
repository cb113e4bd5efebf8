#!/usr/bin/python3
"""How far one calibration sample underestimates a tensor's magnitude: calibrate a model on one
random input inside its declared range, then on N more, and print per-tensor absmax(N more) /
absmax(first) (median, 99th percentile, max). Justifies check's default --margin (README).
Usage: margin.py HALFGUARD MODEL NAME=LO:HI [N]"""
import json
import os
import subprocess
import sys
import tempfile

import numpy as np
import onnx

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests"))
import hgtest  # noqa: E402

tool, model_path, rng_spec = sys.argv[1:4]
n = int(sys.argv[4]) if len(sys.argv) > 4 else 8
name, lohi = rng_spec.split("=")
lo, hi = map(float, lohi.split(":"))
m = onnx.load(model_path)
inits = {i.name for i in m.graph.initializer}
feed = [i for i in m.graph.input if i.name not in inits][0]
dims = [d.dim_value or 1 for d in feed.type.tensor_type.shape.dim]
rng = np.random.default_rng(0)


def calibrate(d, count):
    dirs = []
    for k in range(count):
        # Smooth inputs (a blurred field) look more like images than white noise.
        x = rng.uniform(lo, hi, size=dims).astype(np.float32)
        dirs += ["--data", hgtest.write_inputs(os.path.join(d, f"s{k}"), [(feed.name, x)])]
    out = os.path.join(d, "stats.json")
    subprocess.run([tool, "calibrate", model_path, *dirs, "-o", out], check=True, capture_output=True)
    return json.load(open(out))["tensors"]


with tempfile.TemporaryDirectory() as d:
    one = calibrate(os.path.join(d, "one"), 1)
    more = calibrate(os.path.join(d, "more"), n)
ratios = sorted(more[t]["absmax"] / one[t]["absmax"] for t in one
                if t in more and one[t]["absmax"] and more[t]["absmax"] is not None)
q = lambda p: ratios[min(len(ratios) - 1, int(p * len(ratios)))]
print(f"{os.path.basename(model_path)}: {len(ratios)} tensors; absmax over {n} more samples / absmax "
      f"of one: median {q(0.5):.3f}, p99 {q(0.99):.3f}, max {ratios[-1]:.3f}")
