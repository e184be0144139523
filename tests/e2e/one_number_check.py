#!/usr/bin/env python3
"""One number per gate (issue #31): in a session folder, every gate decided on an interval shows the
estimate its verdict used, and the same figure, everywhere: the report's Value column equals the
figure that starts its Detail, and its Margin is computed from it; results.json's evaluation value is
the steady-state estimate (the point figure only under "point" and in "metrics"); a failing gate's
JUnit message carries that figure. Prints the gated rows; exits 1 on the first disagreement.
    one_number_check.py SESSION_DIR [--some]   (--some: at least one gate must have been decided on an interval)"""
import html
import json
import re
import sys
import xml.etree.ElementTree as ET

session = sys.argv[1]
results = json.load(open(f"{session}/results.json"))
page = open(f"{session}/report.html").read()
junit = {c.get("name"): c for c in ET.parse(f"{session}/junit.xml").iter("testcase")}


def fail(msg):
    sys.exit(f"{session}: {msg}")


row_re = re.compile(
    r'<tr><td><code>(training\.[a-z0-9_]+)</code></td><td class="num">([^<]*)</td><td>([^<]*)</td>'
    r'<td>(\[[^\]]*\])<svg.*?</svg></td><td class="num">([^<]*)</td><td>.*?</td><td>([^<]*)</td></tr>')
checked = 0
for key, sweep in results["sweeps"].items():
    start = page.find(f"Sweep <code>{html.escape(key)}</code>")
    end = page.find("<h2>Sweep <code>", start + 10)
    rows = {m.group(1): m for m in row_re.finditer(page[start:end if end > 0 else len(page)])}
    intervals = sweep["steady_state"]["intervals"]
    for e in sweep["evaluations"]:
        if "interval" not in e or "threshold" not in e:
            continue
        metric = e["metric"]
        name = metric[len("training."):]
        est = intervals[name]["estimate"]
        if abs(e["value"] - est) > 1e-9 * abs(est):
            fail(f"{key} {metric}: results.json value {e['value']} is not the estimate {est}")
        if e.get("point") != sweep["metrics"].get(name):
            fail(f"{key} {metric}: the point figure {e.get('point')} is not the metrics' {sweep['metrics'].get(name)}")
        row = rows.get(metric)
        if row is None:
            fail(f"{key} {metric}: no gated row in the report")
        value, detail, margin = row.group(2), html.unescape(row.group(6)), row.group(5)
        if detail.split(" ")[0].rstrip(",") != value:
            fail(f"{key} {metric}: Value {value} but the Detail says {detail}")
        want = e["margin_pct"]
        got = float(margin.replace("%", "").strip())
        if abs(got - want) > 0.051:
            fail(f"{key} {metric}: Margin {margin} but the estimate gives {want:+.2f} %")
        if e["outcome"] in ("FAIL", "INCONCLUSIVE"):
            case = next((c for n, c in junit.items() if n.endswith("__" + name) and
                         key.replace(",", "__").replace("=", "_").replace(".", "p") in n), None)
            f = case.find("failure") if case is not None else None
            if f is None or value not in f.get("message", ""):
                fail(f"{key} {metric}: the JUnit failure does not carry {value}")
        print(f"{key} {metric}: {value} {row.group(4)} margin {margin} {e['outcome']}")
        checked += 1
if not checked and "--some" in sys.argv:
    fail("no gate was decided on an interval")
print(f"{checked} gated row(s): one number each")
