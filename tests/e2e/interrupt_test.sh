#!/usr/bin/env bash
# Ctrl-C during a real training run: the suite stops every node, skips what is left, writes its
# report with the reason, tears down, and exits non-zero; no training process survives.
#   interrupt_test.sh SUITE_BINARY CONFIG OUT_DIR [CLUSTER_FILE]
# CVS_INTERRUPT_GROUP=1 sends SIGINT to the suite's whole process group, as a terminal's Ctrl-C
# does: the suite's own children (the node streams) die with it and the stop must still happen.
set -euo pipefail
suite=$1; config=$2; out=$3
cluster=()
[[ -n "${4:-}" ]] && cluster=(--cluster "$4")
rm -rf "$out"; mkdir -p "$out"
fail() { echo "FAIL: $*"; sed -n '1,200p' "$out/suite.log" || true; exit 1; }
group=${CVS_INTERRUPT_GROUP:-0}
launch=()
((group)) && launch=(setsid)  # its own process group, so that the group signal spares this script
"${launch[@]}" "$suite" --config "$config" "${cluster[@]}" --output "$out/session" --poll-interval-s 1 --startup-budget-s 300 --step-budget-s 30 \
  --gtest_filter='test_setup*:sweep/test_training_run*' >"$out/suite.log" 2>&1 &
pid=$!
log=""
for _ in $(seq 240); do
  log=$(ls "$out"/session/runs/*/node-0/training.log 2>/dev/null | head -n 1 || true)
  [[ -n "$log" ]] && grep -q "Config param" "$log" && break
  sleep 0.5
done
[[ -n "$log" ]] || { kill -9 "$pid" 2>/dev/null; fail "training never started"; }
if ((group)); then kill -INT -- "-$pid"; else kill -INT "$pid"; fi
rc=0
timeout 120 tail --pid="$pid" -f /dev/null || fail "the suite did not exit within 120 s of Ctrl-C"
wait "$pid" || rc=$?
[[ $rc -ne 0 ]] || fail "exit code 0 after Ctrl-C"
grep -q '"status": "FAIL"' "$out/session/results.json" || fail "results.json missing or not FAIL"
grep -q 'interrupted' "$out/session/results.json" || fail "the interruption is not in results.json"
[[ -s "$out/session/report.html" ]] || fail "no report"
remote=$(python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); print([s["run"]["nodes"][0]["remote_log"] for s in r["sweeps"].values() if "run" in s][0])' "$out/session/results.json")
sid=$(cat "$(dirname "$remote")/pid")
for _ in $(seq 50); do
  live=$(ps -o stat= -s "$sid" | grep -v '^Z' || true)
  [[ -z "$live" ]] && break
  sleep 0.1
done
[[ -z "$live" ]] || fail "training processes of session $sid survived: $live"
echo "Ctrl-C stopped the run (exit $rc), report written, no process left"
echo "1 passed, 0 failed"
