#!/usr/bin/python3
"""Interval analysis on the corpus's real models: inputs drawn inside declared ranges (pixels in
[0, 255] or [0, 1], token ids inside the vocabulary, past states in [-5, 5]); no value the
interpreter computes may leave its static range. Prints the tightness (static bound / observed
absmax per tensor) for the record. Usage: test_ranges_corpus.py RANGES_MODEL"""
import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hgtest  # noqa: E402
import ortlib  # noqa: E402

tool = sys.argv[1]
ranges = {
    "mnist": ["Input3=0:255"],
    "cnn_mnist_pytorch": ["0=0:1"],
    "squeezenet_tensor_input": ["data=0:255"],
    "gpt2_past": ["input_ids=0:19", "*=-5:5"],
    "TFBertForQuestionAnswering": ["attention_mask=0:1", "input_ids=0:19", "token_type_ids=0:1"],
}
hgtest.need_corpus()
check = hgtest.Checks(echo="none")
cases = ortlib.model_cases()
for name, rs in ranges.items():
    model, feeds, _ = cases[name]
    with tempfile.TemporaryDirectory(prefix="hg-ranges-") as d:
        rc, so, se = hgtest.run([tool, model, ortlib.write_feeds(model, feeds, d), *rs])
    print(so.strip().replace(os.path.dirname(model) + "/", ""))
    if not check(name, rc == 0):
        print(se.strip())
sys.exit(check.finish())
