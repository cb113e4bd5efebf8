#!/usr/bin/python3
"""The FP16 pathology suite (tests/pathology/) through `halfguard check`.

Usage: test_pathology.py HALFGUARD OUTDIR [CASE...]

Generates the cases into OUTDIR with tests/pathology/make_cases.py, then for every case:
  - confirms the hazard is real on the calibration sample: `halfguard run --mark-all` and the case's
    witnesses (e.g. the overflowing tensor really passes 65504), so a loosened sample cannot make a
    case vacuous;
  - runs `halfguard check MODEL --format json --no-config --input-range ...` without calibration and
    with `--calib CASE.data`; every expected [node, kind] must be reported both times, with the
    `fixed_by` pass the case names (null where convert keeps the hazard FP32), and the exit status and
    count must cover exactly the hazards convert does not fix by itself; an overflow
    must say "source": "static" without calibration and "calibration" with it (every tensor has
    statistics then);
  - a [node, kind] in `static_only` must be reported without calibration and not with it (a proof
    that holds over the calibrated range);
  - a negative control must be clean with calibration; without it, its count is printed only;
  - with no ranges at all (and no configuration), check exits 1 on every case, controls included,
    with one unranged-input finding per float input, which tells how to give its range.
Hazards beyond the expected ones are listed as notes, not failures. Prints one line per case and
`N passed, M failed`; exits 1 on any failure.
"""
import json
import os
import sys
import tempfile

import numpy as np
import onnx

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hgtest  # noqa: E402
from hgtest import run  # noqa: E402


def check_witnesses(hg, outdir, case, errors):
    if not case["witnesses"]:
        return
    with tempfile.TemporaryDirectory() as tmp:
        rc, _, err = run([hg, "run", os.path.join(outdir, case["model"]), "--data",
                          os.path.join(outdir, case["data"]), "-o", tmp, "--mark-all", "--format", "npy"])
        if rc != 0:
            errors.append(f"halfguard run failed ({rc}): {err.strip()}")
            return
        with open(os.path.join(tmp, "index.json")) as f:
            index = json.load(f)
        for w in case["witnesses"]:
            if w["value"] not in index:
                errors.append(f"witness: run wrote no '{w['value']}'")
                continue
            v = np.load(os.path.join(tmp, index[w["value"]]["file"])).astype(np.float64)
            absmax = float(np.max(np.abs(v)))
            ok = {"absmax_gt": lambda: absmax > w["limit"],
                  "absmax_lt": lambda: absmax < w["limit"],
                  "max_gt": lambda: float(np.max(v)) > w["limit"],
                  "has_zero": lambda: bool(np.any(v == 0)),
                  "min_pos_lt": lambda: bool(np.any((v > 0) & (v < w["limit"]))),
                  "has_inf": lambda: bool(np.any(np.isinf(v)))}[w["check"]]()
            if not ok:
                pos = v[v > 0]
                errors.append(f"witness: {w['value']} {w['check']} {w['limit']:g} does not hold "
                              f"(absmax {absmax:.4g}, max {float(np.max(v)):.4g}, smallest positive "
                              f"{float(np.min(pos)) if pos.size else float('nan'):.4g}): {w['why']}")


def check_json(hg, outdir, case, calib, errors):
    """Run check; the model's unsuppressed hazards, or None when the run itself failed."""
    args = [hg, "check", os.path.join(outdir, case["model"]), "--format", "json", "--no-config"]
    args += hgtest.range_args(case["input_ranges"], "--input-range") + case.get("options", [])
    if calib:
        args += ["--calib", os.path.join(outdir, case["data"])]
    tag = "calib" if calib else "static"
    rc, out, err = run(args)
    if rc not in (0, 1):
        errors.append(f"[{tag}] check exited {rc}: {err.strip()}")
        return None
    try:
        doc = json.loads(out)
        model = doc["models"][0]
        hazards = [h for h in model["hazards"] if h.get("suppressed") is None]
    except (ValueError, KeyError, IndexError, TypeError) as e:
        errors.append(f"[{tag}] unreadable JSON ({e}): {out[:200]!r}")
        return None
    counted = [h for h in hazards if h.get("fixed_by") is None]
    if rc != (1 if counted else 0) or doc["hazards"] != len(counted):
        errors.append(f"[{tag}] exit {rc} and count {doc['hazards']} disagree with {len(counted)} hazards "
                      f"that convert does not fix by itself")
    if model.get("unranged_inputs"):
        errors.append(f"[{tag}] inputs reported without a range: {model['unranged_inputs']}")
    return hazards


def check_unconfigured(hg, outdir, case, errors):
    """check with no range and no configuration: exit 1, an unranged-input finding per float input
    whose values reach arithmetic (not one only a Shape or Size reads: its values never matter)."""
    rc, out, err = run([hg, "check", os.path.join(outdir, case["model"]), "--format", "json", "--no-config"]
                       + case.get("options", []))
    try:
        hazards = json.loads(out)["models"][0]["hazards"]
    except (ValueError, KeyError, IndexError):
        errors.append(f"[unconfigured] check exited {rc}: {err.strip()[:300]}")
        return
    graph = onnx.load(os.path.join(outdir, case["model"]), load_external_data=False).graph
    values_read = {i for n in graph.node if n.op_type not in ("Shape", "Size") for i in n.input}
    want = sorted(r.split("=", 1)[0] for r in case["input_ranges"] if r.split("=", 1)[0] in values_read)
    got = sorted(h["node"] for h in hazards if h["kind"] == "unranged-input"
                 and f"--input-range '{h['node']}=LO:HI'" in h["message"])
    if rc != 1 or got != want:
        errors.append(f"[unconfigured] exit {rc}, unranged-input findings {got}, want {want}")


def check_case(hg, outdir, case):
    """(errors, notes) of one case."""
    errors, notes = [], []
    check_witnesses(hg, outdir, case, errors)
    check_unconfigured(hg, outdir, case, errors)
    counts = {}
    for calib in (False, True):
        tag = "calib" if calib else "static"
        hazards = check_json(hg, outdir, case, calib, errors)
        if hazards is None:
            continue
        counts[tag] = len(hazards)
        found = {(h["node"], h["kind"]): h for h in hazards}
        for node, kind, *fix in case["expected"]:
            h = found.get((node, kind))
            if h is None:
                near = sorted(f"{n}/{k}" for n, k in found if n == node or k == kind)
                errors.append(f"[{tag}] missing {kind} at '{node}'"
                              + (f" (reported: {', '.join(near)})" if near else ""))
                continue
            want_fix = fix[0] if fix else None
            if h.get("fixed_by") != want_fix:
                errors.append(f"[{tag}] {kind} at '{node}': fixed_by {h.get('fixed_by')!r}, want {want_fix!r}")
            if kind == "overflow":
                want = "calibration" if calib else "static"
                if h.get("source") != want:
                    errors.append(f"[{tag}] overflow at '{node}': source {h.get('source')!r}, want {want!r}")
                if calib and h.get("observed") is None:
                    errors.append(f"[{tag}] overflow at '{node}': no observed range with --calib")
        for node, kind in case.get("static_only", []):
            if not calib and (node, kind) not in found:
                errors.append(f"[static] missing {kind} at '{node}'")
            if calib and (node, kind) in found:
                errors.append(f"[calib] {kind} at '{node}': calibration bounds it, the proof should clear it")
        expected = {(e[0], e[1]) for e in case["expected"] + case.get("static_only", [])}
        extra = [f"{h['node']}/{h['kind']}" for h in hazards if (h["node"], h["kind"]) not in expected]
        if case["negative_control"] and calib and hazards:
            errors.append(f"[calib] control reports {len(hazards)} hazards: {', '.join(extra)}")
        elif extra:
            notes.append(f"[{tag}] also reported: {', '.join(extra)}")
    return errors, notes, counts


def main(argv):
    if len(argv) < 3:
        sys.exit("usage: test_pathology.py HALFGUARD OUTDIR [CASE...]")
    hg, outdir, only = argv[1], argv[2], argv[3:]
    try:
        cases = hgtest.pathology_cases(outdir, *only)
    except RuntimeError as e:
        print(f"FAIL make_cases.py: {e}")
        return 1
    if not cases:
        print("FAIL cases.json lists no case")
        return 1
    check = hgtest.Checks(echo="none")
    for case in cases:
        errors, notes, counts = check_case(hg, outdir, case)
        what = ("control" if case["negative_control"]
                else ", ".join(f"{e[1]} at {e[0]}" + (f" (fixed by {e[2]})" if len(e) > 2 else "")
                               for e in case["expected"])
                + "".join(f"{', ' if case['expected'] or i else ''}{e[1]} at {e[0]} (static only)"
                          for i, e in enumerate(case.get("static_only", []))))
        tally = f"hazards static {counts.get('static', '?')}, calib {counts.get('calib', '?')}"
        print(f"{'PASS' if not errors else 'FAIL'} {case['name']}: {what} ({tally})")
        for e in errors:
            print(f"    error: {e}")
        for n in notes:
            print(f"    note: {n}")
        check(case["name"], not errors)
    return check.finish()


if __name__ == "__main__":
    sys.exit(main(sys.argv))
