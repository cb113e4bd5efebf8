#!/usr/bin/env python3
"""halfguard's conversions of the real-export corpus, checked where the corpus is made: on the device
machine, right after export.py, without bringing the models back (the whole corpus is past what one
device call returns).

Every model of the manifest is converted twice (static: the manifest's ranges; calibrated: plus
--calib calib/0 calib/1), N at a time, and run by ONNX Runtime's Python package on verify/0 with the
provider given (default: CUDA where that onnxruntime has it, else CPU). Per row: the largest rel-L2
over the outputs against the FP32 reference (verify/0/output_K.pb, ONNX Runtime's CPU, from
export.py), the new non-finite values, and on a GPU provider the FP32 model's own difference there
(TF32 off). Detectors' set outputs are matched as in bench.py. --pack DIR tars the families with a
row over 1e-2 (or an error), with the manifest, into DIR, to bring those back.

The device's onnxruntime (1.30, 2026-11-27) has only the CPU provider: there this is bench.py's
ONNX Runtime check, run on 64 cores next to the exporter.

Usage: device.py HALFGUARD_CMD --models DIR [--only FAMILY,...] [--jobs N] [--json OUT] [--pack DIR]
                 [--provider NAME]
HALFGUARD_CMD is split on spaces (e.g. "lib/ld-linux-x86-64.so.2 --library-path lib hg/halfguard":
a build carried with its libraries)."""
import argparse
import concurrent.futures as cf
import json
import math
import os
import shlex
import subprocess
import sys
import tempfile
import time

import numpy as np
import onnx
from onnx import numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import bench  # noqa: E402  (rel_l2, as_queries, match_queries, SET_OUTPUTS)

NP_OF = {1: np.float32, 10: np.float16, 7: np.int64, 6: np.int32, 9: np.bool_, 11: np.float64}


def read_pb(path):
    t = onnx.TensorProto()
    with open(path, "rb") as f:
        t.ParseFromString(f.read())
    return numpy_helper.to_array(t)


def session(path, provider):
    import onnxruntime as ort
    so = ort.SessionOptions()
    so.log_severity_level = 3
    if provider == "CUDAExecutionProvider":
        providers = [(provider, {"use_tf32": 0}), "CPUExecutionProvider"]
    else:
        providers = [provider]
    return ort.InferenceSession(path, so, providers=providers)


def run_model(path, feeds_by_index, provider):
    s = session(path, provider)
    feeds = {}
    for k, i in enumerate(s.get_inputs()):
        a = feeds_by_index[k]
        want = {"tensor(float16)": np.float16, "tensor(float)": np.float32}.get(i.type)
        feeds[i.name] = a.astype(want) if want is not None and a.dtype != want else a
    names = [o.name for o in s.get_outputs()]
    return dict(zip(names, s.run(names, feeds)))


def compare(entry, got, ref_list, names):
    errs, nonfinite = {}, 0
    for k, name in enumerate(names):
        g = got.get(name)
        if g is None:
            g = list(got.values())[k] if k < len(got) else None
        if g is None:
            errs[name] = None
            continue
        if np.issubdtype(np.asarray(g).dtype, np.floating):
            nonfinite += int(np.sum(~np.isfinite(g.astype(np.float64))) - np.sum(~np.isfinite(ref_list[k].astype(np.float64))))
        errs[name] = bench.rel_l2(g, ref_list[k])
    vals = [v for v in errs.values() if v is not None]
    worst = max(vals) if vals and len(vals) == len(errs) else None
    sets = entry.get("set_outputs") or bench.SET_OUTPUTS.get(entry["family"])
    if sets and worst is not None and worst > bench.RTOL:
        ref = dict(zip(names, ref_list))
        named = {n: got.get(n) for n in sets}
        if all(v is not None for v in named.values()):
            perm = bench.match_queries(named, ref, sets)
            if perm is not None:
                rest = [v for n, v in errs.items() if n not in sets]
                for n in sets:
                    a = np.take_along_axis(bench.as_queries(named[n]), perm[:, :, None], axis=1)
                    rest.append(bench.rel_l2(a, bench.as_queries(ref[n])))
                if all(v is not None for v in rest):
                    worst = min(worst, max(rest))
    return worst, errs, max(nonfinite, 0)


def one(hg, models, entry, mode, tmp, provider, timeout):
    mdir = os.path.join(models, os.path.dirname(entry["path"]))
    orig = os.path.join(models, entry["path"])
    tag = f"{entry['family']}-{entry['exporter']}-{mode}"
    conv = os.path.join(tmp, tag + ".onnx")
    row = dict(family=entry["family"], exporter=entry["exporter"], mode=mode)
    cmd = hg + ["convert", orig, "-o", conv, "-q", "-t", "2", "--report", conv + ".json"]
    for r in entry["ranges"]:
        cmd += ["-r", r]
    if mode == "calib":
        cmd += ["--calib", os.path.join(mdir, "calib/0"), "--calib", os.path.join(mdir, "calib/1")]
    t0 = time.monotonic()
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout,
                           env=dict(os.environ, OMP_NUM_THREADS="2", OPENBLAS_NUM_THREADS="2"))
        rc, err = p.returncode, p.stderr
    except subprocess.TimeoutExpired:
        rc, err = "timeout", ""
    row["convert_s"] = round(time.monotonic() - t0, 2)
    if rc != 0 or not os.path.exists(conv):
        row["error"] = f"convert {rc}: {err.strip()[-400:]}"
        return row
    try:
        fig = json.load(open(conv + ".json"))["figures"]
        row.update(islands=fig["fp32_islands"], casts=fig["casts"], synthetic=fig.get("decisions_synthetic"))
    except (OSError, ValueError, KeyError) as e:
        row["report_error"] = f"{type(e).__name__}: {e}"
    vdir = os.path.join(mdir, "verify", "0")
    m = onnx.load(orig, load_external_data=False)
    inits = {t.name for t in m.graph.initializer}
    n_in = len([i for i in m.graph.input if i.name not in inits])
    names = [o.name for o in m.graph.output]
    feeds = [read_pb(os.path.join(vdir, f"input_{k}.pb")) for k in range(n_in)]
    ref = [read_pb(os.path.join(vdir, f"output_{k}.pb")) for k in range(len(names))]
    try:
        got = run_model(conv, feeds, provider)
        row["ort_rel_l2"], row["ort_per_output"], row["ort_new_nonfinite"] = compare(entry, got, ref, names)
    except Exception as e:
        row["error"] = f"ORT {provider}: {type(e).__name__}: {str(e).strip()[-400:]}"
        return row
    if mode == "static" and provider != "CPUExecutionProvider":  # the GPU's own difference from the reference
        try:
            got = run_model(orig, feeds, provider)
            row["fp32_rel_l2"] = compare(entry, got, ref, names)[0]
        except Exception as e:
            row["fp32_error"] = f"{type(e).__name__}: {str(e).strip()[-300:]}"
    return row


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("halfguard")
    ap.add_argument("--models", required=True)
    ap.add_argument("--only", default="")
    ap.add_argument("--jobs", type=int, default=8)
    ap.add_argument("--json")
    ap.add_argument("--provider", default="")
    ap.add_argument("--timeout", type=float, default=240)
    ap.add_argument("--pack", metavar="DIR", help="tar the manifest and the families with a row over "
                    "the tolerance (or an error) into DIR, in parts of at most 15 MiB, 4 at most")
    args = ap.parse_args()
    import onnxruntime as ort
    have = ort.get_available_providers()
    print(f"onnxruntime {ort.__version__}, providers {have}", flush=True)
    if not args.provider:
        args.provider = "CUDAExecutionProvider" if "CUDAExecutionProvider" in have else "CPUExecutionProvider"
    hg = shlex.split(args.halfguard)
    man = json.load(open(os.path.join(args.models, "manifest.json")))
    only = [f for f in args.only.split(",") if f]
    entries = [e for e in man["models"] if not only or e["family"] in only]
    rows = []
    with tempfile.TemporaryDirectory(prefix="hg-device-") as tmp, cf.ThreadPoolExecutor(args.jobs) as ex:
        futs = [ex.submit(one, hg, args.models, e, mode, tmp, args.provider, args.timeout)
                for e in entries for mode in ("static", "calib")]
        for f in cf.as_completed(futs):
            r = f.result()
            rows.append(r)
            g = r.get("ort_rel_l2")
            flag = "ERROR " + r["error"] if "error" in r else (
                "" if g is not None and g <= bench.RTOL and not r.get("ort_new_nonfinite") else "OVER")
            f32 = r.get("fp32_rel_l2")
            f32 = f"{f32:.2g}" if isinstance(f32, float) else "-"
            gs = "-" if g is None else f"{g:.3g}"
            print(f"{r['family']:24} {r['exporter']:10} {r['mode']:6} ort {gs:>9} fp32 {f32:>8} "
                  f"nonfinite {r.get('ort_new_nonfinite', '-')} {flag}", flush=True)
    ok = [r for r in rows if r.get("ort_rel_l2") is not None and r["ort_rel_l2"] <= bench.RTOL
          and not r.get("ort_new_nonfinite")]
    print(f"{len(ok)}/{len(rows)} conversions within {bench.RTOL:g} rel-L2 on {args.provider}", flush=True)
    if args.json:
        def clean(o):
            if isinstance(o, float) and not math.isfinite(o):
                return str(o)
            if isinstance(o, dict):
                return {k: clean(v) for k, v in o.items()}
            if isinstance(o, list):
                return [clean(v) for v in o]
            return o
        with open(args.json, "w") as f:
            json.dump(clean(rows), f, indent=1)
    if args.pack:
        bad = sorted({r["family"] for r in rows if r not in ok})
        pack(args.models, bad, args.pack)


def pack(root, fams, out_dir, limit=15 << 20, parts=4):
    """Greedy: families into failing-K.tar.gz (each with the manifest) while a part stays under limit."""
    import tarfile

    def write(members, k):
        path = os.path.join(out_dir, f"failing-{k}.tar.gz")
        with tarfile.open(path, "w:gz", compresslevel=9) as tar:
            for x in ("manifest.json", "export.log"):
                if os.path.exists(os.path.join(root, x)):
                    tar.add(os.path.join(root, x), arcname=x)
            for f in members:
                tar.add(os.path.join(root, f), arcname=f)
        return os.path.getsize(path)

    os.makedirs(out_dir, exist_ok=True)
    fams = [f for f in fams if os.path.isdir(os.path.join(root, f))]
    k, cur, left = 1, [], []
    for fam in fams:
        if k > parts:
            left.append(fam)
            continue
        if write(cur + [fam], k) <= limit or not cur:
            cur.append(fam)
            continue
        write(cur, k)
        k, cur = k + 1, [fam]
        if k > parts:
            left.append(fam)
            cur = []
    if cur:
        write(cur, k)
    print(f"pack: {len(fams) - len(left)} families packed; left out {left}", flush=True)


if __name__ == "__main__":
    sys.exit(main())
