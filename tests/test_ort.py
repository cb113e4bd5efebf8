#!/usr/bin/python3
"""Cross-check of the interpreter against ONNX Runtime (npm's onnxruntime-node) on the corpus's real
float models, on seeded inputs in realistic ranges: every output must agree within 1e-4 relative
(max |halfguard - ort| / max |ort|).

Usage: test_ort.py HALFGUARD [CASE...]   (cache for onnxruntime-node: $HG_ORT_CACHE)"""
import os
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hgtest  # noqa: E402
import ortlib  # noqa: E402

hg = sys.argv[1]
only = set(sys.argv[2:])
node_path = ortlib.ensure_ort()
hgtest.need_corpus()
check = hgtest.Checks(echo="none")
for name, (model, feeds, outputs) in ortlib.model_cases().items():
    if only and name not in only:
        continue
    with tempfile.TemporaryDirectory(prefix="hg-ort-") as work:
        try:
            ref, _ = ortlib.run_ort(node_path, model, feeds, outputs, work)
            got, _ = ortlib.run_halfguard(hg, model, feeds, outputs, work)
        except Exception as e:  # noqa: BLE001
            print(f"FAIL {name}: {e}")
            check(name, False)
            continue
    worst = 0.0
    ok = len(ref) == len(got)
    for r, g in zip(ref, got):
        if r.shape != g.shape or r.dtype != g.dtype:
            ok = False
            print(f"  {name}: {g.dtype}{list(g.shape)} vs onnxruntime {r.dtype}{list(r.shape)}")
            continue
        if r.dtype.kind in "iub":
            ok &= bool(np.array_equal(r, g))
            continue
        scale = float(np.max(np.abs(r))) or 1.0
        err = float(np.max(np.abs(g.astype(np.float64) - r))) / scale
        worst = max(worst, err)
        ok &= err <= 1e-4 and bool(np.all(np.isfinite(g) == np.isfinite(r)))
    print(f"{'ok  ' if ok else 'FAIL'} {name}: {len(ref)} outputs, worst relative error {worst:.2e}")
    check(name, ok)
sys.exit(check.finish())
