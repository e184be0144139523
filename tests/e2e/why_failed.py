#!/usr/bin/env python3
"""Prints why a session did not PASS, from its results.json: the status, each sweep's steady state
(window, drift, why no interval) and every gate that ended FAIL, INCONCLUSIVE or ERROR with its
message. The e2e scripts call it when a run ends otherwise than they expect, so that CI's log says
why without the run's folder.    why_failed.py RESULTS_DIR_OR_JSON..."""
import json
import os
import sys

for arg in sys.argv[1:]:
    path = os.path.join(arg, "results.json") if os.path.isdir(arg) else arg
    try:
        r = json.load(open(path))
    except (OSError, ValueError) as e:
        print(f"why_failed: {path}: {e}")
        continue
    print(f"why_failed: {path}: {r.get('status')}")
    for key, s in r.get("sweeps", {}).items():
        st = s.get("steady_state", {})
        print(f"  {key}: steady state from step {st.get('first_step')} ({st.get('steps')} steps, "
              f"lag1 {st.get('lag1')}, drift_pct {st.get('drift_pct')}) {st.get('why', '')}")
        for e in s.get("evaluations", []):
            if e.get("outcome") in ("FAIL", "INCONCLUSIVE", "ERROR"):
                print(f"    {e['metric']}: {e['outcome']}: {e.get('message')}")
