"""The harness every Python test of tests/ shares (and the benchmarks of bench/ where it fits), so that
a test holds its checks and nothing else.

    import hgtest                              # tests/ is on sys.path when a test runs
    check = hgtest.Checks()                    # named checks, printed as the logs are read
    hg = hgtest.tool(sys.argv[1])              # hg("convert", m, "-o", out) -> (rc, stdout, stderr)
    hgtest.save_model(path, [node], [hgtest.vi("x")], [hgtest.vi("y")])
    ...
    sys.exit(check.finish())                   # "N passed, M failed"; 1 on a failure or no check

What is here:
- where things are: the folders meson names in tests/meson.build's test_env (HG_SOURCE_ROOT,
  HG_TESTDATA, HG_CORPUS, HG_ORT_CACHE), with the defaults a test run by hand falls back to;
- `Checks`: the `check(name, cond, detail)` results, their lines and the summary line, and the exit
  status (0 pass, 1 fail; 77, skipped, is the test's own to return);
- `need_corpus` (exit 77 without ../shared/corpus) and `have_corpus`;
- `run` and `tool`: a command's exit status, stdout and stderr; `show` for a failure's message; `read_bytes`;
  `close` for reported numbers;
- models made with onnx.helper: `F32`/`F16`, `vi`, `make_model`, `save_model` (opset 17, IR version 8
  unless told), and what a model says: `opset`, `elem_types`, `checker_error` (onnx.checker's verdict);
- tensor files as halfguard reads and writes them: `write_pb`, `read_tensor`/`read_pb`,
  `write_inputs` (a --data folder: input_K.pb in feed order, or NAME.npy), `read_outputs` and
  `count_outputs` (a run -o folder's output_K.pb);
- the pathology suite: `pathology_cases`, `case_flags` (a case's --calib, -r and options), and
  `range_args` for -r options of any model;
- `temp_folders`: each test function in its own empty folder under one temporary folder.
ONNX Runtime (npm's onnxruntime-node) is in tests/ortlib.py, which builds on this module.
Needs Debian's python3-onnx (1.12) and numpy.
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
# What meson passes (tests/meson.build, test_env); a test run by hand from a checkout gets the same.
ROOT = os.environ.get("HG_SOURCE_ROOT", os.path.dirname(HERE))
TESTDATA = os.environ.get("HG_TESTDATA", "/usr/share/libonnx-testdata/data")
CORPUS = os.environ.get("HG_CORPUS", os.path.join(HERE, "..", "..", "shared", "corpus"))
ORT_CACHE = os.environ.get("HG_ORT_CACHE") or os.path.join(tempfile.gettempdir(), "halfguard-ort")

F32, F16 = TensorProto.FLOAT, TensorProto.FLOAT16


# ---------------------------------------------------------------- checks

class Checks:
    """Named checks: call it as check(name, cond, detail="") -> bool(cond), then finish().

    The names are how a failure is read in the log, so each is printed as "ok   NAME" or
    "FAIL NAME: DETAIL". echo says when: "end" (every check, after the run, in order), "now" (every
    check as it is made), "fail" (failures only, as they are made), "none" (the test prints its own
    lines). limit cuts a printed detail to that many characters."""

    def __init__(self, echo="end", limit=None):
        assert echo in ("end", "now", "fail", "none")
        self.echo, self.limit = echo, limit
        self.results = []  # (name, ok, detail)

    def __call__(self, name, cond, detail=""):
        ok = bool(cond)
        self.results.append((name, ok, detail))
        if self.echo == "now" or (self.echo == "fail" and not ok):
            print(self.line(name, ok, detail))
        return ok

    def line(self, name, ok, detail):
        if ok:
            return f"ok   {name}"
        detail = str(detail)
        return f"FAIL {name}: {detail[:self.limit] if self.limit else detail}"

    @property
    def failed(self):
        return [r for r in self.results if not r[1]]

    def finish(self):
        """Print what echo left for the end and "N passed, M failed"; the exit status: 1 when a check
        failed or none was made, else 0."""
        if self.echo == "end":
            for name, ok, detail in self.results:
                print(self.line(name, ok, detail))
        failed = len(self.failed)
        print(f"{len(self.results) - failed} passed, {failed} failed")
        return 1 if failed or not self.results else 0


def temp_folders(check, prefix, tests, chdir=False, catch=False):
    """Run each test function with an empty folder of its own (named after it) under one temporary
    folder, removed afterwards. chdir: run it in its folder (a relative path a broken build writes
    lands there). catch: an exception fails the check "NAME:ran" instead of ending the run."""
    tmp = tempfile.mkdtemp(prefix=prefix)
    cwd = os.getcwd()
    try:
        for t in tests:
            d = os.path.join(tmp, t.__name__)
            os.mkdir(d)
            if chdir:
                os.chdir(d)
            try:
                t(d)
            except Exception as e:  # noqa: BLE001 -- a failure to report, not to stop at
                if not catch:
                    raise
                check(f"{t.__name__}:ran", False, repr(e))
            finally:
                os.chdir(cwd)
    finally:
        shutil.rmtree(tmp)


# ---------------------------------------------------------------- commands

def run(cmd, cwd=None, env=None, stdin=None, timeout=None, binary=False):
    """Run cmd (a list): (exit status, stdout, stderr) as text, or with stdout as bytes when binary.
    env adds to the environment. A timeout that passes gives the status "timeout"."""
    def text(b):
        return b.decode(errors="replace") if isinstance(b, bytes) else (b or "")
    try:
        p = subprocess.run(cmd, capture_output=True, cwd=cwd, stdin=stdin, timeout=timeout,
                           env=dict(os.environ, **env) if env else None, text=not binary)
    except subprocess.TimeoutExpired as e:
        return "timeout", (e.stdout or b"") if binary else text(e.stdout), text(e.stderr)
    return p.returncode, p.stdout, text(p.stderr)


def tool(exe, *sub):
    """run() for one executable (and subcommand): tool(HG)("verify", a, b) runs HG verify a b."""
    def call(*args, **kw):
        return run([exe, *sub, *args], **kw)
    return call


def need_corpus(what="this test"):
    """Exit 77 (meson's skipped) when ../shared/corpus is absent, as in a user's clone."""
    if not os.path.isdir(CORPUS):
        print(f"SKIP: {what} needs the shared corpus ({CORPUS}), which is absent")
        sys.exit(77)


def have_corpus():
    return os.path.isdir(CORPUS)


def show(rc, so, se):
    """A command's exit status and the heads of its stdout and stderr, for a failure's message."""
    return f"rc={rc}\nstdout: {so[:1500]!r}\nstderr: {se[:1500]!r}"


def read_bytes(path):
    with open(path, "rb") as f:
        return f.read()


def close(a, b, rel):
    """a and b are numbers within rel of the larger magnitude of the two."""
    return a is not None and b is not None and abs(a - b) <= rel * max(abs(a), abs(b))


def range_args(ranges, flag="-r"):
    """['-r', R, ...] for each input range 'NAME=LO:HI'."""
    return [a for r in ranges for a in (flag, r)]


# ---------------------------------------------------------------- models

def vi(name, shape=(2, 2), elem=F32):
    """A value's declaration: a tensor of elem (float by default) and shape."""
    return helper.make_tensor_value_info(name, elem, None if shape is None else list(shape))


def make_model(nodes, inputs, outputs, inits=(), opset=17, ir_version=8, domains=(), value_info=(),
               name="g"):
    """A one-graph model importing the default domain at opset and each of domains (a name, at
    version 1, or a (name, version) pair)."""
    g = helper.make_graph(nodes, name, inputs, outputs, list(inits), value_info=list(value_info))
    ops = [helper.make_opsetid("", opset)] + [
        helper.make_opsetid(*(d if isinstance(d, tuple) else (d, 1))) for d in domains]
    return helper.make_model(g, opset_imports=ops, ir_version=ir_version)


def save_model(path, nodes, inputs, outputs, inits=(), checker=False, **kw):
    """make_model(...) written to path (its folders made); checker: onnx.checker must accept it
    first. Returns path."""
    m = make_model(nodes, inputs, outputs, inits, **kw)
    if checker:
        onnx.checker.check_model(m)
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    onnx.save(m, path)
    return path


def opset(m, default=None):
    """The model's default-domain opset."""
    return next((o.version for o in m.opset_import if o.domain in ("", "ai.onnx")), default)


def elem_types(m):
    """name -> element type of every tensor of the top graph the model declares or infers (graph
    inputs, value_info, outputs, initializers, Constant values)."""
    try:
        m = onnx.shape_inference.infer_shapes(m)
    except Exception:  # noqa: BLE001 (types then come from the declarations alone)
        pass
    g = m.graph
    t = {}
    for v in list(g.input) + list(g.value_info) + list(g.output):
        if v.type.HasField("tensor_type") and v.type.tensor_type.elem_type:
            t[v.name] = v.type.tensor_type.elem_type
    for init in g.initializer:
        t[init.name] = init.data_type
    for n in g.node:
        if n.op_type == "Constant":
            for a in n.attribute:
                if a.name == "value":
                    t[n.output[0]] = a.t.data_type
    return t


def checker_error(m):
    """None when onnx.checker.check_model(full_check=True) accepts m (a model or a path), else its
    message (the exception's name where it has none)."""
    try:
        onnx.checker.check_model(onnx.load(m) if isinstance(m, str) else m, full_check=True)
        return None
    except Exception as e:  # noqa: BLE001
        return str(e) if str(e).strip() else type(e).__name__


# ---------------------------------------------------------------- tensor files

def write_pb(path, array, name):
    """One TensorProto file, as `halfguard run --data` reads input_K.pb."""
    with open(path, "wb") as f:
        f.write(numpy_helper.from_array(array, name).SerializeToString())


def read_tensor(path):
    """The TensorProto of a .pb file."""
    t = TensorProto()
    with open(path, "rb") as f:
        t.ParseFromString(f.read())
    return t


def read_pb(path):
    """A .pb file's tensor as a numpy array."""
    return numpy_helper.to_array(read_tensor(path))


def write_inputs(folder, feeds, layout="pb"):
    """A --data folder (made if need be): feeds, a dict or (name, array) pairs in the model's feed
    order, as input_K.pb, or as NAME.npy with layout "npy". Returns folder."""
    os.makedirs(folder, exist_ok=True)
    for k, (name, a) in enumerate(feeds.items() if isinstance(feeds, dict) else feeds):
        if layout == "pb":
            write_pb(os.path.join(folder, f"input_{k}.pb"), a, name)
        else:
            np.save(os.path.join(folder, name + ".npy"), a)
    return folder


def run_npy(run, model, feed, tmp, tag):
    """`halfguard run` (run = tool(...)) of model on feed (name -> array, written as NAME.npy under
    tmp/TAG.in), one thread: (the outputs as arrays in order, "") or (None, its stderr)."""
    d = write_inputs(os.path.join(tmp, tag + ".in"), feed, "npy")
    o = os.path.join(tmp, tag + ".out")
    os.makedirs(o, exist_ok=True)
    rc, so, se = run("run", model, "--data", d, "-o", o, "--format", "npy", "--threads", "1")
    if rc != 0:
        return None, se
    outs = sorted(f for f in os.listdir(o) if f.startswith("output_"))
    return [np.load(os.path.join(o, f)) for f in outs], ""


def count_outputs(folder, ext="pb"):
    return sum(1 for f in os.listdir(folder) if f.startswith("output_") and f.endswith("." + ext))


def read_outputs(folder, n=None, read=read_pb):
    """The arrays of a folder's output_0.pb, output_1.pb, ... (n of them, or every one there)."""
    n = count_outputs(folder) if n is None else n
    return [read(os.path.join(folder, f"output_{k}.pb")) for k in range(n)]


# ---------------------------------------------------------------- the pathology suite

def pathology_cases(outdir, *names):
    """tests/pathology/make_cases.py run into outdir (only the named cases, when named): the cases of
    its cases.json. Raises RuntimeError with make_cases.py's stderr when it fails."""
    p = subprocess.run([sys.executable, os.path.join(HERE, "pathology", "make_cases.py"), outdir, *names],
                       capture_output=True, text=True)
    if p.returncode:
        raise RuntimeError(f"make_cases.py failed: {p.stderr}")
    with open(os.path.join(outdir, "cases.json")) as f:
        return json.load(f)["cases"]


def case_flags(case, outdir, options=True):
    """convert's flags for a pathology case generated into outdir: --calib with its sample, -r with each
    of its input ranges, and (options) the case's own options."""
    return (["--calib", os.path.join(outdir, case["data"])] + range_args(case["input_ranges"])
            + (case.get("options", []) if options else []))


# One kernel launch in the cost model's units (passes/assign_precision.c's CAST_FIXED).
LAUNCH_COST = 1024.0


def rewrite_pays(rewrite, island):
    """hg_precision_rewrite_pays: is a rewrite costing `rewrite` made against an FP32 island costing
    `island` (both as the passes' notes print them)? Where it is the cheaper, where it adds nothing, and
    where the island costs anything and the rewrite less than that plus one launch."""
    return rewrite <= 0 or rewrite < island or (island > 0 and rewrite < island + LAUNCH_COST)
