#!/usr/bin/python3
"""Shape inference against runs (issue 12): on models written the way exporters write symbolic shape
math, tests/ranges_model --symbolic runs the interpreter and checks that every value's dims are what
inference said: known dims equal, and each symbolic name one size throughout the run, products
(4*B, B*S) and prefixes cut to a symbolic length (min(S,16)) computed from their parts. Each model
runs at two sizes; the values must also stay inside their static ranges, and every dim that is
known with the sizes pinned must be known by value or by name with them symbolic. With ../shared/corpus,
TFBert and gpt2_past (symbolic batch and sequence) run the same way.
Usage: test_shapes_run.py RANGES_MODEL"""
import os
import re
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hgtest  # noqa: E402
import ortlib  # noqa: E402

tool = sys.argv[1]
check = hgtest.Checks()

# Position ids cut to the sequence (TorchScript's positions[:, :S]), broadcast against the S-long
# embeddings, a head split by view(B, S, 2, -1), Range(0, S, 1), ConstantOfShape of [S, S], the
# expand(-1) pattern and a Tile by the batch.
POSITIONS = """<ir_version: 8, opset_import: ["" : 13]>
g (int64[B,S] ids, float[1,6,8] w, float[32,8] tok, float[16,8] ptab, int64[1,16] pos)
  => (float[B,2,S,S] sc, int64[S] r, float[S,S] z, float[B,6,8] e, float[B,1,8] t0) {
  s = Shape(ids)
  one_s = Constant <value = int64 {1}> ()
  zero_s = Constant <value = int64 {0}> ()
  zero = Constant <value = int64[1] {0}> ()
  one = Constant <value = int64[1] {1}> ()
  two = Constant <value = int64[1] {2}> ()
  m1 = Constant <value = int64[1] {-1}> ()
  m1_s = Constant <value = int64 {-1}> ()
  tail = Constant <value = int64[2] {2, -1}> ()
  seq = Gather <axis = 0> (s, one_s)
  u = Unsqueeze(seq, zero)
  p = Slice(pos, zero, u, one)
  pe = Gather(ptab, p)
  emb = Gather(tok, ids)
  h = Add(emb, pe)
  hs = Shape(h)
  lead = Slice(hs, zero, two)
  tgt = Concat <axis = 0> (lead, tail)
  q = Reshape(h, tgt)
  qt = Transpose <perm = [0, 2, 1, 3]> (q)
  kt = Transpose <perm = [0, 2, 3, 1]> (q)
  sc = MatMul(qt, kt)
  r = Range(zero_s, seq, one_s)
  uu = Concat <axis = 0> (u, u)
  z = ConstantOfShape(uu)
  b = Slice(s, zero, one)
  sh = Concat <axis = 0> (b, m1, m1)
  shf = Reshape(sh, m1)
  shs = Shape(shf)
  ones = ConstantOfShape <value = int64[1] {1}> (shs)
  neg = Mul(ones, m1_s)
  eq = Equal(shf, neg)
  wh = Where(eq, ones, shf)
  e = Expand(w, wh)
  reps = Concat <axis = 0> (b, one, one)
  w1 = Slice(w, zero, one, one)
  t0 = Tile(w1, reps)
}
"""

# BLOOM's merged batch and heads: view(B * 4, S, -1) before the scores, view(B, 4, S, -1) around the
# Softmax, back to [4*B, S, -1] for P x V; Flatten names B*4... products.
PRODUCTS = """<ir_version: 8, opset_import: ["" : 13]>
g (float[B,4,S,8] x, float[B,4,S,8] v) => (float[B,4,S,8] o, float[B,4,S,S] p, float[B,32,S] fl) {
  zero = Constant <value = int64[1] {0}> ()
  one = Constant <value = int64[1] {1}> ()
  two = Constant <value = int64[1] {2}> ()
  three = Constant <value = int64[1] {3}> ()
  four = Constant <value = int64[1] {4}> ()
  m1 = Constant <value = int64[1] {-1}> ()
  s = Shape(x)
  b = Slice(s, zero, one)
  sq = Slice(s, two, three)
  bh = Mul(b, four)
  t1 = Concat <axis = 0> (bh, sq, m1)
  q = Reshape(x, t1)
  vr = Reshape(v, t1)
  kt = Transpose <perm = [0, 2, 1]> (q)
  sc = MatMul(q, kt)
  t2 = Concat <axis = 0> (b, four, sq, m1)
  sc4 = Reshape(sc, t2)
  p = Softmax <axis = -1> (sc4)
  p3 = Reshape(p, t1)
  o3 = MatMul(p3, vr)
  o = Reshape(o3, t2)
  xt = Transpose <perm = [0, 1, 3, 2]> (x)
  t3 = Concat <axis = 0> (b, m1, sq)
  fl = Reshape(xt, t3)
}
"""


def dims_checked(out):
    """The number of dims ranges_model compared with the run (known or named), or -1."""
    m = re.search(r"(\d+) dims as inferred", out)
    return int(m.group(1)) if m else -1


def run(name, text, feeds, ranges, tmp):
    path = os.path.join(tmp, name + ".onnxtxt")
    with open(path, "w") as f:
        f.write(text)
    data = hgtest.write_inputs(os.path.join(tmp, name + "-data"), feeds, layout="npy")
    rc, so, se = hgtest.run([tool, "--symbolic", path, data] + ranges)
    ok = rc == 0 and " 0 violations" in so and " 0 not" in so and "run stopped" not in so
    check(f"{name}: dims as inferred, values in range", ok, (so + se).strip())
    # With the sizes pinned every dim is known; with them symbolic every one must still be known by
    # value or by name (a dim inference loses is not checked, and would pass unseen).
    rc2, so2, se2 = hgtest.run([tool, path, data] + ranges)
    check(f"{name}: every dim named", rc2 == 0 and dims_checked(so) == dims_checked(so2) > 0, (so, so2, se2))


rng = np.random.default_rng(12)
with tempfile.TemporaryDirectory(prefix="hg-shapes-run-") as tmp:
    for b, s in ((2, 5), (3, 16)):
        feeds = [("ids", rng.integers(0, 32, (b, s)).astype(np.int64)),
                 ("w", rng.uniform(-1, 1, (1, 6, 8)).astype(np.float32)),
                 ("tok", rng.uniform(-1, 1, (32, 8)).astype(np.float32)),
                 ("ptab", rng.uniform(-1, 1, (16, 8)).astype(np.float32)),
                 ("pos", np.arange(16, dtype=np.int64).reshape(1, 16))]
        run(f"positions-B{b}-S{s}", POSITIONS, feeds, ["ids=0:31", "w=-1:1", "tok=-1:1", "ptab=-1:1", "pos=0:15"],
            tmp)
    for b, s in ((1, 3), (3, 7)):
        feeds = [("x", rng.uniform(-1, 1, (b, 4, s, 8)).astype(np.float32)),
                 ("v", rng.uniform(-1, 1, (b, 4, s, 8)).astype(np.float32))]
        run(f"products-B{b}-S{s}", PRODUCTS, feeds, ["x=-1:1", "v=-1:1"], tmp)
    if os.path.isdir(hgtest.CORPUS):
        cases = ortlib.model_cases()
        for name, rs in (("gpt2_past", ["input_ids=0:19", "*=-5:5"]),
                         ("TFBertForQuestionAnswering", ["attention_mask=0:1", "input_ids=0:19",
                                                         "token_type_ids=0:1"])):
            model, feeds, _ = cases[name]
            d = ortlib.write_feeds(model, feeds, os.path.join(tmp, name))
            rc, so, se = hgtest.run([tool, "--symbolic", model, d] + rs)
            check(f"{name}: dims as inferred, values in range", rc == 0 and " 0 not" in so, (so + se).strip())
    else:
        print("no ../shared/corpus: the corpus models are not run")
sys.exit(check.finish())
