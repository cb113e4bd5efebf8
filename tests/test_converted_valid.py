#!/usr/bin/python3
"""Every model convert writes is valid (issue 11, "never write an invalid model"), over every model
the test suite has at hand:
  - examples/*.onnx;
  - the pathology cases (tests/pathology/make_cases.py, generated into OUTDIR);
  - the golden inputs (golden/<pass>/<case>.onnxtxt);
  - the ONNX backend node tests of libonnx-testdata ($HG_TESTDATA/node), every one;
  - the shared corpus ($HG_CORPUS, ../shared/corpus; skipped when absent).
Each is converted with default flags and again with input ranges: `-r '*=-1:1'` where the model has
float graph inputs, a pathology case's own ranges. Each written model must
  - convert: come out at all unless convert refuses the input for a reason of its own (a refusal is
    printed and counted, not failed); an internal error (convert's type check) or a crash fails;
    an internal error must name a node (else check 'message') and leave no output (else 'written');
  - typecheck: have no type violation (tests/typecheck_model.c) that the original does not have at
    the same node and type parameter;
  - checker: pass Debian's onnx.checker.check_model(full_check=True), where every opset it imports
    is one python3-onnx 1.12 knows (default domain <= 17, ai.onnx.ml <= 3) and the original passes;
  - ort: load in ONNX Runtime (npm's onnxruntime-node, tests/ort_load.js), where the original does.
Known failures are listed, with their reasons, in tests/converted_valid_xfail.txt as
"ID VARIANT CHECK"; the test fails on a failure not listed and on a listed one that no longer fails
(so the list shrinks as convert is fixed). Lines whose case is absent (no corpus) are ignored.

Usage: test_converted_valid.py HALFGUARD TYPECHECK_MODEL OUTDIR [XFAIL]
Environment: HG_SOURCE_ROOT, HG_TESTDATA, HG_CORPUS, HG_ORT_CACHE (as meson sets them).
"""
import glob
import json
import multiprocessing
import os
import re
import shutil
import subprocess
import sys

import onnx

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hgtest  # noqa: E402
import ortlib  # noqa: E402
from hgtest import CORPUS, HERE, ROOT, TESTDATA  # noqa: E402

HG, TYPECHECK, OUT = (os.path.abspath(a) for a in sys.argv[1:4])
XFAIL = sys.argv[4] if len(sys.argv) > 4 else os.path.join(HERE, "converted_valid_xfail.txt")
CHECKER_OPSETS = {"": 17, "ai.onnx": 17, "ai.onnx.ml": 3}
FLOAT_TYPES = {onnx.TensorProto.FLOAT, onnx.TensorProto.FLOAT16, onnx.TensorProto.DOUBLE,
               onnx.TensorProto.BFLOAT16}


def has_float_inputs(path):
    try:
        m = onnx.load(path, load_external_data=False)
    except Exception:  # noqa: BLE001 (convert will say what is wrong with it)
        return False
    inits = {t.name for t in m.graph.initializer}
    return any(i.type.HasField("tensor_type") and i.type.tensor_type.elem_type in FLOAT_TYPES
               for i in m.graph.input if i.name not in inits)


def cases():
    """[(id, model path, [(variant, convert args)])]."""
    out = []
    default = ("default", [])
    ranged = ("ranged", ["-r", "*=-1:1"])
    for p in sorted(glob.glob(os.path.join(ROOT, "examples", "*.onnx"))):
        out.append(("examples/" + os.path.basename(p), p, [default, ranged]))
    path_dir = os.path.join(OUT, "pathology")
    for c in hgtest.pathology_cases(path_dir):
        out.append(("pathology/" + c["name"], os.path.join(path_dir, c["model"]),
                    [default, ("ranged", hgtest.range_args(c["input_ranges"]))]))
    # Golden inputs are ONNX text: written as protobuf first (convert --passes none), so that
    # onnx.checker and ONNX Runtime can judge the original too.
    for p in sorted(glob.glob(os.path.join(ROOT, "golden", "*", "*.onnxtxt"))):
        rel = os.path.relpath(p, os.path.join(ROOT, "golden"))
        binary = os.path.join(OUT, "golden", rel.replace(".onnxtxt", ".onnx"))
        os.makedirs(os.path.dirname(binary), exist_ok=True)
        rc, _, se = hgtest.run([HG, "convert", "--passes", "none", p, "-o", binary])
        if rc:
            sys.exit(f"{p}: convert --passes none failed: {se}")
        out.append(("golden/" + rel, binary, [default, ranged]))
    node = os.path.join(TESTDATA, "node")
    for t in sorted(os.listdir(node)) if os.path.isdir(node) else []:
        p = os.path.join(node, t, "model.onnx")
        if os.path.exists(p):
            out.append(("node/" + t, p, [default, ranged]))
    if os.path.isdir(CORPUS):
        for p in sorted(glob.glob(os.path.join(CORPUS, "**", "*.onnx"), recursive=True)):
            out.append(("corpus/" + os.path.relpath(p, CORPUS), p, [default, ranged]))
    else:
        print(f"note: no corpus at {CORPUS}: its models are skipped")
    return [(cid, p, [v for v in variants if v[0] == "default" or v[1] != ranged[1] or has_float_inputs(p)])
            for cid, p, variants in out]


def convert(job):
    """(key, output path or None, status, message); status: ok, refused, fail (a crash or convert's
    internal error), written (an error, yet the output exists), message (an internal error that
    names no node)."""
    cid, model, variant, args = job
    dest = os.path.join(OUT, "out", variant, cid.replace("/", "__") + ".onnx")
    os.makedirs(os.path.dirname(dest), exist_ok=True)
    rc, _, err = hgtest.run([HG, "convert", model, "-o", dest] + args, timeout=300)
    if rc == "timeout":
        return (cid, variant), None, "fail", "convert timed out"
    err = err.strip().replace(model + ": ", "")
    if rc == 0:
        return (cid, variant), dest, "ok", ""
    if os.path.exists(dest):
        return (cid, variant), None, "written", f"exit {rc}, yet the output was written: {err[-300:]}"
    if rc == 2 and err and "internal error" not in err:
        return (cid, variant), None, "refused", err.splitlines()[-1][:300]
    if rc == 2 and not re.search(r"internal error: .*node '[^']*' \(\w+\): ", err):
        return (cid, variant), None, "message", f"an internal error that names no node: {err[-300:]}"
    return (cid, variant), None, "fail", f"exit {rc}: {err[-400:]}"


def typecheck(paths):
    """path -> set of violation keys, or None when it does not load."""
    res = {}
    for i in range(0, len(paths), 200):
        p = subprocess.run([TYPECHECK] + paths[i:i + 200], capture_output=True, text=True)
        if p.returncode:
            sys.exit(f"typecheck_model failed: {p.stderr[-500:]}")
        for line in p.stdout.splitlines():
            d = json.loads(line)
            res[d["model"]] = None if "error" in d else {
                (v["node"] or "#" + (v["output"] or ""), v["op"], v["param"]): v["message"]
                for v in d["violations"]}
    return res


def checker(path):
    """None when onnx.checker (full) accepts path, 'skip' when it cannot judge, else the message."""
    try:
        m = onnx.load(path, load_external_data=False)
    except Exception as e:  # noqa: BLE001
        return f"onnx.load: {str(e)[:200]}"
    for o in m.opset_import:
        if o.domain not in CHECKER_OPSETS or o.version > CHECKER_OPSETS[o.domain]:
            return "skip"
    if any(t.data_location == onnx.TensorProto.EXTERNAL for t in m.graph.initializer):
        return "skip"
    err = hgtest.checker_error(m)
    return None if err is None else err.strip().splitlines()[0][:300]


def ort_load(paths, node_path):
    """path -> None (loads) or the error; split over two node processes."""
    res = {}
    halves = [paths[0::2], paths[1::2]]
    procs = []
    for k, part in enumerate(halves):
        spec, result = os.path.join(OUT, f"ort_list_{k}.json"), os.path.join(OUT, f"ort_result_{k}.json")
        with open(spec, "w") as f:
            json.dump(part, f)
        procs.append((subprocess.Popen(["node", os.path.join(HERE, "ort_load.js"), spec, result],
                                       env=dict(os.environ, NODE_PATH=node_path),
                                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True), result))
    for p, result in procs:
        _, err = p.communicate()
        if p.returncode:
            sys.exit(f"ort_load.js failed: {err[-500:]}")
        res.update(json.load(open(result)))
    return res


def read_xfail():
    """{(id, variant, check): reason}."""
    out = {}
    with open(XFAIL) as f:
        for line in f:
            body, _, reason = line.partition("#")
            words = body.split()
            if not words:
                continue
            if len(words) != 3:
                sys.exit(f"{XFAIL}: expected 'ID VARIANT CHECK  # reason': {line.strip()}")
            out[tuple(words)] = reason.strip()
    return out


def main():
    shutil.rmtree(os.path.join(OUT, "out"), ignore_errors=True)
    os.makedirs(OUT, exist_ok=True)
    all_cases = cases()
    jobs = [(cid, p, v, args) for cid, p, variants in all_cases for v, args in variants]
    originals = {cid: p for cid, p, _ in all_cases}
    with multiprocessing.Pool(2) as pool:
        converted = pool.map(convert, jobs, chunksize=8)
        written = {key: dest for key, dest, status, _ in converted if dest}
        failures = {}  # (id, variant, check) -> message
        refused = []
        for key, _, status, msg in converted:
            if status == "fail":
                failures[key + ("convert",)] = msg
            elif status in ("written", "message"):
                failures[key + (status,)] = msg
            elif status == "refused":
                refused.append((key, msg))

        # The type check, the original's violations against the output's.
        tc = typecheck(sorted(set(originals.values())) + sorted(written.values()))
        for (cid, v), dest in written.items():
            before, after = tc.get(originals[cid]) or {}, tc.get(dest)
            if after is None:
                failures[(cid, v, "typecheck")] = "the written model does not load"
                continue
            new = [msg for k, msg in after.items() if k not in before]
            if new:
                failures[(cid, v, "typecheck")] = new[0] + (f" (+{len(new) - 1} more)" if len(new) > 1 else "")

        # onnx.checker where it can judge and the original passes.
        onnx_models = sorted(set(originals.values()))
        outs = sorted(written.values())
        verdicts = dict(zip(onnx_models + outs, pool.map(checker, onnx_models + outs, chunksize=16)))
    n_checked = 0
    for (cid, v), dest in written.items():
        orig = verdicts.get(originals[cid], "skip")
        if orig is None and verdicts[dest] != "skip":
            n_checked += 1
            if verdicts[dest] is not None:
                failures[(cid, v, "checker")] = verdicts[dest]

    # ONNX Runtime, where the original loads.
    node_path = ortlib.ensure_ort(os.environ.get("HG_ORT_CACHE", os.path.join(OUT, "ort-node")))
    loads = ort_load(sorted(set(originals.values())) + outs, node_path)
    n_ort = 0
    for (cid, v), dest in written.items():
        if loads.get(originals[cid], "?") is None:
            n_ort += 1
            if loads[dest] is not None:
                failures[(cid, v, "ort")] = loads[dest].replace(dest, "OUT")[:300]

    xfail = read_xfail()
    present = {(cid, v) for cid, _, variants in all_cases for v, _ in variants}
    unexpected = {k: m for k, m in failures.items() if k not in xfail}
    expected = {k: m for k, m in failures.items() if k in xfail}
    fixed = [k for k in xfail if k[:2] in present and k not in failures]
    for (cid, v), msg in refused:
        print(f"refused {cid} {v}: {msg}")
    for k, m in sorted(expected.items()):
        print(f"xfail {' '.join(k)}: {m}")
    for k, m in sorted(unexpected.items()):
        print(f"FAIL {' '.join(k)}: {m}")
    for k in sorted(fixed):
        print(f"UNEXPECTED PASS {' '.join(k)} (listed: {xfail[k]}): remove it from {os.path.basename(XFAIL)}")
    print(f"{len(all_cases)} models, {len(jobs)} conversions: {len(written)} written, {len(refused)} refused; "
          f"{n_checked} checked by onnx.checker, {n_ort} loaded in ONNX Runtime; "
          f"{len(expected)} expected failures, {len(unexpected)} unexpected, {len(fixed)} listed but passing")
    return 1 if unexpected or fixed else 0


if __name__ == "__main__":
    sys.exit(main())
