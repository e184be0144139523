#!/usr/bin/env bash
# An infrastructure error is ERROR, not FAIL: a train script that exists on no node fails setup as
# ERROR (JUnit <error>, results.json status ERROR, exit 3), and every later stage skips with it.
#   error_outcome_test.sh SUITE_BINARY BASE_CONFIG OUT_DIR
set -euo pipefail
suite=$1; base=$2; out=$3
source "$(dirname "$0")/e2e_lib.sh" "$out"
python3 - "$base" "$out" <<'PY'
import json, sys
c = json.load(open(sys.argv[1]))
c["train_params"]["train_script_paths"] = ["/nonexistent/maxtext/train.py"]
c["threshold_json"] = sys.argv[1].replace("configs/", "thresholds/").replace(".json", "_threshold.json")
json.dump(c, open(sys.argv[2] + "/missing_script.json", "w"), indent=1)
PY
rc=0
"$suite" --config "$out/missing_script.json" --output "$out/session" --quiet >"$out/suite.log" 2>&1 || rc=$?
[[ $rc -eq 3 ]] || { tail -30 "$out/suite.log"; fail "exit $rc, expected 3 (ERROR)"; }
python3 - "$out/session" <<'PY' || fail "ERROR outcome"
import json, sys, xml.etree.ElementTree as ET
d = sys.argv[1]
r = json.load(open(d + "/results.json"))
assert r["status"] == "ERROR", r["status"]
assert r["counts"]["ERROR"] == 1 and r["counts"]["FAIL"] == 0, r["counts"]
setup = [s for s in r["stages"] if s["stage"] == "test_setup"][0]
assert setup["outcome"] == "ERROR" and "none of train_script_paths exists" in setup["message"], setup
later = [s for s in r["stages"] if s["stage"] != "test_setup"]
assert later and all(s["outcome"] == "SKIPPED" for s in later), [s["outcome"] for s in later]
root = ET.parse(d + "/junit.xml").getroot()
assert root.get("name") == "jaxmaxtext_single", root.attrib
case = [c for c in root.iter("testcase") if c.get("classname") == "jaxmaxtext_single.test_setup"][0]
assert case.find("error") is not None and case.find("failure") is None, ET.tostring(case)
assert float(case.get("time")) > 0 and abs(float(case.get("time")) - setup["seconds"]) < 0.01, (case.get("time"), setup)
assert root.get("errors") == "1" and root.get("failures") == "0", root.attrib
print("setup ERROR: exit 3, JUnit <error>, later stages skipped; the setup's probe time", case.get("time"), "s")
PY
junit_valid "$out/session/junit.xml"
echo "1 passed, 0 failed"
