#!/usr/bin/python3
"""The command line: exit codes, one-line `FILE: message` errors, no output on failure, help text.

Usage: test_cli.py HALFGUARD. Bad models are made here with Debian's python3-onnx (onnx.helper does
not validate, so it writes whatever defect we ask for).
"""
import json
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hgtest  # noqa: E402
from hgtest import make_model as model, read_pb, vi, write_pb  # noqa: E402

run = hgtest.tool(sys.argv[1])
check = hgtest.Checks()


def good_model():
    w = numpy_helper.from_array(np.arange(4, dtype=np.float32).reshape(2, 2), "w")
    return model([helper.make_node("Add", ["x", "w"], ["y"], name="add"),
                  helper.make_node("Relu", ["y"], ["z"], name="relu")],
                 [vi("x")], [vi("z")], [w])


def bad_models():
    """name -> (bytes, phrase the one-line error must contain)."""
    good = good_model().SerializeToString()
    out = {}
    out["truncated"] = (good[: len(good) // 2], "not an ONNX model")
    out["garbage"] = (b"\x0a\xff\xff\xff\xff\x0f garbage", "not an ONNX model")
    out["lfs"] = (b"version https://git-lfs.github.com/spec/v1\noid sha256:0\nsize 9\n",
                  "Git LFS pointer, not a model: run git lfs pull")
    m = good_model()
    m.graph.node[1].input[0] = "nowhere"
    out["undefined"] = (m.SerializeToString(), "node 'relu' (Relu): input 'nowhere' is used but never defined")
    m = good_model()
    m.graph.node[0].input[0] = "z"
    out["cycle"] = (m.SerializeToString(), "cycle")
    m = good_model()
    m.graph.node[1].output[0] = "y"
    m.graph.output[0].name = "y"
    out["duplicate"] = (m.SerializeToString(), "output 'y' is defined twice")
    m = good_model()
    m.graph.initializer[0].dims[:] = [2**62, 8]
    out["dims_overflow"] = (m.SerializeToString(), "product overflows")
    m = good_model()
    m.graph.initializer[0].dims[:] = [2, 3]
    out["size_mismatch"] = (m.SerializeToString(), "raw_data holds 16 bytes but float [2,3] needs 24")
    return out


def test_bad_inputs(tmp):
    for name, (data, phrase) in bad_models().items():
        path = os.path.join(tmp, name + ".onnx")
        with open(path, "wb") as f:
            f.write(data)
        out = os.path.join(tmp, name + ".out.onnx")
        rc, so, se = run("convert", path, "-o", out)
        lines = se.strip().split("\n")
        check(f"bad:{name}:exit2", rc == 2, f"rc={rc} stderr={se!r}")
        check(f"bad:{name}:one-line", len(lines) == 1 and lines[0].startswith(path + ": "), repr(se))
        check(f"bad:{name}:message", phrase in se, f"want {phrase!r} in {se!r}")
        check(f"bad:{name}:no-output", not os.path.exists(out))
        check(f"bad:{name}:no-temp", not any(e.startswith("." + name) for e in os.listdir(tmp)),
              str(os.listdir(tmp)))
        rc, so, se = run("dump", path)
        check(f"bad:{name}:dump-exit2", rc == 2 and se.startswith(path + ": "), repr(se))
    missing = os.path.join(tmp, "missing.onnx")
    rc, _, se = run("convert", missing, "-o", missing + ".out")
    check("missing:exit2", rc == 2 and se.startswith(missing + ": ") and "No such file" in se, repr(se))
    rc, _, se = run("convert", tmp, "-o", os.path.join(tmp, "dir.out"))
    check("directory:exit2", rc == 2 and "is a directory" in se, repr(se))


def test_convert(tmp):
    path = os.path.join(tmp, "good.onnx")
    data = good_model().SerializeToString()
    with open(path, "wb") as f:
        f.write(data)
    # -o may name the input itself; --passes none reproduces it.
    rc, so, se = run("convert", "--passes", "none", path, "-o", path)
    check("convert:in-place", rc == 0 and open(path, "rb").read() == data, se)
    check("convert:in-place-no-temp", sorted(os.listdir(tmp)) == ["good.onnx"], str(os.listdir(tmp)))
    # Several inputs to a folder: the good one is written, the bad one reported, exit 2.
    bad = os.path.join(tmp, "bad.onnx")
    with open(bad, "wb") as f:
        f.write(b"garbage")
    outdir = os.path.join(tmp, "out")
    rc, so, se = run("convert", "--passes", "none", path, bad, "-O", outdir)
    check("convert:multi-exit2", rc == 2, f"rc={rc}")
    check("convert:multi-good-written", os.path.exists(os.path.join(outdir, "good.onnx")))
    check("convert:multi-bad-absent", not os.path.exists(os.path.join(outdir, "bad.onnx")))
    check("convert:multi-message", se.startswith(bad + ": "), repr(se))
    os.remove(bad)
    # Usage errors.
    rc, _, se = run("convert", path)
    check("convert:no-output-arg", rc == 2 and "-o FILE or -O DIR" in se, repr(se))
    rc, _, se = run("convert", "--passes", "bogus", path, "-o", os.path.join(tmp, "x.onnx"))
    check("convert:unknown-pass", rc == 2 and "unknown pass 'bogus'" in se, repr(se))
    check("convert:unknown-pass-no-output", not os.path.exists(os.path.join(tmp, "x.onnx")))
    # --dump-after names a pass too, with the default list as with --passes
    rc, so, se = run("convert", "--dump-after", "bogus", path, "-o", os.path.join(tmp, "x.onnx"))
    check("convert:unknown-dump-after", rc == 2 and "--dump-after: unknown pass 'bogus'" in se and not so
          and not os.path.exists(os.path.join(tmp, "x.onnx")), repr((rc, so, se)))
    rc, _, se = run("convert", "--frobnicate", path, "-o", os.path.join(tmp, "x.onnx"))
    check("convert:unknown-option", rc == 2 and "frobnicate" in se, repr(se))
    # The default pipeline removes a dead node and says so; the result is a valid ONNX model.
    m = good_model()
    m.graph.node.append(helper.make_node("Neg", ["y"], ["unused"], name="dead"))
    dead = os.path.join(tmp, "dead.onnx")
    onnx.save(m, dead)
    out = os.path.join(tmp, "dead.out.onnx")
    rc, so, se = run("convert", dead, "-o", out, "-v")
    check("convert:cleanup-exit0", rc == 0, se)
    check("convert:cleanup-verbose", "\n    removed 1 dead node\n" in so, repr(so))
    saved = onnx.load(out)
    check("convert:cleanup-result", [n.name for n in saved.graph.node] == ["add", "relu"],
          str([n.name for n in saved.graph.node]))
    err = hgtest.checker_error(saved)
    check("convert:checker", err is None, err)
    rc, so, se = run("convert", "--passes", "cleanup", "--dump-after", "cleanup", dead, "-o", out)
    check("convert:dump-after", rc == 0 and "Relu" in so and "Neg" not in so, repr(so[:200]))

    # A model that is already type-invalid (FLOAT + FLOAT16 at one Add) still converts: convert's type
    # check only refuses what the passes broke.
    half = helper.make_tensor_value_info("h", TensorProto.FLOAT16, [2, 2])
    invalid = os.path.join(tmp, "invalid.onnx")
    onnx.save(model([helper.make_node("Add", ["x", "h"], ["y"], name="mixed")], [vi("x"), half], [vi("y")],
                    opset=13), invalid)
    out = os.path.join(tmp, "invalid.out.onnx")
    rc, so, se = run("convert", invalid, "-o", out)
    check("convert:input-already-invalid", rc == 0 and os.path.exists(out), repr(se))
    test_convert_opaque(tmp)


def opaque20_model(path):
    """MatMul, an op without a row in the op table (Shrink; issue 11 met the dynamo exporter's
    opset-20 Gelu before it had one), MatMul, with no declared type for the op's output."""
    w = numpy_helper.from_array(np.eye(8, dtype=np.float32), "W")
    hgtest.save_model(path, [helper.make_node("MatMul", ["x", "W"], ["h"], name="mm0"),
                             helper.make_node("Shrink", ["h"], ["g"], name="shrink"),
                             helper.make_node("MatMul", ["g", "W"], ["y"], name="mm1")],
                      [vi("x", (2, 8))], [vi("y", (2, 8))], [w], opset=20, ir_version=9)


def test_convert_opaque(tmp):
    """Issue 11: an unknown op's input went FP32 with no Cast after it. Its signature now tells shape
    inference that its output is float, so its FP32 island is closed by a Cast (or its reader joins
    it) and the model converts."""
    path, out = os.path.join(tmp, "opaque20.onnx"), os.path.join(tmp, "opaque20.out.onnx")
    opaque20_model(path)
    rc, so, se = run("convert", path, "-o", out)
    check("convert:opaque20", rc == 0 and os.path.exists(out), repr(se))
    if rc == 0:
        saved = onnx.load(out)
        producer = {o: n for n in saved.graph.node for o in n.output}
        op = [n for n in saved.graph.node if n.op_type == "Shrink"][0]
        check("convert:opaque20-cast-in", producer[op.input[0]].op_type == "Cast",
              str([(n.op_type, list(n.input)) for n in saved.graph.node]))


def test_run_and_calibrate(tmp):
    import json
    path = os.path.join(tmp, "good.onnx")
    onnx.save(good_model(), path)
    x = np.array([[-3.0, 1.5], [2.0, -0.25]], np.float32)
    w = np.arange(4, dtype=np.float32).reshape(2, 2)
    want = np.maximum(x + w, 0)
    data = os.path.join(tmp, "data")
    os.mkdir(data)
    write_pb(os.path.join(data, "input_0.pb"), x, "x")
    out = os.path.join(tmp, "out")
    rc, so, se = run("run", path, "--data", data, "-o", out)
    check("run:exit0", rc == 0, se)
    check("run:output", os.path.exists(os.path.join(out, "output_0.pb")) and
          np.array_equal(read_pb(os.path.join(out, "output_0.pb")), want))
    # NAME.npy inputs and .npy outputs; --mark-all writes the intermediate y with an index.
    npy = os.path.join(tmp, "npy")
    os.mkdir(npy)
    np.save(os.path.join(npy, "x.npy"), x)
    out2 = os.path.join(tmp, "out2")
    rc, so, se = run("run", path, "--data", npy, "-o", out2, "--format", "npy", "--mark-all")
    check("run:npy-exit0", rc == 0, se)
    check("run:npy-output", os.path.exists(os.path.join(out2, "output_0.npy")) and
          np.array_equal(np.load(os.path.join(out2, "output_0.npy")), want))
    index = json.load(open(os.path.join(out2, "index.json"))) if os.path.exists(os.path.join(out2, "index.json")) else {}
    check("run:mark-all-index", set(index) == {"x", "y", "z"} and index["y"]["shape"] == [2, 2], str(index))
    check("run:mark-all-tensor", "y" in index and
          np.array_equal(np.load(os.path.join(out2, index["y"]["file"])), x + w))
    # Bad inputs name the input; exit 2.
    for label, arr, phrase in [("dtype", x.astype(np.float64), "input 'x' is double, the model declares float"),
                               ("shape", x.reshape(4, 1), "input 'x' has shape [4,1], the model declares [2,2]")]:
        d = os.path.join(tmp, "bad_" + label)
        os.mkdir(d)
        write_pb(os.path.join(d, "input_0.pb"), arr, "x")
        rc, so, se = run("run", path, "--data", d, "-o", os.path.join(tmp, "o_" + label))
        check(f"run:bad-{label}", rc == 2 and phrase in se and se.startswith(path + ": "), repr(se))
    rc, so, se = run("run", path, "--data", data, "-o", os.path.join(tmp, "o_none"), "--outputs", "")
    check("run:empty-outputs", rc == 2 and "--outputs takes" in se, repr(se))
    empty = os.path.join(tmp, "empty")
    os.mkdir(empty)
    rc, so, se = run("run", path, "--data", empty, "-o", os.path.join(tmp, "o_empty"))
    check("run:missing-input", rc == 2 and "input 'x' is missing" in se, repr(se))
    # An op without a kernel is named.
    m = model([helper.make_node("FancyOp", ["x"], ["z"], name="fancy", domain="com.example")],
              [vi("x")], [vi("z")])
    m.opset_import.append(helper.make_opsetid("com.example", 1))
    fancy = os.path.join(tmp, "fancy.onnx")
    onnx.save(m, fancy)
    rc, so, se = run("run", fancy, "--data", data, "-o", os.path.join(tmp, "o_fancy"))
    check("run:no-kernel", rc == 2 and "node 'fancy' (com.example.FancyOp)" in se, repr(se))
    # FP16 storage: 60000 + 60000 overflows to inf in the tensor where it happens.
    h = model([helper.make_node("Add", ["a", "a"], ["s"], name="double"),
               helper.make_node("Mul", ["s", "zero"], ["t"], name="times_zero")],
              [helper.make_tensor_value_info("a", TensorProto.FLOAT16, [2])],
              [helper.make_tensor_value_info("t", TensorProto.FLOAT16, [2])],
              [numpy_helper.from_array(np.zeros(2, np.float16), "zero")])
    fp16 = os.path.join(tmp, "fp16.onnx")
    onnx.save(h, fp16)
    d16 = os.path.join(tmp, "d16")
    os.mkdir(d16)
    write_pb(os.path.join(d16, "input_0.pb"), np.array([60000, 1], np.float16), "a")
    rc, so, se = run("run", fp16, "--data", d16, "-o", os.path.join(tmp, "o16"))
    t = read_pb(os.path.join(tmp, "o16", "output_0.pb")) if rc == 0 else None
    check("run:fp16-overflow", t is not None and t.dtype == np.float16 and np.isnan(t[0]) and t[1] == 0,
          f"{se} {t}")
    # calibrate: two samples; statistics per float tensor.
    data2 = os.path.join(tmp, "data2")
    os.mkdir(data2)
    write_pb(os.path.join(data2, "input_0.pb"), -x, "x")
    stats = os.path.join(tmp, "stats.json")
    rc, so, se = run("calibrate", path, "--data", data, "--data", data2, "-o", stats)
    check("calibrate:exit0", rc == 0, se)
    js = json.load(open(stats)) if rc == 0 else {"tensors": {}}
    y = js["tensors"].get("y", {})
    ys = np.concatenate([(x + w).ravel(), (-x + w).ravel()])
    check("calibrate:samples", js.get("samples") == 2 and y.get("samples") == 2, str(js)[:300])
    check("calibrate:minmax", y.get("min") == float(ys.min()) and y.get("max") == float(ys.max()) and
          y.get("absmax") == float(np.abs(ys).max()), str(y))
    check("calibrate:min-abs-nonzero", y.get("min_abs_nonzero") == float(np.abs(ys[ys != 0]).min()), str(y))
    rc, so, se = run("calibrate", fp16, "--data", d16, "-o", stats)
    js = json.load(open(stats)) if rc == 0 else {"tensors": {}}
    s_ = js["tensors"].get("s", {})
    check("calibrate:inf-counted", s_.get("inf") == 1 and s_.get("max") == 2.0, str(s_))
    check("calibrate:nan-counted", js["tensors"].get("t", {}).get("nan") == 1, str(js["tensors"].get("t")))


def test_convert_symbolic_macs(tmp):
    """Issue 12: with a symbolic dim no node's MACs are known; the summary used to give the FP16
    share of the known ones (0 of 0: "100%"). It now says they are unknown, names the dims, and gives
    the share at the size the minimum cut prices them (128, or --dim-max's); the report has the
    figures, and null for each unknown node's MACs."""
    import json
    w = numpy_helper.from_array(np.eye(8, dtype=np.float32), "W")
    path = hgtest.save_model(os.path.join(tmp, "sym.onnx"),
                             [helper.make_node("MatMul", ["x", "W"], ["h"], name="mm"),
                              helper.make_node("Relu", ["h"], ["y"], name="relu")],
                             [vi("x", ("n", 8))], [vi("y", ("n", 8))], [w])
    out, rep = os.path.join(tmp, "sym.out.onnx"), os.path.join(tmp, "sym.json")
    for extra, size in (([], 128), (["--dim-max", "n=4"], 4)):
        rc, so, se = run("convert", path, "-o", out, "-r", "x=-1:1", "--report", rep, *extra)
        check(f"convert:symbolic-macs-summary-{size}",
              rc == 0 and f"FP16: 100% of MACs at n={size}, " in so and "MACs," not in so, repr(so + se))
        fig = json.load(open(rep))["figures"] if rc == 0 else {}
        # MatMul n x 8 x 8, Relu n x 8
        check(f"convert:symbolic-macs-figures-{size}",
              fig.get("macs_unknown_nodes") == 2 and fig.get("symbolic_dims") == "n" and
              fig.get("macs_priced") == size * 72 and fig.get("macs_priced_fp16") == size * 72 and
              fig.get("macs") == 0, str(fig))
        macs = {d["node"]: d["macs"] for d in json.load(open(rep))["decisions"]} if rc == 0 else {}
        check(f"convert:symbolic-macs-null-{size}", macs == {"mm": None, "relu": None}, str(macs))


def test_threads(tmp):
    """--threads N wherever the interpreter runs: each such command lists it, refuses a negative count,
    and gives the same answer on one thread as on all (convert's and check's calibration included)."""
    m = hgtest.save_model(os.path.join(tmp, "t.onnx"), [helper.make_node("Mul", ["x", "k"], ["y"], name="big")],
                          [vi("x", (2, 3))], [vi("y", (2, 3))], [helper.make_tensor("k", 1, [], [1e3])])
    data = os.path.join(tmp, "tdata")
    os.makedirs(data)
    np.save(os.path.join(data, "x.npy"), np.full((2, 3), 100, np.float32))
    for cmd in ("convert", "check", "run", "calibrate", "verify"):
        rc, so, _ = run(cmd, "--help")
        check(f"threads:{cmd}:help", rc == 0 and "--threads=N" in so, so)
        extra = {"convert": ["-o", os.path.join(tmp, "neg.onnx")], "verify": [m, "--random", "1"],
                 "run": ["-d", data, "-o", tmp], "calibrate": ["-d", data, "-o", os.path.join(tmp, "s.json")]}
        rc, _, se = run(cmd, m, *extra.get(cmd, []), "--threads", "-1")
        check(f"threads:{cmd}:negative", rc == 2 and "--threads" in se, se)
    outs = {}
    for t in ("1", "0"):
        out = os.path.join(tmp, f"t{t}.onnx")
        rc, _, se = run("convert", m, "-o", out, "--calib", data, "--threads", t, "--no-config")
        check(f"threads:convert-{t}", rc == 0, se)
        rc, so, se = run("check", m, "--calib", data, "-t", t, "--no-config", "--format", "json")
        check(f"threads:check-{t}", rc == 1 and "overflow" in so, so + se)
        outs[t] = (hgtest.read_bytes(out) if os.path.exists(out) else None, json.loads(so or "{}").get("models"))
    check("threads:same-answer", outs["1"] == outs["0"] and outs["1"][0], "differs by thread count")


def test_help(_tmp):
    rc, so, _ = run("--help")
    check("help:exit0", rc == 0 and "convert" in so and "dump" in so, so)
    rc, so, _ = run("--version")
    check("version", rc == 0 and so.startswith("halfguard "), so)
    rc, so, _ = run("help", "convert")
    check("help-convert", rc == 0 and "--passes" in so and "--dump-after" in so, so)
    rc, so, _ = run("convert", "--help")
    check("convert--help", rc == 0 and "--output-dir" in so, so)
    rc, so, _ = run("help", "help")
    check("help-help", rc == 0 and "halfguard help [SUBCOMMAND]" in so, so)
    rc, _, se = run("help", "nope")
    check("help-unknown", rc == 2 and "nope" in se, se)
    rc, _, se = run("nope")
    check("unknown-subcommand", rc == 2 and "no subcommand 'nope'" in se, se)
    # the spellings users bring from other tools: a suggestion, and AutoCast's --keep_io_types works
    rc, _, se = run("check", "m.onnx", "--Fail_On=error")
    check("unknown-option-hint", rc == 2 and "Unknown option --Fail_On=error (did you mean --fail-on?)" in se, se)
    rc, _, se = run("check", "m.onnx", "--bogus")
    check("unknown-option-no-hint", rc == 2 and "Unknown option --bogus\n" in se, se)
    rc, _, _ = run()
    check("no-args", rc == 2)


hgtest.temp_folders(check, "hg-cli-", [test_help, test_bad_inputs, test_convert, test_run_and_calibrate,
                                       test_convert_symbolic_macs, test_threads])
sys.exit(check.finish())
