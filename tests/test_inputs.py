#!/usr/bin/python3
"""Graph inputs without ranges (issue 13): what halfguard derives from the model itself, and what it
says and does about an input it has no range for.

- Derived ranges: an integer input that only indexes Gathers (through Cast, Reshape, Unsqueeze...)
  takes [0, rows - 1] of the smallest table along each Gather's axis; a bool input [0, 1]; an input
  whose every value saturates (Sigmoid, Tanh) or is read for its shape needs none. Each is listed in
  check's JSON as "derived" or "unneeded" with the reason, and noted on stderr; what cannot be derived
  soundly (an id cast to float, a Softmax's input, an integer that is a Reshape's shape) is not.

Usage: test_inputs.py HALFGUARD
"""
import json
import os
import sys

import jsonschema
import numpy as np
from onnx import TensorProto, helper, numpy_helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hgtest  # noqa: E402
from hgtest import save_model, vi  # noqa: E402

HG = sys.argv[1]
run = hgtest.tool(HG)
check = hgtest.Checks()
I64, I32, BOOL = TensorProto.INT64, TensorProto.INT32, TensorProto.BOOL


VALIDATOR = jsonschema.Draft7Validator(json.load(open(os.path.join(hgtest.HERE, "check_schema.json"))))


def show(rc, so, se):
    return f"rc={rc}\nstdout: {so[:1500]!r}\nstderr: {se[:1500]!r}"


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


def derive_model(path):
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


def main():
    hgtest.temp_folders(check, "hg-inputs-", [test_derived])
    sys.exit(check.finish())


main()
