#!/usr/bin/python3
"""How tight the interval analysis is (issue 12): per model, static bound / observed absmax over its
float tensors, the bound being max(|lo|, |hi|) of the value's static range from the input ranges alone
and the absmax what the interpreter computes on random inputs inside those ranges
(tests/ranges_model.c, which also fails on any value outside its range). Prints the median and the
90th percentile of that ratio over the bounded tensors, and how many tensors stay unbounded, twice:
with the model's own shapes (symbolic dims as `check` sees them without --shapes) and with the sample's
shapes pinned.

Models: the corpus's (skipped when ../shared/corpus is absent), the pathology suite, the README's
example and the BERT-base-width encoder layer of bench/bert_layer.py (sequence 128 fixed and symbolic).

Usage: bench/tightness.py BUILD_DIR [NAME_SUBSTRING...]"""
import os
import subprocess
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests"))
import hgtest  # noqa: E402
import ortlib  # noqa: E402

CORPUS_RANGES = {
    "mnist": ["Input3=0:255"],
    "cnn_mnist_pytorch": ["0=0:1"],
    "squeezenet_tensor_input": ["data=0:255"],
    "gpt2_past": ["input_ids=0:19", "*=-5:5"],
    "TFBertForQuestionAnswering": ["attention_mask=0:1", "input_ids=0:19", "token_type_ids=0:1"],
}


def models(tmp):
    """(name, model, data folder, ranges) for every model the benchmark covers."""
    out = []
    if os.path.isdir(hgtest.CORPUS):
        cases = ortlib.model_cases()
        for name, rs in CORPUS_RANGES.items():
            model, feeds, _ = cases[name]
            out.append((name, model, ortlib.write_feeds(model, feeds, os.path.join(tmp, name)), rs))
    rng = np.random.default_rng(7)
    ex = os.path.join(HERE, "..", "examples", "tiny_unet.onnx")
    out.append(("tiny_unet", ex, hgtest.write_inputs(os.path.join(tmp, "tiny_unet"),
                [("image", rng.uniform(0, 1, (1, 3, 32, 32)).astype(np.float32))]), ["image=0:1"]))
    for seq in (128, None):
        name = f"bert_layer_seq{seq or 'SYM'}"
        path = os.path.join(tmp, name + ".onnx")
        subprocess.run([sys.executable, os.path.join(HERE, "bert_layer.py"), path]
                       + (["--seq", str(seq)] if seq else []), check=True)
        x = rng.uniform(-0.3, 0.3, (1, 128, 768)).astype(np.float32)
        out.append((name, path, hgtest.write_inputs(os.path.join(tmp, name), [("x", x)]), ["x=-0.3:0.3"]))
    pdir = os.path.join(tmp, "pathology")
    subprocess.run([sys.executable, os.path.join(HERE, "..", "tests", "pathology", "make_cases.py"), pdir],
                   check=True, stdout=subprocess.DEVNULL)
    import json
    for c in json.load(open(os.path.join(pdir, "cases.json")))["cases"]:
        out.append((c["name"], os.path.join(pdir, c["model"]), os.path.join(pdir, c["data"]), c["input_ranges"]))
    return out


def measure(tool, model, data, ranges, symbolic):
    with tempfile.NamedTemporaryFile(suffix=".tsv") as f:
        cmd = [tool] + (["--symbolic"] if symbolic else []) + ["--tsv", f.name, model, data] + ranges
        p = subprocess.run(cmd, capture_output=True, text=True)
        if p.returncode != 0:
            sys.exit(f"{model}: ranges_model failed ({p.returncode}):\n{p.stdout}{p.stderr}")
        ratios, unbounded = [], 0
        for line in open(f.name):
            _, _, lo, hi, amax = line.rstrip("\n").split("\t")
            b = max(abs(float(lo)), abs(float(hi)))
            if not np.isfinite(b):
                unbounded += 1
            elif float(amax) > 0:
                ratios.append(b / float(amax))
    return ratios, unbounded


def fmt(ratios, unbounded):
    if not ratios:
        return f"{'-':>8} {'-':>9} {unbounded:>5}"
    med, p90 = np.percentile(ratios, 50), np.percentile(ratios, 90)
    return f"{med:8.3g} {p90:9.3g} {unbounded:5d}"


def main():
    build = sys.argv[1]
    only = sys.argv[2:]
    tool = os.path.join(build, "tests", "ranges_model")
    with tempfile.TemporaryDirectory(prefix="hg-tight-") as tmp:
        print(f"{'model':36} {'tensors':>7} | {'median':>8} {'p90':>9} {'unbd':>5} | "
              f"{'median':>8} {'p90':>9} {'unbd':>5}")
        print(f"{'':36} {'':>7} | {'model shapes (ranges alone)':^24} | {'sample shapes pinned':^24}")
        allr = [[], []]
        for name, model, data, ranges in models(tmp):
            if only and not any(s in name for s in only):
                continue
            sym = measure(tool, model, data, ranges, True)
            pin = measure(tool, model, data, ranges, False)
            allr[0] += sym[0]
            allr[1] += pin[0]
            print(f"{name:36} {len(sym[0]) + sym[1]:7d} | {fmt(*sym)} | {fmt(*pin)}", flush=True)
        print(f"{'all tensors':36} {len(allr[0]):7d} | {fmt(allr[0], 0)} | {fmt(allr[1], 0)}")


if __name__ == "__main__":
    main()
