#!/usr/bin/python3
"""Check that onnx 1.12's own parser reads what `halfguard dump` writes.

Usage: check_dumps_parse.py HALFGUARD_BINARY

For every model.onnx under the libonnx-testdata suites, run `HALFGUARD dump MODEL`, read the text
with onnx.parser.parse_model (Debian's python3-onnx 1.12), and compare the result with
onnx.load(MODEL): node op types, domains, inputs, outputs and attribute names (and the values of
numeric, string and tensor attributes), graph input and output names with their element types and
shapes, subgraphs the same way, and the initializers the dump prints in full.

Names that are not identifiers ("input.1", "0", or "" in the first position of a list) are quoted in
the dump, a form later ONNX versions read but 1.12 does not. Before parsing, this script replaces each
quoted name (a string in a name position) by the identifier _hgq_<hex of its UTF-8 bytes>, and decodes
that again in what 1.12 returns, so the names are still compared exactly.

`#@` annotations are comments to 1.12. A declaration whose type 1.12 cannot read in a signature
(seq, optional, map, sparse_tensor) is written untyped with the type in an annotation, so here it
must come back untyped.

Prints one line per failing model and the summary line "N passed, M failed"; exits 1 on any failure,
including a model listed in KNOWN_1_12_GAPS that 1.12 now reads (the list must stay minimal).
"""
import glob
import math
import os
import re
import struct
import sys

import numpy as np
import onnx
import onnx.parser
from onnx import numpy_helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hgtest  # noqa: E402

TESTDATA = hgtest.TESTDATA
SUITES = ["node", "pytorch-converted", "pytorch-operator", "simple", "real"]

# Dumps that onnx 1.12 cannot read, because 1.12 has no syntax for what the model holds.
KNOWN_1_12_GAPS = {
    "node/test_if_opt": "a type_proto attribute (Optional's 'type'): 1.12 has no literal for types",
}

# The dump prints tensors of up to this many elements in full and summarises the others.
SUMMARY_LIMIT = 64

MANGLE = "_hgq_"
# Strings, comments, and everything else one character at a time (whitespace skipped).
TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"|#[^\n]*|=>|[A-Za-z_][A-Za-z0-9_]*|[-0-9.][-+0-9.eE]*|\s+|.', re.S)
ESCAPES = {"n": "\n", "t": "\t", "r": "\r", '"': '"', "\\": "\\"}


def unquote(tok):
    """The bytes a quoted token of the dump stands for (the dump's escapes: \\" \\\\ \\n \\t \\r \\xHH)."""
    out, i, body = bytearray(), 0, tok[1:-1]
    while i < len(body):
        c = body[i]
        if c == "\\" and body[i + 1] == "x":
            out.append(int(body[i + 2 : i + 4], 16))
            i += 4
        elif c == "\\":
            out += ESCAPES[body[i + 1]].encode()
            i += 2
        else:
            out += c.encode()
            i += 1
    return bytes(out)


def mangle_quoted_names(text):
    """Replace quoted names by identifiers 1.12 reads; leave string literals and comments alone.

    A string is a literal after '=' or ':' (attribute values, header fields) or inside a literal
    bracket: the header's '<...>', an attribute's '[...]', a tensor's '{...}'. Elsewhere it is a name:
    in '(...)' lists, node outputs, dimensions, value lists and a tensor constant's name."""
    out, stack, prev = [], [], None
    for m in TOKEN.finditer(text):
        tok = m.group(0)
        if tok.isspace() or tok.startswith("#"):
            out.append(tok)
            continue
        literal_ctx = bool(stack) and stack[-1][1]
        if tok.startswith('"'):
            if prev not in ("=", ":") and not literal_ctx:
                tok = MANGLE + unquote(tok).hex()
        elif tok in "([{<" and len(tok) == 1:
            if tok == "<":
                literal = prev is None  # the model header
            elif tok == "[":
                literal = prev in ("=", ":") or literal_ctx
            elif tok == "{":
                literal = prev not in (")", ">")  # a tensor's values, not a node list
            else:
                literal = False
            stack.append((tok, literal))
        elif tok in ")]}>" and len(tok) == 1 and stack:
            stack.pop()
        out.append(tok)
        prev = tok
    return "".join(out)


def unmangle(name):
    if name.startswith(MANGLE):
        return bytes.fromhex(name[len(MANGLE) :]).decode("utf-8", "surrogateescape")
    return name


def type_summary(tp, parsed):
    """(kind, elem_type, dims) of a ValueInfoProto's type; dims as (value or param or None)."""
    if not tp.HasField("type"):
        return ("untyped", None, None)
    kind = tp.type.WhichOneof("value")
    if kind != "tensor_type":
        return (kind, None, None)
    tt = tp.type.tensor_type
    dims = None
    if tt.HasField("shape"):
        dims = []
        for d in tt.shape.dim:
            if d.HasField("dim_value"):
                dims.append(d.dim_value)
            elif d.HasField("dim_param"):
                dims.append(unmangle(d.dim_param) if parsed else d.dim_param)
            else:
                dims.append(None)
    return ("tensor", tt.elem_type, dims)


def same_float(a, b):
    return struct.pack("<f", a) == struct.pack("<f", b) or (math.isnan(a) and math.isnan(b))


def printable(s):
    """Whether 1.12 reads the string as the dump writes it (1.12 has no escapes)."""
    try:
        t = s.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return not any(c in t for c in '"\\') and all(c >= " " and c != "\x7f" for c in t)


def compare_attr(a, b, where, errors):
    A = onnx.AttributeProto
    if a.type in (A.INT, A.FLOAT, A.STRING, A.INTS, A.FLOATS, A.STRINGS) and b.type != a.type:
        errors.append(f"{where}: attribute {a.name} is {A.AttributeType.Name(b.type)}, "
                      f"not {A.AttributeType.Name(a.type)}")
        return
    if a.type == A.INT and a.i != b.i or a.type == A.INTS and list(a.ints) != list(b.ints):
        errors.append(f"{where}: attribute {a.name} value differs")
    elif a.type == A.FLOAT and not same_float(a.f, b.f):
        errors.append(f"{where}: attribute {a.name} = {b.f!r}, not {a.f!r}")
    elif a.type == A.FLOATS and (len(a.floats) != len(b.floats) or
                                 not all(same_float(x, y) for x, y in zip(a.floats, b.floats))):
        errors.append(f"{where}: attribute {a.name} floats differ")
    elif a.type == A.STRING and printable(a.s) and a.s != b.s:
        errors.append(f"{where}: attribute {a.name} string differs")
    elif a.type == A.STRINGS and all(map(printable, a.strings)) and list(a.strings) != list(b.strings):
        errors.append(f"{where}: attribute {a.name} strings differ")
    elif a.type == A.TENSOR:
        compare_tensor(a.t, b.t, f"{where}: attribute {a.name}", errors)
    elif a.type == A.GRAPH:
        compare_graph(a.g, b.g, f"{where}/{a.name}", errors, initializers=True)


def compare_tensor(a, b, where, errors):
    if a.data_type != b.data_type or list(a.dims) != list(b.dims):
        errors.append(f"{where}: tensor type differs ({b.data_type} {list(b.dims)})")
        return
    if np.prod(a.dims, dtype=np.int64) > SUMMARY_LIMIT:
        return  # summarised: the dump writes '{}' and a comment
    x, y = numpy_helper.to_array(a), numpy_helper.to_array(b)
    if x.dtype.kind == "f":
        same = x.shape == y.shape and x.tobytes() == y.astype(x.dtype).tobytes()
    else:
        same = np.array_equal(x, y)
    if not same:
        errors.append(f"{where}: tensor values differ")


def compare_graph(orig, parsed, where, errors, initializers):
    def decls(vis, is_parsed):
        return [((unmangle(v.name) if is_parsed else v.name), type_summary(v, is_parsed)) for v in vis]

    for what, a_list, b_list in (("inputs", orig.input, parsed.input), ("outputs", orig.output, parsed.output)):
        a, b = decls(a_list, False), decls(b_list, True)
        if [n for n, _ in a] != [n for n, _ in b]:
            errors.append(f"{where}: graph {what} {[n for n, _ in b]} != {[n for n, _ in a]}")
            continue
        for (name, ta), (_, tb) in zip(a, b):
            # Types 1.12 cannot read in a signature are in an annotation: the declaration is untyped.
            want = ("untyped", None, None) if ta[0] not in ("tensor", "untyped") else ta
            if tb != want:
                errors.append(f"{where}: {what[:-1]} {name} type {tb} != {want}")
    if len(orig.node) != len(parsed.node):
        errors.append(f"{where}: {len(parsed.node)} nodes, not {len(orig.node)}")
        return
    for i, (a, b) in enumerate(zip(orig.node, parsed.node)):
        at = f"{where} node {i} ({a.op_type})"
        if a.op_type != b.op_type or a.domain != b.domain:
            errors.append(f"{at}: op {b.domain}.{b.op_type}")
        if list(a.input) != [unmangle(n) for n in b.input]:
            errors.append(f"{at}: inputs {[unmangle(n) for n in b.input]} != {list(a.input)}")
        if list(a.output) != [unmangle(n) for n in b.output]:
            errors.append(f"{at}: outputs {[unmangle(n) for n in b.output]} != {list(a.output)}")
        if [x.name for x in a.attribute] != [x.name for x in b.attribute]:
            errors.append(f"{at}: attributes {[x.name for x in b.attribute]} != {[x.name for x in a.attribute]}")
            continue
        for x, y in zip(a.attribute, b.attribute):
            compare_attr(x, y, at, errors)
    if initializers:
        got = {unmangle(t.name): t for t in parsed.initializer}
        for t in orig.initializer:
            if np.prod(t.dims, dtype=np.int64) <= SUMMARY_LIMIT:
                if t.name not in got:
                    errors.append(f"{where}: initializer {t.name} missing")
                else:
                    compare_tensor(t, got[t.name], f"{where}: initializer {t.name}", errors)


def dump_differences(binary, path):
    """A list of what differs (empty when the dump reads back the same)."""
    rc, out, err = hgtest.run([binary, "dump", path], binary=True)
    if rc != 0:
        return [f"halfguard dump exited {rc}: {err.strip()}"]
    text = mangle_quoted_names(out.decode("utf-8"))
    try:
        parsed = onnx.parser.parse_model(text)
    except Exception as e:  # 1.12 raises ParseError, and IndexError from std::stof on subnormals
        return ["1.12 cannot parse the dump: " + " | ".join(str(e).splitlines())]
    errors = []
    compare_graph(onnx.load(path).graph, parsed.graph, "graph", errors, initializers=True)
    return errors


def main():
    if len(sys.argv) != 2:
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        return 2
    binary = sys.argv[1]
    models = []
    for suite in SUITES:
        models += sorted(glob.glob(os.path.join(TESTDATA, suite, "*", "model.onnx")))
    if not models:
        print(f"no models under {TESTDATA}", file=sys.stderr)
        return 2
    check = hgtest.Checks(echo="none")
    known = 0
    for path in models:
        key = os.path.relpath(os.path.dirname(path), TESTDATA)
        errors = dump_differences(binary, path)
        if key in KNOWN_1_12_GAPS:
            if errors:
                known += 1
                continue
            errors = ["listed in KNOWN_1_12_GAPS but 1.12 reads it: remove it from the list"]
        if not check(key, not errors):
            print(f"FAIL {key}: " + "; ".join(errors[:5]))
    print(f"{known} known gaps of onnx 1.12 skipped: " + ", ".join(sorted(KNOWN_1_12_GAPS)))
    return check.finish()


if __name__ == "__main__":
    sys.exit(main())
