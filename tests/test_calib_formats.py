#!/usr/bin/python3
"""The calibration data formats users have (issue 13), for check --calib, convert --calib,
calibrate --data and verify --data alike:

- a folder of input_K.pb, a folder of NAME.npy, a folder of such folders (one sample each);
- numpy's .npz, from np.savez (stored) and np.savez_compressed (deflated), arrays keyed by input
  name, with or without a leading sample axis; an int64 array for an int32 input;
- Polygraphy's --save-inputs JSON, built by hand as Polygraphy writes it (a list of {name: {"array":
  base64 of np.save's bytes, "polygraphy_class": "ndarray"}}).

Each must give the statistics the same arrays give as a folder (what calibrate writes, and what
check then decides with), and verify must count its samples. A malformed file (truncated, a CRC that
does not match, a member that is no .npy, JSON that is no list of arrays, an array for no input,
sample axes that disagree) is an error that names the file: exit 2, and nothing written.

Usage: test_calib_formats.py HALFGUARD
"""
import base64
import io
import json
import os
import sys

import numpy as np
from onnx import TensorProto, helper, numpy_helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hgtest  # noqa: E402
from hgtest import save_model, show, vi  # noqa: E402

HG = sys.argv[1]
run = hgtest.tool(HG)
check = hgtest.Checks()



def model(path):
    """y = x * 1000 + emb[ids] summed: a float input and an int32 id into a 10-row table."""
    nodes = [helper.make_node("Mul", ["x", "k"], ["s"], name="scale"),
             helper.make_node("Gather", ["emb", "ids"], ["e"], name="embed", axis=0),
             helper.make_node("ReduceSum", ["e"], ["es"], name="esum", keepdims=0, axes=[1]),
             helper.make_node("Add", ["s", "es"], ["y"], name="add")]
    inits = [numpy_helper.from_array(np.array(1000.0, np.float32), "k"),
             numpy_helper.from_array(np.arange(20, dtype=np.float32).reshape(10, 2), "emb")]
    return save_model(path, nodes, [vi("x", (2,)), vi("ids", (2,), TensorProto.INT32)], [vi("y", (2,))], inits,
                      opset=12)


# Three samples: x and ids per sample.
XS = [np.array([1.0, -2.0], np.float32), np.array([3.0, 0.5], np.float32), np.array([-50.0, 7.0], np.float32)]
IDS = [np.array([0, 9], np.int32), np.array([3, 3], np.int32), np.array([5, 1], np.int32)]


def poly_array(a):
    buf = io.BytesIO()
    np.save(buf, a, allow_pickle=False)
    return {"array": base64.b64encode(buf.getvalue()).decode(), "polygraphy_class": "ndarray"}


def write(path, data):
    with open(path, "w" if isinstance(data, str) else "wb") as f:
        f.write(data)
    return path


def stats(path):
    with open(path) as f:
        t = json.load(f)["tensors"]
    return {k: (v["min"], v["max"], v["samples"]) for k, v in t.items()}


def test_formats(tmp):
    m = model(os.path.join(tmp, "m.onnx"))
    # The reference: a folder of folders of input_K.pb.
    sets = os.path.join(tmp, "sets")
    for j, (x, ids) in enumerate(zip(XS, IDS)):
        hgtest.write_inputs(os.path.join(sets, str(j)), [("x", x), ("ids", ids)])
    npy = hgtest.write_inputs(os.path.join(tmp, "npy1"), [("x", XS[1]), ("ids", IDS[1])], "npy")
    np.savez(os.path.join(tmp, "stored.npz"), x=np.stack(XS), ids=np.stack(IDS))
    np.savez_compressed(os.path.join(tmp, "deflated.npz"), x=np.stack(XS), ids=np.stack(IDS).astype(np.int64))
    np.savez(os.path.join(tmp, "one.npz"), x=XS[1], ids=IDS[1])
    # ZIP64 records throughout (what numpy writes for arrays of 4 GiB and more): zipfile's limit lowered.
    import zipfile
    limit = zipfile.ZIP64_LIMIT
    zipfile.ZIP64_LIMIT = 16
    try:
        np.savez_compressed(os.path.join(tmp, "zip64.npz"), x=np.stack(XS), ids=np.stack(IDS))
    finally:
        zipfile.ZIP64_LIMIT = limit
    z64 = open(os.path.join(tmp, "zip64.npz"), "rb").read()
    check("zip64:has-zip64-records", b"PK\x06\x06" in z64 and b"PK\x06\x07" in z64, len(z64))
    # Shared across samples: ids without a sample axis, x with one.
    np.savez(os.path.join(tmp, "shared.npz"), x=np.stack(XS), ids=IDS[0])
    poly = write(os.path.join(tmp, "inputs.json"), json.dumps(
        [{"x": poly_array(x), "ids": poly_array(ids)} for x, ids in zip(XS, IDS)], indent=4))

    ref_out = os.path.join(tmp, "ref.json")
    rc, so, se = run("calibrate", m, "--data", sets, "-o", ref_out)
    if not check("folders:calibrate", rc == 0, show(rc, so, se)):
        return
    ref = stats(ref_out)
    check("folders:three-samples", ref["y"][2] == 3 and ref["x"] == (-50.0, 7.0, 3), ref)
    for name, path, want in [("stored-npz", os.path.join(tmp, "stored.npz"), ref),
                             ("deflated-npz", os.path.join(tmp, "deflated.npz"), ref),
                             ("zip64-npz", os.path.join(tmp, "zip64.npz"), ref),
                             ("polygraphy", poly, ref)]:
        out = os.path.join(tmp, name + ".json")
        rc, so, se = run("calibrate", m, "--data", path, "-o", out)
        check(f"{name}:same-statistics", rc == 0 and stats(out) == want, show(rc, so, se) + str(stats(out) if rc == 0 else ""))
        rc, vo, ve = run("verify", m, m, "--data", path, "--format", "json")
        check(f"{name}:verify-samples", rc == 0 and json.loads(vo)["samples"] == 3, show(rc, vo, ve))
    # One sample, no sample axis: the same as the NAME.npy folder of sample 1.
    a, b = os.path.join(tmp, "one.json"), os.path.join(tmp, "npy1.json")
    rc1, _, se1 = run("calibrate", m, "--data", os.path.join(tmp, "one.npz"), "-o", a)
    rc2, _, se2 = run("calibrate", m, "--data", npy, "-o", b)
    check("one-npz:same-as-npy-folder", rc1 == 0 and rc2 == 0 and stats(a) == stats(b) and stats(a)["x"][2] == 1,
          se1 + se2)
    rc, so, se = run("calibrate", m, "--data", os.path.join(tmp, "shared.npz"), "-o", a)
    check("shared-npz:three-samples", rc == 0 and stats(a)["x"] == (-50.0, 7.0, 3) and stats(a)["ids"][:2] == (0, 9),
          show(rc, so, se))
    # check and convert decide with it: x * 1000 reaches 5e4, 1e5 with the margin, an overflow that
    # rescale cures (the gain takes 2^-1), which convert then keeps FP16 on the calibration's word.
    for path in (os.path.join(tmp, "deflated.npz"), poly, sets):
        rc, so, se = run("check", m, "--no-config", "--calib", path, "--format", "json")
        doc = json.loads(so) if rc in (0, 1) else {}
        hs = [h for h in doc.get("models", [{}])[0].get("hazards", []) if h["kind"] == "overflow"]
        check(f"check:{os.path.basename(path)}", rc == 0 and len(hs) == 1 and hs[0]["source"] == "calibration"
              and hs[0]["node"] == "scale" and hs[0]["observed"] == {"lo": -50000.0, "hi": 7000.0}
              and hs[0].get("fixed_by") == "rescale", show(rc, so, se))
        out = os.path.join(tmp, "conv.onnx")
        rc, so, se = run("convert", m, "-o", out, "--calib", path, "--report", out + ".json", "-v")
        rep = json.load(open(out + ".json")) if rc == 0 else {}
        dec = {d["node"]: d for d in rep.get("decisions", [])}
        check(f"convert:{os.path.basename(path)}", rc == 0 and dec.get("scale", {}).get("precision") == "fp16"
              and dec["scale"]["source"] == "calibration" and "weights x 2^-1 in 'scale'" in so
              and "synthetic data" not in so + se, show(rc, so, se))


def test_malformed(tmp):
    m = model(os.path.join(tmp, "m.onnx"))
    good = os.path.join(tmp, "good.npz")
    np.savez(good, x=np.stack(XS), ids=np.stack(IDS))
    raw = open(good, "rb").read()
    corrupt = bytearray(raw)
    at = raw.index(b"\x93NUMPY") + 130  # the first array's data, after its 128-byte header
    corrupt[at] ^= 0xFF
    buf = io.BytesIO()
    import zipfile
    with zipfile.ZipFile(buf, "w") as z:
        z.writestr("x.txt", "not an array")
    cases = {
        "truncated.npz": raw[:-40],
        "corrupt.npz": bytes(corrupt),
        "not-npy.npz": buf.getvalue(),
        "garbage.npz": b"PK\x03\x04 this is no zip",
        "object.json": json.dumps({"lst": [], "polygraphy_class": "RunResults"}),
        "not-array.json": json.dumps([{"x": [1.0, 2.0]}]),
        "bad-npy.json": json.dumps([{"x": {"array": base64.b64encode(b"\x93NUMPYxx").decode(),
                                           "polygraphy_class": "ndarray"}}]),
        "empty.json": "[]",
        "text.json": "[{",
    }
    np.savez(os.path.join(tmp, "extra.npz"), x=np.stack(XS), ids=np.stack(IDS), z=np.ones(2, np.float32))
    np.savez(os.path.join(tmp, "axes.npz"), x=np.stack(XS), ids=np.stack(IDS[:2]))
    np.savez(os.path.join(tmp, "shape.npz"), x=np.ones((3, 5), np.float32), ids=np.stack(IDS))
    paths = [write(os.path.join(tmp, n), d) for n, d in cases.items()]
    paths += [os.path.join(tmp, n) for n in ("extra.npz", "axes.npz", "shape.npz")]
    words = {"truncated.npz": "zip", "corrupt.npz": "CRC", "not-npy.npz": "not a .npy", "garbage.npz": "zip",
             "object.json": "--save-inputs", "not-array.json": "not a Polygraphy-encoded array",
             "bad-npy.json": ".npy", "empty.json": "no samples", "text.json": "",
             "extra.npz": "array 'z' is no input", "axes.npz": "samples", "shape.npz": "shape"}
    for p in paths:
        name = os.path.basename(p)
        out = os.path.join(tmp, "out.onnx")
        stats_out = os.path.join(tmp, "stats.json")
        if os.path.exists(out):
            os.unlink(out)
        for cmd in (["convert", m, "-o", out, "--calib", p], ["check", m, "--calib", p, "--no-config"],
                    ["calibrate", m, "--data", p, "-o", stats_out], ["verify", m, m, "--data", p]):
            rc, so, se = run(*cmd)
            check(f"malformed:{name}:{cmd[0]}", rc == 2 and name in se and words[name] in se
                  and not os.path.exists(out) and not os.path.exists(stats_out), show(rc, so, se))


def main():
    hgtest.temp_folders(check, "hg-calib-formats-", [test_formats, test_malformed])
    sys.exit(check.finish())


main()
