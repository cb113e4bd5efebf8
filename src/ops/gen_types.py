#!/usr/bin/python3
"""Writes src/ops/types.def, the type signatures of ONNX ops (read by src/ops/types.c).

Sources: every default-domain and ai.onnx.ml schema version of Debian's python3-onnx 1.12
(onnx.defs.get_all_schemas_with_history(): opsets up to 17 and ai.onnx.ml up to 3), and the
hand-written schemas of src/ops/types_hand.txt (opsets 18 to 23, ai.onnx.ml 4 and 5, and corrections
of 1.12). The output depends on nothing else, so the same inputs give the same bytes.

Usage:
  gen_types.py [-o FILE]      write the table (default: src/ops/types.def beside this script)
  gen_types.py --check FILE   regenerate and compare with FILE: exit 0 when equal, 1 with a diff
                              when not, 77 (skip) when python3-onnx is missing or not 1.12
"""
import argparse
import difflib
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
HAND = os.path.join(HERE, "types_hand.txt")

# TensorProto.DataType numbers (include/halfguard/ir.h's HgDType; float4e2m1 is ONNX 1.18's 23).
DTYPES = {
    "float": 1, "uint8": 2, "int8": 3, "uint16": 4, "int16": 5, "int32": 6, "int64": 7,
    "string": 8, "bool": 9, "float16": 10, "double": 11, "uint32": 12, "uint64": 13,
    "complex64": 14, "complex128": 15, "bfloat16": 16, "float8e4m3fn": 17, "float8e4m3fnuz": 18,
    "float8e5m2": 19, "float8e5m2fnuz": 20, "uint4": 21, "int4": 22, "float4e2m1": 23,
}
SHORT = {1: "f32", 2: "u8", 3: "i8", 4: "u16", 5: "i16", 6: "i32", 7: "i64", 8: "str", 9: "bool",
         10: "f16", 11: "f64", 12: "u32", 13: "u64", 14: "c64", 15: "c128", 16: "bf16",
         17: "f8e4m3fn", 18: "f8e4m3fnuz", 19: "f8e5m2", 20: "f8e5m2fnuz", 21: "u4", 22: "i4",
         23: "f4e2m1"}
# HgTypeSet.other flags (src/ops/types.h).
OTHER = {"map": "HG_SIG_MAP", "seq_map": "HG_SIG_SEQ_MAP", "opt_tensor": "HG_SIG_OPTIONAL_TENSOR",
         "opt_seq": "HG_SIG_OPTIONAL_SEQ"}
OPTIONS = {"single": "HG_SIG_SINGLE", "optional": "HG_SIG_OPTIONAL", "variadic": "HG_SIG_VARIADIC"}


class Schema:
    def __init__(self, domain, name, since, deprecated=False):
        self.domain, self.name, self.since, self.deprecated = domain, name, since, deprecated
        self.inputs, self.outputs = [], []  # (name, type string, option, heterogeneous)
        self.types = []                     # (param, [type strings])
        self.replaces = False

    def key(self):
        return (self.domain, self.name, self.since)


def from_onnx():
    import onnx.defs
    options = {0: "single", 1: "optional", 2: "variadic"}
    out = []
    for s in onnx.defs.get_all_schemas_with_history():
        if s.domain not in ("", "ai.onnx.ml"):
            continue
        sc = Schema(s.domain, s.name, s.since_version, bool(s.deprecated))
        for formals, dst in ((s.inputs, sc.inputs), (s.outputs, sc.outputs)):
            for f in formals:
                dst.append((f.name, f.typeStr, options[f.option.value], not f.isHomogeneous))
        for c in s.type_constraints:
            sc.types.append((c.type_param_str, list(c.allowed_type_strs)))
        out.append(sc)
    return out


def split_types(text):
    """'tensor(a), map(b, c)' -> ['tensor(a)', 'map(b, c)']: commas at depth 0 only."""
    parts, depth, cur = [], 0, ""
    for ch in text:
        depth += ch == "("
        depth -= ch == ")"
        if ch == "," and depth == 0:
            parts.append(cur.strip())
            cur = ""
        else:
            cur += ch
    if cur.strip():
        parts.append(cur.strip())
    return parts


def from_hand(path):
    out, cur = [], None
    with open(path) as f:
        for lineno, raw in enumerate(f, 1):
            line = raw.split("#", 1)[0].rstrip()
            if not line.strip():
                continue
            words = line.split()
            where = f"{path}:{lineno}"
            if words[0] == "op":
                name = words[1]
                domain = ""
                if "." in name:
                    domain, name = name.rsplit(".", 1)
                flags = set(words[3:])
                if flags - {"deprecated", "replaces"}:
                    sys.exit(f"{where}: unknown flags {sorted(flags)}")
                cur = Schema(domain, name, int(words[2]), "deprecated" in flags)
                cur.replaces = "replaces" in flags
                out.append(cur)
            elif cur is None:
                sys.exit(f"{where}: '{words[0]}' before any 'op'")
            elif words[0] in ("in", "out") and len(words) >= 3:
                flags = words[3:]
                option = "single"
                for w in flags:
                    if w in ("optional", "variadic"):
                        option = w
                    elif w != "heterogeneous":
                        sys.exit(f"{where}: unknown formal flag '{w}'")
                (cur.inputs if words[0] == "in" else cur.outputs).append(
                    (words[1], words[2], option, "heterogeneous" in flags))
            elif words[0] == "type" and words[1].endswith(":"):
                cur.types.append((words[1][:-1], split_types(line.split(":", 1)[1])))
            else:
                sys.exit(f"{where}: cannot read '{line.strip()}'")
    return out


def type_set(strings, where):
    """[type strings] -> (tensor mask, seq mask, [other flags])."""
    tensor = seq = 0
    other = set()
    for t in strings:
        t = t.replace(" ", "")
        m = re.fullmatch(r"tensor\((\w+)\)", t)
        if m:
            tensor |= 1 << DTYPES[m.group(1)]
            continue
        m = re.fullmatch(r"seq\(tensor\((\w+)\)\)", t)
        if m:
            seq |= 1 << DTYPES[m.group(1)]
            continue
        if re.fullmatch(r"map\(\w+,.*\)", t):
            other.add("map")
        elif re.fullmatch(r"seq\(map\(\w+,.*\)\)", t):
            other.add("seq_map")
        elif re.fullmatch(r"optional\(tensor\(\w+\)\)", t):
            other.add("opt_tensor")
        elif re.fullmatch(r"optional\(seq\(tensor\(\w+\)\)\)", t):
            other.add("opt_seq")
        else:
            sys.exit(f"{where}: unknown type '{t}'")
    return tensor, seq, sorted(other)


def is_literal(t):
    return "(" in t


def describe(tensor, seq, other):
    names = [SHORT[d] for d in sorted(SHORT) if tensor >> d & 1]
    names += ["seq(" + SHORT[d] + ")" for d in sorted(SHORT) if seq >> d & 1]
    names += other
    return " ".join(names)


def c_ident(sc):
    dom = sc.domain.replace(".", "_") + "_" if sc.domain else ""
    return f"{dom}{sc.name}_{sc.since}"


def emit(schemas):
    lines = [
        "/* Generated by src/ops/gen_types.py from python3-onnx 1.12's schemas and src/ops/types_hand.txt",
        " * (opsets 18 to 23, ai.onnx.ml 4 and 5, corrections): do not edit; run the script. One block per",
        " * schema version: its type parameters (literal types such as tensor(int64) are parameters of their",
        " * own), inputs and outputs; then the table, sorted by domain, name and version. */",
        "",
    ]
    rows = []
    for sc in schemas:
        ident = c_ident(sc)
        where = f"{sc.domain or 'ai.onnx'}.{sc.name}-{sc.since}"
        if sc.deprecated:
            rows.append(f'    {{"{sc.domain}", "{sc.name}", {sc.since}, TRUE, 0, 0, 0, NULL, NULL, NULL}},')
            continue
        params = []  # (name, literal, strings)
        index = {}
        for p, strings in sc.types:
            index[p] = len(params)
            params.append((p, False, strings))
        for _, t, _, _ in sc.inputs + sc.outputs:
            if t not in index:
                if not is_literal(t):
                    sys.exit(f"{where}: type '{t}' is neither a type parameter nor a literal type")
                index[t] = len(params)
                params.append((t, True, [t]))
        lines.append(f"/* {where} */")
        if params:
            lines.append(f"static const HgSigParam p_{ident}[] = {{")
            for name, literal, strings in params:
                tensor, seq, other = type_set(strings, where)
                flags = " | ".join(OTHER[o] for o in other) or "0"
                lines.append(f'    {{"{name}", {"TRUE" if literal else "FALSE"}, '
                             f'{{0x{tensor:08x}u, 0x{seq:08x}u, {flags}}}}}, /* {describe(tensor, seq, other)} */')
            lines.append("};")
        for kind, formals in (("i", sc.inputs), ("o", sc.outputs)):
            if not formals:
                continue
            cells = []
            for name, t, option, het in formals:
                cells.append(f'{{"{name}", {index[t]}, {OPTIONS[option]}, {"TRUE" if het else "FALSE"}}}')
            lines.append(f"static const HgSigFormal {kind}_{ident}[] = {{{', '.join(cells)}}};")
        lines.append("")
        ref = lambda kind, formals: f"{kind}_{ident}" if formals else "NULL"
        rows.append(f'    {{"{sc.domain}", "{sc.name}", {sc.since}, FALSE, {len(sc.inputs)}, '
                    f'{len(sc.outputs)}, {len(params)}, {ref("i", sc.inputs)}, {ref("o", sc.outputs)}, '
                    f'{"p_" + ident if params else "NULL"}}},')
    lines.append("static const HgOpSchema schema_table[] = {")
    lines += rows
    lines.append("};")
    return "\n".join(lines) + "\n"


def build():
    onnx_schemas = {s.key(): s for s in from_onnx()}
    merged = dict(onnx_schemas)
    for s in from_hand(HAND):
        where = f"{HAND}: {s.domain or 'ai.onnx'}.{s.name}-{s.since}"
        if s.key() in onnx_schemas and not s.replaces:
            sys.exit(f"{where}: python3-onnx has this version; mark the block 'replaces' to correct it")
        if s.replaces and s.key() not in onnx_schemas:
            sys.exit(f"{where}: 'replaces' but python3-onnx has no such version")
        if s.key() in merged and not s.replaces:
            sys.exit(f"{where}: given twice")
        merged[s.key()] = s
    # Sorted by bytes, as strcmp compares: the C lookup searches the table by halves.
    ordered = sorted(merged.values(), key=lambda s: (s.domain.encode(), s.name.encode(), s.since))
    return emit(ordered)


def onnx_is_112():
    try:
        import onnx
    except ImportError:
        return None
    return onnx.__version__ if onnx.__version__.startswith("1.12.") else False


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("-o", default=os.path.join(HERE, "types.def"))
    ap.add_argument("--check", metavar="FILE")
    args = ap.parse_args()
    have = onnx_is_112()
    if not have:
        msg = "python3-onnx is not installed" if have is None else "python3-onnx is not 1.12"
        print(f"skip: {msg}; the table is generated from 1.12's schemas")
        return 77
    text = build()
    if args.check:
        with open(args.check) as f:
            old = f.read()
        if old == text:
            print(f"{args.check}: up to date")
            return 0
        sys.stdout.writelines(difflib.unified_diff(old.splitlines(True), text.splitlines(True),
                                                   args.check, "regenerated"))
        print(f"{args.check} differs from what src/ops/gen_types.py writes: run it and commit the result")
        return 1
    with open(args.o, "w") as f:
        f.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
