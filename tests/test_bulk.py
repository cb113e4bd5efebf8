#!/usr/bin/python3
"""convert over many models (issue 14): folders walked for *.onnx, --from lists, Git LFS pointers
skipped.

Usage: test_bulk.py HALFGUARD. Models are made here with Debian's python3-onnx.
"""
import json
import os
import pty
import re
import signal
import subprocess
import sys
import time

import jsonschema
import numpy as np
import onnx
import yaml
from onnx import TensorProto, helper, numpy_helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hgtest  # noqa: E402
from hgtest import make_model, vi  # noqa: E402

HG = sys.argv[1]
check = hgtest.Checks()
LFS = b"version https://git-lfs.github.com/spec/v1\noid sha256:" + b"0" * 64 + b"\nsize 1234\n"


def run(*args, stdin=None):
    """(rc, stdout, stderr); stdin: text given on standard input."""
    if stdin is None:
        return hgtest.run([HG, *args], stdin=subprocess.DEVNULL)
    p = subprocess.run([HG, *args], input=stdin, capture_output=True, text=True)
    return p.returncode, p.stdout, p.stderr


def write_model(path, k=1.0):
    """y = x + k: a model whose bytes say which k it was made with."""
    os.makedirs(os.path.dirname(path), exist_ok=True)
    w = np.full((2, 2), k, np.float32)
    m = make_model([helper.make_node("Add", ["x", "w"], ["y"], name="add")], [vi("x")], [vi("y")],
                   [numpy_helper.from_array(w, "w")])
    with open(path, "wb") as f:
        f.write(m.SerializeToString())
    return path


def converted(so):
    """The inputs a convert's summary lines name, in order."""
    return [line.split(" -> ")[0] for line in so.splitlines() if " -> " in line]


# ---------------------------------------------------------------- trees as input

def test_tree(tmp):
    tree = os.path.join(tmp, "tree")
    for rel in ["b/model.onnx", "a/model.onnx", "a/z/deep.ONNX", "c.onnx", "a/notes.txt.onnx.bak"]:
        write_model(os.path.join(tree, rel))
    with open(os.path.join(tree, "lfs.onnx"), "wb") as f:
        f.write(LFS)
    outside = write_model(os.path.join(tmp, "outside", "o.onnx"))
    os.symlink(outside, os.path.join(tree, "link-out.onnx"))
    os.symlink(os.path.dirname(outside), os.path.join(tree, "dir-out"))
    os.symlink(os.path.join(tree, "c.onnx"), os.path.join(tree, "a", "link-in.onnx"))
    os.symlink(tree, os.path.join(tree, "a", "loop"))  # back up: walked once
    rc, so, se = run("convert", "--passes", "none", tree, "-O", os.path.join(tmp, "out"))
    want = [os.path.join(tree, r) for r in ["a/link-in.onnx", "a/model.onnx", "a/z/deep.ONNX", "b/model.onnx",
                                             "c.onnx"]]
    check("tree:exit0", rc == 0, se)
    check("tree:sorted-recursive", converted(so) == want, so)
    check("tree:link-out-noted", f"{os.path.join(tree, 'link-out.onnx')}: note: symbolic link out of" in se
          and f"{os.path.join(tree, 'dir-out')}: note: symbolic link out of" in se, se)
    check("tree:lfs-skipped", f"{os.path.join(tree, 'lfs.onnx')}: note: Git LFS pointer, not a model: skipped"
          in se, se)
    rc, so, se = run("convert", "--passes", "none", "--strict-lfs", tree, "-O", os.path.join(tmp, "out2"))
    check("tree:strict-lfs", rc == 2 and f"{os.path.join(tree, 'lfs.onnx')}: Git LFS pointer" in se, se)
    # The output folder inside the tree is not walked again.
    rc, so, se = run("convert", "--passes", "none", tree, "-O", os.path.join(tree, "a", "out"))
    rc, so, se = run("convert", "--passes", "none", tree, "-O", os.path.join(tree, "a", "out"))
    check("tree:output-folder-not-walked", rc == 0 and converted(so) == want, so)


def test_from(tmp):
    a = write_model(os.path.join(tmp, "m", "a.onnx"))
    b = write_model(os.path.join(tmp, "m", "b.onnx"))
    sub = os.path.join(tmp, "m", "sub")
    c = write_model(os.path.join(sub, "c.onnx"))
    lst = os.path.join(tmp, "list.txt")
    with open(lst, "w") as f:
        f.write(f"# models\n{b}\r\n\n{sub}\n{a}\n{b}\n")
    rc, so, se = run("convert", "--passes", "none", "--from", lst, "-O", os.path.join(tmp, "out"))
    check("from:file", rc == 0 and converted(so) == [b, c, a], so + se)
    rc, so, se = run("convert", "--passes", "none", "--from", "-", "-O", os.path.join(tmp, "out"),
                     stdin=f"{a}\n{c}\n")
    check("from:stdin", rc == 0 and converted(so) == [a, c], so + se)
    rc, so, se = run("convert", "--passes", "none", a, "--from", "-", "-O", os.path.join(tmp, "out"), stdin="")
    check("from:with-args", rc == 0 and converted(so) == [a], so + se)
    rc, so, se = run("convert", "--from", os.path.join(tmp, "missing.txt"), "-O", os.path.join(tmp, "out"))
    check("from:missing", rc == 2 and "--from: " in se and "missing.txt" in se, se)
    rc, so, se = run("convert", "--from", "-", "-O", os.path.join(tmp, "out"), stdin="")
    check("from:empty", rc == 2 and "no input model" in se, se)
    empty = os.path.join(tmp, "empty")
    os.mkdir(empty)
    rc, so, se = run("convert", empty, "-O", os.path.join(tmp, "x"))
    check("tree:empty-folder", rc == 2 and "no input model" in se, se)


# ---------------------------------------------------------------- mirrored outputs

def outputs(out):
    return sorted(os.path.relpath(os.path.join(d, f), out) for d, _, fs in os.walk(out) for f in fs)


def test_mirror(tmp):
    t1, t2 = os.path.join(tmp, "t1"), os.path.join(tmp, "t2")
    for t in (t1, t2):
        for rel in ["x/model.onnx", "y/model.onnx"]:
            write_model(os.path.join(t, rel), k=len(t) + len(rel))
    out = os.path.join(tmp, "out1")
    rc, so, se = run("convert", t1, "-O", out)
    check("mirror:one-folder", rc == 0 and outputs(out) == ["x/model.onnx", "y/model.onnx"], str(outputs(out)) + se)
    out = os.path.join(tmp, "out2")
    rc, so, se = run("convert", t1, t2, "-O", out)
    check("mirror:two-folders", rc == 0 and outputs(out) == [f"{t}/{r}/model.onnx" for t in ("t1", "t2")
                                                               for r in "xy"], str(outputs(out)) + se)
    out = os.path.join(tmp, "out3")
    rc, so, se = run("convert", os.path.join(t1, "x", "model.onnx"), os.path.join(t2, "y", "model.onnx"), "-O", out)
    check("mirror:files-common-parent", rc == 0 and outputs(out) == ["t1/x/model.onnx", "t2/y/model.onnx"],
          str(outputs(out)) + se)
    out = os.path.join(tmp, "out4")
    rc, so, se = run("convert", os.path.join(t1, "x", "model.onnx"), "-O", out)
    check("mirror:one-file-basename", rc == 0 and outputs(out) == ["model.onnx"], str(outputs(out)) + se)
    # The outputs are the inputs' own models, each at its place.
    out = os.path.join(tmp, "out5")
    rc, so, se = run("convert", "--passes", "none", t1, t2, "-O", out)
    same = all(open(os.path.join(out, r), "rb").read() == open(os.path.join(tmp, r), "rb").read()
               for r in outputs(out))
    check("mirror:each-its-own", rc == 0 and len(outputs(out)) == 4 and same, se)
    # External data lands beside its model.
    ext = os.path.join(tmp, "ext")
    os.makedirs(os.path.join(ext, "deep", "er"))
    w = np.arange(4096, dtype=np.float32).reshape(64, 64)
    m = make_model([helper.make_node("Add", ["x", "w"], ["y"], name="add")], [vi("x", (64, 64))],
                   [vi("y", (64, 64))], [numpy_helper.from_array(w, "w")])
    import onnx
    onnx.save_model(m, os.path.join(ext, "deep", "er", "m.onnx"), save_as_external_data=True,
                    location="w.bin", size_threshold=0)
    write_model(os.path.join(ext, "top.onnx"))
    out = os.path.join(tmp, "out6")
    rc, so, se = run("convert", "--passes", "none", ext, "-O", out)
    check("mirror:data-beside", rc == 0 and outputs(out) == ["deep/er/m.onnx", "deep/er/m.onnx.data", "top.onnx"],
          str(outputs(out)) + se)


# ---------------------------------------------------------------- --jobs

def files_of(out):
    return {r: open(os.path.join(out, r), "rb").read() for r in outputs(out)}


def test_jobs(tmp):
    tree = os.path.join(tmp, "tree")
    for i in range(12):
        write_model(os.path.join(tree, f"m{i:02d}", "model.onnx"), k=i * 100.0 + 0.5)
    with open(os.path.join(tree, "m05", "model.onnx"), "wb") as f:
        f.write(b"broken")
    runs = {}
    for j in ("1", "2", "5"):
        out = os.path.join(tmp, "out" + j)
        rc, so, se = run("convert", tree, "-O", out, "--jobs", j)
        runs[j] = (rc, so.replace(out, "OUT"), se.replace(out, "OUT"), files_of(out))
    check("jobs:exit2", all(r[0] == 2 for r in runs.values()), str([r[0] for r in runs.values()]))
    check("jobs:outputs-identical", runs["1"][3] == runs["2"][3] == runs["5"][3] and len(runs["1"][3]) == 11,
          str(len(runs["1"][3])))
    check("jobs:stdout-identical", runs["1"][1] == runs["2"][1] == runs["5"][1], runs["2"][1])
    check("jobs:stderr-identical", runs["1"][2] == runs["2"][2] == runs["5"][2], runs["2"][2])
    check("jobs:stdout-in-order", converted(runs["2"][1]) == [os.path.join(tree, f"m{i:02d}", "model.onnx")
                                                              for i in range(12) if i != 5], runs["2"][1])
    rc, so, se = run("convert", tree, "-O", os.path.join(tmp, "x"), "--jobs", "-1")
    check("jobs:negative", rc == 2 and "--jobs" in se, se)
    # A usage error every model would meet stops the run before any model starts, whatever the jobs:
    # said once, nothing written.
    for j in ("1", "3"):
        rc, so, se = run("convert", "--passes", "bogus", tree, "-O", os.path.join(tmp, "bogus"), "-j", j)
        check(f"jobs:{j}:usage-stops", rc == 2 and se.count("unknown pass 'bogus'") == 1 and not so
              and not outputs(os.path.join(tmp, "bogus")), (rc, so[:300], se[:300]))


def cmdline(pid):
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read()
    except OSError:
        return b""


def test_jobs_signal(tmp):
    """SIGTERM to convert reaches the models it is converting: nothing goes on, no temporary stays."""
    tree = os.path.join(tmp, "tree")
    big = np.random.default_rng(0).standard_normal((512, 512)).astype(np.float32)
    for i in range(16):
        path = os.path.join(tree, f"m{i:02d}", "model.onnx")
        os.makedirs(os.path.dirname(path))
        m = make_model([helper.make_node("MatMul", ["x", "w"], ["h"], name="mm"),
                        helper.make_node("Add", ["h", "w"], ["y"], name="add")],
                       [vi("x", (512, 512))], [vi("y", (512, 512))], [numpy_helper.from_array(big, "w")])
        with open(path, "wb") as f:
            f.write(m.SerializeToString())
    out = os.path.join(tmp, "out-signalled")
    p = subprocess.Popen([HG, "convert", tree, "-O", out, "-j", "2", "--calib-random", "8"],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(0.5)
    p.send_signal(signal.SIGTERM)
    rc = p.wait()
    # the children get the signal too; on a loaded machine they may take a moment to go
    deadline = time.time() + 10
    while True:
        left = [pid for pid in os.listdir("/proc") if pid.isdigit() and out.encode() in cmdline(pid)]
        if not left or time.time() > deadline:
            break
        time.sleep(0.1)
    check("signal:terminated", rc == -signal.SIGTERM, str(rc))
    check("signal:children-gone", not left, str(left))
    tmps = [f for _, _, fs in os.walk(out) for f in fs if ".halfguard-tmp." in f] if os.path.exists(out) else []
    check("signal:no-temporaries", not tmps, str(tmps))


# ---------------------------------------------------------------- --results

SCHEMA = json.load(open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "convert_results_schema.json")))
jsonschema.Draft7Validator.check_schema(SCHEMA)
VALIDATOR = jsonschema.Draft7Validator(SCHEMA)
VARYING = ("seconds", "peak_bytes")  # the only fields --jobs may change


def read_results(path_or_text, text=False):
    data = path_or_text if text else open(path_or_text).read()
    return [json.loads(line) for line in data.splitlines()]


def schema_errors(lines):
    return [f"{i}: {e.message}" for i, obj in enumerate(lines) for e in VALIDATOR.iter_errors(obj)]


def steady(lines):
    return [{k: v for k, v in o.items() if k not in VARYING} for o in lines]


def test_results(tmp):
    tree = os.path.join(tmp, "tree")
    write_model(os.path.join(tree, "a", "add.onnx"))
    hgtest.save_model(os.path.join(tree, "b", "exp.onnx"), [helper.make_node("Exp", ["x"], ["y"], name="exp")],
                      [vi("x")], [vi("y")])
    hgtest.save_model(os.path.join(tree, "c", "int.onnx"), [helper.make_node("Neg", ["x"], ["j"], name="neg")],
                      [vi("x", elem=TensorProto.INT64)], [vi("j", elem=TensorProto.INT64)])
    os.makedirs(os.path.join(tree, "d"))
    with open(os.path.join(tree, "d", "broken.onnx"), "wb") as f:
        f.write(b"\x0a\xff\xff garbage")
    with open(os.path.join(tree, "e.onnx"), "wb") as f:
        f.write(LFS)
    got = {}
    for j in ("1", "2"):
        res = os.path.join(tmp, f"r{j}.jsonl")
        out = os.path.join(tmp, "out")
        rc, so, se = run("convert", tree, "-O", out, "-r", "x=0:100", "--results", res, "-j", j)
        got[j] = read_results(res)
        check(f"results:{j}:exit2", rc == 2, se)
    lines = got["1"]
    check("results:schema", not schema_errors(lines + got["2"]), str(schema_errors(lines + got["2"])))
    check("results:order", [o["file"] for o in lines] == [os.path.join(tree, r) for r in
                                                           ["a/add.onnx", "b/exp.onnx", "c/int.onnx", "d/broken.onnx",
                                                            "e.onnx"]], str(lines))
    check("results:status", [o["status"] for o in lines] == ["converted", "unchanged", "unchanged", "error",
                                                             "skipped"], str([o["status"] for o in lines]))
    a, e, i, bad, lfs = lines
    check("results:output", a["output"] == os.path.join(tmp, "out", "a", "add.onnx") and bad["output"] is None
          and lfs["output"] is None, str(lines))
    check("results:figures", a["fp16_weight_bytes_share"] == 1 and a["islands"] == 0 and a["casts"] == 0 and
          a["hazards"] == 0 and a["weight_bytes"] == 16 and a["message"] is None, str(a))
    check("results:hazard", e["hazards"] == 1 and e["islands"] == 1 and e["fp16_macs_share"] is not None
          and e["fp16_macs_share"] < 1, str(e))
    check("results:error-message", "not an ONNX model" in bad["message"] and bad["islands"] is None, str(bad))
    check("results:lfs-message", "Git LFS pointer" in lfs["message"], str(lfs))
    check("results:measured", all(o["seconds"] >= 0 and o["peak_bytes"] > 1 << 20 for o in lines), str(lines))
    check("results:jobs-identical", steady(got["1"]) == steady(got["2"]), str(got["2"]))
    # - is standard output: the JSON lines alone, the summary lines go to standard error.
    rc, so, se = run("convert", tree, "-O", os.path.join(tmp, "out"), "-r", "x=0:100", "--results", "-")
    lines = read_results(so, text=True)
    check("results:stdout", len(lines) == 5 and not schema_errors(lines) and " -> " in se, so)
    rc, so, se = run("convert", os.path.join(tree, "a", "add.onnx"), "-o", "-", "--results", "-")
    check("results:stdout-taken", rc == 2 and "may use stdout" in se, se)
    # With -o too.
    res = os.path.join(tmp, "one.jsonl")
    rc, so, se = run("convert", os.path.join(tree, "a", "add.onnx"), "-o", os.path.join(tmp, "one.onnx"),
                     "--results", res)
    lines = read_results(res)
    check("results:one", rc == 0 and len(lines) == 1 and lines[0]["output"] == os.path.join(tmp, "one.onnx"),
          str(lines) + se)


# ---------------------------------------------------------------- --shard and the job-array examples

EXAMPLES = os.path.join(hgtest.ROOT, "examples", "bulk")


def make_zoo(root, n=10):
    """n models in folders of their own, and one broken file: n + 1 paths in all."""
    for i in range(n):
        write_model(os.path.join(root, f"m{i:02d}", "model.onnx"), k=float(i))
    with open(os.path.join(root, "m03", "broken.onnx"), "wb") as f:
        f.write(b"broken")
    return sorted(os.path.join(d, f) for d, _, fs in os.walk(root) for f in fs)


def covered(result_files):
    """Every file the results name, with how often."""
    seen = {}
    for path in result_files:
        for o in read_results(path):
            seen[o["file"]] = seen.get(o["file"], 0) + 1
    return seen


def test_shard(tmp):
    zoo = os.path.join(tmp, "zoo")
    every = make_zoo(zoo)
    files = []
    for i in (1, 2, 3):
        res = os.path.join(tmp, f"r{i}.jsonl")
        rc, so, se = run("convert", zoo, "-O", os.path.join(tmp, "out"), "--shard", f"{i}/3", "--results", res)
        files.append(res)
        lines = read_results(res)
        check(f"shard:{i}:k-mod-3", [o["file"] for o in lines] == every[i - 1::3], str(lines))
    seen = covered(files)
    check("shard:exactly-once", sorted(seen) == every and set(seen.values()) == {1}, str(seen))
    check("shard:outputs", len(outputs(os.path.join(tmp, "out"))) == len(every) - 1, str(outputs(tmp)))
    rc, so, se = run("convert", zoo, "-O", os.path.join(tmp, "o"), "--shard", "12/12", "--results", "-")
    check("shard:empty-share", rc == 0 and so == "", so + se)
    for bad in ("0/3", "4/3", "1", "a/b", "1/0", "1/2/3", "-1/3"):
        rc, so, se = run("convert", zoo, "-O", os.path.join(tmp, "o"), "--shard", bad)
        check(f"shard:bad:{bad}", rc == 2 and "--shard takes I/N" in se, se)


def env_with_halfguard(**kw):
    return dict(os.environ, PATH=os.path.dirname(os.path.abspath(HG)) + os.pathsep + os.environ["PATH"],
                **{k: str(v) for k, v in kw.items()})


def test_examples_in_readme(tmp):
    readme = open(os.path.join(hgtest.ROOT, "README.md")).read()
    for name in sorted(os.listdir(EXAMPLES)):
        body = open(os.path.join(EXAMPLES, name)).read()
        check(f"examples:{name}:in-readme", body in readme, name)


def test_slurm(tmp):
    """The Slurm array script, run as the array's tasks would run it."""
    every = [os.path.relpath(p, tmp) for p in make_zoo(os.path.join(tmp, "models"))]
    script = os.path.join(EXAMPLES, "convert-zoo.slurm")
    body = open(script).read()
    tasks = int(body.split("--array=0-")[1].split()[0]) + 1
    for k in range(tasks):
        p = subprocess.run(["bash", script], cwd=tmp, capture_output=True, text=True,
                           env=env_with_halfguard(SLURM_ARRAY_TASK_ID=k, SLURM_ARRAY_TASK_COUNT=tasks,
                                                  SLURM_CPUS_PER_TASK=2))
        check(f"slurm:{k}:ran", p.returncode in (0, 2), p.stderr)
    seen = covered(os.path.join(tmp, "results", f"{k}.jsonl") for k in range(tasks))
    check("slurm:exactly-once", sorted(seen) == every and set(seen.values()) == {1}, str(seen))
    check("slurm:outputs", len(outputs(os.path.join(tmp, "models-fp16"))) == len(every) - 1)


def test_kubernetes(tmp):
    """The Indexed Job's command, run as each of its pods would, /models and /models-fp16 moved here."""
    every = [p.replace(tmp, "") for p in make_zoo(os.path.join(tmp, "models"))]
    job = yaml.safe_load(open(os.path.join(EXAMPLES, "convert-zoo-job.yaml")))
    spec = job["spec"]
    n = spec["completions"]
    container = spec["template"]["spec"]["containers"][0]
    command = container["args"][0]
    check("k8s:indexed", spec["completionMode"] == "Indexed" and f'/{n}"' in command, command)
    os.mkdir(os.path.join(tmp, "models-fp16"))
    for k in range(n):
        p = subprocess.run(container["command"] + [command.replace("/models", tmp + "/models")],
                           capture_output=True, text=True, env=env_with_halfguard(JOB_COMPLETION_INDEX=k))
        check(f"k8s:{k}:ran", p.returncode in (0, 2), p.stderr)
    seen = covered(os.path.join(tmp, "models-fp16", f"results-{k}.jsonl") for k in range(n))
    seen = {f.replace(tmp, ""): c for f, c in seen.items()}
    check("k8s:exactly-once", sorted(seen) == every and set(seen.values()) == {1}, str(seen))


def test_github_matrix(tmp):
    """The workflow's convert step, run once for each value of the matrix."""
    every = [os.path.relpath(p, tmp) for p in make_zoo(os.path.join(tmp, "models"))]
    wf = yaml.safe_load(open(os.path.join(EXAMPLES, "convert-zoo.github.yml")))
    job = wf["jobs"]["convert"]
    shards = job["strategy"]["matrix"]["shard"]
    step = [s for s in job["steps"] if "halfguard convert" in s.get("run", "")][0]
    check("github:matrix-matches", f"/{len(shards)} " in step["run"] and shards == list(range(1, len(shards) + 1)),
          step["run"])
    for k in shards:
        cmd = step["run"].replace("${{ matrix.shard }}", str(k))
        p = subprocess.run(["bash", "-e", "-c", cmd], cwd=tmp, capture_output=True, text=True,
                           env=env_with_halfguard())
        check(f"github:{k}:ran", p.returncode in (0, 2), p.stderr)
    seen = covered(os.path.join(tmp, f"results-{k}.jsonl") for k in shards)
    check("github:exactly-once", sorted(seen) == every and set(seen.values()) == {1}, str(seen))


# ---------------------------------------------------------------- external data of converted models

def test_external_converted(tmp):
    """An input with external data, partly converted: the FP16 copies go to the output's data file
    with the FP32 tensors still read, and the FP32 originals nothing reads are not copied along."""
    rng = np.random.default_rng(1)
    w1 = rng.standard_normal((64, 64)).astype(np.float32)
    w2 = rng.standard_normal((64, 64)).astype(np.float32)
    m = make_model([helper.make_node("Add", ["x", "w1"], ["h"], name="add1"),
                    helper.make_node("Add", ["h", "w2"], ["y"], name="add2")],
                   [vi("x", (64, 64))], [vi("y", (64, 64))],
                   [numpy_helper.from_array(w1, "w1"), numpy_helper.from_array(w2, "w2")])
    src = os.path.join(tmp, "in", "m.onnx")
    os.makedirs(os.path.dirname(src))
    onnx.save_model(m, src, save_as_external_data=True, all_tensors_to_one_file=True, location="weights.bin",
                    size_threshold=0)
    out = os.path.join(tmp, "out", "m.onnx")
    rc, so, se = run("convert", src, "-O", os.path.dirname(out), "-r", "x=0:1", "--block-node", "^add2$")
    conv = onnx.load(out, load_external_data=False)
    inits = {t.name: t for t in conv.graph.initializer}
    where = {n: (t.data_type, t.data_location) for n, t in inits.items()}
    check("ext:exit0", rc == 0, se)
    check("ext:fp16-copy-made", sorted(t.data_type for t in inits.values()) == [TensorProto.FLOAT,
                                                                                 TensorProto.FLOAT16], str(where))
    check("ext:all-outside", all(t.data_location == TensorProto.EXTERNAL for t in inits.values()), str(where))
    check("ext:model-small", os.path.getsize(out) < 2048, str(os.path.getsize(out)))
    data = os.path.getsize(out + ".data")
    check("ext:no-dead-fp32", data <= w1.nbytes // 2 + w2.nbytes + 64, f"{data} bytes")
    # It computes what the input computes (within FP16's rounding).
    rc, so, se = run("verify", src, out, "--random", "2", "-r", "x=0:1")
    check("ext:verifies", rc == 0, so + se)
    # --passes none keeps the data file byte for byte.
    rc, so, se = run("convert", "--passes", "none", src, "-o", os.path.join(tmp, "same.onnx"))
    check("ext:passes-none-data-identical", rc == 0 and open(os.path.join(tmp, "same.onnx.data"), "rb").read() ==
          open(os.path.join(tmp, "in", "weights.bin"), "rb").read(), se)


# ---------------------------------------------------------------- --skip-existing, failures, progress

def options_of(path):
    m = onnx.load(path)
    return {p.key: p.value for p in m.metadata_props}.get("halfguard.convert.options")


def statuses(res):
    return [o["status"] for o in read_results(res)]


def test_skip_existing(tmp):
    zoo = os.path.join(tmp, "zoo")
    for i in range(4):
        write_model(os.path.join(zoo, f"m{i}", "model.onnx"), k=float(i))
    hgtest.save_model(os.path.join(zoo, "m4", "model.onnx"), [helper.make_node("Neg", ["x"], ["j"], name="neg")],
                      [vi("x", elem=TensorProto.INT64)], [vi("j", elem=TensorProto.INT64)])
    out, res = os.path.join(tmp, "out"), os.path.join(tmp, "r.jsonl")
    outs = [os.path.join(out, f"m{i}", "model.onnx") for i in range(5)]

    def conv(*extra):
        return run("convert", zoo, "-O", out, "--results", res, *extra)
    rc, so, se = conv("--skip-existing")
    check("skip:first-run", rc == 0 and statuses(res) == ["converted"] * 4 + ["unchanged"], str(statuses(res)) + se)
    hashes = {options_of(o) for o in outs}
    check("skip:hash-stored", len(hashes) == 1 and None not in hashes, str(hashes))
    mtimes = [os.stat(o).st_mtime_ns for o in outs]
    rc, so, se = conv("--skip-existing", "--jobs", "1")
    check("skip:second-run-skips", rc == 0 and statuses(res) == ["skipped"] * 5, str(statuses(res)))
    check("skip:message", all("up to date" in o["message"] for o in read_results(res)), str(read_results(res)))
    check("skip:outputs-untouched", [os.stat(o).st_mtime_ns for o in outs] == mtimes)
    # An input newer than its output is converted again; the others are not.
    t = time.time() + 5
    os.utime(os.path.join(zoo, "m2", "model.onnx"), (t, t))
    rc, so, se = conv("--skip-existing", "--jobs", "2")
    check("skip:newer-input", statuses(res) == ["skipped", "skipped", "converted", "skipped", "skipped"],
          str(statuses(res)))
    # Other options: every model again.
    rc, so, se = conv("--skip-existing", "--margin", "3")
    check("skip:other-options", statuses(res) == ["converted"] * 4 + ["unchanged"], str(statuses(res)))
    rc, so, se = conv("--skip-existing")
    check("skip:options-back", statuses(res) == ["converted"] * 4 + ["unchanged"], str(statuses(res)))
    # Without --skip-existing nothing is skipped and no hash is written; such an output is not
    # taken as up to date.
    rc, so, se = conv()
    check("skip:off", statuses(res) == ["converted"] * 4 + ["unchanged"] and options_of(outs[0]) is None,
          str(statuses(res)))
    rc, so, se = conv("--skip-existing")
    check("skip:no-hash-converts", statuses(res) == ["converted"] * 4 + ["unchanged"], str(statuses(res)))


def test_failures(tmp):
    zoo = os.path.join(tmp, "zoo")
    for i in range(6):
        write_model(os.path.join(zoo, f"m{i}", "model.onnx"), k=float(i))
    bad = [os.path.join(zoo, "m1", "model.onnx"), os.path.join(zoo, "m4", "model.onnx")]
    for b in bad:
        with open(b, "wb") as f:
            f.write(b"\x0a\xff\xff garbage")
    for j in ("1", "2"):
        res = os.path.join(tmp, f"r{j}.jsonl")
        rc, so, se = run("convert", zoo, "-O", os.path.join(tmp, "out" + j), "--results", res, "-j", j)
        lines = [line for line in se.splitlines() if "not an ONNX model" in line]
        check(f"failures:{j}:exit2", rc == 2, se)
        check(f"failures:{j}:one-line-each", lines == [f"{b}: not an ONNX model: the protobuf is truncated or malformed"
                                                       for b in bad], se)
        check(f"failures:{j}:others-go-on", statuses(res) == ["converted", "error", "converted", "converted",
                                                              "error", "converted"], str(statuses(res)))
        check(f"failures:{j}:no-progress-off-tty", "\r" not in se, repr(se[:200]))


def test_crash(tmp):
    """A worker killed in the middle of a model: that model is an error, the others go on."""
    zoo = os.path.join(tmp, "zoo")
    for i in range(8):
        write_model(os.path.join(zoo, f"m{i}", "model.onnx"), k=float(i))
    res = os.path.join(tmp, "r.jsonl")
    p = subprocess.run([HG, "convert", zoo, "-O", os.path.join(tmp, "out"), "-j", "2", "--results", res],
                       capture_output=True, text=True,
                       env=dict(os.environ, HALFGUARD_TEST_CRASH=os.path.join("m3", "model.onnx")))
    lines = read_results(res)
    m3 = os.path.join(zoo, "m3", "model.onnx")
    check("crash:exit2", p.returncode == 2, p.stderr)
    check("crash:others-go-on", [o["status"] for o in lines] == ["converted"] * 3 + ["error"] + ["converted"] * 4,
          str([o["status"] for o in lines]))
    check("crash:message", lines[3]["message"] == "its conversion crashed: signal 9 (Killed)", str(lines[3]))
    check("crash:stderr", f"about to be killed\n{m3}: its conversion crashed: signal 9 (Killed)\n" in p.stderr,
          p.stderr)
    check("crash:outputs", len(outputs(os.path.join(tmp, "out"))) == 7, str(outputs(os.path.join(tmp, "out"))))


def test_progress_tty(tmp):
    """On a terminal, stderr shows done/total, the model and the time left; the lines stay whole."""
    zoo = os.path.join(tmp, "zoo")
    for i in range(5):
        write_model(os.path.join(zoo, f"m{i}", "model.onnx"), k=float(i))
    with open(os.path.join(zoo, "m2", "model.onnx"), "wb") as f:
        f.write(b"broken")
    # Shown from the start (HALFGUARD_TEST_PROGRESS_AFTER=0: this work takes less than the second it
    # waits for otherwise), without colour (tests/test_output.py checks that).
    for j, after in (("1", "0"), ("2", "0"), ("2", None)):
        master, slave = pty.openpty()
        env = dict(os.environ, NO_COLOR="1")
        env.pop("HALFGUARD_TEST_PROGRESS_AFTER", None)
        if after is not None:
            env["HALFGUARD_TEST_PROGRESS_AFTER"] = after
        p = subprocess.Popen([HG, "convert", zoo, "-O", os.path.join(tmp, "out"), "-j", j],
                             stdout=subprocess.PIPE, stderr=slave, stdin=subprocess.DEVNULL, env=env)
        os.close(slave)
        chunks = []
        while True:
            try:
                b = os.read(master, 65536)
            except OSError:
                break
            if not b:
                break
            chunks.append(b)
        so, _ = p.communicate()
        os.close(master)
        tty = b"".join(chunks).decode(errors="replace")
        plain = hgtest.run([HG, "convert", zoo, "-O", os.path.join(tmp, "out"), "-j", j])[2]
        if after is None:  # quick work: no progress line at all
            check(f"progress:{j}:none-under-a-second", "\r" not in tty.replace("\r\n", "\n") and
                  tty.replace("\r\n", "\n") == plain, repr(tty))
            continue
        check(f"progress:{j}:shown", re.search(r"\r\[\d/5, about \d+ s left\] \S+model.onnx\x1b\[K", tty), repr(tty))
        # Without the progress lines (each cleared before anything is printed), the terminal got
        # what a pipe gets.
        rest = re.sub(r"\r\[\d+/5[^\]]*\] [^\r]*\x1b\[K\r\x1b\[K", "", tty).replace("\r\n", "\n")
        check(f"progress:{j}:lines-whole", rest == plain, repr(tty) + "\n" + repr(plain))
        check(f"progress:{j}:stdout-clean", p.returncode == 2 and b"\r" not in so and so.count(b" -> ") == 4,
              repr(so))


TESTS = [test_tree, test_from, test_mirror, test_jobs, test_jobs_signal, test_results, test_shard,
         test_examples_in_readme, test_slurm, test_kubernetes, test_github_matrix, test_skip_existing, test_failures,
         test_crash, test_progress_tty, test_external_converted]

if __name__ == "__main__":
    hgtest.temp_folders(check, "hg-bulk-", TESTS, catch=True)
    sys.exit(check.finish())
