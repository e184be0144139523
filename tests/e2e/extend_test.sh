#!/usr/bin/env bash
# statistics.on_inconclusive: extend on real MaxText, with gates that hold on any machine:
#   1. a speed-only sweep (steps 1000, cap 2000) whose gate is decisive at once stops early, through
#      the stop path, and says how many steps it saved;
#   2. a sweep with loss gates and no look before its cap runs to the cap (200 steps for 100
#      configured), and its loss gates still hold on its first 100 steps (the learning-rate
#      schedule is pinned to them).
#   4. the same sweep as 1 but with the shipped loss gates (and the loss curve's slope enforced), in
#      a session whose filter keeps the speed gate's case alone (certify's nodes tier): its looks
#      are on speed alone, it stops early, and keeps no loss metric (another step count's);
#   5. a precision to reach (statistics.stop_half_width_pct, what certify's nodes tier sets from
#      --detect-slowdown-pct): 1's decisive gate does not stop a 100-step run whose tokens/s
#      interval is wider than asked (+-0.01 %: never that narrow, so it runs to its cap, 200), and a
#      run with no speed gate at all stops at the first look where its interval is narrow enough
#      (+-50 %: the first, at 50 of 1000 steps);
#   3. a 3-step run has no interval to decide on: INCONCLUSIVE, which fails the test (JUnit
#      <failure>, exit 1) with on_inconclusive fail and passes, reported, with pass.
#   extend_test.sh SUITE_BINARY BASE_CONFIG OUT_DIR
set -euo pipefail
suite=$1; base=$2; out=$3
source "$(dirname "$0")/e2e_lib.sh" "$out"

python3 - "$base" "$out" <<'PY'
import json, sys
base, out = sys.argv[1], sys.argv[2]
c = json.load(open(base))
c["smoke"]["enabled"] = False
c["checkpoint_resume"]["enabled"] = False
c["runs"] = ["BS=2,PRECISION=BF16,SL=128"]
c["statistics"]["on_inconclusive"] = "extend"
# 1: speed gates only; 1 tok/s is cleared by any machine that trains at all.
early = json.loads(json.dumps(c))
early["train_params"]["maxtext_config"]["steps"] = 1000
early["statistics"]["extend_max_steps"] = 2000
early["loss_curve"]["enforce"] = False
early["threshold_json"] = "early_threshold.json"
json.dump(early, open(f"{out}/early.json", "w"), indent=1)
json.dump({"BS=2,PRECISION=BF16,SL=128": {"training.tokens_per_sec_per_gpu": {"kind": "min_tok_s", "value": 1.0}}},
          open(f"{out}/early_threshold.json", "w"))
# 2: the shipped loss gates plus a speed gate; the first look (2 x 120 steady steps) lies past the cap.
capped = json.loads(json.dumps(c))
assert capped["train_params"]["maxtext_config"]["steps"] == 100
capped["statistics"]["extend_max_steps"] = 200
capped["statistics"]["min_steady_steps"] = 120
capped["threshold_json"] = "capped_threshold.json"
json.dump(capped, open(f"{out}/capped.json", "w"), indent=1)
cell = json.load(open(base.replace("configs/", "thresholds/").replace(".json", "_threshold.json")))["BS=2,PRECISION=BF16,SL=128"]
cell["training.tokens_per_sec_per_gpu"] = {"kind": "min_tok_s", "value": 1.0}
json.dump({"BS=2,PRECISION=BF16,SL=128": cell}, open(f"{out}/capped_threshold.json", "w"), indent=1)
# 4: 1's run with the shipped loss gates beside its speed gate.
speed = json.loads(json.dumps(early))
speed["loss_curve"]["enforce"] = True
speed["threshold_json"] = "capped_threshold.json"
json.dump(speed, open(f"{out}/speedonly.json", "w"), indent=1)
# 5: precisions to reach, never and at once.
never = json.loads(json.dumps(early))
never["train_params"]["maxtext_config"]["steps"] = 100
never["statistics"]["extend_max_steps"] = 200
never["statistics"]["stop_half_width_pct"] = 0.01
json.dump(never, open(f"{out}/precise_never.json", "w"), indent=1)
soon = json.loads(json.dumps(early))
soon["statistics"]["stop_half_width_pct"] = 50
soon["threshold_json"] = "info_threshold.json"
json.dump(soon, open(f"{out}/precise_soon.json", "w"), indent=1)
json.dump({"BS=2,PRECISION=BF16,SL=128": {"training.tokens_per_sec_per_gpu": {"kind": "info", "value": 0.0}}},
          open(f"{out}/info_threshold.json", "w"))
# 3: three steps leave at most two steady-state steps: no interval, whatever the machine.
for mode in ("fail", "pass"):
    short = json.loads(json.dumps(early))
    short["train_params"]["maxtext_config"]["steps"] = 3
    short["statistics"]["on_inconclusive"] = mode
    json.dump(short, open(f"{out}/short_{mode}.json", "w"), indent=1)
PY

for name in early capped short_pass precise_never precise_soon; do
  rc=0
  "$suite" --config "$out/$name.json" --output "$out/$name" --quiet --poll-interval-s 1 --startup-budget-s 300 \
    --step-budget-s 30 >"$out/$name.log" 2>&1 || rc=$?
  [[ $rc -eq 0 ]] || { tail -20 "$out/$name.log"; python3 "$(dirname "$0")/why_failed.py" "$out/$name"; fail "$name: exit $rc"; }
done

python3 - "$out/early/results.json" <<'PY' || fail "early stop"
import json, sys
r = json.load(open(sys.argv[1]))
s = r["sweeps"]["BS=2,PRECISION=BF16,SL=128"]
x = s["early_stop"]
assert r["status"] == "PASS", r["status"]
assert x["stopped_early"] is True, x
assert x["configured_steps"] == 1000 and x["cap"] == 2000, x
assert x["steps_run"] < 1000 and x["steps_saved"] > 0, x
assert "decisive" in x["reason"], x
assert s["run"]["nodes"][0]["state"] == "stopped", s["run"]["nodes"][0]
e = {v["metric"]: v for v in s["evaluations"]}["training.tokens_per_sec_per_gpu"]
assert e["outcome"] == "PASS" and "interval" in e, e
print("stopped early after", x["steps_run"], "of", x["configured_steps"], "steps:", x["reason"])
PY

python3 - "$out/capped/results.json" <<'PY' || fail "run to the cap"
import json, sys
r = json.load(open(sys.argv[1]))
s = r["sweeps"]["BS=2,PRECISION=BF16,SL=128"]
x = s["early_stop"]
assert r["status"] == "PASS", r["status"]
assert x["stopped_early"] is False and x["steps_run"] == 200 and x["steps_saved"] == -100, x
ev = {v["metric"]: v for v in s["evaluations"]}
for m in ("training.final_loss", "training.initial_loss", "training.loss_decreased"):
    assert ev[m]["outcome"] == "PASS", ev[m]
assert s["loss_curve"][-1][0] == 99, s["loss_curve"][-1]
print("ran to the cap (200 of 100 steps); loss gates on the first 100 steps:", ev["training.final_loss"]["message"])
PY
python3 - "$out/precise_never/results.json" "$out/precise_soon/results.json" <<'PY' || fail "a precision to reach"
import json, sys
never, soon = (json.load(open(f))["sweeps"]["BS=2,PRECISION=BF16,SL=128"] for f in sys.argv[1:3])
x = never["early_stop"]
assert x["stopped_early"] is False and x["steps_run"] == 200 and x["looks"] >= 1, x
iv = never["steady_state"]["intervals"]["tokens_per_sec_per_gpu"]
assert (iv["hi"] - iv["lo"]) / 2 / iv["estimate"] > 0.0001, iv  # never that narrow: the test means something
e = {v["metric"]: v for v in never["evaluations"]}["training.tokens_per_sec_per_gpu"]
assert e["outcome"] == "PASS", e  # its gate was decisive all along
y = soon["early_stop"]
assert y["stopped_early"] is True and y["steps_run"] < 1000, y
assert y["reason"].startswith("precise enough after ") and "tokens_per_sec_per_gpu +-" in y["reason"], y
print("a decisive gate ran on to its cap for +-0.01 %; a gate-less run stopped:", y["reason"])
PY
# 4: as certify's nodes tier runs a node: the setup, the training and the speed gate's case.
rc=0
"$suite" --config "$out/speedonly.json" --output "$out/speedonly" --quiet --poll-interval-s 1 --startup-budget-s 300 \
  --step-budget-s 30 '--gtest_filter=test_setup.*:sweep/test_training_run.*:sweep/test_metric.check/*__tokens_per_sec_per_gpu' \
  >"$out/speedonly.log" 2>&1 || rc=$?
[[ $rc -eq 0 ]] || { tail -20 "$out/speedonly.log"; fail "speedonly: exit $rc"; }
python3 - "$out/speedonly/results.json" <<'PY' || fail "looks on speed alone"
import json, sys
r = json.load(open(sys.argv[1]))
s = r["sweeps"]["BS=2,PRECISION=BF16,SL=128"]
x = s["early_stop"]
assert r["status"] == "PASS", r["status"]
assert x["stopped_early"] is True and x["steps_run"] < 1000, x
for m in ("final_loss", "initial_loss", "loss_decreased", "loss_curve_slope"):
    assert m not in s["metrics"], (m, s["metrics"])
assert any(n.startswith("no loss or target metric: the run stopped after ") for n in s["notes"]), s["notes"]
assert "tokens_per_sec_per_gpu" in s["metrics"], s["metrics"]
print("loss gates not evaluated: stopped after", x["steps_run"], "of 1000 steps on speed alone, no loss metric kept")
PY
rc=0
"$suite" --config "$out/short_fail.json" --output "$out/short_fail" --quiet --poll-interval-s 1 \
  --startup-budget-s 300 --step-budget-s 30 >"$out/short_fail.log" 2>&1 || rc=$?
[[ $rc -eq 1 ]] || fail "on_inconclusive fail: exit $rc, expected 1"
python3 - "$out/short_fail/junit.xml" <<'PY' || fail "on_inconclusive fail: no JUnit failure saying INCONCLUSIVE"
import sys, xml.etree.ElementTree as ET
cases = [c for c in ET.parse(sys.argv[1]).iter("testcase") if c.get("name").endswith("__tokens_per_sec_per_gpu")]
assert cases, "no tokens_per_sec_per_gpu testcase"
f = cases[0].find("failure")
assert f is not None and "training.tokens_per_sec_per_gpu: INCONCLUSIVE: " in f.get("message"), ET.tostring(cases[0])
PY
python3 - "$out/short_fail/results.json" "$out/short_pass/results.json" <<'PY' || fail "INCONCLUSIVE outcomes"
import json, sys
for path, status in zip(sys.argv[1:], ("FAIL", "PASS")):
    r = json.load(open(path))
    assert r["status"] == status, (path, r["status"])
    assert r["counts"]["INCONCLUSIVE"] >= 1, r["counts"]
    e = {v["metric"]: v for v in r["sweeps"]["BS=2,PRECISION=BF16,SL=128"]["evaluations"]}["training.tokens_per_sec_per_gpu"]
    assert e["outcome"] == "INCONCLUSIVE" and "no interval" in e["message"], e
print("3 steps: INCONCLUSIVE fails with on_inconclusive fail, is reported and passes with pass")
PY
for s in short_fail short_pass; do junit_valid "$out/$s/junit.xml"; done
echo "1 passed, 0 failed"
