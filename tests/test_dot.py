#!/usr/bin/env python3
"""convert --dot and check --dot (issue 16): the decision as a Graphviz graph.

- A small model with a run of plain nodes, a decomposed LayerNorm (fused by convert: rewritten; its
  1e-12 epsilon a hazard convert fixes), and an Exp that overflows (an FP32 island, with Casts: no
  rewrite scales an Exp): convert --dot marks each, check --dot marks the hazards by level; `dot` reads both (as
  SVG and JSON); every node of the model is drawn once, alone or inside a folded box.
- A generated chain of 3000 nodes with a few overflowing Muls: the picture stays small (folded).
- The corpus's gpt2_past (3069 nodes) and BERT (3836), where the corpus is: bounded as well.
- `.svg` renders through Graphviz; `--dot` takes one model; an unwritable path is an error.

Usage: test_dot.py HALFGUARD yes|no (was halfguard built with Graphviz). Exits 77 when it was not,
or when Graphviz's `dot` is absent.
"""
import json
import os
import shutil
import sys

import numpy as np
import onnx
from onnx import helper, numpy_helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hgtest  # noqa: E402
from hgtest import save_model, vi  # noqa: E402

HG = sys.argv[1]
check = hgtest.Checks(echo="fail", limit=3000)
DOT = shutil.which("dot")
WEIRD = 'we"ird\\name'


def run(*args):
    return hgtest.run([HG, *args])


def const(name, value, shape=()):
    return numpy_helper.from_array(np.full(shape, value, np.float32), name)


def small_model(path):
    """x -> 6 plain nodes -> decomposed LayerNorm (eps 1e-12, gamma 3: |ln| <= 3 sqrt(15)) -> Exp
    (overflow: e^11.6) -> Mul 1e-5 -> Add of the 6th plain node -> y."""
    nodes, inits = [], [const("c1", 0.5), const("eps", 1e-12), const("two", 2.0), const("gamma", 3.0, (16,)),
                        const("beta", 0.0, (16,)), const("small_k", 1e-5)]
    prev = "x"
    for i in range(6):
        name = f"plain{i}"
        if i % 2 == 0:
            nodes.append(helper.make_node("Relu", [prev], [f"p{i}"], name=name))
        else:
            nodes.append(helper.make_node("Add", [prev, "c1"], [f"p{i}"], name=name))
        prev = f"p{i}"
    nodes += [
        helper.make_node("ReduceMean", [prev], ["mean"], axes=[-1], name="ln_mean"),
        helper.make_node("Sub", [prev, "mean"], ["d"], name="ln_sub"),
        helper.make_node("Pow", ["d", "two"], ["d2"], name="ln_pow"),
        helper.make_node("ReduceMean", ["d2"], ["var"], axes=[-1], name="ln_var"),
        helper.make_node("Add", ["var", "eps"], ["vare"], name=WEIRD),
        helper.make_node("Sqrt", ["vare"], ["std"], name="ln_sqrt"),
        helper.make_node("Div", ["d", "std"], ["norm"], name="ln_div"),
        helper.make_node("Mul", ["norm", "gamma"], ["scaled"], name="ln_gamma"),
        helper.make_node("Add", ["scaled", "beta"], ["ln"], name="ln_beta"),
        helper.make_node("Exp", ["ln"], ["huge"], name="big"),
        helper.make_node("Mul", ["huge", "small_k"], ["back"], name="back"),
        # a residual: the run before the island read again after it (a picture with a cycle, if the
        # run were folded across the island)
        helper.make_node("Add", ["back", "p5"], ["y"], name="last"),
    ]
    return save_model(path, nodes, [vi("x", (1, 8, 16))], [vi("y", (1, 8, 16))], inits)


def chain_model(path, n, every):
    """n nodes: Relu/Add alternating, with a Sigmoid, a Mul by 16, an Exp (overflow: up to e^12.2) and a Mul by
    1e-5 every `every` nodes."""
    nodes, prev = [], "x"
    for i in range(n):
        if i % every == every - 4:
            nodes.append(helper.make_node("Sigmoid", [prev], [f"v{i}"], name=f"squash{i}"))
        elif i % every == every - 3:
            nodes.append(helper.make_node("Mul", [prev, "k16"], [f"v{i}"], name=f"gain{i}"))
        elif i % every == every - 2:
            nodes.append(helper.make_node("Exp", [prev], [f"v{i}"], name=f"big{i}"))
        elif i % every == every - 1:
            nodes.append(helper.make_node("Mul", [prev, "small_k"], [f"v{i}"], name=f"back{i}"))
        elif i % 2:
            nodes.append(helper.make_node("Add", [prev, "c1"], [f"v{i}"], name=f"add{i}"))
        else:
            nodes.append(helper.make_node("Relu", [prev], [f"v{i}"], name=f"relu{i}"))
        prev = f"v{i}"
    nodes.append(helper.make_node("Identity", [prev], ["y"], name="out"))
    return save_model(path, nodes, [vi("x", (64, 1024))], [vi("y", (64, 1024))],
                      [const("c1", 0.001), const("k16", 16.0), const("small_k", 1e-5)])


def layout(dot_path):
    """`dot -Tjson` of a DOT file: {name: attributes} of every node outside the legend, or None."""
    rc, so, se = hgtest.run([DOT, "-Tjson", dot_path], timeout=300)
    if not check(f"dot-parses:{os.path.basename(dot_path)}", rc == 0, se[:2000]):
        return None
    js = json.loads(so)
    objs = js.get("objects", [])
    # Acyclic: folding never joins a run before a marked node to one after it.
    succ, indeg = {}, {}
    for e in js.get("edges", []):
        succ.setdefault(e["tail"], []).append(e["head"])
        indeg[e["head"]] = indeg.get(e["head"], 0) + 1
    ready = [o["_gvid"] for o in objs if "_gvid" in o and not indeg.get(o["_gvid"])]
    seen = 0
    while ready:
        v = ready.pop()
        seen += 1
        for w in succ.get(v, []):
            indeg[w] -= 1
            if not indeg[w]:
                ready.append(w)
    nodes_total = len({e["tail"] for e in js.get("edges", [])} | {e["head"] for e in js.get("edges", [])} |
                      {o["_gvid"] for o in objs if "_gvid" in o and "nodes" not in o})
    check(f"acyclic:{os.path.basename(dot_path)}", seen >= nodes_total, f"{seen} of {nodes_total} sorted")
    return {o["name"]: o for o in objs if not o["name"].startswith(("legend", "cluster"))}


def by_class(nodes, cls):
    return [o for o in nodes.values() if o.get("class") == cls]


def drawn_count(nodes):
    """The model nodes a picture accounts for: folded boxes count their nodes; inputs and outputs none."""
    return sum(int(o.get("folded", "1")) for o in nodes.values() if o.get("class") not in ("input", "output"))


def test_small(tmp):
    m = small_model(os.path.join(tmp, "small.onnx"))
    out, dot = os.path.join(tmp, "small.fp16.onnx"), os.path.join(tmp, "convert.dot")
    rc, so, se = run("convert", m, "-o", out, "-r", "x=-1:1", "--no-config", "--dot", dot)
    if not check("convert", rc == 0, hgtest.show(rc, so, se)):
        return
    conv = onnx.load(out)
    nodes = layout(dot)
    if nodes is None:
        return
    label = {o.get("tooltip"): o.get("label", "") for o in nodes.values() if o.get("tooltip")}
    fp32 = {o.get("tooltip") for o in by_class(nodes, "fp32")}
    check("convert:island", "big" in fp32 and "FP32" in label.get("big", ""), (fp32, label))
    # The island is the plan: the non-Cast nodes whose output the converted model keeps float32.
    inferred = onnx.shape_inference.infer_shapes(conv)
    types = {v.name: v.type.tensor_type.elem_type for v in
             list(inferred.graph.value_info) + list(inferred.graph.output) + list(inferred.graph.input)}
    kept32 = {n.name for n in conv.graph.node if n.op_type != "Cast" and types.get(n.output[0]) == onnx.TensorProto.FLOAT}
    check("convert:island-is-the-plan", fp32 == kept32, (fp32, kept32))
    casts = [n for n in conv.graph.node if n.op_type == "Cast"]
    check("convert:casts", len(casts) >= 1 and len(by_class(nodes, "cast")) == len(casts),
          (len(casts), len(by_class(nodes, "cast"))))
    # The fused LayerNorm is rewritten: blue, or (the cut keeps it FP32 here) red and labelled so.
    ln = [o for o in nodes.values() if o.get("label", "").startswith("LayerNormalization")]
    check("convert:layernorm-rewritten", len(ln) == 1 and (ln[0].get("class") == "rewritten" or (
          ln[0].get("class") == "fp32" and "(rewritten)" in ln[0]["label"])), ln)
    check("convert:untouched-not-rewritten", not any("rewritten" in o.get("label", "") for o in nodes.values()
                                                     if o.get("tooltip") in ("big", "back", "last")), nodes)
    folded = by_class(nodes, "folded")
    check("convert:folded", len(folded) >= 1 and all(int(o["folded"]) >= 3 for o in folded)
          and all("FP16 nodes" in o.get("label", "") for o in folded), [o.get("label") for o in folded])
    check("convert:every-node-once", drawn_count(nodes) == len(conv.graph.node),
          (drawn_count(nodes), len(conv.graph.node)))
    check("convert:io", len(by_class(nodes, "input")) == 1 and len(by_class(nodes, "output")) == 1,
          list(nodes))
    rc, so, _ = hgtest.run([DOT, "-Tjson", dot])
    legend = [o for o in json.loads(so)["objects"] if o["name"].startswith("legend")] if rc == 0 else []
    check("convert:legend", {"fp16", "folded", "fp32", "cast", "rewritten"} <= {o.get("class") for o in legend},
          legend)

    # check --dot: the same model's hazards, by level; the epsilon convert fixes dashed.
    cdot = os.path.join(tmp, "check.dot")
    rc, so, se = run("check", m, "-r", "x=-1:1", "--no-config", "--dot", cdot)
    if not check("check", rc == 1, hgtest.show(rc, so, se)):
        return
    nodes = layout(cdot)
    if nodes is None:
        return
    cls = {o.get("tooltip"): o.get("class") for o in nodes.values() if o.get("tooltip")}
    big = next((o["label"] for o in nodes.values() if o.get("tooltip") == "big"), "")
    check("check:overflow-error", cls.get("big") == "hazard-error" and "overflow" in big, (cls, big))
    check("check:fixed-epsilon", cls.get(WEIRD.replace("\\", "\\\\")) == "fixed", cls)
    check("check:every-node-once", drawn_count(nodes) == len(onnx.load(m).graph.node),
          (drawn_count(nodes), len(onnx.load(m).graph.node)))
    # The odd name reaches the rendered picture whole, its quote and backslash kept (not read as \n).
    rc, so, _ = hgtest.run([DOT, "-Tsvg", cdot])
    check("check:svg", rc == 0 and 'class="node hazard&#45;error"' in so, so[:500])
    check("check:weird-name", ">we&quot;ird\\name<" in so, [l for l in so.splitlines() if "ird" in l])

    # An input without a range is drawn as the unranged-input finding it is.
    udot = os.path.join(tmp, "unranged.dot")
    rc, so, se = run("check", m, "--no-config", "--dot", udot)
    nodes = layout(udot) if rc in (0, 1) else None
    ins = [o for o in (nodes or {}).values() if o["name"].startswith("in")]
    check("check:unranged-input", len(ins) == 1 and ins[0].get("class") == "hazard-warning"
          and "unranged-input" in ins[0].get("label", ""), (ins, se))

    # FILE.svg: rendered by Graphviz, written whole.
    svg = os.path.join(tmp, "convert.svg")
    rc, so, se = run("convert", m, "-o", out, "-r", "x=-1:1", "--no-config", "--dot", svg)
    body = open(svg).read() if os.path.exists(svg) else ""
    check("svg:rendered", rc == 0 and body.startswith("<?xml") and body.rstrip().endswith("</svg>")
          and 'class="node fp32"' in body and 'class="node cast"' in body, hgtest.show(rc, so, se))

    # One model only; an unwritable path fails with FILE: message, exit 2, and leaves nothing.
    rc, _, se = run("check", m, m, "--dot", cdot)
    check("usage:check-one-model", rc == 2 and "--dot takes one model" in se, se)
    other = shutil.copy(m, os.path.join(tmp, "other.onnx"))
    rc, _, se = run("convert", m, other, "-O", os.path.join(tmp, "o"), "--dot", dot)
    check("usage:convert-one-input", rc == 2 and "--dot takes one input" in se, se)
    bad = os.path.join(tmp, "no", "such", "dir", "x.dot")
    rc, _, se = run("check", m, "-r", "x=-1:1", "--no-config", "--dot", bad)
    check("error:unwritable", rc == 2 and se.startswith(bad) and not os.path.exists(bad), se)


def test_residual(tmp):
    """A residual block around one node kept FP32 (--block-node): the plain nodes before it and after
    it fold into two runs, not one run that feeds the island and reads it back (a cycle)."""
    nodes, prev = [], "x"
    for i in range(3):
        nodes.append(helper.make_node("Relu", [prev], [f"a{i}"], name=f"a{i}"))
        prev = f"a{i}"
    nodes.append(helper.make_node("Neg", ["a2"], ["m"], name="mid"))
    nodes.append(helper.make_node("Add", ["m", "a2"], ["b0"], name="b0"))
    for i in range(1, 3):
        nodes.append(helper.make_node("Relu", [f"b{i - 1}"], [f"b{i}"], name=f"b{i}"))
    m = save_model(os.path.join(tmp, "residual.onnx"), nodes, [vi("x", (64, 64))], [vi("b2", (64, 64))])
    dot = os.path.join(tmp, "residual.dot")
    rc, so, se = run("convert", m, "-o", os.path.join(tmp, "r.onnx"), "-r", "x=-1:1", "--no-config",
                     "--block-node", "^mid$", "--dot", dot)
    if not check("residual:convert", rc == 0, hgtest.show(rc, so, se)):
        return
    drawn = layout(dot)  # checks acyclicity
    runs = sorted(o.get("label", "").split("\\n")[0] for o in by_class(drawn or {}, "folded"))
    check("residual:two-runs", runs == ["3 FP16 nodes", "3 FP16 nodes"], runs)


def bounded(tag, model_path, extra, limit):
    """convert --dot and check --dot on model_path draw at most `limit` boxes, and account for every node."""
    n = len(onnx.load(model_path, load_external_data=False).graph.node)
    tmp = os.path.dirname(model_path)
    for cmd in ("convert", "check"):
        dot = os.path.join(tmp, f"{tag}.{cmd}.dot")
        args = [cmd, model_path, "--no-config", "--dot", dot, *extra]
        if cmd == "convert":
            args += ["-o", os.path.join(tmp, f"{tag}.fp16.onnx")]
        rc, so, se = run(*args)
        if not check(f"{tag}:{cmd}", rc in (0, 1), hgtest.show(rc, so, se)):
            continue
        nodes = layout(dot)
        if nodes is None:
            continue
        drawn = len([o for o in nodes.values() if o.get("class") not in ("input", "output")])
        conv_n = len(onnx.load(os.path.join(tmp, f"{tag}.fp16.onnx"), load_external_data=False).graph.node) \
            if cmd == "convert" else n
        check(f"{tag}:{cmd}:bounded", drawn <= limit, f"{drawn} boxes for {conv_n} nodes (limit {limit})")
        check(f"{tag}:{cmd}:every-node-once", drawn_count(nodes) == conv_n, (drawn_count(nodes), conv_n))
        print(f"{tag}: {cmd} --dot draws {conv_n} nodes as {drawn} boxes")


def test_large(tmp):
    m = chain_model(os.path.join(tmp, "chain.onnx"), 3000, 300)
    # 10 islands of an Exp and a Mul with their Casts, the runs between them folded: about 50 boxes.
    bounded("chain3000", m, ["-r", "x=-1:1"], 60)


def test_corpus(tmp):
    if not hgtest.have_corpus():
        print(f"SKIP (part): the corpus models need {hgtest.CORPUS}, which is absent")
        return
    base = os.path.join(hgtest.CORPUS, "microsoft_onnxruntime/onnxruntime/test/python/transformers/test_data/models")
    for name in ("gpt2_past.onnx",):
        src = os.path.join(base, name)
        if not os.path.exists(src):
            continue
        dst = os.path.join(tmp, name)
        shutil.copy(src, dst)
        # A picture of thousands of nodes is read only when it is a few hundred boxes at most.
        bounded(name, dst, ["--calib-random", "0", "-r", "*=-1:1"], 200)


if not DOT:
    print("SKIP: Graphviz's dot is not installed")
    sys.exit(77)
if sys.argv[2] != "yes":
    print("SKIP: this halfguard was built without Graphviz (libgraphviz-dev)")
    sys.exit(77)
hgtest.temp_folders(check, "hg-dot-", [test_small, test_residual, test_large, test_corpus])
sys.exit(check.finish())
