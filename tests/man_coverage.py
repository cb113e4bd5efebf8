"""The man page covers the command line (issue 16): every subcommand `halfguard --help` lists has an
entry in src/halfguard.1 (`.BI "SUB ...` or `.B SUB`), and every long option each subcommand's
--help lists is named there (as \\-\\-NAME). An option added without its man page line fails here.

Usage: man_coverage.py HALFGUARD
"""
import os
import re
import sys

import hgtest

HG = sys.argv[1]
check = hgtest.Checks(echo="fail")
with open(os.path.join(hgtest.ROOT, "src", "halfguard.1")) as f:
    man = f.read()
rc, usage, _ = hgtest.run([HG, "--help"])
subs = re.findall(r"^  ([a-z]+) ", usage.split("Subcommands:")[1].split("Options:")[0], re.M) if rc == 0 else []
check("subcommands-listed", rc == 0 and {"check", "convert", "dump", "inspect", "run", "calibrate", "verify",
                                          "help"} <= set(subs), usage)
for sub in subs:
    entry = re.search(r'^\.BI? "?' + re.escape(sub) + r'[ "\n]', man, re.M)
    check(f"{sub}:entry", entry is not None, f"no '.BI \"{sub} ...' entry in src/halfguard.1")
    if sub == "help":
        continue
    rc, text, _ = hgtest.run([HG, sub, "--help"])
    options = sorted(set(re.findall(r"^\s+(?:-\w, )?--([a-z0-9][a-z0-9-]*)", text, re.M)) - {"help"})
    check(f"{sub}:has-options", rc == 0 and options, text)
    for o in options:
        check(f"{sub}:--{o}", "\\-\\-" + o.replace("-", "\\-") in man, f"--{o} is not in src/halfguard.1")
sys.exit(check.finish())
