#!/usr/bin/env bash
# Time to a throughput verdict on the CPU default: the configured steps (statistics.on_inconclusive
# fail) against stop-early-once-decisive (extend), side by side in one run, on this machine's own
# calibration. Prints per sweep the steps trained and the training wall seconds of each, their
# medians over the pairs and the ratio extend/fixed. Not a test: nothing is asserted.
#   bench/time_to_verdict.sh [STEPS (300)] [PAIRS (3)]
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
steps=${1:-300}; pairs=${2:-3}
cvs="$root/build/tools/cvs/cvs"
work=$(mktemp -d /tmp/cvs-ttv.XXXXXX)
export CVS_CALIBRATION_DIR="$work/calibration"
echo "machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(nproc) cores; $(date -u +%Y-%m-%d)"
echo "calibrating (3 repeats) ..."
cal=$("$cvs" calibrate --config "$root/configs/cpu_jaxmaxtext_tiny_single.json" --work-dir "$work/repeats" \
  -- --poll-interval-s 1 2>"$work/calibrate.log")

python3 - "$root/configs/cpu_jaxmaxtext_tiny_single.json" "$cal" "$work" "$steps" <<'PY'
import json, sys
base, cal, work, steps = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
c = json.load(open(base))
c["smoke"]["enabled"] = False
c["checkpoint_resume"]["enabled"] = False
c["loss_curve"]["enforce"] = False
c["train_params"]["maxtext_config"]["steps"] = steps
c["threshold_json"] = "speed_threshold.json"
t = json.load(open(cal))
speed = {k: {m: s for m, s in v.items() if m in ("training.tokens_per_sec_per_gpu", "training.tflops_per_sec_per_gpu",
                                                  "training.step_time_mean_ms")}
         for k, v in t.items() if not k.startswith("_")}
json.dump(speed, open(f"{work}/speed_threshold.json", "w"), indent=1)
for mode in ("fail", "extend"):
    c["statistics"]["on_inconclusive"] = mode
    c["statistics"]["extend_max_steps"] = 2 * steps
    json.dump(c, open(f"{work}/{mode}.json", "w"), indent=1)
PY

for i in $(seq "$pairs"); do
  for mode in fail extend; do
    "$root/build/suites/jaxmaxtext_single" --config "$work/$mode.json" --output "$work/$mode-$i" --quiet \
      --poll-interval-s 1 >"$work/$mode-$i.log" 2>&1 || true
  done
done

python3 - "$work" "$pairs" "$steps" <<'PY'
import json, statistics, sys
work, pairs, steps = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
rows = {}
for i in range(1, pairs + 1):
    for mode in ("fail", "extend"):
        r = json.load(open(f"{work}/{mode}-{i}/results.json"))
        for key, s in r["sweeps"].items():
            x = s.get("early_stop", {})
            ran = x.get("steps_run", len(s.get("loss_curve", [])))
            tok = {e["metric"]: e["outcome"] for e in s["evaluations"]}.get("training.tokens_per_sec_per_gpu", "?")
            rows.setdefault(key, {}).setdefault(mode, []).append((ran, s["run"]["wall_seconds"], tok))
print(f"configured steps {steps}, cap {2 * steps} (extend), {pairs} pairs; medians")
print(f"{'sweep':30} {'fixed steps':>11} {'fixed s':>8} {'extend steps':>12} {'extend s':>8} {'s ratio':>8}  verdicts (fixed / extend)")
for key, m in rows.items():
    fs = statistics.median(v[0] for v in m["fail"]); fw = statistics.median(v[1] for v in m["fail"])
    es = statistics.median(v[0] for v in m["extend"]); ew = statistics.median(v[1] for v in m["extend"])
    verdicts = ",".join(v[2] for v in m["fail"]) + " / " + ",".join(v[2] for v in m["extend"])
    print(f"{key:30} {fs:11.0f} {fw:8.1f} {es:12.0f} {ew:8.1f} {ew / fw:8.2f}  {verdicts}")
PY
echo "work folder: $work"
