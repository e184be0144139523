#!/usr/bin/env bash
# What the telemetry sampler costs a run: the CPU default's BS=2 sweep (real MaxText, 400 steps),
# trained alternately with telemetry on and off, PAIRS times each, side by side in one run; prints
# the steady-state step time (the estimate the verdicts use) of every run, the medians and their
# ratio. Sampling every second (--poll-interval-s 1: five times the default rate, the worst case).
# Not a test: nothing is asserted.
#   bench/telemetry_overhead.sh [PAIRS (5)] [BUILD_DIR (build)]
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
pairs=${1:-5}; build=${2:-$root/build}
work=$(mktemp -d /tmp/cvs-telemetry-bench.XXXXXX)
trap 'rm -rf "$work"' EXIT
export CVS_CALIBRATION_DIR="$work/none"
echo "machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(nproc) cores; $(date -u +%Y-%m-%d)"
# 1. The sampler alone, beside a sleeping "training" for 40 s at one sample a second: its CPU time
# (its own and its children's: dd, sed) over the wall time.
sleep 40 &
sleeper=$!
prog=$(cat "$root/lib/cvs/exec/agent/common.sh" "$root/lib/cvs/exec/agent/telemetry.sh")
/usr/bin/time -f "%e %U %S" -o "$work/time" sh -c "$prog" cvs-telemetry "$work/tel.log" 1 "$sleeper"
read -r wall user sys <"$work/time"
python3 -c 'import sys; w,u,s=map(float,sys.argv[1:]); print(f"sampler alone: {u+s:.2f} CPU s in {w:.1f} s at 1 sample/s: {100*(u+s)/w:.2f} % of one core (at the default 5 s: {20*(u+s)/w:.2f} %)")' \
  "$wall" "$user" "$sys"
# 2. Runs with telemetry on and off, side by side.
for mode in on off; do
  python3 - "$root/configs/cpu_jaxmaxtext_tiny_single.json" "$work/$mode.json" "$mode" "$root" <<'PY'
import json, sys
c = json.load(open(sys.argv[1]))
c["smoke"]["enabled"] = False
c["checkpoint_resume"]["enabled"] = False
c["runs"] = ["BS=2,PRECISION=BF16,SL=128"]
c["train_params"]["maxtext_config"]["steps"] = 400
c["threshold_json"] = f"{sys.argv[4]}/thresholds/cpu_jaxmaxtext_tiny_single_threshold.json"
c["telemetry"] = {"enabled": sys.argv[3] == "on"}
json.dump(c, open(sys.argv[2], "w"))
PY
done
for i in $(seq 1 "$pairs"); do
  for mode in on off; do
    "$build/suites/jaxmaxtext_single" --config "$work/$mode.json" --output "$work/$mode-$i" --quiet \
      --poll-interval-s 1 '--gtest_filter=test_setup*:sweep/test_training_run*' >/dev/null 2>&1 || true
    python3 - "$work/$mode-$i/results.json" "$mode" <<'PY' | tee -a "$work/rows"
import json, sys
s = json.load(open(sys.argv[1]))["sweeps"]["BS=2,PRECISION=BF16,SL=128"]
iv = s["steady_state"]["intervals"].get("step_time_mean_ms")
t = s["run"]["nodes"][0].get("telemetry")
print(sys.argv[2], f"{iv['estimate']:.3f}" if iv else "nan", t["samples"] if t else 0)
PY
  done
done
python3 - "$work/rows" <<'PY'
import statistics, sys
rows = [l.split() for l in open(sys.argv[1])]
on = [float(r[1]) for r in rows if r[0] == "on" and r[1] != "nan"]
off = [float(r[1]) for r in rows if r[0] == "off" and r[1] != "nan"]
samples = statistics.median(int(r[2]) for r in rows if r[0] == "on")
print(f"step time, median of {len(on)} runs: telemetry on {statistics.median(on):.3f} ms ({samples} samples a run), "
      f"off {statistics.median(off):.3f} ms: ratio {statistics.median(on) / statistics.median(off):.4f}")
PY
