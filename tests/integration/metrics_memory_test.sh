#!/usr/bin/env bash
# `cvs metrics` reads a log too large for a per-step record in bounded memory: two MaxText-format
# logs built here from a real CPU log (bench/make_big_log.py; nothing committed), one 8x the other,
# each read by `cvs metrics` with its peak resident set measured (getrusage of the child). The
# larger (about 1.5 M steps: 250 MiB at the old 170 bytes a step) must stay under 64 MiB, and the
# growth between them must be at most 16 bytes a step (the step time and two rates, a few bytes
# each). The figures must also be the log's: its step count, and a throughput.
#   metrics_memory_test.sh CVS_BINARY
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cvs=$1
work=$(mktemp -d /tmp/cvs-metrics-memory.XXXXXX)
trap 'rm -rf "$work"' EXIT
measure() {  # size in MiB -> "steps peak_rss_kib" on stdout; the metrics JSON in $work/SIZE.json
  local size=$1 steps
  steps=$(python3 "$root/bench/make_big_log.py" "$root/tests/data/logs/cpu_bs4_30steps.log" "$work/$size.log" "$size")
  python3 - "$cvs" "$work/$size.log" "$work/$size.json" "$steps" <<'PY'
import json, resource, subprocess, sys
cvs, log, out, steps = sys.argv[1:]
with open(out, "w") as f:
    rc = subprocess.run([cvs, "metrics", log], stdout=f).returncode
if rc != 0:
    sys.exit(f"cvs metrics exited {rc}")
m = json.load(open(out))
if m["steps"] != int(steps) or not m["metrics"].get("tokens_per_sec_per_gpu"):
    sys.exit(f"wrong figures: steps {m['steps']} (log has {steps}), metrics {m['metrics']}")
print(steps, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
PY
  rm -f "$work/$size.log"
}
read -r small_steps small_kib < <(measure 40)
read -r big_steps big_kib < <(measure 320)
echo "small: $small_steps steps, peak RSS $small_kib KiB; big: $big_steps steps, peak RSS $big_kib KiB"
python3 - "$small_steps" "$small_kib" "$big_steps" "$big_kib" <<'PY'
import sys
ss, sk, bs, bk = map(int, sys.argv[1:])
per_step = (bk - sk) * 1024 / (bs - ss)
print(f"growth: {per_step:.1f} bytes a step; the big log's peak: {bk / 1024:.1f} MiB")
ok = True
if bk >= 64 * 1024:
    print("FAIL: peak RSS is not under 64 MiB"); ok = False
if per_step > 16:
    print("FAIL: memory grows more than 16 bytes a step"); ok = False
sys.exit(0 if ok else 1)
PY
