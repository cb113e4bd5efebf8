#!/usr/bin/python3
"""The interval analysis against a search for inputs that break it (issue 12): on the pathology suite,
the README's example, a small BERT-width encoder layer, 24 random CNNs of the ops whose channels the
analysis follows apart (tests/random_cnns.py) and the corpus's models (those skipped when
../shared/corpus is absent), tests/adversarial.c runs random restarts and a gradient-free ascent
inside the declared input ranges, checks every value of every run against its static range, and
reports how close it came to the bounds. Any value outside its range fails the test.

Usage: test_adversarial.py ADVERSARIAL [--long] [NAME_SUBSTRING...]   (--long: 20 times the runs, for
bench/RESULTS.md; the suite's budget keeps the whole test near a minute on two cores)"""
import json
import os
import subprocess
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hgtest  # noqa: E402
import ortlib  # noqa: E402

tool = sys.argv[1]
long_run = "--long" in sys.argv[2:]
only = [a for a in sys.argv[2:] if a != "--long"]
scale = 20 if long_run else 1
CORPUS_RANGES = {
    "mnist": (["Input3=0:255"], 40),
    "cnn_mnist_pytorch": (["0=0:1"], 40),
    "squeezenet_tensor_input": (["data=0:255", "--output", "loss1"], 12),
    "gpt2_past": (["input_ids=0:19", "*=-5:5"], 40),
    "TFBertForQuestionAnswering": (["attention_mask=0:1", "input_ids=0:19", "token_type_ids=0:1"], 30),
}
check = hgtest.Checks(echo="none")
rng = np.random.default_rng(11)
with tempfile.TemporaryDirectory(prefix="hg-adv-") as tmp:
    models = []  # (name, model, data, ranges, runs)
    pdir = os.path.join(tmp, "pathology")
    subprocess.run([sys.executable, os.path.join(hgtest.HERE, "pathology", "make_cases.py"), pdir],
                   check=True, stdout=subprocess.DEVNULL)
    for c in json.load(open(os.path.join(pdir, "cases.json")))["cases"]:
        models.append((c["name"], os.path.join(pdir, c["model"]), os.path.join(pdir, c["data"]),
                       c["input_ranges"], 40))
    cdir = os.path.join(tmp, "cnns")
    subprocess.run([sys.executable, os.path.join(hgtest.HERE, "random_cnns.py"), cdir, "24"], check=True)
    for c in json.load(open(os.path.join(cdir, "cases.json"))):
        models.append((c["name"], c["model"], c["data"], c["input_ranges"], 20))
    ex = os.path.join(hgtest.ROOT, "examples", "tiny_unet.onnx")
    models.append(("tiny_unet", ex, hgtest.write_inputs(os.path.join(tmp, "tiny_unet"),
                   [("image", rng.uniform(0, 1, (1, 3, 32, 32)).astype(np.float32))]), ["image=0:1"], 40))
    bert = os.path.join(tmp, "bert_layer.onnx")
    subprocess.run([sys.executable, os.path.join(hgtest.ROOT, "bench", "bert_layer.py"), bert], check=True)
    models.append(("bert_layer", bert, hgtest.write_inputs(os.path.join(tmp, "bert"),
                   [("x", rng.uniform(-0.3, 0.3, (1, 16, 768)).astype(np.float32))]), ["x=-0.3:0.3"], 24))
    if os.path.isdir(hgtest.CORPUS):
        cases = ortlib.model_cases()
        for name, (rs, runs) in CORPUS_RANGES.items():
            model, feeds, _ = cases[name]
            models.append((name, model, ortlib.write_feeds(model, feeds, os.path.join(tmp, name)), rs, runs))
    else:
        print(f"note: the corpus ({hgtest.CORPUS}) is absent; its models are skipped")
    for name, model, data, rs, runs in models:
        if only and not any(s in name for s in only):
            continue
        opts = [r for r in rs if "=" not in r]
        rs = [r for r in rs if "=" in r]
        rc, so, se = hgtest.run([tool, "--evals", str(runs * scale), "--restarts", str(min(12, runs // 3) * scale),
                                 *opts, model, data, *rs])
        print(so.strip().replace(os.path.dirname(model) + "/", ""), flush=True)
        if not check(f"{name}: no value outside its static range", rc == 0):
            print(se.strip())
sys.exit(check.finish())
