#!/usr/bin/python3
"""The prescale pass against the interpreter, and issue 6's acceptance for its two pathology cases.

Usage: test_prescale.py HALFGUARD [CASE...]

1. Every golden case of golden/prescale/ whose dump differs from its input (a rewrite happened) runs,
   original (`convert --passes none`) and rewritten (`convert --passes prescale` with the case's
   @args), through the interpreter in FP32 on random inputs inside its input ranges (uniform, then
   every element at +-the range's end, the largest products the ranges allow). The outputs must agree
   bit for bit. Every rewrite prescale makes is exact in FP32 barring overflow and underflow, and the
   inputs here cause neither:
   - a power of two 2^e moved onto a MatMul operand scales every partial sum of the product by 2^e
     exactly, so the product is 2^e times the old one, bit for bit;
   - the remainder left behind is s / 2^e (Mul) or c x 2^e (Div), itself exact: (2^e P) x (s / 2^e)
     and (2^e P) / (c x 2^e) are, as real numbers, P x s and P / c, so the one rounding of the Mul or
     Div gives the same float. Nothing re-associates; no tolerance is needed;
   - in an L2 norm, x x 2^-k squares to 2^-2k x^2 exactly, sums (in any order) to 2^-2k times the
     same partial sums, the square root of 2^-2k S is 2^-k sqrt(S) exactly, and the quotient (or the
     product with the reciprocal, 2^k / n) cancels the scales exactly; epsilons are scaled by the same
     powers, so Add(S, eps), Max(n, eps) keep their bits too; a mean of the squares (RMSNorm)
     divides 2^-2k S by n, itself 2^-2k times S / n exactly;
   - a power x^n with 2^-j on x is 2^-nj x^n (the interpreter's pow is computed in double and
     rounded once), and the remainder left behind gives back c x^n as above;
   - a reduction whose input is pre-scaled by 2^-k sums 2^-k (or, squared, 2^-2k) times the same
     partial sums, and the Mul by 2^k (2^2k) after it gives back the same bits.
   The negative cases must come out unchanged (the dump equals the input's). Every rewrite's note
   weighs it against an FP32 island (assign_precision's cut with and without the rewrite's nodes
   cured): a rewrite made must be the cheaper, a pattern left in FP32 the dearer; the cases with
   --keep-io-types (neg_island_cheaper, attention_keep_io, neg_island_l2: around where the island
   starts to cost more than the Mul the rewrite adds; attention_keep_io_pow2, const_operand_keep_io:
   a rewrite that pays for its Mul with the one it drops, one that adds none; two_scales_keep_io: a
   second rewrite weighed with the first counted as made) must give the figures their comments work
   out.
2. The pathology cases attention_scale_cures and l2norm_reducesum (tests/pathology/make_cases.py,
   with their --input-range and --calib): the same bit-for-bit check on their sample and on random
   inputs in range; then the default `convert`: the report's pass list shows each rewrite with k and
   why, `verify` passes, and the summary's FP16 share of MACs is 100%. Where the report keeps a node
   FP32 for a hazard prescale does not address (a precision-loss hazard of the check, not an
   overflow), the share must be 100% less exactly those nodes' MACs, and the test says so. (The
   third attention case, attention_logits_scaled_after, is no longer prescale's: its logits reach
   7.7e3, whose units FP16 loses wherever they are stored, so its product stays FP32 with the
   Softmax; golden/prescale/neg_softmax_logits_precision is the same situation from the ranges.)
"""
import json
import os
import re
import sys
import tempfile

import numpy as np
import onnx

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hgtest  # noqa: E402

run = hgtest.tool(sys.argv[1])
ONLY = set(sys.argv[2:])
GOLDEN = os.path.join(hgtest.ROOT, "golden", "prescale")
PATHOLOGY = ["attention_scale_cures", "l2norm_reducesum"]
# Cases with nothing for FP32 once prescale has run: 100% of MACs in FP16, no exception.
ALL_FP16 = {"attention_scale_cures", "l2norm_reducesum"}
# Hazards that prescale leaves to others (a node kept FP32 for one of these does not count against it).
NOT_OURS = {"precision-loss"}
SHARE = re.compile(r"FP16: (?:([\d.e+-]+)% of MACs, )?")
# prescale's notes on the cost of each rewrite against an FP32 island (assign_precision's minimum cut).
RE_MADE = re.compile(r"\(rewrite costs ([\d.e+-]+) against ([\d.e+-]+) for an FP32 island\)")
RE_LEFT = re.compile(r"in FP32: the island costs ([\d.e+-]+), the rewrite ([\d.e+-]+)")
# The golden cases with --keep-io-types: the figures of their notes, (rewrite, island) for each
# rewrite made and each pattern left, in note order.
COSTS = {
    "neg_island_cheaper": {"left": [(16400, 14800)]},
    "attention_keep_io": {"made": [(42000, 287000)]},
    "neg_island_l2": {"left": [(5120, 0)]},
    # the Softmax's precision keeps the product FP32 whatever prescale does: the island costs nothing
    "neg_softmax_logits_precision": {"left": [(1920, 0)]},
    "attention_keep_io_pow2": {"made": [(-12300, 145000)]},
    "const_operand_keep_io": {"made": [(0, 0)]},
    "two_scales_keep_io": {"made": [(21500, 23800), (26600, 76400)]},
}
check = hgtest.Checks(echo="fail", limit=3000)


def ranges_of(args):
    """name -> (lo, hi) from '-r NAME=LO:HI' options."""
    out = {}
    for i, a in enumerate(args):
        if a in ("-r", "--input-range") and i + 1 < len(args):
            name, span = args[i + 1].split("=", 1)
            lo, hi = span.split(":")
            out[name] = (float(lo), float(hi))
    return out


def float_inputs(path):
    m = onnx.load(path)
    inits = {t.name for t in m.graph.initializer}
    res = []
    for vi in m.graph.input:
        if vi.name in inits:
            continue
        dims = [d.dim_value for d in vi.type.tensor_type.shape.dim]
        res.append((vi.name, dims))
    return res


def samples(inputs, ranges, rng, n_random=4):
    """Feeds: uniform in range, then all elements at +-hi (random signs)."""
    feeds = []
    for s in range(n_random + 1):
        f = {}
        for name, dims in inputs:
            lo, hi = ranges.get(name, (-1.0, 1.0))
            if s < n_random:
                a = rng.uniform(lo, hi, dims)
            else:
                a = np.where(rng.random(dims) < 0.5, lo, hi)
            f[name] = a.astype(np.float32)
        feeds.append(f)
    return feeds


def run_model(model, feed, tmp, tag):
    return hgtest.run_npy(run, model, feed, tmp, tag)


def bits_equal(a, b):
    """Same shape, type and bits (NaN payloads and the sign of zero included)."""
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    return np.array_equal(np.ascontiguousarray(a).view(np.uint8), np.ascontiguousarray(b).view(np.uint8))


def compare(tag, orig, new, feeds, tmp):
    n_out = 0
    for i, feed in enumerate(feeds):
        a, ea = run_model(orig, feed, tmp, f"{tag}.{i}.orig")
        b, eb = run_model(new, feed, tmp, f"{tag}.{i}.new")
        if not check(f"{tag}:run:{i}", a is not None and b is not None, ea + eb):
            return
        for k, (x, y) in enumerate(zip(a, b)):
            finite = np.isfinite(x).all()
            check(f"{tag}:finite:{i}:{k}", finite, "the FP32 original overflowed on a test input")
            if not bits_equal(x, y):
                diff = np.abs(x.astype(np.float64) - y.astype(np.float64))
                check(f"{tag}:bits:{i}:{k}", False,
                      f"{int((x != y).sum())} of {x.size} elements differ, max abs {diff.max():.3g}")
            else:
                n_out += 1
        check(f"{tag}:outputs:{i}", len(a) == len(b) and len(a) > 0, (len(a), len(b)))
    print(f"{tag}: {len(feeds)} inputs, {n_out} outputs bit-identical")


pays = hgtest.rewrite_pays


def costs(name, out):
    """Each rewrite against its FP32 island, as the notes give them: a rewrite made costs less than the
    island (or nothing), a pattern left in FP32 has an island no dearer than the rewrite; and the cases
    around the flip have the figures worked out in their comments."""
    made = [(float(r), float(i)) for r, i in RE_MADE.findall(out)]
    left = [(float(r), float(i)) for i, r in RE_LEFT.findall(out)]
    for k, (r, i) in enumerate(made):
        check(f"golden:{name}:made-cheaper:{k}", pays(r, i), (r, i))
    for k, (r, i) in enumerate(left):
        check(f"golden:{name}:left-dearer:{k}", not pays(r, i), (r, i))
    if name in COSTS:
        want = COSTS[name]
        check(f"golden:{name}:costs", (made, left) == (want.get("made", []), want.get("left", [])),
              (out, made, left))
    else:
        check(f"golden:{name}:costed", not left and len(made) == len(re.findall(r"k=\d+: ", out)), out)


def golden_cases(tmp, rng):
    for fn in sorted(os.listdir(GOLDEN)):
        if not fn.endswith(".onnxtxt"):
            continue
        name = fn[:-len(".onnxtxt")]
        if ONLY and name not in ONLY:
            continue
        src = os.path.join(GOLDEN, fn)
        text = open(src).read()
        args = " ".join(re.findall(r"^# @args: *(.*)$", text, re.M)).split()
        orig = os.path.join(tmp, name + ".orig.onnx")
        new = os.path.join(tmp, name + ".new.onnx")
        rc, so, se = run("convert", "--passes", "none", src, "-o", orig)
        if not check(f"golden:{name}:load", rc == 0, se):
            continue
        rc, so, se = run("convert", "--passes", "prescale", *args, src, "-o", new, "-v")
        if not check(f"golden:{name}:convert", rc == 0, se):
            continue
        _, before, _ = run("dump", orig)
        _, after, _ = run("dump", new)
        rewrote = before != after
        costs(name, "\n".join(l for l in so.splitlines() if l.startswith("    ")))  # -v's list, once each
        if name.startswith("neg_"):
            check(f"golden:{name}:unchanged", not rewrote, after)
            continue
        check(f"golden:{name}:rewrote", rewrote and re.search(r"k=\d+: .*may reach", so), so)
        compare(f"golden:{name}", orig, new, samples(float_inputs(orig), ranges_of(args), rng), tmp)


def load_feed(data, inputs):
    """The case's own sample (input_K.pb in graph-input order)."""
    return {name: hgtest.read_pb(os.path.join(data, f"input_{i}.pb")).astype(np.float32)
            for i, (name, _) in enumerate(inputs)}


def pathology(tmp, rng):
    names = [n for n in PATHOLOGY if not ONLY or n in ONLY]
    if not names:
        return
    out = os.path.join(tmp, "pathology")
    try:
        cases = {c["name"]: c for c in hgtest.pathology_cases(out, *names)}
    except RuntimeError as e:
        check("pathology:make_cases", False, e)
        return
    check("pathology:make_cases", True)
    for name in names:
        c = cases[name]
        src = os.path.join(out, c["model"])
        data = os.path.join(out, c["data"])
        flags = hgtest.case_flags(c, out, options=False)
        inputs = float_inputs(src)
        # the rewrite alone, in FP32: bit for bit
        new = os.path.join(tmp, name + ".prescaled.onnx")
        rc, so, se = run("convert", "--passes", "prescale", *flags, src, "-o", new, "-v")
        if check(f"{name}:prescale", rc == 0 and "k=" in so, so + se):
            feeds = [load_feed(data, inputs)] + samples(inputs, ranges_of(flags), rng)
            compare(f"{name}:fp32", src, new, feeds, tmp)
        # the default convert
        conv = os.path.join(tmp, name + ".fp16.onnx")
        report = os.path.join(tmp, name + ".json")
        rc, so, se = run("convert", *flags, src, "-o", conv, "--report", report)
        if not check(f"{name}:convert", rc == 0, se):
            continue
        rep = json.load(open(report))
        notes = [n["message"] for n in rep["passes"] if n["pass"] == "prescale"]
        check(f"{name}:report-notes", notes and all(re.search(r"k=\d+: .*may reach", n) for n in notes),
              rep["passes"])
        m = SHARE.search(so)
        share = float(m.group(1)) if m and m.group(1) else None
        fp32 = [d for d in rep["decisions"] if d["precision"] == "fp32"]
        theirs = [d for d in fp32 if d["reason"] in NOT_OURS]
        ours = [d for d in fp32 if d["reason"] not in NOT_OURS]
        check(f"{name}:no-overflow-fp32", not ours, ours)
        macs = rep["figures"]["macs"]
        expect = 100.0 * (1 - sum(d["macs"] for d in theirs) / macs) if macs else 100.0
        check(f"{name}:fp16-share", share is not None and abs(share - expect) <= 0.01, (so, expect))
        if name in ALL_FP16:
            check(f"{name}:all-fp16", share == 100.0 and not fp32, (so, fp32))
        if theirs:
            print(f"{name}: {share}% of MACs in FP16; kept FP32 for hazards prescale does not address: " +
                  ", ".join(f"{d['node']} ({d['op']}, {d['reason']}, {d['macs']:.0f} MACs)" for d in theirs))
        else:
            print(f"{name}: {share}% of MACs in FP16")
        rc, vo, ve = run("verify", src, conv, "--data", data)
        check(f"{name}:verify", rc == 0 and "PASS" in vo, vo + ve)


def main():
    rng = np.random.default_rng(20240606)
    with tempfile.TemporaryDirectory() as tmp:
        golden_cases(tmp, rng)
        pathology(tmp, rng)
    sys.exit(check.finish())


if __name__ == "__main__":
    main()
