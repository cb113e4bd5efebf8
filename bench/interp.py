#!/usr/bin/python3
"""Interpreter speed against ONNX Runtime (npm's onnxruntime-node, CPU) on the same model, inputs and
thread count, measured in the same run: the median of the timed runs of each (session creation,
model loading and file I/O excluded on both sides). Target: halfguard at most 2x ONNX Runtime.

Usage: bench/interp.py BUILD_DIR [--threads N] [--repeat N] [CASE...]   (cases: fns-candy gpt2_past)"""
import argparse
import os
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests"))
import ortlib  # noqa: E402

ap = argparse.ArgumentParser()
ap.add_argument("build")
ap.add_argument("--threads", type=int, default=os.cpu_count())
ap.add_argument("--repeat", type=int, default=10)
ap.add_argument("cases", nargs="*", default=["fns-candy", "gpt2_past"])
args = ap.parse_args()
hg = os.path.join(args.build, "halfguard")
node_path = ortlib.ensure_ort(os.path.join(args.build, "ort-node"))
cases = ortlib.model_cases()
print(f"threads {args.threads}, {args.repeat} timed runs each after one warm-up; medians in ms")
print(f"{'model':<14} {'onnxruntime':>12} {'halfguard':>10} {'ratio':>7}  target <= 2.0")
worst = 0.0
for name in args.cases:
    model, feeds, outputs = cases[name]
    with tempfile.TemporaryDirectory(prefix="hg-bench-") as work:
        _, ort_ms = ortlib.run_ort(node_path, model, feeds, outputs, work, threads=args.threads,
                                   repeat=args.repeat + 1)
        ortlib.run_halfguard(hg, model, feeds, outputs, work, threads=args.threads)  # writes hg_in
        p = subprocess.run([hg, "run", model, "--data", os.path.join(work, "hg_in"), "--threads",
                            str(args.threads), "--time", str(args.repeat)],
                           capture_output=True, text=True, check=True)
        hg_ms = [float(line.split()[2]) for line in p.stdout.splitlines() if line.startswith("run ")]
    o, h = statistics.median(ort_ms[1:]), statistics.median(hg_ms)
    worst = max(worst, h / o)
    print(f"{name:<14} {o:12.2f} {h:10.2f} {h / o:7.2f}  {'PASS' if h / o <= 2.0 else 'FAIL'}")
print(f"worst ratio {worst:.2f}")
