#!/usr/bin/python3
"""The FP16 share of every pathology case with the rewrites that keep work in FP16 (prescale,
avgpool_integral, rescale) and without them (what convert did before they existed: the hazards'
nodes stay FP32 islands). Each case is converted with its calibration sample and its input ranges,
both ways, and checked with `verify` (finite, relative L2 <= 1e-2). Prints one row per case: % of
MACs in FP16, Casts and verify's verdict, without -> with. Usage: keep_fp16.py HALFGUARD [CASE...]"""
import json
import os
import re
import subprocess
import sys
import tempfile

tool = sys.argv[1]
only = set(sys.argv[2:])
root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
WITHOUT = "fold_shapes,fuse_layernorm,clamp_constants,assign_precision,lower,cleanup"


def convert(model, out, data, ranges, options, passes=None):
    args = [tool, "convert", model, "-o", out, "--calib", data, "--report", out + ".json"]
    args += [a for r in ranges for a in ("-r", r)] + options
    if passes:
        args += ["--passes", passes]
    p = subprocess.run(args, capture_output=True, text=True)
    if p.returncode:
        return None
    fig = json.load(open(out + ".json"))["figures"]
    share = 100.0 * fig["macs_fp16"] / fig["macs"] if fig["macs"] else float("nan")
    casts = re.search(r"(\d+) Casts?", p.stdout)
    v = subprocess.run([tool, "verify", model, out, "--data", data], capture_output=True, text=True)
    return share, int(casts.group(1)) if casts else 0, "pass" if v.returncode == 0 else "FAIL"


with tempfile.TemporaryDirectory(prefix="hg-keep-fp16-") as tmp:
    subprocess.run(["/usr/bin/python3", os.path.join(root, "tests", "pathology", "make_cases.py"), tmp],
                   check=True, capture_output=True)
    cases = json.load(open(os.path.join(tmp, "cases.json")))["cases"]
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
