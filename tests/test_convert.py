#!/usr/bin/python3
"""`halfguard convert` end to end on the FP16 pathology suite (issue 5's acceptance).

Usage: test_convert.py HALFGUARD OUTDIR [CASE...]

OUTDIR gets the suite (tests/pathology/make_cases.py) and the converted models. Per case:
- `convert CASE.onnx --calib CASE.data -r RANGES` and `verify` on CASE.data: every output finite and
  within relative L2 1e-2; the FP16 share of MACs and the Cast count are printed (from the summary
  line, which must agree with --report's figures and with the model written); a negative control
  comes out 100% FP16 with no Cast;
- the same command again gives the same bytes (determinism), and converting the converted model with
  the same flags gives the same bytes again (idempotence; its inputs may be FP16: verify and the
  calibration convert the data);
- the output passes onnx.checker.check_model(full_check=True) of Debian's onnx 1.12 where its opset
  is at most 17 and its ir_version at most 8, and keeps the input's ir_version unless the opset was
  raised to 17 (then at least 8);
- --report: its structure, and every node with float values has a decision whose precision the
  element types of the written model agree with (an fp16 node writes float16, an fp32 node float);
- --keep-io-types keeps the graph inputs' and outputs' names and element types, and still verifies.
Then the flags on chosen cases: --emit-trtexec names exactly the FP32 nodes; --block-op Relu and
--block-node REGEX on a control; --force-fp16-node on the overflow case; a bad regex exits 2.
"""
import json
import os
import re
import sys

import numpy as np
import onnx
import onnx.numpy_helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hgtest  # noqa: E402
from hgtest import F16, F32, elem_types, opset  # noqa: E402

run = hgtest.tool(sys.argv[1])
OUT = os.path.abspath(sys.argv[2])
ONLY = set(sys.argv[3:])
RTOL = 1e-2
INSERTED_CAST = re.compile(r"/to_fp(16|32)(_\d+)?$")
SUMMARY = re.compile(r"^(?:fused (\d+) LayerNorms?; )?(\d+) FP32 islands? \((\d+) nodes?(?:, ([\d.e+-]+)% of MACs)?\); "
                     r"(\d+) Casts?; FP16: (?:([\d.e+-]+)% of MACs(?: at [^;]*?)?, )?([\d.e+-]+)% of weight bytes")
check = hgtest.Checks(echo="fail", limit=2000)


read = hgtest.read_bytes


def summary_of(text, src, dst):
    """The figures of convert's one-line summary for src -> dst."""
    prefix = f"{src} -> {dst}: "
    for line in text.splitlines():
        if line.startswith(prefix):
            body = line[len(prefix):]
            m = SUMMARY.match(body)
            return body, m
    return None, None


def convert(src, dst, flags, report=None):
    args = ["convert", src, "-o", dst, *flags]
    if report:
        args += ["--report", report]
    return run(*args)


def verify(orig, conv, data):
    rc, so, se = run("verify", orig, conv, "--data", data, "--format", "json")
    try:
        return rc, json.loads(so), se
    except ValueError:
        return rc, None, so + se


def check_verify(tag, rc, js, err):
    if not check(f"{tag}:verify-json", js is not None, f"exit {rc}: {err}"):
        return
    bad = [o for o in js["outputs"] if o["new_nonfinite"] or o["nonfinite_conv"] > o["nonfinite_orig"]
           or o["rel_l2"] is None or o["rel_l2"] > RTOL]
    check(f"{tag}:verify", rc == 0 and js["pass"] and js["outputs"] and not bad
          and js["first_nonfinite"] is None, js)


def check_report_structure(tag, rep, body, model_path):
    ok = check(f"{tag}:report-keys", set(rep) >= {"format", "version", "model", "summary", "passes",
                                                  "figures", "inputs", "decisions"}, sorted(rep))
    if not ok:
        return False
    check(f"{tag}:report-header", rep["format"] == "halfguard-convert-report" and rep["version"] == 1
          and rep["model"] == model_path, (rep["format"], rep["version"], rep["model"]))
    check(f"{tag}:report-summary", rep["summary"] == body, (rep["summary"], body))
    check(f"{tag}:report-passes", isinstance(rep["passes"], list) and all(
        set(p) == {"pass", "message"} and isinstance(p["pass"], str) and isinstance(p["message"], str)
        for p in rep["passes"]) and {"assign_precision", "lower"} <= {p["pass"] for p in rep["passes"]},
        rep["passes"])
    fig = rep["figures"]
    keys = {"fused_layernorm", "fp32_islands", "fp32_nodes", "casts", "macs", "macs_fp16", "weight_bytes",
            "weight_bytes_fp16", "decisions_synthetic", "decisions_assumed", "macs_unknown_nodes",
            "macs_priced", "macs_priced_fp16"}
    syms = {"symbolic_dims", "symbolic_priced"}
    check(f"{tag}:report-figures", set(fig) == keys | syms and all(isinstance(fig[k], int) and fig[k] >= 0
                                                                   for k in keys)
          and fig["macs_fp16"] <= fig["macs"] and fig["weight_bytes_fp16"] <= fig["weight_bytes"]
          and fig["fp32_islands"] <= fig["fp32_nodes"]
          and fig["macs_priced_fp16"] <= fig["macs_priced"] and fig["macs"] <= fig["macs_priced"]
          and (fig["macs_unknown_nodes"] == 0) == (fig["symbolic_dims"] is None)
          and (fig["symbolic_dims"] is None) == (fig["symbolic_priced"] is None), fig)
    decs = rep["decisions"]
    good = True
    for d in decs:
        iv = d.get("interval")
        good &= (set(d) == {"node", "op", "precision", "reason", "interval", "macs", "source"}
                 and d["source"] in ("static", "calibration", "synthetic", "assumed")
                 and isinstance(d["node"], str) and isinstance(d["op"], str) and d["op"]
                 and d["precision"] in ("fp16", "fp32") and isinstance(d["reason"], str) and d["reason"]
                 and isinstance(iv, list) and len(iv) == 2
                 and all(x is None or isinstance(x, (int, float)) for x in iv)
                 and (None in iv or iv[0] <= iv[1])
                 and (d["macs"] is None or (isinstance(d["macs"], (int, float)) and d["macs"] >= 0)))
    check(f"{tag}:report-decisions", good and decs, decs[:3])
    n32 = [d for d in decs if d["precision"] == "fp32"]
    check(f"{tag}:report-fp32-count", fig["fp32_nodes"] == len(n32), (fig["fp32_nodes"], len(n32)))
    # null MACs: symbolic dims leave them unknown; the known ones add up to the figures
    check(f"{tag}:report-macs", fig["macs"] == sum(d["macs"] or 0 for d in decs)
          and fig["macs_fp16"] == sum(d["macs"] or 0 for d in decs if d["precision"] == "fp16")
          and fig["macs_unknown_nodes"] == sum(d["macs"] is None for d in decs), fig)
    check(f"{tag}:report-islands", (fig["fp32_islands"] == 0) == (fig["fp32_nodes"] == 0), fig)
    return True


def check_summary_figures(tag, m, fig):
    """The summary line's figures against the report's."""
    if not check(f"{tag}:summary-parses", m is not None, "summary line does not parse"):
        return
    fused, islands, nodes, pct32, casts, pct16, wpct = m.groups()
    check(f"{tag}:summary-counts", int(fused or 0) == fig["fused_layernorm"] and int(islands) == fig["fp32_islands"]
          and int(nodes) == fig["fp32_nodes"] and int(casts) == fig["casts"], (m.group(0), fig))
    if fig["macs_unknown_nodes"]:
        priced = 100.0 * fig["macs_priced_fp16"] / fig["macs_priced"] if fig["macs_priced"] else 100.0
        # the sizes are named where they fit the line (40 characters), else summarised
        at = fig["symbolic_priced"] if len(fig["symbolic_priced"]) <= 40 else "the symbolic dims' priced sizes"
        check(f"{tag}:summary-macs-unknown", f"% of MACs at {at}, " in m.string and pct16 is not None
              and abs(float(pct16) - priced) <= 0.01 * max(priced, 1), (m.string, fig))
    elif fig["macs"]:
        share = 100.0 * fig["macs_fp16"] / fig["macs"]
        check(f"{tag}:summary-macs", pct16 is not None and abs(float(pct16) - share) <= 0.01 * max(share, 1)
              and abs(float(pct32) - (100 - share)) <= 0.01 * max(100 - share, 1), (m.group(0), share))
    wshare = 100.0 * fig["weight_bytes_fp16"] / fig["weight_bytes"] if fig["weight_bytes"] else 100.0
    check(f"{tag}:summary-weights", abs(float(wpct) - wshare) <= 0.01 * max(wshare, 1), (m.group(0), wshare))


def check_types_agree(tag, rep, orig, conv):
    """Every float node of the written model has a decision, and its element types say the same."""
    types = elem_types(conv)
    decided = {d["node"]: d for d in rep["decisions"] if d["node"]}
    missing, wrong = [], []
    # The Casts convert added: those the original model does not have (by node name).
    orig_names = {n.name for n in orig.graph.node}
    added = [n.name for n in conv.graph.node if n.op_type == "Cast" and n.name not in orig_names]
    check(f"{tag}:casts-in-model", len(added) == rep["figures"]["casts"], (added, rep["figures"]["casts"]))
    for n in conv.graph.node:
        floats = [v for v in list(n.input) + list(n.output) if v and types.get(v) in (F32, F16)]
        if not floats:
            continue
        if n.op_type == "Cast" and INSERTED_CAST.search(n.name):
            continue
        d = decided.get(n.name)
        if d is None:
            missing.append(n.name or n.output[0])
            continue
        want = F16 if d["precision"] == "fp16" else F32
        outs = [v for k, v in enumerate(n.output) if v and types.get(v) in (F32, F16)
                and not (n.op_type == "LayerNormalization" and k > 0)]  # Mean, InvStdDev: stash type
        if outs:
            if any(types[v] != want for v in outs):
                wrong.append((n.name, d["precision"], {v: types[v] for v in outs}))
        else:
            # No float output (Shape, a Cast to int...): what it computes with has the decided type.
            ins = [v for v in n.input if v and types.get(v) in (F32, F16)]
            if ins and all(types[v] != want for v in ins):
                wrong.append((n.name, d["precision"], {v: types[v] for v in ins}))
    check(f"{tag}:every-float-node-decided", not missing, missing)
    check(f"{tag}:types-agree", not wrong, wrong)


def check_model_checker(tag, orig, conv):
    op_in, op_out = opset(orig), opset(conv)
    if op_out == 17 and op_in < 17:
        check(f"{tag}:ir-version", conv.ir_version >= 8, (orig.ir_version, conv.ir_version))
    else:
        check(f"{tag}:ir-version", conv.ir_version == orig.ir_version and op_out == op_in,
              (orig.ir_version, conv.ir_version, op_in, op_out))
    if op_out <= 17 and conv.ir_version <= 8:
        err = hgtest.checker_error(conv)
        check(f"{tag}:onnx-checker", err is None, (err or "")[:600])


# ---------------------------------------------------------------- the suite, case by case

os.makedirs(OUT, exist_ok=True)
cases = hgtest.pathology_cases(OUT)
conv_dir = os.path.join(OUT, "converted")
os.makedirs(conv_dir, exist_ok=True)
figures = []
for c in cases:
    name = c["name"]
    if ONLY and name not in ONLY:
        continue
    src = os.path.join(OUT, c["model"])
    data = os.path.join(OUT, c["data"])
    flags = hgtest.case_flags(c, OUT)
    dst = os.path.join(conv_dir, name + ".onnx")
    report = os.path.join(conv_dir, name + ".report.json")
    rc, so, se = convert(src, dst, flags, report)
    if not check(f"{name}:convert", rc == 0 and os.path.exists(dst), se):
        continue
    body, m = summary_of(so + se, src, dst)
    check(f"{name}:summary-line", body is not None, so + se)
    rep = json.load(open(report))
    if check_report_structure(name, rep, body, src):
        check_summary_figures(name, m, rep["figures"])
    fig = rep["figures"]
    share = 100.0 * fig["macs_fp16"] / fig["macs"] if fig["macs"] else 100.0
    figures.append((name, share, fig["casts"], fig["fp32_nodes"], c["negative_control"]))
    print(f"{name}: FP16 {share:.2f}% of MACs, {fig['casts']} Casts, {fig['fp32_nodes']} FP32 nodes"
          f"{' (control)' if c['negative_control'] else ''}   [{body}]")

    check_verify(name, *verify(src, dst, data))
    orig_m, conv_m = onnx.load(src), onnx.load(dst)
    if c["negative_control"]:
        check(f"{name}:control-all-fp16", fig["macs"] > 0 and fig["macs_fp16"] == fig["macs"]
              and fig["casts"] == 0 and fig["fp32_nodes"] == 0, fig)
        t = elem_types(conv_m)
        casts = lambda m: sum(n.op_type == "Cast" for n in m.graph.node)  # noqa: E731
        check(f"{name}:control-no-float32", casts(conv_m) == casts(orig_m)
              and F32 not in t.values(), [v for v, e in t.items() if e == F32])
    check_types_agree(name, rep, orig_m, conv_m)
    check_model_checker(name, orig_m, conv_m)

    # Determinism and idempotence.
    again = os.path.join(conv_dir, name + ".again.onnx")
    rc, _, se = convert(src, again, flags)
    check(f"{name}:deterministic", rc == 0 and read(again) == read(dst), se)
    twice = os.path.join(conv_dir, name + ".twice.onnx")
    rc, so2, se = convert(dst, twice, flags)
    same = rc == 0 and read(twice) == read(dst)
    detail = se
    if rc == 0 and not same:
        d1 = run("dump", dst)[1].splitlines()
        d2 = run("dump", twice)[1].splitlines()
        detail = (so2.strip(), [l for l in d2 if l not in d1][:12], [l for l in d1 if l not in d2][:12])
    check(f"{name}:idempotent", same, detail)

    # --keep-io-types: the interface stays as it was.
    keep = os.path.join(conv_dir, name + ".keepio.onnx")
    rc, _, se = convert(src, keep, flags + ["--keep-io-types"])
    if check(f"{name}:keep-io-convert", rc == 0, se):
        k = onnx.load(keep)
        sig = lambda vis: [(v.name, v.type.tensor_type.elem_type) for v in vis]  # noqa: E731
        inits = {i.name for i in orig_m.graph.initializer}
        check(f"{name}:keep-io-inputs", sig(v for v in k.graph.input if v.name not in inits)
              == sig(v for v in orig_m.graph.input if v.name not in inits), sig(k.graph.input))
        check(f"{name}:keep-io-outputs", sig(k.graph.output) == sig(orig_m.graph.output), sig(k.graph.output))
        check_verify(f"{name}:keep-io", *verify(src, keep, data))
        check_model_checker(f"{name}:keep-io", orig_m, k)
        # AutoCast's spelling, --keep_io_types, is the same option
        autocast = os.path.join(conv_dir, name + ".keepio2.onnx")
        rc, _, se = convert(src, autocast, flags + ["--keep_io_types"])
        check(f"{name}:keep_io_types", rc == 0 and hgtest.read_bytes(autocast) == hgtest.read_bytes(keep), se)


# ---------------------------------------------------------------- flags on chosen cases

def case(name):
    return next((c for c in cases if c["name"] == name), None)


def converted(c, extra, tag):
    dst = os.path.join(conv_dir, f"{c['name']}.{tag}.onnx")
    report = os.path.join(conv_dir, f"{c['name']}.{tag}.json")
    rc, so, se = convert(os.path.join(OUT, c["model"]), dst, hgtest.case_flags(c, OUT) + extra, report)
    ok = check(f"flags:{tag}:convert", rc == 0, se)
    return (rc, so, se, json.load(open(report)) if ok else None, onnx.load(dst) if ok else None)


flag_cases = {"gelu_tanh_pow", "control_conv_bn_relu", "precision_softmax_large", "control_conv_clip_conv"}
if not ONLY or flag_cases & ONLY:
    # --emit-trtexec FILE: exactly the FP32 nodes, in TensorRT's layer-name:precision form, after
    # --fp16, in FILE and nowhere else; - writes the same line to stdout.
    for name in ("gelu_tanh_pow", "attention_logits_scaled_after", "control_conv_bn_relu"):
        c = case(name)
        flags_file = os.path.join(conv_dir, f"{name}.trtexec.txt")
        rc, so, se, rep, _ = converted(c, ["--emit-trtexec", flags_file], "trtexec")
        if rep is None:
            continue
        fp32 = sorted(d["node"] for d in rep["decisions"] if d["precision"] == "fp32")
        text = open(flags_file).read()
        lines = text.splitlines()
        check(f"flags:trtexec-not-in-summary:{name}", "--fp16" not in so + se and "--layerPrecisions" not in so + se, so + se)
        if fp32:
            ok = len(lines) == 1 and lines[0].startswith("--fp16 --precisionConstraints=obey --layerPrecisions=")
            got = sorted(lines[0].split("--layerPrecisions=", 1)[1].split(",")) if ok else []
            check(f"flags:trtexec:{name}", ok and got == sorted(f"{n}:fp32" for n in fp32), (lines, fp32))
        else:
            check(f"flags:trtexec:{name}", lines == ["--fp16"], text)
        rc, so2, se2, _, _ = converted(c, ["--emit-trtexec", "-"], "trtexec-stdout")
        check(f"flags:trtexec-stdout:{name}", rc == 0 and so2 == text and " -> " in se2, (so2, se2))

    # --block-op Relu on a control: every Relu FP32, in the report and in the types.
    c = case("control_conv_bn_relu")
    _, _, _, rep, m = converted(c, ["--block-op", "Relu"], "block-op")
    if rep:
        relus = [n for n in m.graph.node if n.op_type == "Relu"]
        t = elem_types(m)
        dec = {d["node"]: d for d in rep["decisions"]}
        check("flags:block-op:has-relus", len(relus) >= 2, len(relus))
        check("flags:block-op:report", all(dec.get(n.name, {}).get("precision") == "fp32"
                                           and dec[n.name]["reason"] == "--block-op" for n in relus),
              [dec.get(n.name) for n in relus])
        check("flags:block-op:types", all(t.get(n.output[0]) == F32 for n in relus),
              {n.name: t.get(n.output[0]) for n in relus})
        others = [d for d in rep["decisions"] if d["op"] != "Relu" and d["precision"] == "fp32"
                  and d["reason"] == "--block-op"]
        check("flags:block-op:only-relu", not others, others)
        # AutoCast's spelling, --op_types_to_exclude, is the same option: the same bytes.
        converted(c, ["--op_types_to_exclude", "Relu"], "op_types_to_exclude")
        same = [hgtest.read_bytes(os.path.join(conv_dir, f"{c['name']}.{t}.onnx")) for t in ("block-op", "op_types_to_exclude")]
        check("flags:op_types_to_exclude", same[0] == same[1], "differs from --block-op")

    # --block-node REGEX: the nodes it matches, and only those, are blocked.
    c = case("control_conv_clip_conv")
    _, _, _, rep0, _ = converted(c, [], "plain")
    _, _, _, rep, m = converted(c, ["--block-node", "^conv1$"], "block-node")
    if rep and rep0:
        dec = {d["node"]: d for d in rep["decisions"]}
        t = elem_types(m)
        conv1 = next((n for n in m.graph.node if n.name == "conv1"), None)
        check("flags:block-node:report", dec.get("conv1", {}).get("precision") == "fp32"
              and dec["conv1"]["reason"] == "--block-node", dec.get("conv1"))
        check("flags:block-node:types", conv1 is not None and t.get(conv1.output[0]) == F32, conv1)
        blocked = [d["node"] for d in rep["decisions"] if d["reason"] == "--block-node"]
        check("flags:block-node:only-match", blocked == ["conv1"], blocked)
        check("flags:block-node:was-fp16", all(d["precision"] == "fp16" for d in rep0["decisions"]), rep0["figures"])
    # AutoCast's spelling, --nodes_to_exclude, adds to --block-node's list.
    _, _, _, rep, _ = converted(c, ["--block-node", "^conv1$", "--nodes_to_exclude", "^conv2$"], "nodes_to_exclude")
    if rep:
        blocked = sorted(d["node"] for d in rep["decisions"] if d["reason"] == "--block-node")
        check("flags:nodes_to_exclude", blocked == ["conv1", "conv2"], blocked)

    # --force-fp16-node on a precision-loss case (no rewrite cures it): the node the analysis keeps FP32 runs in FP16.
    c = case("precision_softmax_large")
    _, _, _, rep0, _ = converted(c, [], "plain")
    _, _, _, rep, m = converted(c, ["--force-fp16-node", "^big_softmax$"], "force-fp16")
    if rep and rep0:
        d0 = {d["node"]: d for d in rep0["decisions"]}.get("big_softmax", {})
        d = {d["node"]: d for d in rep["decisions"]}.get("big_softmax", {})
        node = next((n for n in m.graph.node if n.name == "big_softmax"), None)
        check("flags:force-fp16:was-fp32", d0.get("precision") == "fp32", d0)
        check("flags:force-fp16:report", d.get("precision") == "fp16" and d.get("reason") == "--force-fp16-node", d)
        check("flags:force-fp16:types", node is not None and elem_types(m).get(node.output[0]) == F16, node)

    # A bad regex is a usage error: exit 2, a message, no output.
    c = case("control_conv_bn_relu")
    src = os.path.join(OUT, c["model"])
    for flag in ("--block-node", "--force-fp16-node"):
        dst = os.path.join(conv_dir, "bad-regex.onnx")
        if os.path.exists(dst):
            os.unlink(dst)
        rc, so, se = run("convert", src, "-o", dst, flag, "(")
        check(f"flags:bad-regex:{flag}", rc == 2 and "pattern" in se and not os.path.exists(dst), (rc, so, se))

# ---------------------------------------------------------------- Resize's MACs

# Resize counts an output element per tap (1 nearest; 2 linear and 4 cubic per axis that changes
# size): 16x16 from 8x8 over 3 channels is 768 outputs, 3072 MACs linear, 12288 cubic.
for mode, taps in (("nearest", 1), ("linear", 4), ("cubic", 16)):
    src = os.path.join(conv_dir, f"resize_{mode}.onnx")
    x = onnx.helper.make_tensor_value_info("x", F32, [1, 3, 8, 8])
    y = onnx.helper.make_tensor_value_info("y", F32, None)
    sizes = onnx.numpy_helper.from_array(np.array([1, 3, 16, 16], dtype=np.int64), "sizes")
    node = onnx.helper.make_node("Resize", ["x", "", "", "sizes"], ["y"], name="up", mode=mode)
    hgtest.save_model(src, [node], [x], [y], [sizes])
    rc, so, se = run("convert", src, "-o", src + ".fp16.onnx", "-r", "x=0:1", "--report", "-", "-q", "--no-config")
    dec = {d["node"]: d for d in json.loads(so)["decisions"]}.get("up", {}) if rc == 0 else {}
    check(f"resize-macs:{mode}", dec.get("macs") == 768 * taps, (rc, se, dec))

# ---------------------------------------------------------------- the figures, for the closing note

print("\ncase                              FP16 % MACs  Casts  FP32 nodes")
for name, share, casts, n32, control in figures:
    print(f"{name:34s}{share:10.2f}  {casts:5d}  {n32:10d}{'  control' if control else ''}")
sys.exit(check.finish())
