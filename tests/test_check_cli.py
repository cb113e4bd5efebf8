#!/usr/bin/python3
"""`halfguard check` end to end: exit codes, the text line format, JSON against tests/check_schema.json,
SARIF's structure, the .halfguard.ini configuration, Git LFS pointers, and calibration statistics from
Polygraphy's JSON files, `halfguard calibrate` and --calib folders.

Usage: test_check_cli.py HALFGUARD              everything except the official SARIF schema
       test_check_cli.py HALFGUARD --sarif-schema  SARIF output validated against the SARIF 2.1.0 schema
                                                (exits 77, skipped, when npm cannot fetch it)

The SARIF 2.1.0 schema is not kept in this repository: it is the file lib/schemas/sarif-2.1.0-rtm.5.json
of npm's @microsoft/jest-sarif (MIT, Microsoft's sarif-js-sdk), fetched once with `npm pack` into
$HG_SARIF_CACHE (tests/meson.build puts it in the build folder) and checked against a pinned SHA-256.
rtm.5 is the schema GitHub code scanning validates uploads against; its definitions are those of the
OASIS 2.1.0 standard's sarif-schema-2.1.0.json. It declares JSON Schema draft-04, so it is checked with
python3-jsonschema's Draft4Validator.

Models are made here with python3-onnx: Y = X * 1000 (an overflow at node 'scale' when X passes
65.504; the constant itself fits FP16, as 1e5 would not), Y = Relu(X) (clean for a bounded X),
X + inf (a non-finite constant), 1 / X (a division by zero when X's range holds 0). An input without
a range leaves what depends on it unchecked (with a note), so most cases give one.
"""
import base64
import hashlib
import io
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile

import jsonschema
import numpy as np
from onnx import TensorProto, helper, numpy_helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hgtest  # noqa: E402
from hgtest import close, save_model, show, vi  # noqa: E402

HERE = hgtest.HERE
HG = os.path.abspath(sys.argv[1])
SARIF_SCHEMA_MODE = "--sarif-schema" in sys.argv[2:]

SARIF_PACKAGE = "@microsoft/jest-sarif"
SARIF_PACKAGE_VERSION = "1.0.0-beta.0"
SARIF_MEMBER = "package/lib/schemas/sarif-2.1.0-rtm.5.json"
SARIF_SHA256 = "2d99159ae54a3eea97f81781cff48780548657c35949f4b7f25e99a2ba4de4f8"

KINDS = ["overflow", "internal-overflow", "underflow", "non-finite-constant", "division-by-zero",
         "precision-loss", "must-stay-fp32", "unranged-input"]
SARIF_LEVEL = {"overflow": "error", "internal-overflow": "error", "non-finite-constant": "error",
               "division-by-zero": "error", "underflow": "warning", "precision-loss": "warning",
               "must-stay-fp32": "note", "unranged-input": "warning"}
# MODEL: node 'NAME' (OP): KIND: MESSAGE, or MODEL: input 'NAME': unranged-input: MESSAGE
LINE = re.compile(r"^(?P<file>.+?): (?:node '(?P<node>[^']*)' \((?P<op>[A-Za-z0-9_.]+)\)|input '(?P<input>[^']*)'): "
                  r"(?P<kind>" + "|".join(map(re.escape, KINDS)) + r"): (?P<msg>\S.*)$")
NUM = r"([-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)"
LFS_POINTER = (b"version https://git-lfs.github.com/spec/v1\n"
               b"oid sha256:4d7a214614ab2935c943f9e0ff69d22eadbb8f32b1258daaa5e2ca24d17e2393\n"
               b"size 123\n")

check = hgtest.Checks()
run = hgtest.tool(HG, "check")
calibrate = hgtest.tool(HG, "calibrate")



# ---------------------------------------------------------------- models

def scale_model(path, k=1000.0):
    """y = x * k at node 'scale': with x in [0, 100], y reaches 1e5."""
    return save_model(path, [helper.make_node("Mul", ["x", "k"], ["y"], name="scale")],
                      [vi("x")], [vi("y")], [numpy_helper.from_array(np.array(k, np.float32), "k")])


def relu_model(path):
    return save_model(path, [helper.make_node("Relu", ["x"], ["y"], name="relu")], [vi("x")], [vi("y")])


def inf_model(path):
    """y = x + c with c = [inf, 1]: a non-finite constant at node 'addc'."""
    c = numpy_helper.from_array(np.array([np.inf, 1.0], np.float32), "c")
    return save_model(path, [helper.make_node("Add", ["x", "c"], ["y"], name="addc")],
                      [vi("x", (2,))], [vi("y", (2,))], [c])


def div_model(path):
    """y = 1 / x at node 'recip': x in [-1, 1] holds 0."""
    one = numpy_helper.from_array(np.ones((2, 2), np.float32), "one")
    return save_model(path, [helper.make_node("Div", ["one", "x"], ["y"], name="recip")],
                      [vi("x")], [vi("y")], [one])


def write(path, text):
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path, "w" if isinstance(text, str) else "wb") as f:
        f.write(text)
    return path


# ---------------------------------------------------------------- JSON

def _no_constants(name):
    raise ValueError(f"{name} is not JSON")


def strict_json(text):
    """json.loads that refuses NaN/Infinity (Python accepts them; JSON and other parsers do not)."""
    return json.loads(text, parse_constant=_no_constants)


CHECK_SCHEMA = json.load(open(os.path.join(HERE, "check_schema.json")))
jsonschema.Draft7Validator.check_schema(CHECK_SCHEMA)
CHECK_VALIDATOR = jsonschema.Draft7Validator(CHECK_SCHEMA)


def run_json(label, *args, cwd=None, files=None):
    """Run check --format json; validate the report; return (rc, doc or None, stderr)."""
    rc, so, se = run("--format", "json", *args, cwd=cwd)
    try:
        doc = strict_json(so)
    except ValueError as e:
        check(f"{label}:json-parses", False, f"{e}\n{show(rc, so, se)}")
        return rc, None, se
    errors = sorted(CHECK_VALIDATOR.iter_errors(doc), key=lambda e: list(e.absolute_path))
    check(f"{label}:json-schema", not errors,
          "\n".join(f"{list(e.absolute_path)}: {e.message}" for e in errors[:5]) + "\n" + so[:1500])
    if errors:
        return rc, None, se
    counted = sum(1 for m in doc["models"] for h in m.get("hazards", [])
                  if h["suppressed"] is None and h["fixed_by"] is None)
    check(f"{label}:json-total", doc["hazards"] == counted,
          f"hazards={doc['hazards']}, listed that count={counted}")
    if files is not None:
        check(f"{label}:json-files", [m["file"] for m in doc["models"]] == list(files),
              str([m["file"] for m in doc["models"]]))
    return rc, doc, se


def hazards_at(doc, node, kind=None, model=0):
    return [h for h in doc["models"][model].get("hazards", [])
            if h["node"] == node and (kind is None or h["kind"] == kind)]


def text_lines(label, so):
    """Every stdout line must be a hazard line; returns the matches."""
    lines = [l for l in so.split("\n") if l]
    matches = [LINE.match(l) for l in lines]
    bad = [l for l, m in zip(lines, matches) if not m]
    check(f"{label}:text-format", not bad, f"lines not in 'FILE: node 'NAME' (OP): KIND: MESSAGE' form: {bad!r}")
    return [m for m in matches if m]


# ---------------------------------------------------------------- Polygraphy's JSON

def poly_ndarray(a):
    """Polygraphy's encoding of an np.ndarray (polygraphy/json/serde.py): base64 of np.save's bytes;
    the type marker is the last key."""
    buf = io.BytesIO()
    np.save(buf, a, allow_pickle=False)
    return {"array": base64.b64encode(buf.getvalue()).decode(), "polygraphy_class": "ndarray"}


def poly_outputs(runs):
    """RunResults as `polygraphy run --save-outputs` writes it. runs: [(runner, [{name: array}])]."""
    lst = []
    for runner, iterations in runs:
        its = [{"outputs": {n: {"values": poly_ndarray(a), "polygraphy_class": "LazyArray"}
                            for n, a in it.items()},
                "runtime": 0.00123, "runner_name": runner, "polygraphy_class": "IterationResult"}
               for it in iterations]
        lst.append([runner, its])
    return json.dumps({"lst": lst, "polygraphy_class": "RunResults"}, indent=4)


def poly_inputs(iterations):
    """A `--save-inputs` file: a list, one {name: ndarray} per iteration."""
    return json.dumps([{n: poly_ndarray(a) for n, a in it.items()} for it in iterations], indent=4)


# ---------------------------------------------------------------- tests

def test_exit_codes_and_text(tmp):
    scale = scale_model(os.path.join(tmp, "scale.onnx"))
    relu = relu_model(os.path.join(tmp, "relu.onnx"))

    rc, so, se = run(relu, "--input-range", "x=0:1")
    check("clean:exit0", rc == 0, show(rc, so, se))
    check("clean:no-stdout", so == "", show(rc, so, se))
    rc, so, se = run(relu, "--input-range", "*=0:1")
    check("clean:star-range-exit0", rc == 0, show(rc, so, se))

    rc, so, se = run(scale, "--input-range", "x=0:100")
    check("hazard:exit1", rc == 1, show(rc, so, se))
    m = text_lines("hazard", so)
    check("hazard:one-line", len(m) == 1, show(rc, so, se))
    if m:
        g = m[0]
        check("hazard:file-as-given", g["file"] == scale, g.group(0))
        check("hazard:node-op-kind", (g["node"], g["op"], g["kind"]) == ("scale", "Mul", "overflow"), g.group(0))
        check("hazard:static-source", "(static)" in g["msg"], g.group(0))
        nums = [float(x) for x in re.findall(NUM, g["msg"])]
        check("hazard:bound-in-message", any(close(x, 1e5, 0.02) for x in nums),
              f"no number near 1e+05 in {g['msg']!r}")
    # The range decides: x in [0, 0.5] keeps y at 5e4 < 65504.
    rc, so, se = run(scale, "--input-range", "x=0:50")
    check("hazard:narrow-range-exit0", rc == 0 and so == "", show(rc, so, se))
    rc, so, se = run(scale, "--input-range", "x=-50:50")
    check("hazard:negative-range-exit0", rc == 0, show(rc, so, se))
    rc, so, se = run(scale, "--input-range", "x=-70:0")
    check("hazard:negative-side-exit1", rc == 1, show(rc, so, se))

    # An input without a range: a finding of its own (exit 1), telling how to give one; what depends on
    # it is not checked; a note on stderr names it, what was assumed and the fix.
    rc, so, se = run(scale)
    m = text_lines("unranged", so)
    check("unranged:exit1", rc == 1, show(rc, so, se))
    check("unranged:finding", len(m) == 1 and m[0]["input"] == "x" and m[0]["kind"] == "unranged-input"
          and "--input-range 'x=LO:HI'" in m[0]["msg"] and ".halfguard.ini" in m[0]["msg"], show(rc, so, se))
    check("unranged:note", re.search(r"^" + re.escape(scale) + r": note: input 'x' \(float\) has no range and no "
                                     r"data: nothing is assumed.*fix: -r 'x=LO:HI'.*\[ranges scale.onnx\]", se, re.M),
          show(rc, so, se))
    rc, so, se = run(scale, "--input-range", "x=0:100")
    check("ranged:no-note", "note" not in se, show(rc, so, se))

    # Several models: hazards of one, exit 1; lines name only that model.
    rc, so, se = run(relu, scale, "--input-range", "x=0:100")
    check("multi:exit1", rc == 1, show(rc, so, se))
    m = text_lines("multi", so)
    check("multi:only-hazardous-file", m and all(g["file"] == scale for g in m), show(rc, so, se))

    # Relative paths are reported as given.
    rc, so, se = run("scale.onnx", "--input-range", "x=0:100", cwd=tmp)
    m = text_lines("relative", so)
    check("relative:file-as-given", rc == 1 and m and m[0]["file"] == "scale.onnx", show(rc, so, se))

    # --threshold moves the line.
    rc, so, se = run(scale, "--input-range", "x=0:100", "--threshold", "200000")
    check("threshold:above-bound-exit0", rc == 0 and so == "", show(rc, so, se))
    rc, so, se = run(scale, "--input-range", "x=0:50", "--threshold", "40000")
    check("threshold:below-bound-exit1", rc == 1, show(rc, so, se))

    # Other kinds, with their node.
    inf = inf_model(os.path.join(tmp, "inf.onnx"))
    rc, so, se = run(inf, "--input-range", "x=0:1")
    m = text_lines("nonfinite", so)
    check("nonfinite:exit1", rc == 1, show(rc, so, se))
    check("nonfinite:line", any(g["node"] == "addc" and g["kind"] == "non-finite-constant" for g in m),
          show(rc, so, se))
    div = div_model(os.path.join(tmp, "div.onnx"))
    rc, so, se = run(div, "--input-range", "x=-1:1")
    m = text_lines("div", so)
    check("div:line", rc == 1 and any(g["node"] == "recip" and g["kind"] == "division-by-zero" for g in m),
          show(rc, so, se))
    rc, so, se = run(div, "--input-range", "x=0.5:1")
    check("div:away-from-zero-exit0", rc == 0 and so == "", show(rc, so, se))


def test_errors(tmp):
    scale = scale_model(os.path.join(tmp, "scale.onnx"))
    garbage = write(os.path.join(tmp, "garbage.onnx"), b"\x0a\xff\xff\xff\xff\x0f garbage")
    missing = os.path.join(tmp, "missing.onnx")
    cases = [
        ("no-model", []),
        ("unknown-option", [scale, "--frobnicate"]),
        ("bad-format", [scale, "--format", "xml"]),
        ("bad-range-syntax", [scale, "--input-range", "x=abc"]),
        ("bad-range-order", [scale, "--input-range", "x=1:0"]),
        ("range-unknown-input", [scale, "--input-range", "nope=0:1"]),
        ("bad-threshold", [scale, "--threshold", "abc"]),
        ("missing-stats", [scale, "--stats", os.path.join(tmp, "nostats.json")]),
        ("bad-stats", [scale, "--stats", write(os.path.join(tmp, "bad.json"), "{not json")]),
        ("missing-config", [scale, "--config", os.path.join(tmp, "none.ini")]),
    ]
    for label, args in cases:
        rc, so, se = run(*args)
        check(f"error:{label}:exit2", rc == 2, show(rc, so, se))
        check(f"error:{label}:stderr", se.strip() != "" and so == "", show(rc, so, se))
    for label, path in [("missing-model", missing), ("garbage-model", garbage), ("directory", tmp)]:
        rc, so, se = run(path, "--input-range", "x=0:1")
        check(f"error:{label}:exit2", rc == 2, show(rc, so, se))
        check(f"error:{label}:file-prefix", se.startswith(path + ": "), show(rc, so, se))
    # An error in one model wins over hazards in another, and the other is still checked.
    rc, so, se = run(scale, garbage, "--input-range", "x=0:100")
    check("error:mixed:exit2", rc == 2, show(rc, so, se))
    m = text_lines("error:mixed", so)
    check("error:mixed:other-checked", any(g["file"] == scale and g["node"] == "scale" for g in m),
          show(rc, so, se))
    rc, doc, se = run_json("error:mixed", scale, garbage, "--input-range", "x=0:100", files=[scale, garbage])
    check("error:mixed-json:exit2", rc == 2, f"rc={rc} {se}")
    if doc:
        check("error:mixed-json:status", [m["status"] for m in doc["models"]] == ["hazards", "error"],
              json.dumps(doc)[:800])


def test_json(tmp):
    scale = scale_model(os.path.join(tmp, "scale.onnx"))
    relu = relu_model(os.path.join(tmp, "relu.onnx"))
    rc, doc, se = run_json("json", scale, relu, "--input-range", "x=0:100", files=[scale, relu])
    check("json:exit1", rc == 1, se)
    if doc:
        check("json:statuses", [m["status"] for m in doc["models"]] == ["hazards", "clean"], json.dumps(doc)[:800])
        check("json:total", doc["hazards"] == 1, json.dumps(doc)[:800])
        check("json:ranged", doc["models"][0]["unranged_inputs"] == [], json.dumps(doc["models"][0])[:800])
        check("json:clean-empty", doc["models"][1]["hazards"] == [], json.dumps(doc["models"][1])[:800])
        hs = hazards_at(doc, "scale", "overflow")
        if check("json:hazard-found", len(hs) == 1, json.dumps(doc)[:800]):
            h = hs[0]
            check("json:op", h["op"] == "Mul", str(h))
            check("json:value", h["value"] == "y", str(h))
            check("json:bound", close(h["bound"], 1e5, 1e-3), str(h))
            check("json:source", h["source"] == "static", str(h))
            check("json:static", close(h["static"]["hi"], 1e5, 1e-3) and h["static"]["lo"] is not None
                  and abs(h["static"]["lo"]) <= 1e-6, str(h))
            check("json:observed-null", h["observed"] is None, str(h))
            check("json:not-suppressed", h["suppressed"] is None, str(h))
    # No range: the input is named and is the one finding; nothing that depends on it is reported.
    rc, doc, se = run_json("json-unranged", scale, files=[scale])
    if doc:
        hs = doc["models"][0]["hazards"]
        check("json-unranged:listed", doc["models"][0]["unranged_inputs"] == ["x"] and rc == 1
              and [(h["node"], h["op"], h["kind"], h["value"], h["source"]) for h in hs]
              == [("x", "input", "unranged-input", "x", "assumed")] and hs[0]["bound"] is None,
              json.dumps(doc)[:800])
    # 1 / x with 0 in x's range: y is unbounded; infinite numbers must come out as null (strict_json
    # refuses Infinity and NaN).
    div = div_model(os.path.join(tmp, "div.onnx"))
    rc, doc, se = run_json("json-unbounded", div, "--input-range", "x=-1:1", files=[div])
    if doc:
        check("json-unbounded:div0", rc == 1 and hazards_at(doc, "recip", "division-by-zero"), json.dumps(doc)[:800])
    # Hazards come in topological order of their nodes ('scale' before 'recip', against the alphabet).
    chain = save_model(os.path.join(tmp, "chain.onnx"),
                       [helper.make_node("Mul", ["x", "k"], ["y"], name="scale"),
                        helper.make_node("Div", ["one", "y"], ["z"], name="recip")],
                       [vi("x")], [vi("z")],
                       [numpy_helper.from_array(np.array(1000.0, np.float32), "k"),
                        numpy_helper.from_array(np.ones((2, 2), np.float32), "one")])
    rc, doc, se = run_json("json-order", chain, "--input-range", "x=0:100", files=[chain])
    if doc:
        nodes = [h["node"] for h in doc["models"][0]["hazards"]]
        check("json-order:topological", "scale" in nodes and "recip" in nodes
              and max(i for i, n in enumerate(nodes) if n == "scale") < min(i for i, n in enumerate(nodes) if n == "recip"),
              str(nodes))
    rc, doc, se = run_json("json-clean", relu, "--input-range", "x=0:1", files=[relu])
    check("json-clean:exit0", rc == 0 and doc is not None and doc["hazards"] == 0
          and doc["models"][0]["status"] == "clean", se)


def test_lfs(tmp):
    lfs = write(os.path.join(tmp, "x.onnx"), LFS_POINTER)
    relu = relu_model(os.path.join(tmp, "relu.onnx"))
    scale = scale_model(os.path.join(tmp, "scale.onnx"))
    rc, so, se = run(lfs)
    check("lfs:exit0", rc == 0, show(rc, so, se))
    check("lfs:notice", re.search(r"^" + re.escape(lfs) + r": note: .*Git LFS pointer", se, re.M), show(rc, so, se))
    check("lfs:no-stdout", so == "", show(rc, so, se))
    rc, so, se = run(lfs, relu, "--input-range", "x=0:1")
    check("lfs:with-clean-exit0", rc == 0, show(rc, so, se))
    rc, so, se = run(lfs, scale, "--input-range", "x=0:100")
    check("lfs:with-hazard-exit1", rc == 1, show(rc, so, se))
    rc, so, se = run(lfs, "--strict-lfs")
    check("lfs:strict-exit2", rc == 2 and se.startswith(lfs + ": "), show(rc, so, se))
    rc, doc, se = run_json("lfs", lfs, relu, "--input-range", "x=0:1", files=[lfs, relu])
    if doc:
        check("lfs:json-skipped", doc["models"][0]["status"] == "skipped"
              and "LFS" in doc["models"][0].get("message", ""), json.dumps(doc)[:800])
    rc, doc, se = run_json("lfs-strict", lfs, "--strict-lfs", files=[lfs])
    if doc:
        check("lfs-strict:json-error", rc == 2 and doc["models"][0]["status"] == "error", json.dumps(doc)[:800])


def test_config(tmp):
    proj = os.path.join(tmp, "proj")
    model = scale_model(os.path.join(proj, "a", "b", "scale.onnx"))
    ini = os.path.join(proj, ".halfguard.ini")

    def cfg(text, path=ini):
        write(path, text)

    # Ranges found by walking up two folders; the glob is relative to the ini's folder. A range that
    # applies shows as the overflow it makes visible (x in [0, 100]: y reaches 1e5); one that does not
    # leaves x unranged (exit 0, a note). Then [0, 50] tells the range's value is the file's.
    unranged = re.compile(r"^.*scale\.onnx: note: .*input 'x'", re.M)
    finding = re.compile(r"^.*scale\.onnx: input 'x': unranged-input: ", re.M)
    cfg("[ranges a/b/*.onnx]\nx = 0:100\n")
    rc, so, se = run(model)
    check("config:ranges-exit1", rc == 1 and not unranged.search(se) and not finding.search(so), show(rc, so, se))
    rc, so, se = run("b/scale.onnx", cwd=os.path.join(proj, "a"))
    check("config:relative-path-exit1", rc == 1, show(rc, so, se))
    rc, so, se = run(model, cwd="/")
    check("config:cwd-independent-exit1", rc == 1, show(rc, so, se))
    rc, doc, se = run_json("config", model, files=[model])
    check("config:json-ranged", doc is not None and doc["models"][0]["unranged_inputs"] == [], se)
    rc, so, se = run(model, "--no-config")
    check("config:no-config-unranged", rc == 1 and unranged.search(se) and finding.search(so), show(rc, so, se))
    cfg("[ranges a/b/*.onnx]\nx = 0:50\n")
    rc, so, se = run(model)
    check("config:range-value-exit0", rc == 0 and not unranged.search(se), show(rc, so, se))
    cfg("[ranges other/*.onnx]\nx = 0:100\n")
    rc, so, se = run(model)
    check("config:glob-mismatch-unranged", rc == 1 and unranged.search(se) and finding.search(so), show(rc, so, se))
    cfg("[ranges *]\n* = 0:100\n")
    rc, so, se = run(model)
    check("config:star-glob-and-key-exit1", rc == 1, show(rc, so, se))
    # The first file found wins: an ini nearer the model hides the one above.
    inner = os.path.join(proj, "a", ".halfguard.ini")
    cfg("[check]\nthreshold = 65504\n", inner)
    rc, so, se = run(model)
    check("config:nearest-wins-unranged", rc == 1 and unranged.search(se) and finding.search(so), show(rc, so, se))
    os.remove(inner)
    # The command line's ranges win over the file's.
    cfg("[ranges *]\nx = 0:100\n")
    rc, so, se = run(model, "--input-range", "x=0:50")
    check("config:cli-range-wins-exit0", rc == 0, show(rc, so, se))
    cfg("[ranges *]\nx = 0:50\n")
    rc, so, se = run(model, "--input-range", "x=0:100")
    check("config:cli-range-wins-exit1", rc == 1, show(rc, so, se))
    # Threshold from [check]; the command line's --threshold wins.
    cfg("[check]\nthreshold = 200000\n\n[ranges *]\nx = 0:100\n")
    rc, so, se = run(model)
    check("config:threshold-exit0", rc == 0, show(rc, so, se))
    rc, so, se = run(model, "--threshold", "65504")
    check("config:cli-threshold-wins-exit1", rc == 1, show(rc, so, se))

    # Suppressions.
    reason = "x is pre-scaled by 1e-3 upstream"
    base = "[ranges *]\nx = 0:100\n\n"
    cfg(base + f"[suppress scaling]\nnode = sc*\nkind = overflow\nreason = {reason}\n")
    rc, so, se = run(model)
    check("suppress:exit0", rc == 0 and so == "", show(rc, so, se))
    rc, doc, se = run_json("suppress", model, files=[model])
    if doc:
        hs = hazards_at(doc, "scale", "overflow")
        check("suppress:json-listed", len(hs) == 1 and hs[0]["suppressed"] == reason, json.dumps(doc)[:800])
        check("suppress:json-not-counted", doc["hazards"] == 0 and doc["models"][0]["status"] == "clean",
              json.dumps(doc)[:800])
    rc, so, se = run(model, "--show-suppressed")
    check("suppress:show-suppressed", rc == 0 and "'scale'" in so and reason in so, show(rc, so, se))
    rc, so, se = run(model, "--no-config", "--input-range", "x=0:100")
    check("suppress:no-config-exit1", rc == 1, show(rc, so, se))
    for label, group, want in [
        ("kind-mismatch", f"node = scale\nkind = precision-loss\nreason = {reason}\n", 1),
        ("kind-default-star", f"node = scale\nreason = {reason}\n", 0),
        ("kind-star", f"node = *\nkind = *\nreason = {reason}\n", 0),
        ("node-mismatch", f"node = shift*\nkind = overflow\nreason = {reason}\n", 1),
        ("model-glob-match", f"node = scale\nmodel = a/*/scale.onnx\nreason = {reason}\n", 0),
        ("model-glob-mismatch", f"node = scale\nmodel = other/*.onnx\nreason = {reason}\n", 1),
        ("no-reason", "node = scale\nkind = overflow\n", 2),
        ("empty-reason", "node = scale\nkind = overflow\nreason =\n", 2),
        ("no-node", f"kind = overflow\nreason = {reason}\n", 2),
        ("unknown-kind", f"node = scale\nkind = overflw\nreason = {reason}\n", 2),
    ]:
        cfg(base + "[suppress s]\n" + group)
        rc, so, se = run(model)
        check(f"suppress:{label}:exit{want}", rc == want, show(rc, so, se))
        if want == 2:
            check(f"suppress:{label}:names-config", ".halfguard.ini" in se, show(rc, so, se))

    # --config FILE replaces the walk; --no-config ignores every file.
    cfg(base)
    other = os.path.join(tmp, "elsewhere", "ranges.ini")
    cfg("[ranges *]\nx = 0:50\n", other)
    rc, so, se = run(model, "--config", other)
    check("config-file:exit0", rc == 0, show(rc, so, se))
    rc, so, se = run(model)
    check("config-file:walk-exit1", rc == 1, show(rc, so, se))
    cfg(base + f"[suppress all]\nnode = *\nreason = {reason}\n")
    cfg("[check]\nthreshold = 65504\n", other)
    rc, so, se = run(model, "--config", other, "--input-range", "x=0:100")
    check("config-file:replaces-walk-exit1", rc == 1, show(rc, so, se))


def test_stats(tmp):
    scale = scale_model(os.path.join(tmp, "scale.onnx"))
    big = np.array([[49152.0, -3.0], [1.0, 2.0]])     # 49152 is exact in FP16 and FP32
    small = np.array([[10000.0, 0.5], [0.0, 2.0]], np.float32)

    # Polygraphy --save-outputs, two runners (FP32 and FP16 arrays), two iterations: the large values
    # decide the hazard. x has no range, so the static bound is unbounded: the bound is calibration's.
    # These statistics hold the output alone, not x: x stays an unranged-input finding, counted apart.
    outs = write(os.path.join(tmp, "outputs.json"), poly_outputs([
        ("onnxrt-runner-N0-11/22/26-10:03:00", [{"y": small}]),
        ("trt-runner-N0-11/22/26-10:03:00", [{"y": small}, {"y": big.astype(np.float16)}]),
    ]))
    rc, doc, se = run_json("polygraphy", scale, "--stats", outs, files=[scale])
    check("polygraphy:exit1", rc == 1, se)
    if doc:
        hs = hazards_at(doc, "scale", "overflow")
        if check("polygraphy:hazard", len(hs) == 1, json.dumps(doc)[:800]):
            h = hs[0]
            check("polygraphy:source-calibration", h["source"] == "calibration", str(h))
            check("polygraphy:observed", h["observed"] is not None and h["observed"]["hi"] == 49152.0
                  and h["observed"]["lo"] == -3.0, str(h))
            check("polygraphy:bound-margin", close(h["bound"], 2 * 49152.0, 1e-6), str(h))
            check("polygraphy:static-kept", h["static"]["hi"] is None, str(h))
    rc, so, se = run(scale, "--stats", outs)
    m = [g for g in text_lines("polygraphy", so) if g["kind"] != "unranged-input"]
    if check("polygraphy:text-line", len(m) == 1, show(rc, so, se)):
        msg = m[0]["msg"]
        check("polygraphy:text-calibration", "(calibration)" in msg, msg)
        check("polygraphy:text-observed", "observed" in msg and any(
            close(float(x), 49152.0, 0.02) for x in re.findall(NUM, msg)), msg)
    # The margin is what makes it a hazard: 49152 * 1 < 65504.
    rc, so, se = run(scale, "--stats", outs, "--margin", "1")
    check("polygraphy:margin1-no-overflow", [g["kind"] for g in text_lines("polygraphy-margin1", so)]
          == ["unranged-input"], show(rc, so, se))

    # Statistics lower a static bound: static 1e5, observed 1e4 * 2 = 2e4.
    small_outs = write(os.path.join(tmp, "small.json"),
                       poly_outputs([("onnxrt-runner-N0", [{"y": small}, {"y": small / 2}])]))
    rc, so, se = run(scale, "--input-range", "x=0:100", "--stats", small_outs)
    check("calibrated:clean-exit0", rc == 0 and so == "", show(rc, so, se))
    rc, so, se = run(scale, "--input-range", "x=0:100", "--stats", small_outs, "--margin", "8")
    check("calibrated:margin8-exit1", rc == 1, show(rc, so, se))
    rc, doc, se = run_json("calibrated-margin", scale, "--input-range", "x=0:100", "--stats", small_outs,
                           "--margin", "8", files=[scale])
    if doc:
        hs = hazards_at(doc, "scale", "overflow")
        check("calibrated:margin8-bound", len(hs) == 1 and close(hs[0]["bound"], 8e4, 1e-6)
              and hs[0]["source"] == "calibration" and close(hs[0]["static"]["hi"], 1e5, 1e-3), json.dumps(doc)[:800])
    # The margin from [check] in the configuration file.
    write(os.path.join(tmp, ".halfguard.ini"), "[check]\nmargin = 8\n")
    rc, so, se = run(scale, "--input-range", "x=0:100", "--stats", small_outs)
    check("calibrated:config-margin-exit1", rc == 1, show(rc, so, se))
    os.remove(os.path.join(tmp, ".halfguard.ini"))

    # --stats is repeatable; files fold together (min of mins, max of maxes).
    neg = write(os.path.join(tmp, "neg.json"),
                poly_outputs([("onnxrt-runner-N1", [{"y": np.array([[-7.0, 0], [0, 0]], np.float32)}])]))
    rc, doc, se = run_json("stats-merge", scale, "--stats", outs, "--stats", neg, files=[scale])
    if doc:
        hs = hazards_at(doc, "scale", "overflow")
        check("stats-merge:observed", len(hs) == 1 and hs[0]["observed"] == {"lo": -7.0, "hi": 49152.0},
              json.dumps(doc)[:800])

    # A --save-inputs style file: a list of {name: ndarray}, one per iteration.
    # (x spans [-1, 1], so the result is the same whether or not observed inputs narrow x's range.)
    inputs = write(os.path.join(tmp, "inputs.json"), poly_inputs([
        {"x": np.full((2, 2), -1.0, np.float32), "y": np.array([[-3, 1], [2, 4]], np.float32)},
        {"x": np.full((2, 2), 1.0, np.float32), "y": big.astype(np.float32)},
    ]))
    rc, doc, se = run_json("poly-inputs", scale, "--stats", inputs, files=[scale])
    check("poly-inputs:exit1", rc == 1, se)
    if doc:
        hs = hazards_at(doc, "scale", "overflow")
        check("poly-inputs:observed", len(hs) == 1 and hs[0]["source"] == "calibration"
              and hs[0]["observed"] == {"lo": -3.0, "hi": 49152.0}, json.dumps(doc)[:800])

    # halfguard's own statistics: `halfguard calibrate`, and --calib on the same folders.
    def data_dir(name, x, npy=False):
        return hgtest.write_inputs(os.path.join(tmp, name), [("x", x)], "npy" if npy else "pb")

    def observed(label, doc):
        hs = hazards_at(doc, "scale", "overflow")
        check(f"{label}:observed", len(hs) == 1 and hs[0]["source"] == "calibration"
              and hs[0]["observed"] is not None and close(hs[0]["observed"]["hi"], y_hi, 1e-6),
              json.dumps(doc)[:800])

    xs_big = np.array([[10, 20], [30, 49.152]], np.float32)
    xs_small = np.array([[1, 2], [5, 10]], np.float32)
    y_hi = float(xs_big.max() * np.float32(1000))
    d_big, d_small = data_dir("big", xs_big), data_dir("small", xs_small)
    d_npy = data_dir("small_npy", xs_small / 2, npy=True)
    stats = os.path.join(tmp, "stats.json")
    rc, _, se = calibrate(scale, "--data", d_big, "--data", d_small, "-o", stats)
    if check("calibrate:exit0", rc == 0, se):
        rc, doc, se = run_json("own-stats", scale, "--stats", stats, files=[scale])
        check("own-stats:exit1", rc == 1, se)
        if doc:
            observed("own-stats", doc)
    rc, doc, se = run_json("calib-dir", scale, "--calib", d_big, "--calib", d_small, files=[scale])
    check("calib-dir:exit1", rc == 1, se)
    if doc:
        observed("calib-dir", doc)
    # Small samples: observed 1e4 * 2 < 65504 although the static bound, 1e5, is a hazard.
    small_stats = os.path.join(tmp, "small_stats.json")
    rc, _, se = calibrate(scale, "--data", d_small, "--data", d_npy, "-o", small_stats)
    check("calibrate-small:exit0", rc == 0, se)
    rc, so, se = run(scale, "--input-range", "x=0:100", "--stats", small_stats)
    check("own-stats-small:exit0", rc == 0 and so == "", show(rc, so, se))
    rc, so, se = run(scale, "--input-range", "x=0:100", "--calib", d_small, "--calib", d_npy)
    check("calib-dir-small:exit0", rc == 0 and so == "", show(rc, so, se))
    rc, so, se = run(scale, "--calib", os.path.join(tmp, "no-such-dir"))
    check("calib-dir-missing:exit2", rc == 2, show(rc, so, se))


def sarif_cases(tmp):
    """label -> (args, exit code wanted, the model paths in order). Covers hazards of several kinds,
    a suppressed one, a clean model and an LFS pointer."""
    proj = os.path.join(tmp, "proj")
    scale = scale_model(os.path.join(proj, "models", "scale.onnx"))
    relu = relu_model(os.path.join(proj, "models", "relu.onnx"))
    inf = inf_model(os.path.join(proj, "models", "inf.onnx"))
    div = div_model(os.path.join(proj, "models", "div.onnx"))
    lfs = write(os.path.join(proj, "models", "x.onnx"), LFS_POINTER)
    sup = scale_model(os.path.join(tmp, "suppressed", "scale.onnx"))
    write(os.path.join(tmp, "suppressed", ".halfguard.ini"),
          "[ranges *]\nx = 0:100\n\n[suppress scaling]\nnode = scale\nkind = overflow\n"
          "reason = inputs are pre-scaled upstream\n")
    return {
        "several": (["--input-range", "x=-100:100", scale, relu, inf, div, lfs], 1, [scale, relu, inf, div, lfs]),
        "clean": (["--input-range", "x=0:1", relu], 0, [relu]),
        "suppressed": ([sup], 0, [sup]),
        "relative": (["--input-range", "x=0:100", "models/scale.onnx"], 1, ["models/scale.onnx"]),
    }, proj


def run_sarif(label, args, cwd):
    rc, so, se = run("--format", "sarif", *args, cwd=cwd)
    try:
        return rc, strict_json(so), se
    except ValueError as e:
        check(f"sarif:{label}:parses", False, f"{e}\n{show(rc, so, se)}")
        return rc, None, se


def test_sarif_structure(tmp):
    cases, proj = sarif_cases(tmp)
    for label, (args, want, files) in cases.items():
        rc, doc, se = run_sarif(label, args, proj)
        check(f"sarif:{label}:exit{want}", rc == want, f"rc={rc} {se}")
        if doc is None:
            continue
        check(f"sarif:{label}:version", doc.get("version") == "2.1.0", str(doc)[:300])
        runs = doc.get("runs", [])
        if not check(f"sarif:{label}:one-run", len(runs) == 1, str(doc)[:300]):
            continue
        r = runs[0]
        driver = r.get("tool", {}).get("driver", {})
        check(f"sarif:{label}:driver", driver.get("name") == "halfguard", str(driver)[:300])
        rules = driver.get("rules", [])
        ids = [x.get("id") for x in rules]
        check(f"sarif:{label}:rule-ids", len(ids) == len(set(ids)) and set(ids) <= set(KINDS), str(ids))
        res = r.get("results", [])
        for i, x in enumerate(res):
            rid = x.get("ruleId")
            check(f"sarif:{label}:{i}:rule-declared", rid in ids, f"{rid} not in {ids}")
            if "ruleIndex" in x:
                check(f"sarif:{label}:{i}:rule-index", 0 <= x["ruleIndex"] < len(ids) and ids[x["ruleIndex"]] == rid,
                      str(x)[:300])
            check(f"sarif:{label}:{i}:level", x.get("level") == SARIF_LEVEL.get(rid), f"{rid}: {x.get('level')}")
            check(f"sarif:{label}:{i}:message", x.get("message", {}).get("text", "").strip() != "", str(x)[:300])
            loc = (x.get("locations") or [{}])[0]
            uri = loc.get("physicalLocation", {}).get("artifactLocation", {}).get("uri")
            check(f"sarif:{label}:{i}:uri-is-model", uri in files, f"{uri} not in {files}")
            logical = (loc.get("logicalLocations") or [{}])[0]
            node = logical.get("name")
            check(f"sarif:{label}:{i}:logical", logical.get("kind") == "function"
                  and logical.get("fullyQualifiedName") == f"{uri}::{node}", str(logical))
        by = {(x.get("ruleId"), (x.get("locations") or [{}])[0].get("logicalLocations", [{}])[0].get("name")): x
              for x in res}
        if label == "several":
            scale, relu, inf, div, lfs = files
            check("sarif:several:overflow", ("overflow", "scale") in by, str(sorted(by)))
            check("sarif:several:nonfinite", ("non-finite-constant", "addc") in by, str(sorted(by)))
            check("sarif:several:div0", ("division-by-zero", "recip") in by, str(sorted(by)))
            uris = {(x.get("locations") or [{}])[0].get("physicalLocation", {}).get("artifactLocation", {})
                    .get("uri") for x in res}
            check("sarif:several:clean-and-lfs-no-results", relu not in uris and lfs not in uris, str(uris))
            x = by.get(("overflow", "scale"), {})
            check("sarif:several:overflow-uri",
                  x.get("locations", [{}])[0].get("physicalLocation", {}).get("artifactLocation", {}).get("uri")
                  == scale, str(x)[:400])
            check("sarif:several:not-suppressed", all(not x.get("suppressions") for x in res), str(res)[:400])
        # code scanning: each rule's help, a stable fingerprint per finding, paths from the repository
        check(f"sarif:{label}:rule-help", all(x.get("help", {}).get("text") and x.get("help", {}).get("markdown")
                                             and x.get("fullDescription", {}).get("text") for x in rules),
              str(rules)[:400])
        fps = [x.get("partialFingerprints", {}).get("halfguardFinding/v1") for x in res]
        check(f"sarif:{label}:fingerprints", all(fps) and len(set(fps)) == len(fps), str(fps))
        again = run_sarif(label, args, proj)[1] or {}
        check(f"sarif:{label}:fingerprints-stable",
              [x.get("partialFingerprints") for x in again.get("runs", [{}])[0].get("results", [])]
              == [x.get("partialFingerprints") for x in res], "a second run gave other fingerprints")
        arts = [(x.get("locations") or [{}])[0].get("physicalLocation", {}).get("artifactLocation", {}) for x in res]
        check(f"sarif:{label}:uri-base", all(a.get("uriBaseId") == (None if a.get("uri", "").startswith("/")
                                                                     else "%SRCROOT%") for a in arts), str(arts))
        if label == "clean":
            check("sarif:clean:no-results", res == [], str(res)[:300])
        if label == "suppressed":
            x = by.get(("overflow", "scale"))
            if check("sarif:suppressed:listed", x is not None, str(res)[:400]):
                check("sarif:suppressed:suppressions", x.get("suppressions") == [
                    {"kind": "external", "justification": "inputs are pre-scaled upstream"}],
                    str(x.get("suppressions")))


def test_glob_ranges(tmp):
    """-r NAME may be a glob ('past_*'): every input it matches takes the range, an exact name wins
    over it, and a glob that matches no input is an error like a name that does not."""
    m = save_model(os.path.join(tmp, "globs.onnx"),
                   [helper.make_node("Sum", ["past_0", "past_1", "x"], ["y"], name="sum")],
                   [vi("past_0"), vi("past_1"), vi("x")], [vi("y")])
    rc, so, se = run(m, "--no-config", "-r", "past_*=-5:5", "--format", "json")
    doc = json.loads(so) if rc in (0, 1) else {}
    model = (doc.get("models") or [{}])[0]
    check("glob:matches", model.get("unranged_inputs") == ["x"], show(rc, so, se))
    ranges = {i["name"]: i.get("range") for i in model.get("inputs", [])}
    check("glob:range", ranges.get("past_1") == {"lo": -5, "hi": 5}, str(ranges))
    rc, so, se = run(m, "--no-config", "-r", "past_*=-5:5", "-r", "past_1=0:1", "-r", "x=0:1", "--format", "json")
    ranges = {i["name"]: i.get("range") for i in json.loads(so)["models"][0]["inputs"]} if rc in (0, 1) else {}
    check("glob:exact-wins", ranges.get("past_1") == {"lo": 0, "hi": 1} and ranges.get("past_0") == {"lo": -5, "hi": 5},
          str(ranges))
    rc, so, se = run(m, "--no-config", "-r", "kv_*=0:1")
    check("glob:no-match", rc == 2 and "no input 'kv_*'" in se, show(rc, so, se))


def test_fail_on(tmp):
    """--fail-on: exit 1 only for the levels and kinds listed; a level takes the levels above it."""
    m = scale_model(os.path.join(tmp, "scale.onnx"))
    for spec, want in (("error", 1), ("warning", 1), ("note", 1), ("overflow", 1),
                       ("division-by-zero,precision-loss", 0), ("underflow, overflow", 1)):
        rc, so, se = run(m, "--input-range", "x=-100:100", "--no-config", "--fail-on", spec)
        check(f"fail-on:{spec}", rc == want and "overflow" in so, show(rc, so, se))
    # an unranged input alone is a warning: it fails a warning gate, not an error gate
    rc, _, se = run(m, "--no-config", "--fail-on", "error")
    check("fail-on:unranged-error", rc == 0, se)
    rc, _, se = run(m, "--no-config", "--fail-on", "warning")
    check("fail-on:unranged-warning", rc == 1, se)
    rc, _, se = run(m, "--no-config", "--fail-on", "errors")
    check("fail-on:unknown-word", rc == 2 and "'errors' is neither a level" in se, se)


def fixed_model(path):
    """A float32-min additive mask read only by Softmax (clamp_constants makes it -65504) and a
    decomposed LayerNorm whose epsilon 1e-12 flushes in FP16 (fuse_layernorm keeps it inside
    LayerNormalization): both hazards convert rewrites away by itself."""
    f32min = float(np.finfo(np.float32).min)
    inits = [numpy_helper.from_array(np.array([[0.0, f32min]] * 2, np.float32), "mask"),
             numpy_helper.from_array(np.array(2.0, np.float32), "two"),
             numpy_helper.from_array(np.array(1e-12, np.float32), "eps")]
    nodes = [helper.make_node("Add", ["x", "mask"], ["logits"], name="mask_add"),
             helper.make_node("Softmax", ["logits"], ["p"], name="softmax", axis=-1),
             helper.make_node("ReduceMean", ["p"], ["mean"], name="ln_mean", axes=[-1]),
             helper.make_node("Sub", ["p", "mean"], ["d"], name="ln_sub"),
             helper.make_node("Pow", ["d", "two"], ["sq"], name="ln_pow"),
             helper.make_node("ReduceMean", ["sq"], ["var"], name="ln_var", axes=[-1]),
             helper.make_node("Add", ["var", "eps"], ["ve"], name="ln_add_eps"),
             helper.make_node("Sqrt", ["ve"], ["sd"], name="ln_sqrt"),
             helper.make_node("Div", ["d", "sd"], ["y"], name="ln_div")]
    return save_model(path, nodes, [vi("x")], [vi("y")], inits)


def unknown_op_model(path):
    """y = Relu(Frob(x)) with Frob an op of domain com.example: halfguard has no rule for it."""
    return save_model(path, [helper.make_node("Frob", ["x"], ["f"], name="frob", domain="com.example"),
                             helper.make_node("Relu", ["f"], ["y"], name="relu")],
                      [vi("x")], [vi("y")], domains=["com.example"], value_info=[vi("f")])


def reducemean_model(path):
    """y = ReduceMean(x) over 4096 values: with x in [0, 100] the running sum passes 65504."""
    return save_model(path, [helper.make_node("ReduceMean", ["x"], ["y"], name="mean", axes=[1])],
                      [vi("x", (1, 4096))], [vi("y", (1, 1))])


def test_fixed_unknown_accumulate(tmp):
    # Hazards convert rewrites away are listed but not counted.
    fm = fixed_model(os.path.join(tmp, "fixed.onnx"))
    rc, so, se = run(fm, "--input-range", "x=-1:1", "--no-config")
    check("fixed:exit0", rc == 0 and so == "", show(rc, so, se))
    check("fixed:note", re.search(r"fixed\.onnx: note: 3 hazards that convert rewrites away by itself "
                                  r"\(clamp_constants: 1 non-finite-constant, fuse_layernorm: 1 underflow, "
                                  r"fuse_layernorm: 1 division-by-zero\) are not counted; --show-fixed lists them",
                                  se), show(rc, so, se))
    rc, so, se = run(fm, "--input-range", "x=-1:1", "--no-config", "--show-fixed")
    lines = text_lines("fixed:show", so)
    check("fixed:show-lines", rc == 0 and sorted((m["node"], m["kind"]) for m in lines)
          == [("ln_add_eps", "underflow"), ("ln_div", "division-by-zero"), ("mask_add", "non-finite-constant")]
          and all(m["msg"].endswith(("[fixed by convert: clamp_constants]", "[fixed by convert: fuse_layernorm]"))
                  for m in lines), show(rc, so, se))
    rc, doc, se = run_json("fixed", fm, "--input-range", "x=-1:1", "--no-config", files=[fm])
    if doc:
        m = doc["models"][0]
        check("fixed:json", rc == 0 and m["status"] == "clean" and doc["hazards"] == 0
              and {(h["node"], h["fixed_by"]) for h in m["hazards"]}
              == {("mask_add", "clamp_constants"), ("ln_add_eps", "fuse_layernorm"), ("ln_div", "fuse_layernorm")},
              json.dumps(m)[:800])
    rc, doc, se = run_sarif("fixed", [fm, "--input-range", "x=-1:1", "--no-config"], tmp)
    res = doc["runs"][0]["results"] if doc else []
    check("fixed:sarif-notes", rc == 0 and len(res) == 3 and all(
        x["level"] == "note" and x["properties"]["fixedBy"] in ("clamp_constants", "fuse_layernorm") for x in res),
        str(res)[:600])
    # A hazard convert keeps FP32 still counts beside a fixed one.
    sm = scale_model(os.path.join(tmp, "scale.onnx"))
    rc, so, se = run(sm, fm, "--input-range", "x=0:100", "--no-config")
    check("fixed:others-count", rc == 1 and [(m["node"], m["kind"]) for m in text_lines("fixed:others", so)]
          == [("scale", "overflow")], show(rc, so, se))

    # An op halfguard has no row for: a note, JSON's unknown_ops, a SARIF notification.
    um = unknown_op_model(os.path.join(tmp, "unknown.onnx"))
    note = ("unknown.onnx: note: op 'com.example.Frob' (1 node) is unknown to halfguard: convert keeps it "
            "FP32 with Casts around it; the 2 float tensors computed from its output that no rule bounds are "
            "not checked")
    rc, so, se = run(um, "--input-range", "x=-1:1", "--no-config")
    check("unknown:note", rc == 0 and so == "" and se.count(note) == 1, show(rc, so, se))
    rc, doc, se = run_json("unknown", um, "--input-range", "x=-1:1", "--no-config", files=[um])
    if doc:
        check("unknown:json", doc["models"][0]["unknown_ops"] == [{"op": "com.example.Frob", "nodes": 1,
                                                                  "downstream": 2}], json.dumps(doc)[:600])
    rc, doc, se = run_sarif("unknown", [um, "--input-range", "x=-1:1", "--no-config"], tmp)
    notes = doc["runs"][0]["invocations"][0]["toolExecutionNotifications"] if doc else []
    check("unknown:sarif", [n["level"] for n in notes] == ["note"] and "com.example.Frob" in notes[0]["message"]["text"],
          str(notes)[:600])

    # What a rule bounds whatever an unknown op gives is checked: a Div by a table of [0, 10] gathered
    # at the index Frob computes may divide by 0 (division-by-zero, FP32), where before everything
    # after the unknown op was open and the divisor rule skipped it. The quotient, which no rule
    # bounds (1 / 0), is the one float tensor left unchecked.
    gm = save_model(os.path.join(tmp, "gathered.onnx"),
                    [helper.make_node("Frob", ["x"], ["idx"], name="frob", domain="com.example"),
                     helper.make_node("Gather", ["table", "idx"], ["g"], name="gather", axis=0),
                     helper.make_node("Div", ["one", "g"], ["y"], name="inverse")],
                    [vi("x", (1, 4), TensorProto.INT64)], [vi("y", (1, 4, 8))], domains=["com.example"],
                    value_info=[vi("idx", (1, 4), TensorProto.INT64)],
                    inits=[numpy_helper.from_array(np.linspace(0, 10, 80, dtype=np.float32).reshape(10, 8), "table"),
                           numpy_helper.from_array(np.array(1, np.float32), "one")])
    rc, so, se = run(gm, "--input-range", "x=0:9", "--no-config")
    check("unknown:bounded-after-checked", rc == 1 and [(m["node"], m["kind"]) for m in text_lines("unknown:bounded", so)]
          == [("inverse", "division-by-zero")] and "the 1 float tensor computed from its output that no rule bounds "
          "is not checked" in se, show(rc, so, se))

    # The accumulation model: a ReduceMean whose running sum passes 65504 is a hazard only where the
    # runtime keeps that sum in FP16.
    rm = reducemean_model(os.path.join(tmp, "mean.onnx"))
    rc, so, se = run(rm, "--input-range", "x=0:100", "--no-config")
    check("accumulate:targets-clean", rc == 0 and so == "", show(rc, so, se))
    # convert cures it (prescale: x pre-scaled by 2^-k, the mean scaled back), so check lists it as
    # fixed and counts nothing; --show-fixed shows it.
    rc, so, se = run(rm, "--input-range", "x=0:100", "--no-config", "--accumulate", "fp16")
    check("accumulate:fp16-fixed", rc == 0 and so == "" and "prescale: 1 internal-overflow" in se,
          show(rc, so, se))
    rc, so, se = run(rm, "--input-range", "x=0:100", "--no-config", "--accumulate", "fp16", "--show-fixed")
    lines = text_lines("accumulate:fp16", so)
    check("accumulate:fp16-internal", [(m["node"], m["kind"]) for m in lines]
          == [("mean", "internal-overflow")] and "4096 terms" in so and "prescale" in so, show(rc, so, se))
    rc, so, se = run(rm, "--input-range", "x=0:100", "--no-config", "--accumulate", "fp32")
    check("accumulate:bad-value", rc == 2 and "--accumulate must be targets or fp16" in se, show(rc, so, se))


def fetch_sarif_schema():
    """The official SARIF 2.1.0 schema (see the module comment), or None with the reason printed."""
    cache = os.environ.get("HG_SARIF_CACHE") or os.path.join(tempfile.gettempdir(), "halfguard-sarif-schema")
    target = os.path.join(cache, os.path.basename(SARIF_MEMBER))
    if os.path.exists(target) and hashlib.sha256(open(target, "rb").read()).hexdigest() != SARIF_SHA256:
        os.remove(target)  # a damaged copy: fetch again
    if not os.path.exists(target):
        if not shutil.which("npm"):
            print("SKIP: npm is not installed (apt-get install npm): no SARIF schema")
            return None
        os.makedirs(cache, exist_ok=True)
        with tempfile.TemporaryDirectory(dir=cache) as work:
            p = subprocess.run(["npm", "pack", "--silent", "--pack-destination", work,
                                f"{SARIF_PACKAGE}@{SARIF_PACKAGE_VERSION}"], capture_output=True, text=True)
            tgz = [f for f in os.listdir(work) if f.endswith(".tgz")]
            if p.returncode or not tgz:
                print(f"SKIP: npm pack {SARIF_PACKAGE}@{SARIF_PACKAGE_VERSION} failed: {p.stderr.strip()[-300:]}")
                return None
            with tarfile.open(os.path.join(work, tgz[0])) as t:
                data = t.extractfile(SARIF_MEMBER).read()
            tmp = os.path.join(work, "schema.json")
            with open(tmp, "wb") as f:
                f.write(data)
            os.replace(tmp, target)
    data = open(target, "rb").read()
    digest = hashlib.sha256(data).hexdigest()
    if digest != SARIF_SHA256:
        check("sarif-schema:sha256", False, f"{target}: sha256 {digest}, want {SARIF_SHA256}")
        return None
    return json.loads(data)


def test_sarif_schema(tmp, schema):
    cls = jsonschema.validators.validator_for(schema)
    cls.check_schema(schema)
    validator = cls(schema, format_checker=jsonschema.FormatChecker())
    # The validator must be able to fail: a log with a wrong version and a result without a message.
    bogus = {"version": "2.0.0", "runs": [{"tool": {"driver": {"name": "x"}}, "results": [{"ruleId": "a"}]}]}
    check("sarif-schema:rejects-bogus", len(list(validator.iter_errors(bogus))) >= 2)
    cases, proj = sarif_cases(tmp)
    for label, (args, want, _) in cases.items():
        rc, doc, se = run_sarif(label, args, proj)
        if doc is None:
            continue
        errors = sorted(validator.iter_errors(doc), key=lambda e: list(e.absolute_path))
        check(f"sarif-schema:{label}:valid", not errors,
              "\n".join(f"{list(e.absolute_path)}: {e.message[:200]}" for e in errors[:5]))


def main():
    # check walks up from each model for a .halfguard.ini: one above the temporary folder would change
    # every result here.
    d = tempfile.gettempdir()
    while True:
        if os.path.exists(os.path.join(d, ".halfguard.ini")):
            print(f"FAIL {d}/.halfguard.ini is above the test's temporary folder; set TMPDIR elsewhere")
            sys.exit(1)
        if os.path.dirname(d) == d:
            break
        d = os.path.dirname(d)
    if SARIF_SCHEMA_MODE:
        schema = fetch_sarif_schema()
        if schema is None and not check.results:
            sys.exit(77)
        if schema is not None:
            def sarif_schema(tmp):
                test_sarif_schema(tmp, schema)
            hgtest.temp_folders(check, "hg-check-", [sarif_schema])
    else:
        hgtest.temp_folders(check, "hg-check-", [
            test_exit_codes_and_text, test_errors, test_json, test_lfs, test_config, test_stats,
            test_sarif_structure, test_fixed_unknown_accumulate, test_fail_on, test_glob_ranges])
    sys.exit(check.finish())


main()
