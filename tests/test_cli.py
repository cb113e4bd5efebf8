#!/usr/bin/python3
"""The command line: exit codes, one-line `FILE: message` errors, no output on failure, help text.

Usage: test_cli.py HALFGUARD. Bad models are made here with Debian's python3-onnx (onnx.helper does
not validate, so it writes whatever defect we ask for).
"""
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

HG = sys.argv[1]
results = []


def run(*args):
    p = subprocess.run([HG, *args], capture_output=True, text=True)
    return p.returncode, p.stdout, p.stderr


def check(name, cond, detail=""):
    results.append((name, bool(cond), detail))


def model(nodes, inputs, outputs, inits=(), opset=17):
    g = helper.make_graph(nodes, "g", inputs, outputs, list(inits))
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)], ir_version=8)


def vi(name, shape=(2, 2)):
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, list(shape))


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
    rc, _, se = run("convert", "--frobnicate", path, "-o", os.path.join(tmp, "x.onnx"))
    check("convert:unknown-option", rc == 2 and "frobnicate" in se, repr(se))
    # The default pipeline removes a dead node and says so; the result is a valid ONNX model.
    m = good_model()
    m.graph.node.append(helper.make_node("Neg", ["y"], ["unused"], name="dead"))
    dead = os.path.join(tmp, "dead.onnx")
    onnx.save(m, dead)
    out = os.path.join(tmp, "dead.out.onnx")
    rc, so, se = run("convert", dead, "-o", out)
    check("convert:cleanup-exit0", rc == 0, se)
    check("convert:cleanup-summary", "removed 1 dead node" in so, repr(so))
    saved = onnx.load(out)
    check("convert:cleanup-result", [n.name for n in saved.graph.node] == ["add", "relu"],
          str([n.name for n in saved.graph.node]))
    try:
        onnx.checker.check_model(saved, full_check=True)
        check("convert:checker", True)
    except Exception as e:  # noqa: BLE001
        check("convert:checker", False, str(e))
    rc, so, se = run("convert", "--passes", "cleanup", "--dump-after", "cleanup", dead, "-o", out)
    check("convert:dump-after", rc == 0 and "Relu" in so and "Neg" not in so, repr(so[:200]))


def test_help():
    rc, so, _ = run("--help")
    check("help:exit0", rc == 0 and "convert" in so and "dump" in so, so)
    rc, so, _ = run("--version")
    check("version", rc == 0 and so.startswith("halfguard "), so)
    rc, so, _ = run("help", "convert")
    check("help-convert", rc == 0 and "--passes" in so and "--dump-after" in so, so)
    rc, so, _ = run("convert", "--help")
    check("convert--help", rc == 0 and "--output-dir" in so, so)
    rc, _, se = run("help", "nope")
    check("help-unknown", rc == 2 and "nope" in se, se)
    rc, _, se = run("nope")
    check("unknown-subcommand", rc == 2 and "no subcommand 'nope'" in se, se)
    rc, _, _ = run()
    check("no-args", rc == 2)


def main():
    tmp = tempfile.mkdtemp(prefix="hg-cli-")
    try:
        test_help()
        d = os.path.join(tmp, "bad")
        os.mkdir(d)
        test_bad_inputs(d)
        d = os.path.join(tmp, "convert")
        os.mkdir(d)
        test_convert(d)
    finally:
        shutil.rmtree(tmp)
    failed = [r for r in results if not r[1]]
    for name, ok, detail in results:
        print(f"{'ok  ' if ok else 'FAIL'} {name}" + ("" if ok else f": {detail}"))
    print(f"{len(results) - len(failed)} passed, {len(failed)} failed")
    sys.exit(1 if failed or not results else 0)


main()
