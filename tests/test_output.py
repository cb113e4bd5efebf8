"""Output for people (issue 16): what convert and check print, how much, and how.

- convert's summary line (what follows "IN -> OUT: ") is at most 200 characters and holds no internal
  word ("k = ", "rewrite costs"): on examples/tiny_unet.onnx always, and with --corpus on the shared
  corpus's BERT with ranges and fns-candy (exit 77 when the corpus is absent);
- -v lists what the summary leaves out: the rewrites made, and each FP32 island with its nodes and
  why; identical islands are one line, "N × ...", naming the first few and "and N more";
- -q prints nothing but errors: nothing on a clean or warned conversion, the error line on a bad
  model, the exit statuses unchanged; check -q prints no finding as text, but the JSON asked for;
- colour only on a terminal (a pty), never with NO_COLOR set, never on a pipe;
- the progress line of calibration only on a terminal, erased at the end, never on a pipe.

Usage: test_output.py HALFGUARD [--corpus]
"""
import os
import pty
import re
import select
import subprocess
import sys

import numpy as np
from onnx import helper, numpy_helper

import hgtest
from hgtest import vi

HG = sys.argv[1]
CORPUS_RUN = "--corpus" in sys.argv[2:]
check = hgtest.Checks(echo="fail", limit=3000)
run = hgtest.tool(HG)
SUMMARY_MAX = 200
ESC = "\x1b["


def summary_body(text, src, dst):
    """What follows "SRC -> DST: " on its line, or None."""
    for line in text.splitlines():
        if line.startswith(f"{src} -> {dst}: "):
            return line[len(f"{src} -> {dst}: "):]
    return None


def short_summary(tag, so, src, dst):
    body = summary_body(so, src, dst)
    check(f"{tag}:summary", body is not None, so)
    if body is None:
        return None
    check(f"{tag}:summary<={SUMMARY_MAX}", len(body) <= SUMMARY_MAX, f"{len(body)} characters: {body}")
    check(f"{tag}:summary-no-internal-words", not re.search(r"k = \d|rewrite costs|the island costs", body), body)
    check(f"{tag}:summary-counts", re.search(r"\d+ FP32 islands? \(\d+ nodes?.*\); \d+ Casts?; FP16: ", body), body)
    return body


def on_pty(cmd, env=None):
    """Run cmd with stderr on a pseudo-terminal, stdout on a pipe: (rc, stdout, what the terminal got)."""
    master, slave = pty.openpty()
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=slave, stdin=subprocess.DEVNULL,
                         env=dict(os.environ, **(env or {})))
    os.close(slave)
    got = b""
    while True:
        r, _, _ = select.select([master], [], [], 60)
        if not r:
            break
        try:
            chunk = os.read(master, 65536)
        except OSError:  # EIO: the last writer closed the terminal
            break
        if not chunk:
            break
        got += chunk
    out = p.stdout.read().decode(errors="replace")
    rc = p.wait()
    os.close(master)
    return rc, out, got.decode(errors="replace")


def parallel_tanh(path, n=5):
    """n identical branches x -> Relu -> Tanh -> Relu -> y_i: with --block-op Tanh, n identical islands."""
    nodes, outs = [], []
    for i in range(n):
        nodes += [helper.make_node("Relu", ["x"], [f"a{i}"], name=f"pre{i}"),
                  helper.make_node("Tanh", [f"a{i}"], [f"b{i}"], name=f"tanh{i}"),
                  helper.make_node("Relu", [f"b{i}"], [f"y{i}"], name=f"post{i}")]
        outs.append(vi(f"y{i}", (64, 64)))
    return hgtest.save_model(path, nodes, [vi("x", (64, 64))], outs)


def scale_model(path, k=1000.0):
    """y = x * k at node 'scale'."""
    return hgtest.save_model(path, [helper.make_node("Mul", ["x", "k"], ["y"], name="scale")],
                             [vi("x")], [vi("y")], [numpy_helper.from_array(np.array(k, np.float32), "k")])


def test_summary_and_verbose(tmp):
    src = os.path.join(hgtest.ROOT, "examples", "tiny_unet.onnx")
    dst = os.path.join(tmp, "tiny_unet.out.onnx")
    rc, so, se = run("convert", src, "-o", dst, "-r", "image=0:1")
    check("tiny_unet:convert", rc == 0, hgtest.show(rc, so, se))
    short_summary("tiny_unet", so, src, dst)
    check("tiny_unet:one-line", len(so.splitlines()) == 1, so)
    rc, vo, se = run("convert", src, "-o", dst, "-r", "image=0:1", "-v")
    check("tiny_unet:-v-summary-same", summary_body(vo, src, dst) == summary_body(so, src, dst), (so, vo))
    # Inputs up to 4 take Conv_3 past FP16's range (per-channel bounds prove [0, 1] safe as it is).
    rc, vo, se = run("convert", src, "-o", dst, "-r", "image=0:4", "-v")
    check("tiny_unet:-v-rewrites", "\n  rewrites and other changes:\n" in vo and
          re.search(r"\n    region of 1 node at 'Conv_3': weights x 2\^-2", vo) and
          "\n    removed 1 dead node\n" in vo, vo)

    # Five identical islands: one line, "5 × ...", three names and "and 2 more".
    m = parallel_tanh(os.path.join(tmp, "tanh5.onnx"))
    out = os.path.join(tmp, "tanh5.out.onnx")
    rc, vo, se = run("convert", m, "-o", out, "-r", "x=-1:1", "--block-op", "Tanh", "-v")
    check("islands:convert", rc == 0, hgtest.show(rc, vo, se))
    check("islands:summary", "5 FP32 islands" in (summary_body(vo, m, out) or ""), vo)
    grouped = [l for l in vo.splitlines() if l.startswith("    5 × ")]
    check("islands:grouped-once", len(grouped) == 1 and "(Tanh, Relu)" in grouped[0] and
          "(at 'tanh0', 'tanh1', 'tanh2' and 2 more)" in grouped[0], vo)
    check("islands:why", grouped and "--block-op" in grouped[0], vo)
    check("islands:no-repeats", "tanh3" not in vo and "tanh4" not in vo, vo)
    rc, so, se = run("convert", m, "-o", out, "-r", "x=-1:1", "--block-op", "Tanh")
    check("islands:not-without-v", rc == 0 and "×" not in so and len(so.splitlines()) == 1, so)


def test_notes_grouped(tmp):
    """Four identical attention-like blocks whose product has another reader: prescale leaves each Div
    in place, rescale scales each region; -v says each once, "4 × ...", with the first names."""
    nodes, outs = [], []
    inits = [numpy_helper.from_array(np.full((64, 64), 20, np.float32), "W"),
             numpy_helper.from_array(np.array(8.0, np.float32), "eight")]
    for i in range(4):
        nodes += [helper.make_node("MatMul", ["x", "W"], [f"p{i}"], name=f"mm{i}"),
                  helper.make_node("Div", [f"p{i}", "eight"], [f"q{i}"], name=f"div{i}"),
                  helper.make_node("Relu", [f"p{i}"], [f"r{i}"], name=f"relu{i}")]
        outs += [vi(f"q{i}", (4, 64)), vi(f"r{i}", (4, 64))]
    m = hgtest.save_model(os.path.join(tmp, "blocks.onnx"), nodes, [vi("x", (4, 64))], outs, inits)
    out = os.path.join(tmp, "blocks.out.onnx")
    rc, so, se = run("convert", m, "-o", out, "-r", "x=0:100", "-v")
    check("notes:convert", rc == 0, hgtest.show(rc, so, se))
    body = summary_body(so, m, out) or ""
    check("notes:summary-counts-them", "; 4 patterns left as they were" in body and len(body) <= SUMMARY_MAX, body)
    left = [l for l in so.splitlines() if "left Div" in l]
    check("notes:left-grouped", len(left) == 1 and left[0].startswith("    4 × left Div '…' after MatMul '…' in place")
          and left[0].endswith("(at 'div0', 'div1', 'div2' and 1 more)"), so)
    check("notes:under-its-title", "\n  patterns left as they were:\n    4 × left Div" in so, so)


def test_warnings_grouped(tmp):
    """Three values each defined by two Constants (gpt2_past has 48): one warning line naming the
    others; -v one line each; -q none."""
    nodes = []
    for name in ("ca", "cb", "cc"):
        for k in range(2):
            nodes.append(helper.make_node("Constant", [], [name], name=f"{name}{k}",
                                          value=numpy_helper.from_array(np.full((2, 2), k + 1, np.float32))))
    nodes.append(helper.make_node("Sum", ["x", "ca", "cb", "cc"], ["y"], name="sum"))
    m = os.path.join(tmp, "dup.onnx")
    import onnx
    onnx.save(hgtest.make_model(nodes, [vi("x")], [vi("y")]), m)
    rc, so, se = run("check", m, "-r", "x=0:1")
    warned = [l for l in se.splitlines() if ": warning: " in l]
    check("warnings:grouped", rc == 0 and len(warned) == 1 and warned[0] ==
          f"{m}: warning: 3 × value 'ca' is defined by two Constant nodes; the later one (in file order) is used, "
          "as ONNX Runtime does (also 'cb', 'cc')", se)
    rc, so, se = run("check", m, "-r", "x=0:1", "-v")
    check("warnings:-v-each", len([l for l in se.splitlines() if ": warning: value '" in l]) == 3, se)
    rc, so, se = run("check", m, "-r", "x=0:1", "-q")
    check("warnings:-q-none", rc == 0 and se == "" and so == "", se)


def test_quiet(tmp):
    m = scale_model(os.path.join(tmp, "scale.onnx"))
    out = os.path.join(tmp, "out.onnx")
    # Without -q: the warning about the unranged input and the summary line; with -q: nothing.
    rc, so, se = run("convert", m, "-o", out)
    check("quiet:baseline", rc == 0 and " -> " in so and "warning: input 'x'" in se, hgtest.show(rc, so, se))
    rc, so, se = run("convert", m, "-o", out, "-q")
    check("quiet:convert-silent", rc == 0 and so == "" and se == "" and os.path.getsize(out) > 0,
          hgtest.show(rc, so, se))
    bad = os.path.join(tmp, "bad.onnx")
    with open(bad, "wb") as f:
        f.write(b"not a model")
    rc, so, se = run("convert", bad, "-o", out, "-q")
    check("quiet:convert-error-shown", rc == 2 and so == "" and se.startswith(f"{bad}: "), hgtest.show(rc, so, se))
    rc, so, se = run("convert", m, "-o", out, "-q", "-v")
    check("quiet:not-with-v", rc == 2 and "-v or -q" in se, hgtest.show(rc, so, se))
    # --emit-trtexec FILE: one input; the flags in FILE, nothing of them on stdout.
    flags = os.path.join(tmp, "flags.txt")
    m2 = scale_model(os.path.join(tmp, "scale2.onnx"))
    rc, so, se = run("convert", m, m2, "-O", os.path.join(tmp, "o"), "--emit-trtexec", flags)
    check("trtexec:one-input", rc == 2 and "--emit-trtexec takes one input" in se and not os.path.exists(flags),
          hgtest.show(rc, so, se))
    rc, so, se = run("convert", m, "-o", out, "-r", "x=0:100", "--emit-trtexec", flags)
    text = open(flags).read() if os.path.exists(flags) else ""
    check("trtexec:file", rc == 0 and text == "--fp16 --precisionConstraints=obey --layerPrecisions=scale:fp32\n"
          and "--fp16" not in so + se and " -> " in so, (text, so, se))
    # check: exit 1 stays; no finding as text; JSON still printed.
    rc, so, se = run("check", m, "-r", "x=0:100", "-q")
    check("quiet:check-text", rc == 1 and so == "" and se == "", hgtest.show(rc, so, se))
    rc, so, se = run("check", m, "-r", "x=0:100", "-q", "--format", "json")
    check("quiet:check-json", rc == 1 and '"kind": "overflow"' in so.replace('"kind" : ', '"kind": ') and se == "",
          hgtest.show(rc, so, se))


def test_colour_and_progress(tmp):
    m = scale_model(os.path.join(tmp, "scale.onnx"))
    out = os.path.join(tmp, "out.onnx")
    env = {"HALFGUARD_TEST_PROGRESS_AFTER": "0", "TERM": "xterm"}
    # A terminal: the warning word coloured; the calibration's progress shown, then erased.
    rc, so, tty = on_pty([HG, "convert", m, "-o", out, "--calib-random", "3"], dict(env, NO_COLOR=""))
    check("tty:convert", rc == 0, (so, tty))
    check("tty:colour", f"{ESC}1;35mwarning{ESC}0m:" in tty, repr(tty))
    check("tty:stdout-plain", ESC not in so and " -> " in so, repr(so))
    check("tty:progress", re.search(r"\r\[1/3\] calibrating on synthetic sample: seed 1\x1b\[K", tty), repr(tty))
    check("tty:progress-erased", tty.rfind("\r\x1b[K") > tty.rfind("[2/3]") >= 0, repr(tty))
    # convert's own synthetic sets (x has no range) show the same progress; with --passes none nothing
    # reads statistics, and none are drawn (each set is a run of the model).
    rc, so, tty = on_pty([HG, "convert", m, "-o", out], dict(env, NO_COLOR=""))
    check("tty:default-synthetic-progress", rc == 0 and "calibrating on synthetic sample" in tty, repr(tty))
    rc, so, tty = on_pty([HG, "convert", m, "-o", out, "--passes", "none"], dict(env, NO_COLOR=""))
    check("tty:passes-none-no-calibration", rc == 0 and "calibrating" not in tty and " -> " in so, repr((so, tty)))
    # verify's samples: the same line on a terminal, erased at the end; none on a pipe.
    rc, so, tty = on_pty([HG, "verify", m, out, "--random", "3"], dict(env, NO_COLOR=""))
    check("tty:verify-progress", rc in (0, 1) and
          re.search(r"\r\[1/3\] verifying on sample: synthetic 1 \(seed 1\)\x1b\[K", tty) and
          tty.rfind("\r\x1b[K") > tty.rfind("[2/3]") >= 0, repr((rc, so, tty)))
    rc, so, se = run("verify", m, out, "--random", "3", env=dict(env, NO_COLOR=""))
    check("pipe:verify-no-progress", rc in (0, 1) and "verifying" not in se and "\r" not in se,
          hgtest.show(rc, so, se))
    # NO_COLOR (any non-empty value): no colour, the words the same.
    rc, so, tty = on_pty([HG, "convert", m, "-o", out, "--calib-random", "3"], dict(env, NO_COLOR="1"))
    check("no_color:plain", rc == 0 and ESC + "1;" not in tty and ": warning: input 'x'" in tty, repr(tty))
    # A pipe: neither colour nor progress.
    rc, so, se = run("convert", m, "-o", out, "--calib-random", "3", env=dict(env, NO_COLOR=""))
    check("pipe:plain", rc == 0 and "\x1b" not in so + se and "\r" not in se and "calibrating" not in se,
          hgtest.show(rc, so, se))
    # -q on a terminal: no progress either.
    rc, so, tty = on_pty([HG, "convert", m, "-o", out, "--calib-random", "3", "-q"], env)
    check("tty:quiet", rc == 0 and tty == "" and so == "", repr((so, tty)))
    # check's finding on a terminal: the kind coloured by its level (overflow is an error).
    master, slave = pty.openpty()
    p = subprocess.run([HG, "check", m, "-r", "x=0:100"], stdout=slave, stderr=subprocess.PIPE,
                       env=dict(os.environ, NO_COLOR="", TERM="xterm"))
    os.close(slave)
    r, _, _ = select.select([master], [], [], 10)
    text = os.read(master, 65536).decode(errors="replace") if r else ""
    os.close(master)
    check("tty:check-kind-coloured", p.returncode == 1 and f"{ESC}1;31moverflow{ESC}0m:" in text, repr(text))


def test_check_grouping(tmp):
    """Six identical overflows: one line "6 × node 'm0', 'm1', 'm2' and 3 more (Mul): overflow: ..."
    (each one a line of its own with -v), and the count by kind at the end on stderr."""
    nodes, outs, inits = [], [], [numpy_helper.from_array(np.array(1000.0, np.float32), "k")]
    for i in range(6):
        nodes.append(helper.make_node("Mul", ["x", "k"], [f"y{i}"], name=f"m{i}"))
        outs.append(vi(f"y{i}"))
    nodes.append(helper.make_node("Div", ["x", "x"], ["q"], name="div"))
    outs.append(vi("q"))
    m = hgtest.save_model(os.path.join(tmp, "six.onnx"), nodes, [vi("x")], outs, inits)
    rc, so, se = run("check", m, "-r", "x=0:100")
    lines = so.splitlines()
    check("check:exit1", rc == 1, hgtest.show(rc, so, se))
    grouped = [l for l in lines if " 6 × " in l]
    check("check:grouped", len(grouped) == 1 and grouped[0].startswith(
        f"{m}: 6 × node 'm0', 'm1', 'm2' and 3 more (Mul): overflow: output may reach 1e+05") and
        grouped[0].endswith("(as at 'm0') [convert keeps it FP32]"), so)
    check("check:single-kept", any(l.startswith(f"{m}: node 'div' (Div): division-by-zero: ") and
                                   l.endswith(" [convert keeps it FP32]") for l in lines), so)
    check("check:two-lines", len(lines) == 2, so)
    check("check:summary", se.rstrip("\n").endswith("halfguard check: 7 hazards: 6 overflow, 1 division-by-zero"), se)
    rc, vo, _ = run("check", m, "-r", "x=0:100", "-v")
    check("check:-v-each", rc == 1 and len(vo.splitlines()) == 7 and "×" not in vo, vo)
    rc, jo, _ = run("check", m, "-r", "x=0:100", "--format", "json")
    check("check:json-one-per-hazard", rc == 1 and jo.count('"kind"') >= 7, jo[:500])
    # What convert fixes by itself is counted apart.
    fixable = hgtest.save_model(os.path.join(tmp, "fill.onnx"),
                                [helper.make_node("Add", ["x", "fill"], ["s"], name="mask"),
                                 helper.make_node("Softmax", ["s"], ["y"], name="softmax")],
                                [vi("x")], [vi("y")],
                                [numpy_helper.from_array(np.full((2, 2), np.finfo(np.float32).min, np.float32), "fill")])
    rc, so, se = run("check", fixable, "-r", "x=-1:1")
    check("check:fixed-counted-apart", rc == 1 and se.splitlines()[-1] ==
          "halfguard check: 2 hazards: 1 precision-loss, 1 non-finite-constant (convert fixes it)", hgtest.show(rc, so, se))


def test_corpus(tmp):
    hgtest.need_corpus("the corpus summaries")
    models = os.path.join(hgtest.CORPUS, "microsoft_onnxruntime")
    bert = os.path.join(models, "onnxruntime/test/python/transformers/test_data/models/TFBertForQuestionAnswering.onnx")
    candy = os.path.join(models, "winml/test/collateral/models/fns-candy.onnx")
    for tag, src, ranges in (("bert", bert, ["input_ids=0:19", "attention_mask=0:1", "token_type_ids=0:1"]),
                             ("candy", candy, ["inputImage=0:255"])):
        dst = os.path.join(tmp, tag + ".onnx")
        rc, so, se = run("convert", src, "-o", dst, *hgtest.range_args(ranges))
        check(f"{tag}:convert", rc == 0, hgtest.show(rc, so, se))
        body = short_summary(tag, so, src, dst)
        print(f"{tag}: {len(body or '')} characters: {body}")


tests = [test_corpus] if CORPUS_RUN else [test_summary_and_verbose, test_notes_grouped, test_warnings_grouped, test_quiet, test_colour_and_progress,
                                           test_check_grouping]
hgtest.temp_folders(check, "hg-output-", tests)
sys.exit(check.finish())
