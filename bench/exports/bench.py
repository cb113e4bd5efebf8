#!/usr/bin/python3
"""halfguard on the real-export corpus (bench/exports/models, made by export.py on a PyTorch machine).

For every model of the manifest, two conversions: static (the manifest's input ranges only) and
calibrated (the ranges plus --calib on calib/0 and calib/1), each with --report. Per conversion:

  valid     onnxruntime-node creates a session for it, and, where its opset is <= 17, Debian's
            onnx.checker.check_model(full_check=True) passes;
  verify    `halfguard verify ORIG CONV --data verify/0 --format json`: the largest rel-L2 over the
            outputs and the verdict (or the error, e.g. an op the interpreter lacks);
  ORT       onnxruntime-node runs the converted model on verify/0 (FP16 fed where its inputs are
            FLOAT16) and the largest rel-L2 over the outputs against the FP32 reference outputs
            (verify/0/output_K.pb, onnxruntime's, from export.py);

with the FP16 share of MACs and weight bytes, the FP32 islands and the Casts from the report, and
the time of the convert command. The conversions are the commands a user types: no --shapes, so
every model here has a symbolic batch and halfguard's report counts no MACs. The MAC share of each
plan is then weighed with per-node MACs from one analysis run per model at the samples' shapes
(`convert --shapes ... --passes assign_precision --report`; nodes the passes added count nothing,
which leaves out a few Muls and Casts). With --shapes the conversions themselves get the samples'
shapes (analysis only, the model stays symbolic) and the report's own MAC figures are used; that
can change the plan. A conversion that fails, crashes or runs over --timeout (300 s) is a row with
the error, never the end of the run.

Usage: bench.py HALFGUARD [--models DIR] [--only FAMILY,...] [--json OUT] [--keep DIR]
                          [--timeout S] [--shapes] [--ort-cache DIR]
"""
import argparse
import json
import math
import os
import shutil
import sys
import tempfile
import time

import numpy as np
import onnx
from onnx import TensorProto

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "tests"))
import hgtest  # noqa: E402
import ortlib  # noqa: E402

RTOL = 1e-2
# Detection heads whose outputs are a set of queries (axis 1): a TopK over near-equal scores may pick
# them in another order, which is no error. Their ORT rel-L2 is taken after matching the queries
# (one to one, nearest first, over all these outputs together); the raw figure stays in the JSON.
# export.py records this as the entry's 'set_outputs'; this table serves manifests without it.
# torchvision's detectors give [N, 4] boxes and [N] scores in the order their last sort left them: a
# set of N detections, matched the same way (as one batch row).
SET_OUTPUTS = {"detr": ["logits", "pred_boxes"], "rt_detr": ["logits", "pred_boxes"],
               "ssdlite": ["boxes", "scores"], "fasterrcnn_small": ["boxes", "scores"],
               "fcos_small": ["boxes", "scores"], "retinanet_small": ["boxes", "scores"]}
NP_OF = {TensorProto.FLOAT: np.float32, TensorProto.FLOAT16: np.float16, TensorProto.INT64: np.int64,
         TensorProto.INT32: np.int32, TensorProto.BOOL: np.bool_, TensorProto.DOUBLE: np.float64}
JS_OF = {np.dtype(np.float32): "float32", np.dtype(np.float16): "float16",
         np.dtype(np.int64): "int64", np.dtype(np.int32): "int32", np.dtype(np.bool_): "bool",
         np.dtype(np.float64): "float64"}
NP_OF_JS = {"float32": np.float32, "float16": np.float16, "int64": np.int64, "int32": np.int32,
            "bool": np.bool_, "float64": np.float64}


def last_line(text, n=300):
    lines = [x for x in (text or "").strip().splitlines() if x.strip()]
    return (lines[-1] if lines else "")[:n]


def run(cmd, timeout, env=None):
    """(returncode or 'timeout', stdout, stderr, seconds)."""
    t0 = time.monotonic()
    rc, out, err = hgtest.run(cmd, timeout=timeout, env=env)
    return rc, out, err, time.monotonic() - t0


def rel_l2(got, ref):
    got = np.asarray(got, np.float64).ravel()
    ref = np.asarray(ref, np.float64).ravel()
    if got.shape != ref.shape:
        return None
    if not np.all(np.isfinite(got)):
        return math.inf
    nr = np.linalg.norm(ref)
    d = np.linalg.norm(got - ref)
    return float(d / nr) if nr > 0 else (0.0 if d == 0 else math.inf)


def as_queries(a):
    """a as [batch, queries, features]: a detector's [N] scores and [N, 4] boxes are one batch row."""
    a = np.asarray(a, np.float64)
    if a.ndim == 1:
        a = a[:, None]
    return a[None] if a.ndim == 2 else a


def match_queries(got, ref, names):
    """Permutation of got's queries (axis 1) that best matches ref's, per batch row, greedily one to
    one by the distance over the named outputs together; None where shapes do not allow it."""
    try:
        g = np.concatenate([as_queries(got[n]) for n in names], axis=-1)
        r = np.concatenate([as_queries(ref[n]) for n in names], axis=-1)
    except (KeyError, ValueError):
        return None
    if g.shape != r.shape or g.ndim != 3:
        return None
    perm = np.zeros(g.shape[:2], np.int64)
    for b in range(g.shape[0]):
        d = ((r[b][:, None, :] - g[b][None, :, :]) ** 2).sum(-1)
        used_r, used_g = set(), set()
        for flat in np.argsort(d, axis=None, kind="stable"):
            i, j = divmod(int(flat), d.shape[1])
            if i in used_r or j in used_g:
                continue
            perm[b, i] = j
            used_r.add(i)
            used_g.add(j)
    return perm


def graph_io(model):
    inits = {t.name for t in model.graph.initializer}
    ins = [(i.name, i.type.tensor_type.elem_type) for i in model.graph.input if i.name not in inits]
    outs = [o.name for o in model.graph.output]
    return ins, outs


def ort_run(node_path, model_path, feeds, work, timeout, session_only=False, level="all"):
    """(outputs {name: array} or None, error or None, session_ok). level is ONNX Runtime's graph
    optimization level."""
    os.makedirs(work, exist_ok=True)
    out_dir = os.path.join(work, "ort_out")
    shutil.rmtree(out_dir, ignore_errors=True)
    os.makedirs(out_dir)
    inputs = []
    for k, (name, a) in enumerate(feeds):
        f = os.path.join(work, f"in_{k}.bin")
        a = np.ascontiguousarray(a)
        if a.dtype == np.bool_:
            a = a.astype(np.uint8)
            dtype = "bool"
        else:
            dtype = JS_OF[a.dtype]
        a.tofile(f)
        inputs.append({"name": name, "dtype": dtype, "shape": list(a.shape), "file": f})
    spec = {"model": model_path, "threads": 1, "out_dir": out_dir, "inputs": inputs,
            "session_only": session_only, "level": level}
    sp = os.path.join(work, "spec.json")
    with open(sp, "w") as f:
        json.dump(spec, f)
    rc, out, err, _ = run(["node", os.path.join(hgtest.HERE, "ort_run.js"), sp], timeout,
                          env={"NODE_PATH": node_path})
    session_ok = "SESSION_OK" in out
    if rc != 0:
        # a crash is a crash whatever ORT printed before it (its warnings go to stderr too)
        what = ("timeout" if rc == "timeout" else f"crashed (signal {-rc})" if isinstance(rc, int) and rc < 0
                else last_line(err, 400) or f"exit {rc}")
        return None, ("run: " if session_ok else "session: ") + what, session_ok
    if session_only:
        return {}, None, True
    meta = json.load(open(os.path.join(out_dir, "result.json")))
    res = {}
    for k, o in enumerate(meta["outputs"]):
        dt = NP_OF_JS.get(o["type"])
        if dt is None:
            continue
        raw = np.fromfile(os.path.join(out_dir, f"{k}.bin"), np.uint8 if dt is np.bool_ else dt)
        res[o["name"]] = raw.reshape([int(d) for d in o["dims"]])
    return res, None, True


def load_samples(folder, orig_inputs):
    """[(name, array)] of folder's input_K.pb in the original model's graph-input order."""
    arrays = []
    for k, (name, _) in enumerate(orig_inputs):
        arrays.append((name, hgtest.read_pb(os.path.join(folder, f"input_{k}.pb"))))
    return arrays


def reference_outputs(entry, mdir, orig_path, orig_inputs, orig_outputs, node_path, work, timeout):
    vdir = os.path.join(mdir, "verify", "0")
    ref = {}
    for k, name in enumerate(orig_outputs):
        p = os.path.join(vdir, f"output_{k}.pb")
        if not os.path.exists(p):
            break
        ref[name] = hgtest.read_pb(p)
    if len(ref) == len(orig_outputs):
        return ref, None
    got, err, _ = ort_run(node_path, orig_path, load_samples(vdir, orig_inputs), work, timeout)
    return got, err


def shape_args(entry):
    args = []
    for inp in entry["inputs"]:
        if any(not isinstance(d, int) for d in inp["onnx_shape"]):
            args += ["--shapes", f"{inp['name']}:" + "x".join(str(d) for d in inp["shape"])]
    return args


def mac_table(hg, entry, models, tmp, timeout):
    """{node: MACs} of the original model at the samples' shapes, from assign_precision's report."""
    orig = os.path.join(models, entry["path"])
    tag = f"{entry['family']}-{entry['exporter']}-macs"
    out, report = os.path.join(tmp, tag + ".onnx"), os.path.join(tmp, tag + ".json")
    cmd = [hg, "convert", orig, "-o", out, "--passes", "assign_precision", "--report", report]
    for r in entry["ranges"]:
        cmd += ["-r", r]
    rc, _, err, _ = run(cmd + shape_args(entry), timeout)
    if rc != 0:
        return None, f"MAC table: exit {rc}: {last_line(err)}"
    return {d["node"]: d["macs"] or 0.0 for d in json.load(open(report))["decisions"]}, None


def convert_row(hg, entry, mode, models, node_path, tmp, timeout, shapes, macs=None):
    mdir = os.path.join(models, os.path.dirname(entry["path"]))
    orig = os.path.join(models, entry["path"])
    tag = f"{entry['family']}-{entry['exporter']}-{mode}"
    conv = os.path.join(tmp, tag + ".onnx")
    report = os.path.join(tmp, tag + ".report.json")
    row = dict(family=entry["family"], exporter=entry["exporter"], opset=entry.get("opset"), mode=mode,
               model=entry["path"], valid=None, checker=None, session=None, verify_rel_l2=None,
               verify_pass=None, verify_error=None, ort_rel_l2=None, ort_error=None,
               fp16_macs_pct=None, fp16_weight_pct=None, islands=None, fp32_nodes=None, casts=None,
               convert_s=None, summary=None, failures=[])
    cmd = [hg, "convert", orig, "-o", conv, "--report", report]
    for r in entry["ranges"]:
        cmd += ["-r", r]
    if shapes:
        cmd += shape_args(entry)
    if mode == "calib":
        for c in ("calib/0", "calib/1"):
            cmd += ["--calib", os.path.join(mdir, c)]
    row["command"] = " ".join(cmd)
    rc, out, err, dt = run(cmd, timeout)
    row["convert_s"] = round(dt, 3)
    row["summary"] = last_line(out, 1000)
    if rc != 0 or not os.path.exists(conv):
        msg = f"convert timed out after {timeout} s" if rc == "timeout" else \
            f"convert exit {rc}: {last_line(err, 500) or last_line(out, 500)}"
        row["failures"].append(msg)
        row["valid"] = False
        return row
    try:
        rep = json.load(open(report))
        fig = rep["figures"]
        row["islands"], row["casts"], row["fp32_nodes"] = fig["fp32_islands"], fig["casts"], fig["fp32_nodes"]
        if fig["macs"] and shapes:
            row["fp16_macs_pct"] = 100.0 * fig["macs_fp16"] / fig["macs"]
            row["macs_source"] = "report"
        elif macs:
            tot = f16 = 0.0
            for d in rep["decisions"]:
                w = macs.get(d["node"], 0.0)
                tot += w
                f16 += w if d["precision"] == "fp16" else 0.0
            if tot:
                row["fp16_macs_pct"] = 100.0 * f16 / tot
                row["macs_source"] = "per-node MACs at the samples' shapes"
                row["macs_covered_pct"] = 100.0 * tot / max(sum(macs.values()), 1e-30)
        if fig["weight_bytes"]:
            row["fp16_weight_pct"] = 100.0 * fig["weight_bytes_fp16"] / fig["weight_bytes"]
        row["notes"] = [p["message"] for p in rep.get("passes", [])]
    except Exception as e:
        row["failures"].append(f"report unreadable: {type(e).__name__}: {e}")

    # (a) valid: onnx.checker (opset <= 17) and an onnxruntime session
    m_orig = onnx.load(orig)
    orig_inputs, orig_outputs = graph_io(m_orig)
    try:
        m_conv = onnx.load(conv)
        conv_inputs, conv_outputs = graph_io(m_conv)
        row["conv_opset"] = hgtest.opset(m_conv)
    except Exception as e:
        row["failures"].append(f"converted model unreadable by onnx 1.12: {type(e).__name__}: {e}")
        row["valid"] = False
        return row
    if row["conv_opset"] is not None and row["conv_opset"] <= 17:
        try:
            onnx.checker.check_model(m_conv, full_check=True)
            row["checker"] = "ok"
        except Exception as e:
            msg = f"{type(e).__name__}: {last_line(str(e), 400)}"
            if "GridSample" in msg and "grid has inconsistent type" in msg:
                # Debian's onnx 1.12 binds GridSample-16's X and grid to one type; the spec (and
                # ONNX Runtime) give the grid its own, T2. convert keeps the grid FP32.
                row["checker"] = "ok (but onnx 1.12's GridSample-16 schema bug: grid is T2 in the spec)"
                row["failures"].append("onnx.checker 1.12 GridSample-16 schema bug (grid FP32 is valid)")
            else:
                row["checker"] = msg
                row["failures"].append("onnx.checker: " + row["checker"])
    else:
        row["checker"] = f"skipped (opset {row['conv_opset']})"

    # (c) onnxruntime on verify/0, which also says whether a session can be created
    vdir = os.path.join(mdir, "verify", "0")
    work = os.path.join(tmp, tag + ".ort")
    types = dict(conv_inputs)
    feeds = []
    for name, a in load_samples(vdir, orig_inputs):
        want = NP_OF.get(types.get(name))
        feeds.append((name, a.astype(want) if want is not None and a.dtype != want else a))
    got, err, session_ok = ort_run(node_path, conv, feeds, work, timeout)
    if not session_ok and err and "crashed" in err:
        # onnxruntime-node 1.30's optimizer at level 'all' crashes (SIGSEGV) on some valid FP16
        # graphs, e.g. LayerNormalization -> Transpose(1,0,2) -> MatMul (a 3-node model reproduces
        # it); 'basic' still checks the types. Run there and say so.
        got, err2, session_ok = ort_run(node_path, conv, feeds, work, timeout, level="basic")
        if session_ok:
            row["ort_note"] = f"ORT level 'all' {err}; 'basic' loads and runs"
            row["failures"].append(row["ort_note"])
            err = err2
    row["session"] = "ok" if session_ok else err
    if not session_ok:
        row["failures"].append("onnxruntime " + err)
    row["valid"] = bool(session_ok and (row["checker"].startswith("ok") or row["checker"].startswith("skipped")))
    if got is None and session_ok:
        row["ort_error"] = err
        row["failures"].append("onnxruntime " + err)
    elif got is not None:
        ref, rerr = reference_outputs(entry, mdir, orig, orig_inputs, orig_outputs, node_path,
                                      os.path.join(tmp, tag + ".ref"), timeout)
        if ref is None:
            row["ort_error"] = f"no FP32 reference: {rerr}"
        else:
            errs = {}
            for k, name in enumerate(orig_outputs):
                g = got.get(name)
                if g is None and k < len(conv_outputs):
                    g = got.get(conv_outputs[k])
                errs[name] = rel_l2(g, ref[name]) if g is not None else None
            row["ort_rel_l2_per_output"] = errs
            vals = [v for v in errs.values() if v is not None]
            row["ort_rel_l2"] = max(vals) if len(vals) == len(errs) and vals else None
            sets = entry.get("set_outputs") or SET_OUTPUTS.get(entry["family"])
            if sets and row["ort_rel_l2"] is not None:
                named = {n: got.get(n) for n in sets}
                perm = match_queries(named, ref, sets) if all(v is not None for v in named.values()) else None
                if perm is not None:
                    matched = {}
                    for n in sets:
                        a = np.take_along_axis(as_queries(named[n]), perm[:, :, None], axis=1)
                        matched[n] = rel_l2(a, as_queries(ref[n]))
                    rest = [v for k, v in errs.items() if k not in matched] + list(matched.values())
                    row["ort_rel_l2_raw"] = raw = row["ort_rel_l2"]
                    row["ort_rel_l2_matched_per_output"] = matched
                    # the matched figure counts only where the order was all that differed
                    if raw > RTOL and max(rest) <= RTOL:
                        row["ort_rel_l2"] = max(rest)
                        row["queries_permuted"] = True
                        row["failures"].append(f"queries permuted (raw ORT rel-L2 {raw:.3g}; "
                                               f"{max(rest):.3g} after matching them)")
            if row["ort_rel_l2"] is None:
                row["ort_error"] = "outputs do not match the reference's names or shapes"
            elif not row["ort_rel_l2"] <= RTOL:
                row["failures"].append(f"ORT rel-L2 {row['ort_rel_l2']:.3g} > {RTOL:g}")
    # (b) halfguard verify
    rc, out, err, _ = run([hg, "verify", orig, conv, "--data", vdir, "--format", "json"], timeout)
    if rc in (0, 1):
        try:
            v = json.loads(out)
            rl = [o["rel_l2"] for o in v["outputs"]]
            row["verify_rel_l2"] = math.inf if any(x is None for x in rl) else max(rl)
            row["verify_pass"] = bool(v["pass"])
            row["verify_per_output"] = {o["name"]: o["rel_l2"] for o in v["outputs"]}
            row["verify_new_nonfinite"] = sum(o["new_nonfinite"] for o in v["outputs"])
            if v.get("first_nonfinite"):
                row["verify_first_nonfinite"] = v["first_nonfinite"]
            if not v["pass"]:
                why = f"verify FAIL (rel-L2 {row['verify_rel_l2']:.3g}"
                if row["verify_new_nonfinite"]:
                    fn = v.get("first_nonfinite") or {}
                    why += f", {row['verify_new_nonfinite']} new non-finite, first at {fn.get('node')} ({fn.get('op')})"
                row["failures"].append(why + ")")
        except Exception as e:
            row["verify_error"] = f"unreadable verify output: {type(e).__name__}: {e}"
            row["failures"].append(row["verify_error"])
    else:
        row["verify_error"] = "timeout" if rc == "timeout" else f"exit {rc}: {last_line(err, 400)}"
        row["failures"].append("verify " + row["verify_error"])
    return row


def fmt(v, spec):
    if v is None:
        return "-"
    if isinstance(v, float) and math.isinf(v):
        return "inf"
    return format(v, spec)


def print_row(r):
    valid = "yes" if r["valid"] else ("no" if r["valid"] is False else "-")
    print(f"{r['family']:16} {r['exporter']:11} {r['opset'] or '-':>5} {r['mode']:6} {valid:5} "
          f"{fmt(r['verify_rel_l2'], '.2e'):>9} {fmt(r['ort_rel_l2'], '.2e'):>9} "
          f"{fmt(r['fp16_macs_pct'], '.1f'):>6} {fmt(r['fp16_weight_pct'], '.1f'):>6} "
          f"{fmt(r['islands'], 'd'):>4} {fmt(r['casts'], 'd'):>5} {fmt(r['convert_s'], '.2f'):>7}  "
          + "; ".join(r["failures"]), flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("halfguard")
    ap.add_argument("--models", default=os.path.join(HERE, "models"))
    ap.add_argument("--only", default="", help="comma-separated families")
    ap.add_argument("--json", help="write all rows (and the summary) to this file")
    ap.add_argument("--keep", help="keep the converted models and reports in this folder")
    ap.add_argument("--timeout", type=float, default=300)
    ap.add_argument("--shapes", action="store_true",
                    help="give the conversions the samples' shapes (--shapes) and use the report's MACs")
    ap.add_argument("--ort-cache", help="folder with node_modules/onnxruntime-node (installed there "
                    "when missing; default BUILD/ort-node, else /tmp/ort-node-cache)")
    args = ap.parse_args()

    hg = os.path.abspath(args.halfguard)
    models = os.path.abspath(args.models)
    manifest = json.load(open(os.path.join(models, "manifest.json")))
    cache = args.ort_cache
    if not cache:
        cache = os.path.join(os.path.dirname(hg), "ort-node")
        if not os.path.isdir(os.path.join(cache, "node_modules", "onnxruntime-node")) and \
                os.path.isdir("/tmp/ort-node-cache/node_modules/onnxruntime-node"):
            cache = "/tmp/ort-node-cache"
    node_path = ortlib.ensure_ort(cache)
    only = {f for f in args.only.split(",") if f}
    entries = [e for e in manifest["models"] if not only or e["family"] in only]
    v = manifest.get("versions", {})
    print(f"corpus: {len(entries)} models ({models}); exported with torch {v.get('torch')}, "
          f"transformers {v.get('transformers')}; halfguard {hg}")
    for f in manifest.get("failures", []):
        if not only or f["family"] in only:
            print(f"not exported: {f['family']}/{f['exporter']}: {f['error'][:200]}")
    hdr = (f"{'family':16} {'exporter':11} {'opset':>5} {'mode':6} {'valid':5} {'verify':>9} "
           f"{'ORT':>9} {'%MACs':>6} {'%wts':>6} {'isl':>4} {'Casts':>5} {'conv s':>7}  failures")
    print("rel-L2 columns: verify = halfguard verify (interpreter), ORT = onnxruntime-node against "
          "the FP32 reference; %MACs / %wts = FP16 share (MACs " +
          ("from the report, conversions given --shapes" if args.shapes else
           "weighed per node at the samples' shapes") + "); isl = FP32 islands")
    print(hdr)
    print("-" * len(hdr))
    rows = []
    tmp = args.keep or tempfile.mkdtemp(prefix="hg-exports-bench-")
    os.makedirs(tmp, exist_ok=True)
    t0 = time.monotonic()
    try:
        for e in entries:
            macs, merr = None, None
            if not args.shapes:
                try:
                    macs, merr = mac_table(hg, e, models, tmp, args.timeout)
                except Exception as ex:
                    merr = f"MAC table: {type(ex).__name__}: {ex}"
            for mode in ("static", "calib"):
                try:
                    r = convert_row(hg, e, mode, models, node_path, tmp, args.timeout, args.shapes, macs)
                    if merr:
                        r["failures"].append(merr)
                except Exception as ex:  # one model's trouble is a row, never the end of the run
                    r = dict(family=e["family"], exporter=e["exporter"], opset=e.get("opset"), mode=mode,
                             model=e["path"], valid=None, verify_rel_l2=None, ort_rel_l2=None,
                             fp16_macs_pct=None, fp16_weight_pct=None, islands=None, casts=None,
                             convert_s=None, failures=[f"bench error: {type(ex).__name__}: {ex}"])
                rows.append(r)
                print_row(r)
    finally:
        if not args.keep:
            shutil.rmtree(tmp, ignore_errors=True)

    def within(r, key):
        x = r.get(key)
        return x is not None and x <= RTOL

    n = len(rows)
    calib = [r for r in rows if r["mode"] == "calib"]
    summary = dict(
        conversions=n,
        valid=sum(1 for r in rows if r.get("valid")),
        converted=sum(1 for r in rows if r.get("islands") is not None),
        within_rtol_ort=sum(1 for r in rows if within(r, "ort_rel_l2")),
        within_rtol_verify=sum(1 for r in rows if within(r, "verify_rel_l2")),
        within_rtol_both=sum(1 for r in rows if within(r, "ort_rel_l2") and within(r, "verify_rel_l2")),
        verify_errors=sum(1 for r in rows if r.get("verify_error")),
        calib_conversions=len(calib),
        calib_zero_islands=sum(1 for r in calib if r.get("islands") == 0),
        static_zero_islands=sum(1 for r in rows if r["mode"] == "static" and r.get("islands") == 0),
        seconds=round(time.monotonic() - t0, 1),
    )
    print()
    print(f"summary: {summary['valid']}/{n} conversions valid (onnxruntime session; onnx.checker where "
          f"opset <= 17); {summary['converted']}/{n} converted")
    print(f"         within rel-L2 {RTOL:g}: {summary['within_rtol_ort']}/{n} by onnxruntime, "
          f"{summary['within_rtol_verify']}/{n} by halfguard verify, {summary['within_rtol_both']}/{n} both; "
          f"verify errors: {summary['verify_errors']}")
    print(f"         calibrated conversions with 0 FP32 islands: {summary['calib_zero_islands']}/"
          f"{summary['calib_conversions']} (static: {summary['static_zero_islands']}/{n - len(calib)}); "
          f"{summary['seconds']} s")
    def clean(o):  # strict JSON: infinities as strings
        if isinstance(o, float) and not math.isfinite(o):
            return str(o)
        if isinstance(o, dict):
            return {k: clean(x) for k, x in o.items()}
        if isinstance(o, (list, tuple)):
            return [clean(x) for x in o]
        return o

    if args.json:
        with open(args.json, "w") as f:
            json.dump(clean(dict(format="halfguard-exports-bench", version=1, halfguard=hg, models=models,
                                 shapes=args.shapes, summary=summary, rows=rows)), f,
                      indent=1, allow_nan=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
