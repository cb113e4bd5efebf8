"""ONNX Runtime for the tests and benchmarks, on top of tests/hgtest.py: installs npm's
onnxruntime-node once into a cache folder, makes seeded inputs for the corpus models, and runs a model
through ONNX Runtime (tests/ort_run.js) and through `halfguard run`."""
import json
import os
import shutil
import subprocess
import time

import numpy as np

import hgtest

HERE = hgtest.HERE
CORPUS = hgtest.CORPUS
ORT_VERSION = "1.30.0"


def ensure_ort(cache=None):
    """node_modules with onnxruntime-node under cache ($HG_ORT_CACHE, as meson sets it, by default);
    returns the folder to put on NODE_PATH."""
    cache = cache or hgtest.ORT_CACHE
    mod = os.path.join(cache, "node_modules", "onnxruntime-node")
    if not os.path.isdir(mod):
        if not shutil.which("node") or not shutil.which("npm"):
            raise RuntimeError("node and npm are needed (apt-get install nodejs npm)")
        os.makedirs(cache, exist_ok=True)
        subprocess.run(["npm", "install", "--prefix", cache, "--ignore-scripts", "--no-audit",
                        "--no-fund", f"onnxruntime-node@{ORT_VERSION}"],
                       check=True, stdout=subprocess.DEVNULL)
    return os.path.join(cache, "node_modules")


def corpus(rel):
    return os.path.join(CORPUS, "microsoft_onnxruntime", rel)


def model_cases(seed=1234):
    """name -> (model path, {input: array}, output names or None). Inputs are seeded and in the
    ranges the models see in use: pixels, token ids inside the vocabulary, small past states.
    Another seed gives another sample in the same ranges (calibrate on one, verify on another)."""
    rng = np.random.default_rng(seed)
    cases = {}
    img = lambda shape, lo, hi: rng.uniform(lo, hi, shape).astype(np.float32)
    cases["mnist"] = (corpus("onnxruntime/test/testdata/mnist.onnx"),
                      {"Input3": img((1, 1, 28, 28), 0, 255)}, None)
    cases["cnn_mnist_pytorch"] = (corpus("java/testdata/cnn_mnist_pytorch.onnx"),
                                  {"0": img((1, 1, 28, 28), 0, 1)}, None)
    # Its outputs go through ai.onnx.ml ops (ArrayFeatureExtractor, ZipMap); compare the class
    # probabilities they read.
    cases["squeezenet_tensor_input"] = (corpus("winml/test/collateral/models/squeezenet_tensor_input.onnx"),
                                        {"data": img((1, 3, 227, 227), 0, 255)}, ["loss1"])
    cases["fns-candy"] = (corpus("winml/test/collateral/models/fns-candy.onnx"),
                          {"inputImage": img((1, 3, 720, 720), 0, 255)}, None)
    feeds = {"input_ids": rng.integers(0, 20, (2, 1)).astype(np.int64)}
    for i in range(12):
        feeds[f"past_{i}"] = rng.standard_normal((2, 2, 2, 3, 2)).astype(np.float32)
    cases["gpt2_past"] = (corpus("onnxruntime/test/python/transformers/test_data/models/gpt2_past.onnx"),
                          feeds, None)
    mask = np.ones((2, 7), np.int32)
    mask[1, 5:] = 0
    cases["TFBertForQuestionAnswering"] = (
        corpus("onnxruntime/test/python/transformers/test_data/models/TFBertForQuestionAnswering.onnx"),
        {"attention_mask": mask, "input_ids": rng.integers(0, 20, (2, 7)).astype(np.int32),
         "token_type_ids": rng.integers(0, 2, (2, 7)).astype(np.int32)}, None)
    return cases


def feed_order(model_path):
    import onnx
    m = onnx.load(model_path, load_external_data=False)
    inits = {t.name for t in m.graph.initializer}
    return [i.name for i in m.graph.input if i.name not in inits], [o.name for o in m.graph.output]


def write_feeds(model, feeds, folder):
    """feeds ({input: array}) as a --data folder of input_K.pb in the model's feed order."""
    order, _ = feed_order(model)
    return hgtest.write_inputs(folder, [(n, feeds[n]) for n in order])


def run_ort(node_path, model, feeds, outputs, work, threads=1, repeat=1):
    """(list of arrays, list of run times in ms)."""
    os.makedirs(work, exist_ok=True)
    if outputs:
        # ONNX Runtime fetches graph outputs only: expose the wanted values as outputs of a copy.
        import onnx
        from onnx import helper
        m = onnx.load(model)
        have = {o.name for o in m.graph.output}
        for name in outputs:
            if name not in have:
                m.graph.output.append(helper.make_empty_tensor_value_info(name))
        model = os.path.join(work, "ort_model.onnx")
        onnx.save(m, model)
    inputs = []
    for name, a in feeds.items():
        f = os.path.join(work, f"ort_in_{len(inputs)}.bin")
        a.tofile(f)
        inputs.append({"name": name, "dtype": str(a.dtype), "shape": list(a.shape), "file": f})
    out_dir = os.path.join(work, "ort_out")
    os.makedirs(out_dir, exist_ok=True)
    spec = {"model": model, "threads": threads, "repeat": repeat, "outputs": outputs,
            "out_dir": out_dir, "inputs": inputs}
    with open(os.path.join(work, "spec.json"), "w") as f:
        json.dump(spec, f)
    env = dict(os.environ, NODE_PATH=node_path)
    p = subprocess.run(["node", os.path.join(HERE, "ort_run.js"), os.path.join(work, "spec.json")],
                       env=env, capture_output=True, text=True)
    if p.returncode:
        raise RuntimeError(f"onnxruntime: {p.stderr.strip()[-500:]}")
    meta = json.load(open(os.path.join(out_dir, "result.json")))
    types = {"float32": np.float32, "float16": np.float16, "int64": np.int64, "int32": np.int32, "bool": np.bool_}
    outs = []
    for k, o in enumerate(meta["outputs"]):
        outs.append(np.fromfile(os.path.join(out_dir, f"{k}.bin"), types[o["type"]]).reshape(o["dims"]))
    return outs, meta["times_ms"]


def run_halfguard(hg, model, feeds, outputs, work, threads=1):
    """(list of arrays, wall seconds of the run command)."""
    data = write_feeds(model, feeds, os.path.join(work, "hg_in"))
    out = os.path.join(work, "hg_out")
    cmd = [hg, "run", model, "--data", data, "-o", out, "--threads", str(threads)]
    if outputs:
        cmd += ["--outputs", ",".join(outputs)]
    t0 = time.monotonic()
    p = subprocess.run(cmd, capture_output=True, text=True)
    dt = time.monotonic() - t0
    if p.returncode:
        raise RuntimeError(f"halfguard run: {p.stderr.strip()[-500:]}")
    n = len(outputs) if outputs else len(feed_order(model)[1])
    return hgtest.read_outputs(out, n), dt
