#!/usr/bin/python3
"""Issue 12's targets from input ranges alone (no --shapes, no calibration): each model converted with
`convert -r ...` and nothing else, then `verify --random 4` on synthetic inputs inside the same ranges
(symbolic dims at 1 unless the row says otherwise). Prints per model the FP16 share of MACs as
convert's summary gives it (a share "at" a representative size where MACs are symbolic), the FP32
islands and verify's verdict.

Models: the pathology suite (each with its own ranges and options), the corpus's TFBert and gpt2_past
with the issue's ranges, mnist, cnn_mnist_pytorch and squeezenet (skipped when ../shared/corpus is
absent), and bench/bert_layer.py at sequence 128 fixed and symbolic.

Usage: bench/static_share.py HALFGUARD [NAME_SUBSTRING...]"""
import json
import os
import re
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests"))
import hgtest  # noqa: E402
import ortlib  # noqa: E402

tool = sys.argv[1]
only = sys.argv[2:]


def models(tmp):
    out = []
    if os.path.isdir(hgtest.CORPUS):
        tf = ortlib.corpus("onnxruntime/test/python/transformers/test_data/models/")
        out.append(("TFBertForQuestionAnswering", tf + "TFBertForQuestionAnswering.onnx",
                    ["-r", "input_ids=0:19", "-r", "attention_mask=0:1", "-r", "token_type_ids=0:1"], []))
        out.append(("gpt2_past", tf + "gpt2_past.onnx", ["-r", "input_ids=0:19", "-r", "past_*=-5:5"], []))
        out.append(("mnist", ortlib.corpus("onnxruntime/test/testdata/mnist.onnx"), ["-r", "Input3=0:255"], []))
        out.append(("cnn_mnist_pytorch", ortlib.corpus("java/testdata/cnn_mnist_pytorch.onnx"), ["-r", "0=0:1"], []))
        out.append(("squeezenet_tensor_input", ortlib.corpus("winml/test/collateral/models/squeezenet_tensor_input.onnx"),
                    ["-r", "data=0:255"], ["--outputs", "loss1"]))
    for seq in (128, None):
        path = os.path.join(tmp, f"bert_layer_seq{seq or 'SYM'}.onnx")
        subprocess.run([sys.executable, os.path.join(HERE, "bert_layer.py"), path] + (["--seq", str(seq)] if seq else []),
                       check=True)
        out.append((os.path.basename(path)[:-5], path, ["-r", "x=-0.3:0.3"], [] if seq else ["--dim-max", "seq=16"]))
    pdir = os.path.join(tmp, "pathology")
    subprocess.run([sys.executable, os.path.join(HERE, "..", "tests", "pathology", "make_cases.py"), pdir],
                   check=True, stdout=subprocess.DEVNULL)
    for c in json.load(open(os.path.join(pdir, "cases.json")))["cases"]:
        rs = [a for r in c["input_ranges"] for a in ("-r", r)]
        out.append((c["name"], os.path.join(pdir, c["model"]), rs + c["options"], []))
    return out


def main():
    print(f"{'model':36} {'FP16 MACs':>24} {'islands':>8}  verify")
    with tempfile.TemporaryDirectory(prefix="hg-share-") as tmp:
        for name, model, opts, vopts in models(tmp):
            if only and not any(s in name for s in only):
                continue
            conv = os.path.join(tmp, name + ".out.onnx")
            p = subprocess.run([tool, "convert", model, "-o", conv, "--no-config"] + opts,
                               capture_output=True, text=True)
            line = p.stdout.strip().splitlines()[0] if p.stdout.strip() else p.stderr.strip()[:200]
            m = re.search(r"FP16: ([0-9.]+)% of MACs", line) or re.search(r"FP16 runs ([0-9.]+)% of them at ([^;]+)", line)
            share = (m.group(1) + "%" + (f" at {m.group(2)}" if m and m.lastindex == 2 else "")) if m else (
                "all FP16" if p.returncode == 0 and "FP32 island" not in line else "?")
            isl = re.search(r"(\d+) FP32 island", line)
            ranges = [a for a in opts if a != "-r" and "=" in a and not a.startswith("--")]
            vr = [a for r in ranges for a in ("-r", r)]
            v = subprocess.run([tool, "verify", model, conv, "--random", "4", "--no-config"] + vr + vopts,
                               capture_output=True, text=True) if p.returncode == 0 else None
            verdict = "convert failed" if v is None else ("pass" if v.returncode == 0 else f"FAIL ({v.returncode})")
            print(f"{name:36} {share:>24} {isl.group(1) if isl else 0:>8}  {verdict}", flush=True)


if __name__ == "__main__":
    main()
