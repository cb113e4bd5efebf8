#!/usr/bin/python3
"""fuse_layernorm on the corpus (issue 5): every model goes through
`halfguard convert --passes fold_shapes,fuse_layernorm,cleanup` and the result is checked against the
op counts ONNX Runtime's own tests expect (../shared/corpus/INDEX.md), against the expected outputs of
the ONNX LayerNormalization node tests, and against the interpreter's outputs of the original model.

Usage: test_fuse_layernorm.py HALFGUARD   (corpus at $HG_CORPUS or ../shared/corpus)
Needs Debian's python3-onnx (1.12) and numpy. Exit 0 when every check passes.
"""
import collections
import glob
import os
import sys
import tempfile

import numpy as np
import onnx
from onnx import helper, numpy_helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hgtest  # noqa: E402
import ortlib  # noqa: E402  (the seeded feeds of the corpus models)

HG = sys.argv[1] if len(sys.argv) > 1 else "build/halfguard"
CORPUS = hgtest.CORPUS
FUSION = os.path.join(CORPUS, "microsoft_onnxruntime/onnxruntime/test/testdata/transform/fusion")
MODELS = os.path.join(CORPUS, "microsoft_onnxruntime/onnxruntime/test/python/transformers/test_data/models")
NODE_DIRS = [os.path.join(hgtest.TESTDATA, "node"),
             os.path.join(CORPUS, "onnx_onnx/onnx/backend/test/data/node")]
PASSES = "fold_shapes,fuse_layernorm,cleanup"
LN_PART = ("ReduceMean", "Pow", "Sqrt", "Div", "Sub")

check = hgtest.Checks(echo="fail")


def counts(path):
    m = onnx.load(path)
    return collections.Counter(n.op_type for n in m.graph.node)


def convert(src, dst):
    rc, so, se = hgtest.run([HG, "convert", "--passes", PASSES, src, "-o", dst])
    if rc:
        raise RuntimeError(f"convert {src}: {se.strip()[-800:]}")
    return so + se


def checker(path, what):
    """onnx.checker with full_check where the converted model is within what onnx 1.12 knows."""
    m = onnx.load(path)
    if hgtest.opset(m, 0) > 17 or m.ir_version > 8:
        return
    err = hgtest.checker_error(m)
    check(what if err is None else f"{what}: onnx.checker: {err[:300]}", err is None)


def run(model, data, out):
    rc, _, se = hgtest.run([HG, "run", model, "--data", data, "-o", out, "--threads", "2"])
    if rc:
        raise RuntimeError(f"run {model}: {se.strip()[-500:]}")
    return hgtest.read_outputs(out)


def close(a, b, rtol, atol):
    a = np.asarray(a, np.float64)
    b = np.asarray(b, np.float64)
    return a.shape == b.shape and np.allclose(a, b, rtol=rtol, atol=atol)


# ---------------------------------------------------------------- ORT's fusion cases

# Already-fused LayerNormalization (not to be re-fused) and negatives (not LayerNorms).
NEGATIVE = {"layer_norm_sub_dup.onnx", "layer_norm_t5.onnx", "skip_layer_norm.onnx"}
ALREADY = {"skip_layer_norm_no_beta.onnx", "skip_layer_norm_no_beta_with_cast.onnx"}
EXPECT_LN = {"layer_norm_shared_input.onnx": 2}


def fusion_cases(tmp):
    files = sorted(glob.glob(os.path.join(FUSION, "layer_norm*.onnx")) +
                   glob.glob(os.path.join(FUSION, "skip_layer_norm*.onnx")))
    check(f"found {len(files)} layer_norm*/skip_layer_norm* fusion cases", len(files) >= 20)
    for src in files:
        name = os.path.basename(src)
        dst = os.path.join(tmp, name)
        before = counts(src)
        convert(src, dst)
        after = counts(dst)
        if name in NEGATIVE or name in ALREADY:
            check(f"{name}: untouched ({dict(before)} -> {dict(after)})", after == before)
            print(f"{name}: untouched, LayerNormalization={after['LayerNormalization']}")
            continue
        n = EXPECT_LN.get(name, 1)
        left = {op: after[op] for op in LN_PART if after[op]}
        # each fused instance took its eps Add and its beta Add; the residual Adds stay plain Adds
        ok = after["LayerNormalization"] == n and not left and after["Add"] == before["Add"] - 2 * n
        check(f"{name}: LayerNormalization={after['LayerNormalization']} (want {n}), "
              f"left {left}, Add {before['Add']} -> {after['Add']}", ok)
        check(f"{name}: no com.microsoft op",
              not any(o.domain == "com.microsoft" for o in onnx.load(dst).graph.node))
        print(f"{name}: LayerNormalization={after['LayerNormalization']} Add {before['Add']}->{after['Add']}"
              f" Cast {before['Cast']}->{after['Cast']}")
        checker(dst, f"{name}: checker")


def mismatched_axes(tmp):
    """Negative: the variance reduces over another axis than the mean, and non-consecutive axes."""
    for tag, a1, a2 in (("mismatched", [-1], [-2]), ("gap", [1, 3], [1, 3])):
        x, y = hgtest.vi("x", [2, 3, 4, 5]), hgtest.vi("y", None)
        inits = [numpy_helper.from_array(np.array(2.0, np.float32), "two"),
                 numpy_helper.from_array(np.array(1e-5, np.float32), "eps")]
        nodes = [helper.make_node("ReduceMean", ["x"], ["m"], axes=a1),
                 helper.make_node("Sub", ["x", "m"], ["d"]),
                 helper.make_node("Pow", ["d", "two"], ["p"]),
                 helper.make_node("ReduceMean", ["p"], ["v"], axes=a2),
                 helper.make_node("Add", ["v", "eps"], ["ve"]),
                 helper.make_node("Sqrt", ["ve"], ["s"]),
                 helper.make_node("Div", ["d", "s"], ["y"])]
        src, dst = os.path.join(tmp, f"{tag}_in.onnx"), os.path.join(tmp, f"{tag}_out.onnx")
        hgtest.save_model(src, nodes, [x], [y], inits, opset=13, name=tag)
        convert(src, dst)
        check(f"{tag} axes: untouched", counts(dst) == counts(src))
        check(f"{tag} axes: opset unchanged", onnx.load(dst).opset_import[0].version == 13)


# ---------------------------------------------------------------- whole models

def whole_models(tmp):
    cases = ortlib.model_cases()
    for name, want in (("gpt2_past", 25), ("TFBertForQuestionAnswering", 49)):
        src, feeds, outs = cases[name]
        dst = os.path.join(tmp, name + ".onnx")
        note = convert(src, dst)
        c = counts(dst)
        check(f"{name}: LayerNormalization={c['LayerNormalization']} (want {want})", c["LayerNormalization"] == want)
        print(f"{name}: LayerNormalization={c['LayerNormalization']}; {note.strip().splitlines()[-1]}")
        checker(dst, f"{name}: checker")
        w1, w2 = os.path.join(tmp, name + "_a"), os.path.join(tmp, name + "_b")
        a, _ = ortlib.run_halfguard(HG, src, feeds, outs, w1, threads=2)
        b, _ = ortlib.run_halfguard(HG, dst, feeds, outs, w2, threads=2)
        worst = 0.0
        for x, y in zip(a, b):
            x = np.asarray(x, np.float64)
            y = np.asarray(y, np.float64)
            worst = max(worst, float(np.max(np.abs(x - y) / (np.abs(x) + 1e-6))) if x.size else 0.0)
        ok = len(a) == len(b) and all(close(x, y, 1e-4, 1e-5) for x, y in zip(a, b))
        check(f"{name}: outputs before/after fusion agree (worst relative {worst:.2e})", ok)
        print(f"{name}: {len(a)} outputs agree before/after, worst relative difference {worst:.2e}")


# ---------------------------------------------------------------- ONNX node tests

def node_tests(tmp):
    dirs = []
    for root in NODE_DIRS:
        dirs += sorted(glob.glob(os.path.join(root, "test_layer_normalization_*_expanded*")))
    check(f"found {len(dirs)} expanded LayerNormalization node tests", len(dirs) >= 19)
    for d in dirs:
        tag = os.path.basename(os.path.dirname(d)) + "/" + os.path.basename(d)
        dst = os.path.join(tmp, tag.replace("/", "_") + ".onnx")
        convert(os.path.join(d, "model.onnx"), dst)
        c = counts(dst)
        check(f"{tag}: one LayerNormalization ({dict(c)})",
              c["LayerNormalization"] == 1 and not any(c[op] for op in LN_PART))
        data = os.path.join(d, "test_data_set_0")
        got = run(dst, data, os.path.join(tmp, "out_" + tag.replace("/", "_")))
        want = hgtest.read_outputs(data)
        ok = len(got) == len(want) and all(close(g, w, 1e-4, 1e-5) for g, w in zip(got, want))
        check(f"{tag}: outputs match output_*.pb", ok)
        checker(dst, f"{tag}: checker")
    print(f"{len(dirs)} expanded LayerNormalization node tests: converted, run and compared")


# ---------------------------------------------------------------- opset upgrades

GOLDEN = os.path.join(hgtest.ROOT, "golden", "fuse_layernorm")


def upgrade_equivalence(tmp):
    """The golden opset-upgrade models: the rewritten ops compute what the old ones did (interpreter
    on random inputs), and the result passes onnx.checker."""
    rng = np.random.default_rng(7)
    cases = sorted(glob.glob(os.path.join(GOLDEN, "opset*.onnxtxt")))
    check(f"found {len(cases)} opset golden cases", len(cases) >= 4)
    for txt in cases:
        tag = os.path.basename(txt)[:-len(".onnxtxt")]
        src, dst = os.path.join(tmp, tag + "_in.onnx"), os.path.join(tmp, tag + "_out.onnx")
        rc, _, se = hgtest.run([HG, "convert", "--passes", "none", txt, "-o", src])
        if rc:
            raise RuntimeError(f"{tag}: {se}")
        convert(src, dst)
        m_in, m_out = onnx.load(src), onnx.load(dst)
        raised = m_out.opset_import[0].version != m_in.opset_import[0].version
        data = hgtest.write_inputs(os.path.join(tmp, tag + "_data"), [
            (i.name, rng.standard_normal([d.dim_value for d in i.type.tensor_type.shape.dim]).astype(np.float32))
            for i in m_in.graph.input])
        a = run(src, data, os.path.join(tmp, tag + "_a"))
        b = run(dst, data, os.path.join(tmp, tag + "_b"))
        ok = len(a) == len(b) and all(close(x, y, 1e-4, 1e-5) for x, y in zip(a, b))
        check(f"{tag}: outputs agree after the opset upgrade", ok)
        print(f"{tag}: opset {m_in.opset_import[0].version} -> {m_out.opset_import[0].version}, "
              f"LayerNormalization={counts(dst)['LayerNormalization']}, {len(a)} outputs agree")
        if raised:
            checker(dst, f"{tag}: checker")


def main():
    with tempfile.TemporaryDirectory() as tmp:
        mismatched_axes(tmp)
        node_tests(tmp)
        upgrade_equivalence(tmp)
        if not hgtest.have_corpus():  # a clone without ../shared: what needs no corpus model
            print(f"note: {CORPUS} is absent: ORT's fusion cases and the whole models are skipped")
            return check.finish()
        fusion_cases(tmp)
        whole_models(tmp)
    return check.finish()


if __name__ == "__main__":
    sys.exit(main())
