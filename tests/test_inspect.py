#!/usr/bin/python3
"""halfguard inspect (issue 16): a model described for a person meeting it.

A model with a float input of symbolic dims, token ids that only index an embedding table, a bool
mask, an op halfguard does not know and weights in an external data file. The text names each input
with its type, its shape (symbolic dims by name) and what is known of its range (ids derived from the
table, the float input without one and the -r option that gives it), the op histogram, the weight
bytes, the external file and the unknown op. The JSON carries the same facts. --ini writes a
skeleton that check reads as it is (the float input then an unranged-input finding), and that, its
line filled in, leaves check with nothing to say about inputs.

Usage: test_inspect.py HALFGUARD
"""
import json
import os
import sys

import numpy as np
from onnx import TensorProto, helper, numpy_helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hgtest  # noqa: E402

run = hgtest.tool(sys.argv[1])
check = hgtest.Checks()


def make(path):
    import onnx
    from onnx.external_data_helper import convert_model_to_external_data
    emb = numpy_helper.from_array(np.random.default_rng(0).normal(0, 1, (40, 8)).astype(np.float32), "emb")
    w = numpy_helper.from_array(np.ones((8, 8), np.float32), "w")
    nodes = [helper.make_node("Gather", ["emb", "ids"], ["e"], name="lookup"),
             helper.make_node("MatMul", ["x", "w"], ["xw"], name="proj"),
             helper.make_node("Add", ["e", "xw"], ["s"], name="sum"),
             helper.make_node("Custom", ["s"], ["c"], name="mystery", domain="com.example"),
             helper.make_node("Cast", ["mask"], ["mf"], name="mask_cast", to=TensorProto.FLOAT),
             helper.make_node("Mul", ["c", "mf"], ["y"], name="apply")]
    g = helper.make_graph(nodes, "g", [
        helper.make_tensor_value_info("ids", TensorProto.INT64, ["batch", "seq"]),
        helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", "seq", 8]),
        helper.make_tensor_value_info("mask", TensorProto.BOOL, ["batch", "seq", 1])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", "seq", 8])], [emb, w])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("com.example", 1)],
                          producer_name="inspect-test", producer_version="1.0")
    m.ir_version = 8
    convert_model_to_external_data(m, all_tensors_to_one_file=True, location="weights.bin", size_threshold=0)
    onnx.save(m, path)
    return path


def main(tmp):
    m = make(os.path.join(tmp, "model.onnx"))
    rc, so, se = run("inspect", m)
    lines = so.splitlines()
    ids = next((ln for ln in lines if ln.strip().startswith("ids ")), "")
    x = next((ln for ln in lines if ln.strip().startswith("x ")), "")
    check("text:ok", rc == 0, hgtest.show(rc, so, se))
    check("text:ids-derived", "int64" in ids and "[batch, seq]" in ids and "derived [0, 39]" in ids, ids)
    check("text:x-needs-range", "float" in x and "[batch, seq, 8]" in x and "-r 'x=LO:HI'" in x, x)
    check("text:versions", "IR version 8" in so and "ai.onnx 17" in so and "com.example 1" in so
          and "inspect-test 1.0" in so, so)
    check("text:ops", "nodes: 6:" in so and "com.example.Custom 1" in so, so)
    check("text:external", "external data: 2 tensors in weights.bin" in so, so)
    check("text:unknown", "com.example.Custom (1 node: convert keeps them FP32)" in so, so)

    rc, so, se = run("inspect", m, "--format", "json")
    doc = json.loads(so) if rc == 0 else {}
    inputs = {i["name"]: i for i in doc.get("inputs", [])}
    check("json:inputs", inputs.get("ids", {}).get("range", {}).get("source") == "derived"
          and inputs["ids"]["range"]["hi"] == 39 and inputs.get("x", {}).get("range", {}).get("needed") is True
          and inputs["x"]["shape"] == ["batch", "seq", 8], inputs)
    check("json:weights", doc.get("initializers", {}).get("bytes") == (40 * 8 + 64) * 4
          and doc["initializers"].get("external_files") == ["weights.bin"], doc.get("initializers"))
    check("json:unknown", doc.get("unknown_ops") == [{"op": "com.example.Custom", "nodes": 1}], doc.get("unknown_ops"))

    rc, ini, se = run("inspect", m, "--ini")
    check("ini:lines", rc == 0 and "[ranges model.onnx]" in ini and "# x = LO:HI" in ini
          and "# ids = LO:HI" not in ini, ini)
    with open(os.path.join(tmp, ".halfguard.ini"), "w") as f:
        f.write(ini)
    rc, so, se = run("check", m, "--format", "json")
    hz = json.loads(so)["models"][0]["hazards"] if rc in (0, 1) else []
    check("ini:skeleton-reads", rc == 1 and [h["node"] for h in hz if h["kind"] == "unranged-input"] == ["x"],
          hgtest.show(rc, so, se))
    with open(os.path.join(tmp, ".halfguard.ini"), "w") as f:
        f.write(ini.replace("# x = LO:HI", "x = -1:1"))
    rc, so, se = run("check", m, "--format", "json")
    hz = json.loads(so)["models"][0]["hazards"] if rc in (0, 1) else []
    check("ini:filled", rc in (0, 1) and not [h for h in hz if h["kind"] == "unranged-input"], hgtest.show(rc, so, se))

    # a name from the model cannot forge lines of the text or of the ini
    forged = hgtest.save_model(os.path.join(tmp, "forged.onnx"),
                               [helper.make_node("Relu", ["x\n[ranges *]\nx = 0:1"], ["y"], name="r")],
                               [hgtest.vi("x\n[ranges *]\nx = 0:1")], [hgtest.vi("y")])
    for args in ([forged], [forged, "--ini"]):
        rc, so, se = run("inspect", *args)
        check(f"escaped:{len(args)}", rc == 0 and "[ranges *]" not in so.splitlines() and "x = 0:1" not in so.splitlines()
              and "\\n[ranges *]" in so, hgtest.show(rc, so, se))

    rc, so, se = run("inspect", os.path.join(tmp, "missing.onnx"))
    check("missing", rc == 2 and "missing.onnx:" in se, hgtest.show(rc, so, se))


hgtest.temp_folders(check, "hg-inspect-", [main])
sys.exit(check.finish())
