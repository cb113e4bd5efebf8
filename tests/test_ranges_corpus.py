#!/usr/bin/python3
"""Interval analysis on the corpus's real models: inputs drawn inside declared ranges (pixels in
[0, 255] or [0, 1], token ids inside the vocabulary, past states in [-5, 5]); no value the
interpreter computes may leave its static range. Prints the tightness (static bound / observed
absmax per tensor) for the record. Usage: test_ranges_corpus.py RANGES_MODEL"""
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ortlib  # noqa: E402
from onnx import numpy_helper  # noqa: E402

tool = sys.argv[1]
ranges = {
    "mnist": ["Input3=0:255"],
    "cnn_mnist_pytorch": ["0=0:1"],
    "squeezenet_tensor_input": ["data=0:255"],
    "gpt2_past": ["input_ids=0:19", "*=-5:5"],
    "TFBertForQuestionAnswering": ["attention_mask=0:1", "input_ids=0:19", "token_type_ids=0:1"],
}
passed = failed = 0
cases = ortlib.model_cases()
for name, rs in ranges.items():
    model, feeds, _ = cases[name]
    order, _ = ortlib.feed_order(model)
    with tempfile.TemporaryDirectory(prefix="hg-ranges-") as d:
        for k, n in enumerate(order):
            with open(os.path.join(d, f"input_{k}.pb"), "wb") as f:
                f.write(numpy_helper.from_array(feeds[n], n).SerializeToString())
        p = subprocess.run([tool, model, d, *rs], capture_output=True, text=True)
    print(p.stdout.strip().replace(os.path.dirname(model) + "/", ""))
    if p.returncode == 0:
        passed += 1
    else:
        failed += 1
        print(p.stderr.strip())
print(f"{passed} passed, {failed} failed")
sys.exit(1 if failed or not passed else 0)
