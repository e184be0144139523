#!/usr/bin/env bash
# How often `cvs calibrate` then the README's run refuse or FAIL on this machine with a light
# neighbour (a loop busy ~10 % of one core, as a shared login node has): N trials, each a fresh
# calibration of the CPU default then a gated run of it. Prints one line a trial (calibrate's exit,
# the repeats it ran again, the run's status, and for a refusal or a FAIL its reason) and the
# count. The goal (#43): at most 1 refusal-or-FAIL in 20.
#   bench/calibrate_then_run.sh CVS_BINARY [N=20] [OUT_DIR=/tmp/cvs-calibrate-bench]
set -uo pipefail
cvs=$1; n=${2:-20}; out=${3:-/tmp/cvs-calibrate-bench}
root=$(cd "$(dirname "$0")/.." && pwd)
config="$root/configs/cpu_jaxmaxtext_tiny_single.json"
rm -rf "$out"; mkdir -p "$out"
python3 -c '
import time
while True:
    t = time.monotonic()
    while time.monotonic() - t < 0.01: pass
    time.sleep(0.09)' &
neighbour=$!
trap 'kill $neighbour 2>/dev/null' EXIT
bad=0
echo "machine: $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//'); $(date -u +%FT%TZ); $n trials"
for i in $(seq "$n"); do
  d="$out/t$i"; mkdir -p "$d"
  t0=$(date +%s)
  rc=0
  CVS_CALIBRATION_DIR="$d/cal" "$cvs" calibrate --config "$config" --work-dir "$d/repeats" --history none \
    -- --poll-interval-s 1 >"$d/calibrate.out" 2>"$d/calibrate.log" || rc=$?
  ext=$(grep -c '^cvs calibrate: extended: ' "$d/calibrate.log")
  if [[ $rc -ne 0 ]]; then
    bad=$((bad + 1))
    echo "trial $i: calibrate exit $rc ($ext repeat(s) run again): $(grep -m1 'refused\|did not pass' "$d/calibrate.log" | cut -c1-300)"
    continue
  fi
  rc=0
  CVS_CALIBRATION_DIR="$d/cal" "$cvs" run jaxmaxtext_single --config "$config" --output "$d/run" --history none \
    --quiet --poll-interval-s 1 >"$d/run.log" 2>&1 || rc=$?
  words=$(python3 - "$d/run/results.json" <<'PY' 2>/dev/null
import json, sys
r = json.load(open(sys.argv[1]))
bad = [f"{k} {e['metric']} {e['outcome']}: {e['message'][:160]}" for k, s in r["sweeps"].items()
       for e in s.get("evaluations", []) if e["outcome"] in ("FAIL", "INCONCLUSIVE")]
print(r["status"], "; ".join(bad))
PY
)
  [[ $rc -eq 0 ]] || bad=$((bad + 1))
  echo "trial $i: calibrate 0 ($ext repeat(s) run again), run exit $rc: ${words:-no results} ($(($(date +%s) - t0)) s)"
done
echo "refusals or FAILs: $bad of $n"
