"""The README's runnable examples, run (issue 16: docs that cannot rot).

A fenced ```sh block that the line `<!-- runnable -->` precedes is run; `<!-- runnable: corpus -->`
marks one that needs the shared corpus (skipped, with a line saying so, where it is absent). In a
block, a line starting with `$ ` is a command; the lines after it, up to the next command or the
end, are what it prints (stdout and stderr together). Every command must exit 0 (or N, when the
line ends with `# exit N`) and print exactly what the README shows. A block without `$ ` lines is
run as a script and must exit 0.

The blocks run in order, in one temporary folder holding `examples/` (a link to the source tree's),
an empty `build/` and, for corpus blocks, links to the corpus models they name, with the built
halfguard first on PATH and NO_COLOR set.

Usage: readme_examples.py HALFGUARD_BUILD_DIR [--regen]
  --regen rewrites the README's shown output with what halfguard prints now (review it with git diff).
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile

import hgtest

BUILD = os.path.abspath(sys.argv[1])
REGEN = "--regen" in sys.argv[2:]
README = os.path.join(hgtest.ROOT, "README.md")
MARK = re.compile(r"^<!-- runnable(: corpus)? -->$")
EXIT = re.compile(r"#\s*exit (\d+)\s*$")
# The corpus models the README names, by file name.
CORPUS_MODELS = {
    "TFBertForQuestionAnswering.onnx":
        "microsoft_onnxruntime/onnxruntime/test/python/transformers/test_data/models/TFBertForQuestionAnswering.onnx",
    "fns-candy.onnx": "microsoft_onnxruntime/winml/test/collateral/models/fns-candy.onnx",
}
check = hgtest.Checks(echo="fail", limit=4000)


def blocks(lines):
    """(first line index of the block's body, its end index, corpus?) for each runnable block."""
    out = []
    i = 0
    while i < len(lines):
        m = MARK.match(lines[i])
        if m and i + 1 < len(lines) and lines[i + 1].strip() == "```sh":
            start = i + 2
            end = start
            while end < len(lines) and lines[end].strip() != "```":
                end += 1
            out.append((start, end, bool(m.group(1))))
            i = end
        i += 1
    return out


def run(cmd, cwd, env):
    p = subprocess.run(["bash", "-c", cmd + " 2>&1"], cwd=cwd, env=env, capture_output=True, text=True, timeout=600)
    return p.returncode, p.stdout


def main():
    with open(README) as f:
        lines = f.read().split("\n")
    found = blocks(lines)
    if not check("readme:has-runnable-blocks", len(found) >= 3, f"{len(found)} blocks"):
        return
    work = tempfile.mkdtemp(prefix="hg-readme-")
    try:
        os.symlink(os.path.join(hgtest.ROOT, "examples"), os.path.join(work, "examples"))
        os.mkdir(os.path.join(work, "build"))
        env = dict(os.environ, PATH=BUILD + os.pathsep + os.environ.get("PATH", ""), NO_COLOR="1")
        env.pop("HALFGUARD_TEST_PROGRESS_AFTER", None)
        replaced = {}  # block start -> new body lines
        for start, end, corpus in found:
            body = lines[start:end]
            tag = f"line {start}"
            if corpus:
                if not hgtest.have_corpus():
                    print(f"SKIP {tag}: needs the shared corpus ({hgtest.CORPUS}), which is absent")
                    continue
                for name, rel in CORPUS_MODELS.items():
                    link = os.path.join(work, name)
                    if any(name in l for l in body) and not os.path.exists(link):
                        os.symlink(os.path.join(hgtest.CORPUS, rel), link)
            if not any(l.startswith("$ ") for l in body):
                rc, out = run("set -e\n" + "\n".join(body), work, env)
                check(f"{tag}:script", rc == 0, out)
                continue
            new_body = []
            k = 0
            while k < len(body):
                cmd = body[k]
                k += 1
                if not cmd.startswith("$ "):
                    check(f"{tag}:form", False, f"output before any command: {cmd!r}")
                    continue
                shown = []
                while k < len(body) and not body[k].startswith("$ "):
                    shown.append(body[k])
                    k += 1
                want_rc = int(EXIT.search(cmd).group(1)) if EXIT.search(cmd) else 0
                rc, out = run(cmd[2:], work, env)
                printed = out.rstrip("\n").split("\n") if out.strip("\n") else []
                check(f"{tag}:exit:{cmd}", rc == want_rc, f"exit {rc}, wanted {want_rc}: {out}")
                if not REGEN:
                    check(f"{tag}:output:{cmd}", printed == shown,
                          "the README shows:\n" + "\n".join(shown) + "\nhalfguard prints:\n" + "\n".join(printed) +
                          "\n(tests/readme_examples.py BUILD --regen updates the README)")
                new_body += [cmd] + printed
            replaced[start] = (end, new_body)
        if REGEN and replaced:
            out = []
            i = 0
            while i < len(lines):
                if i in replaced:
                    end, body = replaced[i]
                    out += body
                    i = end
                    continue
                out.append(lines[i])
                i += 1
            tmp = README + ".regen-tmp"
            with open(tmp, "w") as f:
                f.write("\n".join(out))
            os.replace(tmp, README)
            print(f"updated {README}")
    finally:
        shutil.rmtree(work)


main()
sys.exit(check.finish())
