#!/usr/bin/python3
"""Graph inputs without ranges (issue 13): what halfguard derives from the model itself, and what it
says and does about an input it has no range for.

- Derived ranges: an integer input that only indexes Gathers (through Cast, Reshape, Unsqueeze...)
  takes [0, rows - 1] of the smallest table along each Gather's axis; a bool input [0, 1]; an input
  whose every value saturates (Sigmoid, Tanh) or is read for its shape needs none. Each is listed in
  check's JSON as "derived" or "unneeded" with the reason, and noted on stderr; what cannot be derived
  soundly (an id cast to float, a Softmax's input, an integer that is a Reshape's shape) is not.
- Synthetic calibration: `--calib-random N` (check, convert) draws seeded inputs inside the ranges
  (a float input without one uniform in [-64, 64], an integer one 0 or 1) and decides with what the
  model computes on them; hazards and convert's decisions that rest on them say "synthetic".
  convert with neither range nor data for an input draws 4 sets by default and says so, loudly: a
  warning naming the input, what was assumed and what fixes it, and the summary line;
  `--calib-random 0` makes it refuse instead (exit 2, nothing written).
- The unranged-input finding: check exits 1 on an input whose values reach float math with no range
  and no data of the caller's, at "input 'x'" (text), as a SARIF warning on a parameter, suppressible
  with a reason like any other; with --calib-random it shows what was drawn, marked synthetic; data
  for the input (--calib) ends it.
- calibrate --random N -O DIR writes the sets (DIR/K/input_J.pb) for users to inspect and reuse:
  ids inside their derived range, floats in [-64, 64], the same bytes for the same seed; --calib DIR
  reads them back as N samples; calibrate -o counts them as synthetic in the statistics.
- The corpus's BERT and GPT-2 with no flags: ids derived, the conversion labelled, verify passes.

Usage: test_inputs.py HALFGUARD
"""
import json
import os
import re
import sys

import jsonschema
import numpy as np
from onnx import TensorProto, helper, numpy_helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hgtest  # noqa: E402
from hgtest import save_model, show, vi  # noqa: E402

HG = sys.argv[1]
run = hgtest.tool(HG)
check = hgtest.Checks()
I64, I32, BOOL = TensorProto.INT64, TensorProto.INT32, TensorProto.BOOL


VALIDATOR = jsonschema.Draft7Validator(json.load(open(os.path.join(hgtest.HERE, "check_schema.json"))))



def check_json(label, *args):
    """check --format json ARGS: (rc, the report checked against tests/check_schema.json or None, stderr)."""
    rc, so, se = run("check", "--format", "json", *args)
    try:
        doc = json.loads(so)
    except ValueError as e:
        check(f"{label}:json", False, f"{e}: {show(rc, so, se)}")
        return rc, None, se
    errors = [f"{list(e.absolute_path)}: {e.message}" for e in VALIDATOR.iter_errors(doc)]
    check(f"{label}:schema", not errors, errors[:5])
    return rc, doc, se


def table(name, shape, seed=0):
    return numpy_helper.from_array(np.random.default_rng(seed).uniform(-1, 1, shape).astype(np.float32), name)


def i64(name, values):
    return numpy_helper.from_array(np.array(values, np.int64), name)


def derive_model(path, with_shape=True):
    """ids: Gather(table 30x4) and, through Cast(int32) and Unsqueeze, Gather(12x3 table... along axis
    -1 of a 3x12 table), plus a Shape reader: derived [0, 11]. flag (bool): Where. gate (float):
    Sigmoid only: unneeded. logit (float): Softmax: none. tok (int64): Cast to float: none, reaches
    float. shp (int64): a Reshape's shape: none, reaches no float. lens (int64): read for its shape
    only: unneeded."""
    nodes = [
        helper.make_node("Gather", ["emb", "ids"], ["e"], name="embed", axis=0),
        helper.make_node("Cast", ["ids"], ["ids32"], name="ids_cast", to=I32),
        helper.make_node("Unsqueeze", ["ids32", "ax0"], ["ids_u"], name="ids_unsq"),
        helper.make_node("Gather", ["cols", "ids_u"], ["c"], name="pick_cols", axis=-1),
        helper.make_node("Shape", ["ids"], ["ids_shape"], name="ids_shape"),
        helper.make_node("Where", ["flag", "e", "e"], ["w"], name="where"),
        helper.make_node("Sigmoid", ["gate"], ["g"], name="gate_sigmoid"),
        helper.make_node("Softmax", ["logit"], ["p"], name="softmax", axis=-1),
        helper.make_node("Cast", ["tok"], ["tokf"], name="tok_cast", to=TensorProto.FLOAT),
        helper.make_node("Reshape", ["e", "shp"], ["r"], name="reshape"),
        helper.make_node("Shape", ["lens"], ["lens_shape"], name="lens_shape"),
    ]
    inputs = [vi("ids", (2, 3), I64), vi("flag", (2, 3, 4), BOOL), vi("gate", (2, 2)), vi("logit", (2, 2)),
              vi("tok", (2, 2), I64), vi("shp", (2,), I64), vi("lens", (5,), I64)]
    outputs = [vi("w", (2, 3, 4)), vi("c", None), vi("g", (2, 2)), vi("p", (2, 2)), vi("tokf", (2, 2)),
               vi("r", None), vi("ids_shape", (2,), I64), vi("lens_shape", (1,), I64)]
    if not with_shape:  # no Reshape by an input's values: synthetic inputs cannot draw a valid shape
        nodes = [n for n in nodes if n.name != "reshape"]
        inputs = [i for i in inputs if i.name != "shp"]
        outputs = [o for o in outputs if o.name != "r"]
    return save_model(path, nodes, inputs, outputs, [table("emb", (30, 4)), table("cols", (3, 12)), i64("ax0", [0])])


def test_derived(tmp):
    m = derive_model(os.path.join(tmp, "derive.onnx"))
    rc, doc, se = check_json("derived", m, "--no-config")
    if doc is None:
        return
    inputs = {i["name"]: i for i in doc["models"][0]["inputs"]}
    want = {
        "ids": ("derived", (0, 11), "Gather 'pick_cols'"),
        "flag": ("derived", (0, 1), "bool"),
        "gate": ("unneeded", None, "saturates"),
        "logit": ("none", None, None),
        "tok": ("none", None, None),
        "shp": ("none", None, None),
        "lens": ("unneeded", None, "shape"),
    }
    for name, (source, rng, why) in want.items():
        got = inputs.get(name, {})
        r = got.get("range")
        ok = (got.get("source") == source and (rng is None) == (r is None)
              and (rng is None or (r["lo"], r["hi"]) == rng)
              and (why is None or why in (got.get("why") or "")))
        check(f"derived:{name}", ok, got)
    check("derived:dtypes", inputs.get("ids", {}).get("dtype") == "int64"
          and inputs.get("gate", {}).get("dtype") == "float", inputs)
    check("derived:unranged-list", set(doc["models"][0]["unranged_inputs"]) == {"logit", "tok", "shp"},
          doc["models"][0]["unranged_inputs"])
    # Only inputs whose values reach float math are findings: not shp, a Reshape's shape.
    check("derived:findings", sorted(h["node"] for h in doc["models"][0]["hazards"] if h["kind"] == "unranged-input")
          == ["logit", "tok"], doc["models"][0]["hazards"])
    check("derived:note", "input 'ids' (int64): range [0, 11] derived: it only indexes 2 Gathers" in se
          and "input 'gate' (float) needs no range" in se, se)
    # The derived range is the analysis's: the embedding lookup is bounded by its table, no note of a
    # missing range for ids.
    check("derived:no-note-for-ids", "input 'ids'" not in "".join(l for l in se.splitlines()
                                                                    if "no range" in l), se)
    # A given range wins over the derived one.
    rc, doc, se = check_json("derived-given", m, "--no-config", "-r", "ids=0:3")
    ids = next((i for i in doc["models"][0]["inputs"] if i["name"] == "ids"), {}) if doc else {}
    check("derived:given-wins", ids.get("source") == "given" and ids.get("range") == {"lo": 0.0, "hi": 3.0}, ids)


def scale_model(path, k=1000.0):
    """y = x * k at node 'scale': x in [-64, 64] reaches 64000, which passes 65504 with the margin."""
    return save_model(path, [helper.make_node("Mul", ["x", "k"], ["y"], name="scale")],
                      [vi("x")], [vi("y")], [numpy_helper.from_array(np.array(k, np.float32), "k")])


def tok_model(path):
    """An int64 input cast to float and scaled: no range can be derived for it."""
    return save_model(path, [helper.make_node("Cast", ["tok"], ["tf"], name="tok_cast", to=TensorProto.FLOAT),
                             helper.make_node("Mul", ["tf", "k"], ["y"], name="tok_mul")],
                      [vi("tok", (2, 2), I64)], [vi("y")],
                      [numpy_helper.from_array(np.array(3.0, np.float32), "k")])


read = hgtest.read_bytes


def convert(src, dst, *args):
    """convert SRC -o DST --report DST.json ARGS: (rc, stdout + stderr, the report or None)."""
    if os.path.exists(dst):
        os.unlink(dst)
    rc, so, se = run("convert", src, "-o", dst, "--report", dst + ".json", *args)
    rep = json.load(open(dst + ".json")) if rc == 0 else None
    return rc, so + se, rep


def decision(rep, node):
    return next((d for d in rep["decisions"] if d["node"] == node), {}) if rep else {}


def test_synthetic(tmp):
    m = scale_model(os.path.join(tmp, "scale.onnx"))
    out = os.path.join(tmp, "out.onnx")
    # No flags: synthetic calibration by default, and it says so.
    rc, text, rep = convert(m, out)
    check("default:converts", rc == 0, text)
    check("default:warning", re.search(r"warning: input 'x' \(float\) has no range and no data: assumed uniform in "
                                       r"\[-64, 64\] \(4 synthetic samples, seed 0, convert's default\)", text), text)
    check("default:fix", "fix: -r 'x=LO:HI'" in text and "'x = LO:HI' under [ranges scale.onnx] in " in text
          and ".halfguard.ini" in text, text)
    check("default:summary", re.search(r"-> .*: .*; 1 of 1 decisions rest on synthetic data$", text, re.M), text)
    rc, vtext, _ = convert(m, out, "-v")
    check("default:verbose", "\n  1 of 1 decisions rest on synthetic data (no range or data for 'x')\n" in vtext, vtext)
    d = decision(rep, "scale")
    check("default:decided-fp32-on-synthetic", d.get("precision") == "fp32" and d.get("source") == "synthetic", d)
    x = next((i for i in rep["inputs"] if i["name"] == "x"), {}) if rep else {}
    check("default:report-input", x.get("source") == "none" and x.get("synthetic") == "uniform in [-64, 64]"
          and rep["figures"]["decisions_synthetic"] == 1, x)
    first = read(out) if rc == 0 else b""
    rc, text, _ = convert(m, out)
    check("default:deterministic", rc == 0 and read(out) == first, text)
    rc, text, _ = convert(m, out, "--seed", "7")
    check("default:seed", rc == 0 and "seed 7" in text, text)
    # --calib-random 0: refused, naming the input and what to give; nothing written.
    rc, text, _ = convert(m, out, "--calib-random", "0")
    check("refuse:exit2", rc == 2 and not os.path.exists(out), text)
    check("refuse:message", "input 'x' has no range and no data" in text and "-r NAME=LO:HI" in text
          and "--calib" in text and ".halfguard.ini" in text, text)
    # A range: nothing synthetic, the static bound decides.
    rc, text, rep = convert(m, out, "-r", "x=0:1")
    check("ranged:no-synthetic", rc == 0 and "synthetic data" not in text and "warning" not in text
          and decision(rep, "scale").get("source")
          == "static" and decision(rep, "scale").get("precision") == "fp16", (text, decision(rep, "scale")))
    # Real data: decided on it, and the note says so.
    data = hgtest.write_inputs(os.path.join(tmp, "data"), {"x": np.full((2, 2), 3.0, np.float32)})
    rc, text, rep = convert(m, out, "--calib", data)
    check("calib:note", rc == 0 and "input 'x' (float) has no range: decided on the calibration data's "
          "observations" in text and "synthetic data" not in text and "warning" not in text, text)
    check("calib:source", decision(rep, "scale").get("source") == "calibration", decision(rep, "scale"))
    # An integer that reaches float math: drawn 0 or 1.
    t = tok_model(os.path.join(tmp, "tok.onnx"))
    rc, text, rep = convert(t, out)
    check("int:warning", rc == 0 and "input 'tok' (int64) has no range and no data: assumed 0 or 1" in text, text)
    # check --calib-random: what the synthetic data shows, marked synthetic.
    rc, doc, se = check_json("check-synthetic", m, "--no-config", "-r", "x=0:100", "--calib-random", "2")
    h = next((h for h in doc["models"][0]["hazards"] if h["node"] == "scale"), {}) if doc else {}
    check("check:synthetic-source", rc == 1 and h.get("source") == "synthetic" and h.get("observed")
          and "(synthetic calibration" in h.get("message", ""), h)
    rc, doc, se = check_json("check-static", m, "--no-config", "-r", "x=0:100")
    h = next((h for h in doc["models"][0]["hazards"] if h["node"] == "scale"), {}) if doc else {}
    check("check:static-source", h.get("source") == "static", h)
    rc, so, se = run("check", m, "--calib-random", "-3")
    check("check:bad-count", rc == 2 and "--calib-random" in se, show(rc, so, se))
    # A strided Conv over a symbolic length (an audio front end) cannot run at the length of 1 the
    # synthetic sets take by default: they are drawn again longer (128), and check decides on them.
    w = numpy_helper.from_array(np.random.default_rng(0).normal(0, 0.3, (4, 1, 10)).astype(np.float32), "w")
    a = save_model(os.path.join(tmp, "audio.onnx"),
                   [helper.make_node("Conv", ["x", "w"], ["c"], strides=[5], name="frontend"),
                    helper.make_node("Relu", ["c"], ["y"], name="act")],
                   [vi("x", (1, 1, "samples"))], [vi("y", None)], [w])
    rc, doc, se = check_json("check-synthetic-longer", a, "--no-config", "-r", "x=-1:1", "--calib-random", "1")
    check("check:synthetic-longer", rc == 0 and doc is not None and doc["models"][0]["hazards"] == [], (rc, se, doc))
    rc, doc, se = check_json("check-synthetic-pinned", a, "--no-config", "-r", "x=-1:1", "--calib-random", "1",
                             "--dim-max", "samples=4")
    check("check:synthetic-pinned-short", rc == 2 and "kernel does not fit" in se, (rc, se))
    # ... but not where the inputs would be too large at that length (here z, [a, b, 4096], would hold
    # 67 million values at 128): the error at the dims asked for, at once, not a machine out of memory.
    big = save_model(os.path.join(tmp, "audio_big.onnx"),
                     [helper.make_node("Conv", ["x", "w"], ["c"], strides=[5], name="frontend"),
                      helper.make_node("Relu", ["c"], ["y"], name="act"),
                      helper.make_node("Relu", ["z"], ["zy"], name="other")],
                     [vi("x", (1, 1, "samples")), vi("z", ("a", "b", 4096))], [vi("y", None), vi("zy", None)], [w])
    rc, doc, se = check_json("check-synthetic-too-big", big, "--no-config", "-r", "x=-1:1", "-r", "z=-1:1",
                             "--calib-random", "1")
    check("check:synthetic-longer-too-big", rc == 2 and "kernel does not fit" in se
          and "give the lengths the model runs at with --shapes NAME:DIMS or --dim-max NAME=N" in se, (rc, se))


def test_unranged(tmp):
    m = scale_model(os.path.join(tmp, "scale.onnx"))
    rc, so, se = run("check", m, "--no-config", "-r", "x=0:1")
    check("unranged:ranged-clean", rc == 0 and so == "", show(rc, so, se))
    rc, so, se = run("check", m, "--no-config")
    check("unranged:text", rc == 1 and so.startswith(f"{m}: input 'x': unranged-input: float input with no range: ")
          and "--input-range 'x=LO:HI'" in so and so.count("\n") == 1, show(rc, so, se))
    rc, doc, se = check_json("unranged-synthetic", m, "--no-config", "--calib-random", "2")
    h = next((h for h in doc["models"][0]["hazards"] if h["kind"] == "unranged-input"), {}) if doc else {}
    obs = h.get("observed") or {}
    check("unranged:synthetic", rc == 1 and h.get("source") == "synthetic" and -64 <= obs.get("lo", -99) < -32
          and 32 < obs.get("hi", 99) <= 64 and "synthetic inputs drew it uniform in [-64, 64]" in h.get("message", ""), h)
    check("unranged:synthetic-overflow", any(x["node"] == "scale" and x["kind"] == "overflow" and x["source"] == "synthetic"
                                             for x in doc["models"][0]["hazards"]) if doc else False, doc)
    data = hgtest.write_inputs(os.path.join(tmp, "data"), {"x": np.full((2, 2), 3.0, np.float32)})
    rc, doc, se = check_json("unranged-data", m, "--no-config", "--calib", data)
    check("unranged:data-covers", rc == 0 and doc and doc["models"][0]["hazards"] == [], doc)
    # SARIF: a warning located at the input.
    rc, so, se = run("check", m, "--no-config", "--format", "sarif")
    res = json.loads(so)["runs"][0]["results"] if rc == 1 else []
    r = res[0] if len(res) == 1 else {}
    loc = r.get("locations", [{}])[0].get("logicalLocations", [{}])[0]
    check("unranged:sarif", r.get("ruleId") == "unranged-input" and r.get("level") == "warning"
          and loc.get("kind") == "parameter" and loc.get("name") == "x"
          and r.get("properties", {}).get("source") == "assumed" and r["message"]["text"].startswith("input 'x': "),
          show(rc, so, se))
    # Suppressed with a reason: listed, not counted.
    with open(os.path.join(tmp, ".halfguard.ini"), "w") as f:
        f.write("[suppress x-free]\nnode = x\nkind = unranged-input\nreason = x is any sensor reading; measured\n")
    rc, doc, se = check_json("unranged-suppressed", m)
    h = doc["models"][0]["hazards"][0] if doc and doc["models"][0]["hazards"] else {}
    check("unranged:suppressed", rc == 0 and h.get("kind") == "unranged-input"
          and h.get("suppressed") == "x is any sensor reading; measured", doc)
    os.unlink(os.path.join(tmp, ".halfguard.ini"))


def test_calibrate_random(tmp):
    m = derive_model(os.path.join(tmp, "derive.onnx"), with_shape=False)
    sets = os.path.join(tmp, "sets")
    rc, so, se = run("calibrate", m, "--random", "3", "-O", sets, "--no-config")
    if not check("random:writes", rc == 0 and sorted(os.listdir(sets)) == ["0", "1", "2"], show(rc, so, se)):
        return
    ids = np.concatenate([hgtest.read_pb(os.path.join(sets, k, "input_0.pb")).ravel() for k in "012"])
    logit = np.concatenate([hgtest.read_pb(os.path.join(sets, k, "input_3.pb")).ravel() for k in "012"])
    flag = hgtest.read_pb(os.path.join(sets, "0", "input_1.pb"))
    check("random:ids-in-derived-range", ids.dtype == np.int64 and ids.min() >= 0 and ids.max() <= 11
          and len(set(ids.tolist())) > 1, ids)
    check("random:floats-in-default", logit.dtype == np.float32 and -64 <= logit.min() < -16 and 16 < logit.max() <= 64,
          logit)
    check("random:bool", flag.dtype == np.bool_ and flag.any() and not flag.all(), flag)
    check("random:warning", "input 'logit' (float) has no range and no data: assumed uniform in [-64, 64] "
          "(3 synthetic samples, seed 0)" in se and "input 'tok' (int64) has no range and no data: assumed 0 or 1" in se,
          se)
    again = os.path.join(tmp, "again")
    rc, so, se = run("calibrate", m, "--random", "3", "-O", again, "--no-config")
    check("random:deterministic", rc == 0 and all(read(os.path.join(sets, k, f)) == read(os.path.join(again, k, f))
                                                  for k in "012" for f in os.listdir(os.path.join(sets, k))), se)
    seeded = os.path.join(tmp, "seeded")
    rc, so, se = run("calibrate", m, "--random", "1", "-O", seeded, "--seed", "5", "--no-config")
    check("random:seed", rc == 0 and read(os.path.join(seeded, "0", "input_3.pb")) != read(os.path.join(sets, "0", "input_3.pb")), se)
    # Reused with --calib DIR (a folder of sample folders), they are real data to check: no finding.
    st1, st2 = os.path.join(tmp, "reused.json"), os.path.join(tmp, "synthetic.json")
    rc1, _, se1 = run("calibrate", m, "--data", sets, "-o", st1, "--no-config")
    rc2, _, se2 = run("calibrate", m, "--random", "3", "-o", st2, "--no-config")
    a, b = (json.load(open(p))["tensors"] for p in (st1, st2)) if rc1 == 0 and rc2 == 0 else ({}, {})
    check("random:stats-synthetic", b.get("g", {}).get("synthetic") == 3 and "synthetic" not in a.get("g", {})
          and a.get("g", {}).get("max") == b.get("g", {}).get("max"), (se1, se2, a.get("g"), b.get("g")))
    rc, doc, se = check_json("random-reused", m, "--no-config", "--calib", sets)
    check("random:reused-covers-inputs", doc and not any(h["kind"] == "unranged-input" for h in doc["models"][0]["hazards"]),
          doc)
    rc, so, se = run("calibrate", m, "--no-config", "-o", st1)
    check("random:needs-data", rc == 2 and "--random" in se, show(rc, so, se))


def test_corpus(tmp):
    """BERT and GPT-2 converted with no flags: ids derived, the conversion labelled, verify passes on
    realistic inputs (tests/ortlib.py's seeded feeds)."""
    import ortlib
    cases = ortlib.model_cases(98765)
    want = {"gpt2_past": ["input_ids"], "TFBertForQuestionAnswering": ["input_ids", "token_type_ids"]}
    for name, ids in want.items():
        if name not in cases or not os.path.exists(cases[name][0]):
            print(f"SKIP {name}: not in the corpus")
            continue
        model, feeds, _ = cases[name]
        data = ortlib.write_feeds(model, feeds, os.path.join(tmp, name + ".data"))
        out = os.path.join(tmp, name + ".fp16.onnx")
        rc, text, rep = convert(model, out)
        check(f"{name}:converts", rc == 0, text[-2000:])
        if rc:
            continue
        for i in ids:
            check(f"{name}:{i}-derived", re.search(rf"note: input '{i}' \(int(32|64)\): range \[0, \d+\] derived", text)
                  and next(x for x in rep["inputs"] if x["name"] == i)["source"] == "derived", text[-2000:])
        check(f"{name}:labelled", "decisions rest on synthetic data" in rep["summary"]
              and rep["figures"]["decisions_synthetic"] > 0 and "warning: input" in text, rep["summary"])
        vrc, vo, ve = run("verify", model, out, "--data", data)
        check(f"{name}:verify", vrc == 0, vo + ve)


def main():
    hgtest.temp_folders(check, "hg-inputs-", [test_derived, test_synthetic, test_unranged, test_calibrate_random, test_corpus])
    sys.exit(check.finish())


main()
