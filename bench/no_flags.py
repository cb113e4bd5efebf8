#!/usr/bin/python3
"""What a new user gets: every pathology case converted with no flags at all (no ranges, no data,
no configuration), then verified on the case's own realistic sample, which lies inside its
documented input ranges. Prints one row per case: verify's verdict, the largest relative L2 error
over the outputs (inf or NaN outputs count as a failure), the FP16 share of MACs, and `check`'s exit
status with no configuration; then the lines convert printed about inputs without a range.

Usage: no_flags.py HALFGUARD [CASE...]   (HALFGUARD may be a wrapper script of an older build)"""
import json
import os
import re
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests"))
import hgtest  # noqa: E402

tool = sys.argv[1]
only = set(sys.argv[2:])
SHARE = re.compile(r"FP16: ([\d.e+-]+)% of MACs")

with tempfile.TemporaryDirectory(prefix="hg-no-flags-") as tmp:
    cases = hgtest.pathology_cases(tmp)
    print(f"{'case':34} {'verify':>7} {'rel L2':>9} {'FP16 %':>7} {'check':>5}")
    passed = total = 0
    notes = {}
    for c in cases:
        if only and c["name"] not in only:
            continue
        model, data = os.path.join(tmp, c["model"]), os.path.join(tmp, c["data"])
        out = os.path.join(tmp, c["name"] + ".fp16.onnx")
        rc, so, se = hgtest.run([tool, "convert", model, "-o", out])
        crc, _, _ = hgtest.run([tool, "check", model])
        if rc:
            print(f"{c['name']:34} convert exited {rc}: {se.strip()[:200]}")
            continue
        m = SHARE.search(so + se)
        share = float(m.group(1)) if m else float("nan")
        vrc, vo, ve = hgtest.run([tool, "verify", model, out, "--data", data, "--format", "json"])
        try:
            v = json.loads(vo)
            rel = max((o["rel_l2"] if o["rel_l2"] is not None else float("inf")) for o in v["outputs"])
            if any(o["new_nonfinite"] for o in v["outputs"]):
                rel = float("nan")
        except (ValueError, KeyError):
            rel = float("nan")
        total += 1
        passed += vrc == 0
        print(f"{c['name']:34} {'pass' if vrc == 0 else 'FAIL':>7} {rel:9.2e} {share:7.2f} {crc:>5}")
        notes[c["name"]] = [l for l in (so + se).splitlines() if "range" in l and "->" not in l]
    print(f"\nverify passes on {passed} of {total} cases")
    for name, lines in notes.items():
        for l in lines:
            print(f"{name}: {l}")
