#!/usr/bin/python3
"""The FP16 share of every pathology case with the rewrites that keep work in FP16 (prescale,
avgpool_integral, rescale) and without them (what convert did before they existed: the hazards'
nodes stay FP32 islands). Each case is converted with its calibration sample and its input ranges,
both ways, and checked with `verify` (finite, relative L2 <= 1e-2). Prints one row per case: % of
MACs in FP16, Casts and verify's verdict, without -> with. Usage: keep_fp16.py HALFGUARD [CASE...]"""
import json
import os
import re
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests"))
import hgtest  # noqa: E402

tool = sys.argv[1]
only = set(sys.argv[2:])
WITHOUT = "fold_shapes,fuse_layernorm,clamp_constants,assign_precision,lower,cleanup"


def convert(model, out, data, ranges, options, passes=None):
    args = [tool, "convert", model, "-o", out, "--calib", data, "--report", out + ".json"]
    args += hgtest.range_args(ranges) + options
    if passes:
        args += ["--passes", passes]
    rc, so, _ = hgtest.run(args)
    if rc:
        return None
    fig = json.load(open(out + ".json"))["figures"]
    share = 100.0 * fig["macs_fp16"] / fig["macs"] if fig["macs"] else float("nan")
    casts = re.search(r"(\d+) Casts?", so)
    vrc, _, _ = hgtest.run([tool, "verify", model, out, "--data", data])
    return share, int(casts.group(1)) if casts else 0, "pass" if vrc == 0 else "FAIL"


with tempfile.TemporaryDirectory(prefix="hg-keep-fp16-") as tmp:
    cases = hgtest.pathology_cases(tmp)
    print(f"{'case':34} {'MACs FP16 % (without -> with)':>30} {'Casts':>9} {'verify':>12}")
    for c in cases:
        if only and c["name"] not in only:
            continue
        model, data = os.path.join(tmp, c["model"]), os.path.join(tmp, c["data"])
        ranges = c["input_ranges"]
        a = convert(model, os.path.join(tmp, c["name"] + ".without.onnx"), data, ranges, c["options"], WITHOUT)
        b = convert(model, os.path.join(tmp, c["name"] + ".with.onnx"), data, ranges, c["options"])
        if not a or not b:
            print(f"{c['name']:34} conversion failed")
            continue
        print(f"{c['name']:34} {a[0]:14.2f} -> {b[0]:6.2f} {a[1]:>4} -> {b[1]:<3} {a[2]:>5} -> {b[2]}")
