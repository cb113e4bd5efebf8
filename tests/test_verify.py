#!/usr/bin/python3
"""`halfguard verify`: exit codes, the first non-finite tensor, feed conversion, and the numbers.

Usage: test_verify.py HALFGUARD. The models are built here with Debian's python3-onnx (1.12): each
FP16 "converted" model is written by hand with onnx.helper, so the test does not depend on convert.
Every reported number is checked against numpy: exactly simulated FP16 arithmetic for elementwise
models, and the models' own outputs (from `halfguard run`) for the rest.
"""
import json
import os
import sys
import tempfile

import numpy as np
import onnx
from onnx import helper, numpy_helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hgtest  # noqa: E402
from hgtest import F16, F32, close, vi  # noqa: E402

run = hgtest.tool(sys.argv[1])
check = hgtest.Checks()


def save(tmp, name, nodes, inputs, outputs, inits=()):
    return hgtest.save_model(os.path.join(tmp, name + ".onnx"), nodes, inputs, outputs, inits, name=name,
                             checker=True)


def data_dir(tmp, name, arrays, layout="pb"):
    """A --data folder: input_K.pb (arrays in feed order) or NAME.npy."""
    return hgtest.write_inputs(os.path.join(tmp, name), arrays, layout)


def verify_json(*args):
    rc, so, se = run("verify", *args, "--format", "json")
    try:
        js = json.loads(so)
    except ValueError:
        js = None
    return rc, js, se


def outputs_by_name(js):
    return {o["name"]: o for o in js["outputs"]} if js else {}


def expect_metrics(orig, conv):
    """rel L2, max abs and counts, as verify defines them, over flattened float64 copies."""
    o = np.concatenate([np.asarray(a, np.float64).ravel() for a in orig])
    c = np.concatenate([np.asarray(a, np.float64).ravel() for a in conv])
    both = np.isfinite(o) & np.isfinite(c)
    d = c[both] - o[both]
    num, den = np.sqrt(np.sum(d * d)), np.sqrt(np.sum(o[both] ** 2))
    rel = num / den if den > 0 else (np.inf if num > 0 else 0.0)
    return {"rel_l2": rel, "max_abs": float(np.max(np.abs(d))) if d.size else 0.0,
            "count": o.size, "compared": int(both.sum()),
            "nonfinite_orig": int((~np.isfinite(o)).sum()), "nonfinite_conv": int((~np.isfinite(c)).sum()),
            "new_nonfinite": int((np.isfinite(o) & ~np.isfinite(c)).sum())}


def check_metrics(name, got, want):
    for k in ("count", "compared", "nonfinite_orig", "nonfinite_conv", "new_nonfinite"):
        check(f"{name}:{k}", got.get(k) == want[k], f"{got.get(k)} != {want[k]}")
    for k in ("rel_l2", "max_abs"):
        w = want[k]
        g = got.get(k)
        ok = g is None if not np.isfinite(w) else close(g, w, 1e-9)
        check(f"{name}:{k}", ok, f"{g} != {w}")


# ---------------------------------------------------------------- the models

def scale_chain(tmp, name, elem, cast_io=False):
    """y = ((x * 300) * 300) / 90000: fine in FP32, the second Mul overflows FP16 for |x| > 0.73.
    elem: the element type of the arithmetic. cast_io: FP32 graph I/O with Casts (keep_io_types)."""
    np_t = np.float16 if elem == F16 else np.float32
    c300 = numpy_helper.from_array(np.array(300, np_t), "c300")
    inv = numpy_helper.from_array(np.array(1 / 90000, np_t), "inv")
    nodes = [helper.make_node("Mul", ["xin", "c300"], ["a"], name="mul1"),
             helper.make_node("Mul", ["a", "c300"], ["b"], name="mul2"),
             helper.make_node("Mul", ["b", "inv"], ["yout"], name="scale")]
    io = F32 if cast_io else elem
    if cast_io and elem == F16:
        nodes = ([helper.make_node("Cast", ["x"], ["xin"], name="cast_in", to=F16)] + nodes +
                 [helper.make_node("Cast", ["yout"], ["y"], name="cast_out", to=F32)])
    else:
        nodes = [helper.make_node("Identity", ["x"], ["xin"], name="id_in")] + nodes + \
                [helper.make_node("Identity", ["yout"], ["y"], name="id_out")]
    return save(tmp, name, nodes, [vi("x", (2, 4), io)], [vi("y", (2, 4), io)], [c300, inv])


def fp16_store(v):
    with np.errstate(over="ignore"):
        return np.asarray(v, np.float32).astype(np.float16).astype(np.float32)


def simulate_chain(x, fp16):
    """What the interpreter computes: FP32 arithmetic, each result stored in the declared type."""
    if not fp16:
        a = x * np.float32(300)
        return (a * np.float32(300)) * np.float32(1 / 90000)
    x = fp16_store(x)
    c300, inv = fp16_store(300), fp16_store(1 / 90000)
    a = fp16_store(x * c300)
    b = fp16_store(a * c300)
    with np.errstate(invalid="ignore", over="ignore"):
        return fp16_store(b * inv)


# ---------------------------------------------------------------- tests

def test_identical(tmp):
    m = scale_chain(tmp, "orig", F32)
    x = np.linspace(-3, 3, 8, dtype=np.float32).reshape(2, 4)
    d = data_dir(tmp, "same", [("x", x)])
    rc, so, se = run("verify", m, m, "--data", d)
    check("identical:exit0", rc == 0, so + se)
    check("identical:text", so.startswith("y: rel L2 0.0e+00, max abs 0.0e+00, non-finite 0 (of 8)\n")
          and "first non-finite: none\n" in so and "verdict: PASS" in so, so)
    rc, js, se = verify_json(m, m, "--data", d)
    o = outputs_by_name(js).get("y", {})
    check("identical:json", rc == 0 and js and js["pass"] is True and js["first_nonfinite"] is None
          and o.get("rel_l2") == 0 and o.get("max_abs") == 0 and o.get("count") == 8
          and js["format"] == "halfguard-verify" and js["samples"] == 1 and js["l2_tol"] == 0.01
          and js["atol"] is None and js["rtol"] is None and o.get("elements_over") is None, js)


def test_overflow(tmp):
    orig = scale_chain(tmp, "chain32", F32)
    fp16_io = scale_chain(tmp, "chain16", F16)
    cast_io = scale_chain(tmp, "chain16_cast", F16, cast_io=True)
    x0 = np.array([[0.001, 0.5, -0.7, 0.25], [0.1, -0.3, 0.6, 0.05]], np.float32)  # all fit FP16
    x1 = np.array([[0.001, 0.5, 1.0, 2.0], [-0.1, -3.0, 0.6, 0.05]], np.float32)  # 3 overflow
    d0 = data_dir(tmp, "ok", [("x", x0)])
    d1 = data_dir(tmp, "hot", [("x", x1)], layout="npy")
    want = expect_metrics([simulate_chain(x0, False), simulate_chain(x1, False)],
                          [simulate_chain(x0, True), simulate_chain(x1, True)])
    check("overflow:numpy-sees-3", want["new_nonfinite"] == 3, want)
    for tag, conv in (("fp16-io", fp16_io), ("cast-io", cast_io)):
        rc, so, se = run("verify", orig, conv, "--data", d0, "--data", d1)
        check(f"overflow-{tag}:exit1", rc == 1, so + se)
        check(f"overflow-{tag}:first", f"first non-finite: 'b' from node 'mul2' (Mul), 3 of 8 values, in {d1}\n"
              in so, so)
        check(f"overflow-{tag}:line", "y: rel L2 " in so and "non-finite 3 (of 16) [FAIL: 3 non-finite" in so
              and "verdict: FAIL (1 of 1 output" in so, so)
        rc, js, se = verify_json(orig, conv, "--data", d0, "--data", d1)
        f = js and js["first_nonfinite"]
        check(f"overflow-{tag}:json-first", rc == 1 and f and f["value"] == "b" and f["node"] == "mul2"
              and f["op"] == "Mul" and f["data_dir"] == d1 and f["nonfinite"] == 3 and f["count"] == 8, js)
        o = outputs_by_name(js).get("y", {})
        check(f"overflow-{tag}:json-dtypes", o.get("dtype_orig") == "float"
              and o.get("dtype_conv") == ("float16" if tag == "fp16-io" else "float"), o)
        check(f"overflow-{tag}:pass-false", js and js["pass"] is False and o.get("pass") is False, js)
        check_metrics(f"overflow-{tag}", o, want)
    # Only the finite folder: the FP16 error is small and within the default rtol.
    rc, js, se = verify_json(orig, fp16_io, "--data", d0)
    o = outputs_by_name(js).get("y", {})
    want0 = expect_metrics([simulate_chain(x0, False)], [simulate_chain(x0, True)])
    check("overflow-none:exit0", rc == 0 and js and js["first_nonfinite"] is None, (rc, js, se))
    check("overflow-none:nonzero-error", 0 < want0["rel_l2"] < 1e-2, want0)
    check_metrics("overflow-none", o, want0)
    # The l2-tol boundary on that same error: just under it fails, just over it passes.
    r = want0["rel_l2"]
    rc, _, se = run("verify", orig, fp16_io, "--data", d0, "--l2-tol", repr(r * 0.99))
    check("l2-tol:over-exit1", rc == 1, se)
    rc, _, se = run("verify", orig, fp16_io, "--data", d0, "--l2-tol", repr(r * 1.01))
    check("l2-tol:under-exit0", rc == 0, se)


def test_input_overflow(tmp):
    """A feed value beyond FP16: the graph input itself is the first non-finite tensor."""
    orig = os.path.join(tmp, "chain32.onnx")
    conv = os.path.join(tmp, "chain16.onnx")
    d = data_dir(tmp, "huge", [("x", np.full((2, 4), 70000, np.float32))])
    rc, so, se = run("verify", orig, conv, "--data", d)
    check("input-overflow:exit1", rc == 1 and "first non-finite: 'x' (a graph input), 8 of 8 values" in so,
          so + se)


def test_rtol(tmp):
    """y = x @ W, and a 'converted' model whose W is off by a known amount."""
    rng = np.random.default_rng(5)
    w = rng.standard_normal((4, 3)).astype(np.float32)
    x = rng.standard_normal((2, 4)).astype(np.float32)

    def mm(name, weights, elem=F32):
        t = np.float16 if elem == F16 else np.float32
        return save(tmp, name, [helper.make_node("MatMul", ["x", "w"], ["y"], name="mm")],
                    [vi("x", (2, 4), elem)], [vi("y", (2, 3), elem)],
                    [numpy_helper.from_array(weights.astype(t), "w")])

    orig = mm("mm", w)
    near = mm("mm_near", w * np.float32(1.001))    # rel L2 1e-3
    far = mm("mm_far", w * np.float32(1.05))       # rel L2 5e-2
    half = mm("mm_half", w, F16)
    d = data_dir(tmp, "mm_data", [("x", x)])
    rc, js, se = verify_json(orig, near, "--data", d)
    r = outputs_by_name(js).get("y", {}).get("rel_l2")
    check("rtol:near-default-exit0", rc == 0 and r is not None and abs(r - 1e-3) < 1e-5, (rc, r, se))
    rc, _, se = run("verify", orig, near, "--data", d, "--l2-tol", "1e-4")
    check("rtol:near-tight-exit1", rc == 1, se)
    rc, so, se = run("verify", orig, far, "--data", d)
    check("rtol:far-exit1", rc == 1 and "[FAIL: over l2-tol 1.0e-02]" in so, so + se)
    rc, _, se = run("verify", orig, far, "--data", d, "--l2-tol", "0.1")
    check("rtol:far-loose-exit0", rc == 0, se)
    # Per element, Polygraphy's convention: |conv - orig| <= atol + rtol * |orig|. The expected count
    # over the tolerance comes from the two models' own outputs (halfguard run), in float64.
    ys = {}
    for tag, m in (("orig", orig), ("near", near)):
        od = os.path.join(tmp, "elem_out_" + tag)
        rc, _, se = run("run", m, "--data", d, "-o", od, "--format", "npy")
        ys[tag] = np.load(os.path.join(od, "output_0.npy")).astype(np.float64) if rc == 0 else None
    if check("elementwise:run-outputs", ys["orig"] is not None and ys["near"] is not None, ys):
        diff, ref = np.abs(ys["near"] - ys["orig"]), np.abs(ys["orig"])
        for atol, rtol in ((float(np.median(diff)), 0.0), (0.0, float(np.median(diff / ref))),
                           (float(diff.max()) * 1.01, 0.0), (float(diff.max()) / 4, 5e-4)):
            want = int(np.sum(diff > atol + rtol * ref))
            rc, js, se = verify_json(orig, near, "--data", d, "--atol", repr(atol), "--rtol", repr(rtol))
            o = outputs_by_name(js).get("y", {}) if js else {}
            tag = f"elementwise:atol={atol:.3g},rtol={rtol:.3g}"
            check(f"{tag}:count", o.get("elements_over") == want and js["atol"] == atol and js["rtol"] == rtol,
                  (want, o, se))
            check(f"{tag}:verdict", rc == (1 if want else 0) and o.get("pass") is (want == 0), (rc, want))
            ratio = float(np.max(diff / (atol + rtol * ref)))
            check(f"{tag}:worst", abs(o.get("worst_ratio", -1) - ratio) <= 1e-6 * ratio, (o, ratio))
        # One tolerance given: the other is Polygraphy's default, 1e-5; the text line says it all.
        rc, so, se = run("verify", orig, near, "--data", d, "--rtol", "1e-4")
        check("elementwise:default-atol", rc == 1 and "6 of 6 elements over atol + rtol*|orig|" in so
              and "[FAIL: elements over atol 1.0e-05 + rtol 1.0e-04]" in so
              and "verdict: FAIL (1 of 1 output non-finite or over l2-tol 1.0e-02, atol 1.0e-05, rtol 1.0e-04)"
              in so, so + se)
        rc, _, se = run("verify", orig, near, "--data", d, "--atol", "-1")
        check("elementwise:negative", rc == 2 and "--atol and --rtol must be numbers >= 0" in se, se)
    # Numbers against the models' own outputs (halfguard run), for a real FP16 MatMul.
    outs = {}
    d16 = data_dir(tmp, "mm_data16", [("x", x.astype(np.float16))])  # what verify feeds the FP16 model
    for tag, m, dd in (("orig", orig, d), ("half", half, d16)):
        od = os.path.join(tmp, "mm_out_" + tag)
        rc, so, se = run("run", m, "--data", dd, "-o", od, "--format", "npy")
        outs[tag] = np.load(os.path.join(od, "output_0.npy")) if rc == 0 else None
    check("rtol:run-outputs", outs["orig"] is not None and outs["half"] is not None
          and outs["half"].dtype == np.float16, outs)
    rc, js, se = verify_json(orig, half, "--data", d)
    check("fp16-matmul:exit0", rc == 0, (rc, js, se))
    if outs["orig"] is not None and outs["half"] is not None:
        want = expect_metrics([outs["orig"]], [outs["half"]])
        check("fp16-matmul:nonzero", want["rel_l2"] > 0, want)
        check_metrics("fp16-matmul", outputs_by_name(js).get("y", {}), want)


def test_nonfinite_in_both(tmp):
    """ORIG overflows too (FP32 inf): not CONVERTED's fault, so not the first non-finite tensor."""
    big = numpy_helper.from_array(np.array(1e38, np.float32), "big")
    one = numpy_helper.from_array(np.array(1, np.float32), "one")
    nodes = [helper.make_node("Mul", ["x", "big"], ["t"], name="m1"),
             helper.make_node("Mul", ["t", "big"], ["u"], name="m2"),
             helper.make_node("Min", ["u", "one"], ["y"], name="clip"),
             helper.make_node("Mul", ["u", "one"], ["z"], name="m3")]
    m = save(tmp, "both_inf", nodes, [vi("x", (4,))], [vi("y", (4,)), vi("z", (4,))],
             [big, one])
    d = data_dir(tmp, "both_data", [("x", np.array([1, 2, -1, 0.5], np.float32))])
    rc, js, se = verify_json(m, m, "--data", d)
    o = outputs_by_name(js)
    check("both-inf:exit0", rc == 0 and js and js["first_nonfinite"] is None, (rc, js, se))
    check("both-inf:counts", o.get("z", {}).get("nonfinite_orig") == 4 and o["z"]["nonfinite_conv"] == 4
          and o["z"]["new_nonfinite"] == 0 and o["z"]["compared"] == 0 and o["z"]["rel_l2"] == 0, o)
    rc, so, _ = run("verify", m, m, "--data", d)
    check("both-inf:text", "z: rel L2 0.0e+00, max abs 0.0e+00, non-finite 4 (of 4), original non-finite 4\n"
          in so, so)


def test_zero(tmp):
    """0/0 is 0; an error relative to an all-zero output is infinite (JSON null)."""
    zero = numpy_helper.from_array(np.zeros((), np.float32), "k")
    tiny = numpy_helper.from_array(np.array(1e-3, np.float32), "k")
    a = save(tmp, "zero_a", [helper.make_node("Mul", ["x", "k"], ["y"], name="m")],
             [vi("x", (3,))], [vi("y", (3,))], [zero])
    b = save(tmp, "zero_b", [helper.make_node("Mul", ["x", "k"], ["y"], name="m")],
             [vi("x", (3,))], [vi("y", (3,))], [tiny])
    d = data_dir(tmp, "zero_data", [("x", np.array([1, 2, 3], np.float32))])
    rc, js, _ = verify_json(a, a, "--data", d)
    check("zero:0/0", rc == 0 and outputs_by_name(js).get("y", {}).get("rel_l2") == 0, js)
    rc, js, _ = verify_json(a, b, "--data", d)
    y = outputs_by_name(js).get("y", {})
    check("zero:x/0", rc == 1 and "rel_l2" in y and y["rel_l2"] is None and close(y["max_abs"], 3e-3, 1e-6),
          js)
    rc, so, _ = run("verify", a, b, "--data", d)
    check("zero:text-inf", "y: rel L2 inf" in so, so)


def test_errors(tmp):
    orig = os.path.join(tmp, "chain32.onnx")
    d = os.path.join(tmp, "ok")
    # Outputs that differ by name, both ways.
    m = onnx.load(orig)
    m.graph.node[-1].output[0] = "y2"
    m.graph.output[0].name = "y2"
    renamed = os.path.join(tmp, "renamed.onnx")
    onnx.save(m, renamed)
    rc, so, se = run("verify", orig, renamed, "--data", d)
    check("mismatch:exit2", rc == 2 and so == "" and "output 'y' of the original model is missing" in se
          and "output 'y2' of the converted model is not an output" in se, so + se)
    # An input the original lacks.
    m = onnx.load(orig)
    m.graph.node[0].input[0] = "x2"
    m.graph.input[0].name = "x2"
    other_in = os.path.join(tmp, "other_input.onnx")
    onnx.save(m, other_in)
    rc, _, se = run("verify", orig, other_in, "--data", d)
    check("input-mismatch:exit2", rc == 2 and "input 'x2' of the converted model is not an input" in se, se)
    # Shapes that differ.
    m = onnx.load(orig)
    m.graph.input[0].type.tensor_type.shape.dim[1].dim_value = 2
    m.graph.output[0].type.tensor_type.shape.dim[1].dim_value = 2
    narrow = os.path.join(tmp, "narrow.onnx")
    onnx.save(m, narrow)
    rc, _, se = run("verify", orig, narrow, "--data", d)
    check("shape-mismatch:exit2", rc == 2 and "has shape [2,4]" in se, se)
    # Data that does not fit the original.
    bad = data_dir(tmp, "bad_shape", [("x", np.zeros((3, 3), np.float32))])
    rc, so, se = run("verify", orig, orig, "--data", bad)
    check("bad-data:exit2", rc == 2 and so == "" and "input 'x' has shape [3,3]" in se, se)
    empty = os.path.join(tmp, "empty")
    os.mkdir(empty)
    rc, _, se = run("verify", orig, orig, "--data", empty)
    check("missing-data:exit2", rc == 2 and "input 'x' is missing" in se, se)
    # Unreadable model, bad arguments.
    junk = os.path.join(tmp, "junk.onnx")
    with open(junk, "wb") as f:
        f.write(b"\x0a\xff\xff\xff\xff\x0f garbage")
    rc, _, se = run("verify", orig, junk, "--data", d)
    check("junk-model:exit2", rc == 2 and se.startswith(junk + ": "), se)
    rc, _, se = run("verify", orig, os.path.join(tmp, "nope.onnx"), "--data", d)
    check("missing-model:exit2", rc == 2, se)
    for args, phrase in ((["verify", orig, orig], "--data"),
                         (["verify", orig, "--data", d], "two models"),
                         (["verify", orig, orig, "--data", d, "--rtol", "-1"], "--rtol"),
                         (["verify", orig, orig, "--data", d, "--l2-tol", "-1"], "--l2-tol"),
                         (["verify", orig, orig, "--data", d, "--rtol", "x"], "rtol"),
                         (["verify", orig, orig, "--data", d, "--format", "xml"], "--format"),
                         (["verify", orig, orig, "--data", d, "--threads", "-2"], "--threads")):
        rc, so, se = run(*args)
        check("usage:" + " ".join(args[3:]), rc == 2 and so == "" and phrase in se, se)


def test_help(_tmp):
    rc, so, _ = run("help", "verify")
    check("help-verify", rc == 0 and "--rtol" in so and "ORIG CONVERTED" in so and "Exit status" in so, so)
    rc, so, _ = run("--help")
    check("help-lists-verify", rc == 0 and "verify" in so, so)


# One folder for all: test_input_overflow and test_errors read test_overflow's models and data.
with tempfile.TemporaryDirectory(prefix="hg-verify-") as tmp:
    for t in (test_help, test_identical, test_overflow, test_input_overflow, test_rtol, test_nonfinite_in_both,
              test_zero, test_errors):
        t(tmp)
sys.exit(check.finish())
