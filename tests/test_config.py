#!/usr/bin/python3
"""One configuration for check, convert, calibrate and verify (issue 13): each reads .halfguard.ini as
check does ([ranges GLOB], [check] threshold and margin, --config FILE, --no-config), plus a
[model GLOB] group's calib (calibration data, relative to the file's folder) and dim-max; options on
the command line win; an unknown group or key, or a bad value, is an error naming the file and the
line, for every command.

The acceptance: a pathology model beside a .halfguard.ini with a [ranges] group converts to the same
bytes as the same model with the same -r flags and --no-config.

Usage: test_config.py HALFGUARD
"""
import json
import os
import re
import shutil
import sys

import numpy as np
from onnx import TensorProto, helper, numpy_helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hgtest  # noqa: E402
from hgtest import save_model, show, vi  # noqa: E402

HG = sys.argv[1]
run = hgtest.tool(HG)
check = hgtest.Checks()



read = hgtest.read_bytes


def write(path, text):
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)
    return path


def scale_model(path, k=1000.0):
    return save_model(path, [helper.make_node("Mul", ["x", "k"], ["y"], name="scale")],
                      [vi("x")], [vi("y")], [numpy_helper.from_array(np.array(k, np.float32), "k")])


def seq_model(path):
    """x: float[batch, seq] with symbolic dims, y = Relu(x)."""
    return save_model(path, [helper.make_node("Relu", ["x"], ["y"], name="relu")],
                      [vi("x", ("batch", "seq"))], [vi("y", ("batch", "seq"))])


def test_same_bytes(tmp):
    """The acceptance: [ranges] beside the model = the same -r with --no-config, byte for byte."""
    cases = hgtest.pathology_cases(os.path.join(tmp, "cases"))
    same = 0
    for c in cases:
        src = os.path.join(tmp, "cases", c["model"])
        d = os.path.join(tmp, "beside", c["name"])
        os.makedirs(d)
        model = shutil.copy(src, os.path.join(d, os.path.basename(src)))
        write(os.path.join(d, ".halfguard.ini"), f"[ranges {os.path.basename(src)}]\n"
              + "".join(f"{r.split('=', 1)[0]} = {r.split('=', 1)[1]}\n" for r in c["input_ranges"]))
        a, b = os.path.join(d, "with-config.onnx"), os.path.join(d, "with-flags.onnx")
        rc1, so1, se1 = run("convert", model, "-o", a, *c.get("options", []))
        rc2, so2, se2 = run("convert", model, "-o", b, "--no-config", *hgtest.range_args(c["input_ranges"]),
                            *c.get("options", []))
        ok = rc1 == 0 and rc2 == 0 and read(a) == read(b) and "synthetic" not in se1 + so1
        same += ok
        check(f"same-bytes:{c['name']}", ok, show(rc1, so1, se1) + show(rc2, so2, se2))
    print(f"config and flags give the same bytes on {same} of {len(cases)} pathology cases")


def test_commands_read_it(tmp):
    m = scale_model(os.path.join(tmp, "proj", "models", "scale.onnx"))
    ini = os.path.join(tmp, "proj", ".halfguard.ini")
    out = os.path.join(tmp, "out.onnx")

    def convert(*args):
        rc, so, se = run("convert", m, "-o", out, "--report", out + ".json", *args)
        rep = json.load(open(out + ".json")) if rc == 0 else {}
        dec = {d["node"]: d for d in rep.get("decisions", [])}
        return rc, so + se, dec.get("scale", {})

    # [ranges]: x in [0, 100] makes 1e5, FP32; the file's range is convert's.
    write(ini, "[ranges models/*.onnx]\nx = 0:100\n")
    rc, text, d = convert()
    check("convert:ranges", rc == 0 and d.get("precision") == "fp32" and d.get("source") == "static"
          and "synthetic data" not in text, (text, d))
    # --no-config: no range, synthetic by default; --config FILE instead of the walk.
    rc, text, d = convert("--no-config")
    check("convert:no-config", rc == 0 and "assumed uniform in [-64, 64]" in text and d.get("source") == "synthetic",
          (text, d))
    other = write(os.path.join(tmp, "elsewhere.ini"), "[ranges *]\nx = 0:1\n")
    rc, text, d = convert("--config", other)
    check("convert:config-file", rc == 0 and d.get("precision") == "fp16" and d.get("source") == "static", (text, d))
    rc, so, se = run("convert", m, "-o", out, "--config", other, "--no-config")
    check("convert:config-and-no-config", rc == 2 and "not both" in se, show(rc, so, se))
    # The command line wins: -r over [ranges], --threshold over [check].
    rc, text, d = convert("-r", "x=0:1")
    check("convert:cli-range-wins", rc == 0 and d.get("precision") == "fp16", (text, d))
    write(ini, "[check]\nthreshold = 200000\n\n[ranges models/*.onnx]\nx = 0:100\n")
    rc, text, d = convert()
    check("convert:config-threshold", rc == 0 and d.get("precision") == "fp16", (text, d))
    rc, text, d = convert("--threshold", "65504")
    check("convert:cli-threshold-wins", rc == 0 and d.get("precision") == "fp32", (text, d))

    # [model GLOB] calib: the data decides (x = 3 -> 3000, FP16), relative to the file's folder; an .npz too.
    hgtest.write_inputs(os.path.join(tmp, "proj", "calib", "0"), {"x": np.full((2, 2), 3.0, np.float32)})
    np.savez(os.path.join(tmp, "proj", "big.npz"), x=np.full((1, 2, 2), 90.0, np.float32))
    write(ini, "[model models/scale.onnx]\ncalib = calib\n")
    rc, text, d = convert()
    check("convert:config-calib", rc == 0 and d.get("source") == "calibration" and d.get("precision") == "fp16"
          and "decided on the calibration data" in text and "synthetic data" not in text, (text, d))
    write(ini, "[model models/*]\ncalib = big.npz\n")
    rc, text, d = convert()
    check("convert:config-calib-npz", rc == 0 and d.get("source") == "calibration" and d.get("precision") == "fp32",
          (text, d))
    rc, text, d = convert("--calib", os.path.join(tmp, "proj", "calib"))
    check("convert:cli-calib-wins", rc == 0 and d.get("precision") == "fp16", (text, d))
    rc, so, se = run("check", m, "--format", "json")
    doc = json.loads(so) if rc in (0, 1) else {}
    hs = [h for h in doc.get("models", [{}])[0].get("hazards", []) if h["node"] == "scale"]
    check("check:config-calib", rc == 1 and hs and hs[0]["source"] == "calibration"
          and hs[0]["observed"] == {"lo": 90000.0, "hi": 90000.0}, show(rc, so, se))
    # verify takes the configuration's calib when given no --data; --data wins.
    rc, so, se = run("verify", m, m, "--format", "json")
    check("verify:config-calib", rc == 0 and json.loads(so)["samples"] == 1, show(rc, so, se))
    write(ini, "[model models/*]\ncalib = missing.npz\n")
    rc, so, se = run("convert", m, "-o", out)
    check("convert:config-calib-missing", rc == 2 and "missing.npz" in se and ".halfguard.ini" in se, show(rc, so, se))

    # calibrate and verify draw synthetic inputs in the file's ranges.
    write(ini, "[ranges models/*.onnx]\nx = 5:6\n")
    sets = os.path.join(tmp, "sets")
    rc, so, se = run("calibrate", m, "--random", "2", "-O", sets)
    xs = [hgtest.read_pb(os.path.join(sets, k, "input_0.pb")) for k in ("0", "1")] if rc == 0 else []
    check("calibrate:config-ranges", rc == 0 and xs and all(5 <= x.min() and x.max() <= 6 for x in xs), show(rc, so, se))
    rc, so, se = run("verify", m, m, "--random", "2", "--format", "json")
    check("verify:random", rc == 0 and json.loads(so)["samples"] == 2 and "warning" not in se, show(rc, so, se))


def test_dim_max(tmp):
    m = seq_model(os.path.join(tmp, "seq.onnx"))
    ini = os.path.join(tmp, ".halfguard.ini")
    sets = os.path.join(tmp, "sets")

    def drawn_shape(*args):
        shutil.rmtree(sets, ignore_errors=True)
        rc, so, se = run("calibrate", m, "--random", "1", "-O", sets, *args)
        return hgtest.read_pb(os.path.join(sets, "0", "input_0.pb")).shape if rc == 0 else (rc, se)

    check("dim-max:default-1", drawn_shape("--no-config") == (1, 1), drawn_shape("--no-config"))
    write(ini, "[model *]\ndim-max = seq=7\n")
    check("dim-max:config", drawn_shape() == (1, 7), drawn_shape())
    write(ini, "[model *]\ndim-max = 3;seq=7\n")
    check("dim-max:config-star", drawn_shape() == (3, 7), drawn_shape())
    check("dim-max:cli-wins", drawn_shape("--dim-max", "seq=2") == (1, 2), drawn_shape("--dim-max", "seq=2"))
    check("dim-max:shapes-pin-wins", drawn_shape("--shapes", "x:4x5") == (4, 5), drawn_shape("--shapes", "x:4x5"))
    rc, so, se = run("calibrate", m, "--random", "1", "-O", sets, "--dim-max", "seq=0")
    check("dim-max:bad", rc == 2 and "dim-max" in se, show(rc, so, se))


def test_errors(tmp):
    """Unknown groups and keys, and bad values: FILE:LINE: [GROUP]: ..., exit 2, for every command."""
    m = scale_model(os.path.join(tmp, "scale.onnx"))
    ini = os.path.join(tmp, ".halfguard.ini")
    out = os.path.join(tmp, "out.onnx")
    data = hgtest.write_inputs(os.path.join(tmp, "data"), {"x": np.ones((2, 2), np.float32)})
    bad = [
        ("unknown-group", "[check]\nmargin = 2\n\n[rangez *]\nx = 0:1\n", 4, "unknown group"),
        ("unknown-check-key", "# comment\n[check]\nthreshold = 65504\ntreshold = 1\n", 4, "unknown key 'treshold'"),
        ("unknown-model-key", "[model *]\ncalib = data\nseed = 3\n", 3, "unknown key 'seed'"),
        ("unknown-suppress-key", "[suppress s]\nnode = x\nreason = r\nwhy = w\n", 4, "unknown key 'why'"),
        ("bad-range", "[ranges *]\n\nx = 1:0\n", 3, "bad input range"),
        ("bad-dim-max", "[model *]\ndim-max = seq=-1\n", 2, "dim-max"),
        ("bad-threshold", "[check]\nthreshold = -3\n", 2, "positive number"),
        ("no-reason", "[ranges *]\nx = 0:1\n[suppress s]\nnode = x\n", 3, "reason"),
    ]
    cmds = {"check": ["check", m], "convert": ["convert", m, "-o", out],
            "calibrate": ["calibrate", m, "--data", data, "-o", os.path.join(tmp, "st.json")],
            "verify": ["verify", m, m, "--data", data]}
    for label, text, line, word in bad:
        write(ini, text)
        for name, cmd in cmds.items():
            if os.path.exists(out):
                os.unlink(out)
            rc, so, se = run(*cmd)
            ok = rc == 2 and re.search(re.escape(ini) + f":{line}: \\[", se) and word in se and not os.path.exists(out)
            check(f"errors:{label}:{name}", ok, show(rc, so, se))
    os.unlink(ini)
    rc, so, se = run("verify", m, m)
    check("errors:verify-no-data", rc == 2 and "--data" in se and "--random" in se, show(rc, so, se))


def main():
    hgtest.temp_folders(check, "hg-config-", [test_same_bytes, test_commands_read_it, test_dim_max, test_errors])
    sys.exit(check.finish())


main()
