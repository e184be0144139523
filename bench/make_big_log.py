#!/usr/bin/env python3
"""Builds a MaxText-format training.log of about SIZE_MB from a real CPU log (for bench/).

  make_big_log.py REAL_LOG OUT SIZE_MB

The real log's non-step lines (MaxText's config dump, compile and checkpoint lines) are written
once, then its step lines over and over with the step numbers counting up, so the result reads as
one long run (the values cycle through the real ones). Nothing is committed: generated per run.
"""
import re
import sys

real, out, size_mb = sys.argv[1], sys.argv[2], int(sys.argv[3])
lines = open(real, encoding="utf-8", errors="replace").read().splitlines(keepends=True)
step_re = re.compile(r"completed step: (\d+),")
steps = [l for l in lines if step_re.search(l)]
header = [l for l in lines if not step_re.search(l)]
if not steps:
    sys.exit(f"{real}: no step lines")
# Each template with its step number as a format slot.
templates = [step_re.sub("completed step: {},", l.replace("{", "{{").replace("}", "}}"), count=1) for l in steps]
target = size_mb << 20
with open(out, "w", encoding="utf-8") as f:
    written = sum(len(l) for l in header)
    f.writelines(header)
    n = 0
    batch = []
    while written < target:
        line = templates[n % len(templates)].format(n)
        batch.append(line)
        written += len(line)
        n += 1
        if len(batch) == 10000:
            f.writelines(batch)
            batch.clear()
    f.writelines(batch)
print(n)
