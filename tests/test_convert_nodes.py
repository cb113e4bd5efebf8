#!/usr/bin/python3
"""convert on the ONNX backend node tests (issue 5's acceptance): every test under
libonnx-testdata's data/node with a test_data_set_0 whose original model runs in the interpreter is
converted with `convert --calib test_data_set_0 --keep-io-types --report`, the converted model is run
on the same inputs, and each output must
- match the expected one (floats within rtol 1e-2 / atol 1e-3, NaN where it is NaN; other types
  exactly), or come from a model convert kept entirely FP32 (every decision fp32 in the report);
- and in any case be finite wherever the expected output is finite.
Tests listed in tests/conformance_xfail.txt (where the interpreter itself differs from the reference)
may fail; they are counted apart.

Usage: test_convert_nodes.py HALFGUARD [NODE_DIR] [TEST...]   (NODE_DIR defaults to
$HG_TESTDATA/node, else /usr/share/libonnx-testdata/data/node). Runs two tests at a time."""
import json
import multiprocessing
import os
import re
import shutil
import sys
import tempfile

import numpy as np
from onnx import TensorProto, numpy_helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hgtest  # noqa: E402

HG = os.path.abspath(sys.argv[1])
NODE = sys.argv[2] if len(sys.argv) > 2 else os.path.join(hgtest.TESTDATA, "node")
ONLY = set(sys.argv[3:])
RTOL, ATOL = 1e-2, 1e-3
run = hgtest.tool(HG)


def xfail_list():
    names = set()
    with open(os.path.join(hgtest.HERE, "conformance_xfail.txt")) as f:
        for line in f:
            name = line.split("#", 1)[0].strip()
            if name:
                names.add(name)
    return names


def load_tensor(path):
    """The tensor as numpy; BFLOAT16 as float32 (onnx 1.12 gives its raw bits as uint16 from
    int32_data but floats from raw_data)."""
    t = hgtest.read_tensor(path)
    if t.data_type == TensorProto.BFLOAT16:
        bits = (np.frombuffer(t.raw_data, "<u2") if t.raw_data else np.array(t.int32_data, np.uint16))
        return (bits.astype(np.uint32) << 16).view(np.float32).reshape(tuple(t.dims))
    return numpy_helper.to_array(t)


def outputs(folder, n):
    return hgtest.read_outputs(folder, n, load_tensor)


def bf16_bits(want, got, got_types):
    """onnx 1.12's generator stored BFLOAT16 expected outputs as UINT16 bits: read them as bfloat16
    where the model's output is BFLOAT16."""
    return [(w.astype(np.uint32) << 16).view(np.float32) if w.dtype == np.uint16 and t == TensorProto.BFLOAT16
            else w for w, t in zip(want, got_types)]


def data_types(folder, n):
    return [t.data_type for t in hgtest.read_outputs(folder, n, hgtest.read_tensor)]


def compare(want, got):
    """None when got matches want, else why not."""
    if want.shape != got.shape:
        return f"shape {list(got.shape)} != {list(want.shape)}"
    if want.dtype.kind in "fc":
        w, g = want.astype(np.float64), got.astype(np.float64)
        ok = np.isclose(g, w, rtol=RTOL, atol=ATOL, equal_nan=True)
        if not ok.all():
            i = int(np.argmin(ok.ravel()))
            return f"{int((~ok).sum())} of {ok.size} values differ (first: {g.ravel()[i]!r} vs {w.ravel()[i]!r})"
        return None
    if want.dtype != got.dtype:
        return f"dtype {got.dtype} != {want.dtype}"
    return None if np.array_equal(want, got) else "values differ"


def one(name):
    """(name, status, detail); status: out-of-scope, pass, kept-fp32, fail."""
    d = os.path.join(NODE, name)
    data = os.path.join(d, "test_data_set_0")
    model = os.path.join(d, "model.onnx")
    work = tempfile.mkdtemp(prefix="hg-convert-node-")
    try:
        rc, _, se = run("run", model, "--data", data, "-o", os.path.join(work, "orig"))
        if rc:
            # Exit 2 with a message is the interpreter refusing the model (an op it lacks, data it
            # does not read); anything else (a crash, a sanitizer's abort) is a failure.
            if rc == 2 and se.strip():
                return name, "out-of-scope", se.strip()[-200:]
            return name, "fail", f"run of the original model, exit {rc}: {se.strip()[-400:]}"
        n_out = hgtest.count_outputs(data)
        try:
            want = outputs(data, n_out)
        except Exception as e:  # noqa: BLE001 (sequence or optional outputs)
            return name, "out-of-scope", f"expected outputs are not tensors: {e}"
        conv = os.path.join(work, "conv.onnx")
        report = os.path.join(work, "report.json")
        rc, _, se = run("convert", model, "-o", conv, "--calib", data, "--keep-io-types", "--report", report)
        if rc:
            return name, "fail", f"convert exit {rc}: {se.strip()[-400:]}"
        rc, _, se = run("run", conv, "--data", data, "-o", os.path.join(work, "conv"))
        if rc:
            return name, "fail", f"run of the converted model, exit {rc}: {se.strip()[-400:]}"
        got = outputs(os.path.join(work, "conv"), n_out)
        want = bf16_bits(want, got, data_types(os.path.join(work, "conv"), n_out))
        decisions = json.load(open(report))["decisions"]
        all_fp32 = all(x["precision"] == "fp32" for x in decisions)
        problems, differs = [], []
        for k, (w, g) in enumerate(zip(want, got)):
            if w.dtype.kind in "fc" and w.shape == g.shape:
                new = np.isfinite(w) & ~np.isfinite(g)
                if new.any():
                    problems.append(f"output {k}: {int(new.sum())} non-finite where the expected value is finite")
            why = compare(w, g)
            if why:
                differs.append(f"output {k}: {why}")
        if problems:
            return name, "fail", "; ".join(problems + differs)
        if not differs:
            return name, "pass", ""
        if all_fp32:
            # Kept FP32: the difference is the interpreter's own, so convert must not have changed
            # the numbers the original model gives.
            orig = outputs(os.path.join(work, "orig"), n_out)
            changed = [f"output {k}: {why}" for k, (o, g) in enumerate(zip(orig, got)) if (why := compare(o, g))]
            if changed:
                return name, "fail", "kept FP32 but differs from the original model: " + "; ".join(changed)
            return name, "kept-fp32", "; ".join(differs)
        fp16 = [x["node"] or x["op"] for x in decisions if x["precision"] == "fp16"]
        return name, "fail", "; ".join(differs) + f" (FP16 nodes: {', '.join(fp16)})"
    finally:
        shutil.rmtree(work, ignore_errors=True)


def main():
    tests = sorted(t for t in os.listdir(NODE)
                   if os.path.isdir(os.path.join(NODE, t, "test_data_set_0"))
                   and os.path.exists(os.path.join(NODE, t, "model.onnx")) and (not ONLY or t in ONLY))
    xfail = xfail_list()
    with multiprocessing.Pool(2) as pool:
        res = pool.map(one, tests, chunksize=4)
    counts = {"pass": 0, "kept-fp32": 0, "fail": 0, "xfail": 0, "out-of-scope": 0}
    for name, status, detail in res:
        if status == "fail" and name in xfail:
            status = "xfail"
        counts[status] += 1
        if status in ("fail", "xfail"):
            print(f"{'FAIL' if status == 'fail' else 'xfail'} {name}: {detail}")
        elif status == "kept-fp32":
            print(f"kept FP32 {name}: {detail}")
    # Why the others are out of scope, grouped (names in quotes blanked), so a change shows.
    why = {}
    for name, status, detail in res:
        if status == "out-of-scope":
            key = re.sub(r"'[^']*'", "'...'", detail.split(": ", 1)[-1])[:100]
            why[key] = why.get(key, 0) + 1
    for key, n in sorted(why.items(), key=lambda kv: -kv[1]):
        print(f"out of scope: {n:4d} {key}")
    scope = len(tests) - counts["out-of-scope"]
    print(f"{len(tests)} node tests, {scope} in scope (the original runs in the interpreter): "
          f"{counts['pass']} match the expected outputs, {counts['kept-fp32']} differ but were kept FP32, "
          f"{counts['xfail']} listed in conformance_xfail.txt, {counts['fail']} failed")
    return 1 if counts["fail"] or not scope else 0


if __name__ == "__main__":
    sys.exit(main())
