#!/usr/bin/python3
"""Issue 14's acceptance for bulk conversion, on ONNX's backend node tests: a tree of 120 of them,
each model.onnx in a folder of its own, plus one corrupt file. One convert --jobs 2 --results writes
every good model to its mirrored path and 121 JSON lines (the corrupt one an error), exit 2; three
--shard I/3 runs cover the 121 exactly once; --jobs 1 and --jobs 2 write the same bytes.

Usage: test_bulk_nodes.py HALFGUARD. Skipped (77) without /usr/share/libonnx-testdata.
"""
import json
import os
import shutil
import sys
import tempfile
import time

import jsonschema

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hgtest  # noqa: E402

HG = sys.argv[1]
NODE = os.path.join(hgtest.TESTDATA, "node")
check = hgtest.Checks()


def tree_files(root):
    return {os.path.relpath(os.path.join(d, f), root): open(os.path.join(d, f), "rb").read()
            for d, _, fs in os.walk(root) for f in fs}


def results(path):
    return [json.loads(line) for line in open(path).read().splitlines()]


def main(tmp):
    names = sorted(d for d in os.listdir(NODE) if os.path.isfile(os.path.join(NODE, d, "model.onnx")))
    pick = [names[i * len(names) // 120] for i in range(120)]  # spread over every op family
    tree = os.path.join(tmp, "tree")
    for n in pick:
        os.makedirs(os.path.join(tree, n))
        shutil.copy(os.path.join(NODE, n, "model.onnx"), os.path.join(tree, n, "model.onnx"))
    corrupt = os.path.join(tree, "corrupt.onnx")
    with open(corrupt, "wb") as f:
        f.write(b"\x0a\xff\xff\xff\xff\x0f this is not a model")
    schema = json.load(open(os.path.join(hgtest.HERE, "convert_results_schema.json")))
    validator = jsonschema.Draft7Validator(schema)

    runs = {}
    for j in ("2", "1"):
        out, res = os.path.join(tmp, "out" + j), os.path.join(tmp, f"r{j}.jsonl")
        t0 = time.monotonic()
        rc, so, se = hgtest.run([HG, "convert", tree, "-O", out, "--jobs", j, "--results", res])
        runs[j] = (rc, se, results(res), tree_files(out), time.monotonic() - t0)
    rc, se, lines, files, seconds = runs["2"]
    check("jobs2:exit2", rc == 2, f"rc={rc}")
    check("jobs2:121-lines", len(lines) == 121, str(len(lines)))
    errors = [e.message for o in lines for e in validator.iter_errors(o)]
    check("jobs2:schema", not errors, str(errors[:5]))
    bad = [o for o in lines if o["status"] not in ("converted", "unchanged")]
    check("jobs2:only-corrupt-fails", [(o["file"], o["status"]) for o in bad] == [(corrupt, "error")], str(bad))
    check("jobs2:corrupt-on-stderr", se.count(corrupt + ": ") == 1, se[-2000:])
    want = {os.path.join(n, "model.onnx") for n in pick}
    check("jobs2:mirrored", set(files) == want, str(sorted(set(files) ^ want)[:10]))
    check("jobs2:outputs-named", all(o["output"] == os.path.join(tmp, "out2", os.path.relpath(o["file"], tree))
                                     for o in lines if o["status"] != "error"), str(lines[:2]))
    steady = {j: [{k: v for k, v in o.items() if k not in ("seconds", "peak_bytes")} for o in r[2]]
              for j, r in runs.items()}
    check("jobs1-vs-2:outputs-identical", runs["1"][3] == runs["2"][3], "")
    check("jobs1-vs-2:results-identical", steady["1"] == [{**o, "output": o["output"] and o["output"].replace(
        "out2", "out1")} for o in steady["2"]], "")
    check("jobs1:exit2", runs["1"][0] == 2, str(runs["1"][0]))

    seen = {}
    shard_files = {}
    for i in (1, 2, 3):
        out, res = os.path.join(tmp, "out-shards"), os.path.join(tmp, f"s{i}.jsonl")
        rc, so, se = hgtest.run([HG, "convert", tree, "-O", out, "--shard", f"{i}/3", "--results", res])
        check(f"shard{i}:exit", rc == (2 if any(o["file"] == corrupt for o in results(res)) else 0), f"rc={rc}")
        for o in results(res):
            seen[o["file"]] = seen.get(o["file"], 0) + 1
    every = sorted(o["file"] for o in lines)
    check("shards:cover-exactly-once", sorted(seen) == every and set(seen.values()) == {1},
          str({k: v for k, v in seen.items() if v != 1}))
    shard_files = tree_files(os.path.join(tmp, "out-shards"))
    check("shards:same-outputs", shard_files == runs["1"][3], "")
    print(f"120 node tests + 1 corrupt: --jobs 1 {runs['1'][4]:.2f} s, --jobs 2 {runs['2'][4]:.2f} s")


if not os.path.isdir(NODE):
    print(f"skipped: {NODE} is absent")
    sys.exit(77)
tmp = tempfile.mkdtemp(prefix="hg-bulk-nodes-")
try:
    main(tmp)
finally:
    shutil.rmtree(tmp)
sys.exit(check.finish())
