#!/bin/bash
# The real-GPU check, run whenever a session is lent the GPU machine (one H200, no registry): real
# MaxText from the carried wheels (tests/device/carry.sh, carry [".devcarry"]), the 1B config
# tests/device/gpu_check.json, each part under its own time limit, outputs under $OUT as test data.
#   bash tests/device/gpu_check.sh suite       the whole jaxmaxtext_single suite (setup .. metrics)
#   bash tests/device/gpu_check.sh calibrate   three sessions -> cvs calibrate --from -> a gated
#                                               session (PASS); a neighbour matmul loop on the GPU
#                                               (FAIL naming its pid); a neighbour that sleeps most
#                                               of the time, slowing the training ~7 % (FAIL)
# Never a test of CI's: CI has no GPU. Each part ends within ~9 min (one device command).
set -u
set -o pipefail
part=${1:-calibrate}
T0=$(date +%s)
LIMIT=${CVS_DEV_LIMIT_S:-540}
OUT=${OUT:-/tmp/cvs-device-out}
mkdir -p "$OUT"
root=$(pwd)
C=$root/.devcarry
B=/tmp/cvs-device
W=/tmp/cvs-gpu-check
export PYTHONUNBUFFERED=1 CVS_HISTORY=none
left() { echo $((LIMIT - ($(date +%s) - T0))); }
say() { echo "== [$(($(date +%s) - T0))s] $*"; }
exec > >(tee "$OUT/log.txt") 2>&1
say "install the carried wheels into /tmp/site"
rm -rf /tmp/site "$B" /tmp/proj "$W"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site \
  "$C"/whl/*.whl 2>&1 | grep -v -e 'WARNING: Target directory' -e '^$' | tail -n 20
[ -f /tmp/site/maxtext/trainers/pre_train/train.py ] || { echo "the wheels did not install"; exit 1; }
export PYTHONPATH=/tmp/site
mkdir -p "$B" "$W"
tar xJf "$C/devb.tar.xz" -C "$B" && tar xJf "$C/proj.tar.xz" -C /tmp || exit 1
L=$B/devb/lib
export CVS_ROOT=/tmp/proj
own() { "$L/ld-linux-x86-64.so.2" --library-path "$L" "$@"; }
CONFIG=$root/tests/device/gpu_check.json
nvidia-smi --query-gpu=index,name,driver_version,power.default_limit --format=csv,noheader

session() { # name [suite args...]: one session of the config, training and metrics; its rc
  local n=$1
  shift
  local b=$(($(left) - 30))
  ((b > 170)) && b=170
  ((b < 40)) && { say "$n: no time left"; return 9; }
  say "session $n (${b} s at most)"
  timeout -s TERM -k 15 "$b" "$L/ld-linux-x86-64.so.2" --library-path "$L" "$B/devb/bin/jaxmaxtext_single" \
    --config "$CONFIG" --output "$W/$n" --poll-interval-s 1 --quiet \
    '--gtest_filter=test_setup*:sweep/test_training_run*:sweep/test_metric*' "$@" >"$W/$n.log" 2>&1
  local rc=$?
  say "session $n: exit $rc: $(grep -m1 'cvs: jaxmaxtext_single:' "$W/$n.log")"
  python3 "$root/tests/e2e/why_failed.py" "$W/$n" 2>/dev/null | head -n 12
  return $rc
}

neighbour() { # BUSY_MATMULS SLEEP_S SECONDS: a bf16 matmul loop sharing the GPU, in the background
  python3 - "$@" <<'PY' &
import sys, time, torch
busy, rest, secs = int(sys.argv[1]), float(sys.argv[2]), float(sys.argv[3])
a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
end = time.time() + secs
while time.time() < end:
    for _ in range(busy):
        b = a @ a
    torch.cuda.synchronize()
    time.sleep(rest)
PY
  echo $!
}

keep() { # session name -> $OUT/<name>_results.json and its training and telemetry logs
  cp "$W/$1/results.json" "$OUT/$1_results.json" 2>/dev/null
  find "$W/$1" -name training.log -exec sh -c 'tail -c 3000000 "$1"' _ {} \; >"$OUT/$1_training.log" 2>/dev/null
  find "$W/$1" -name telemetry.log -exec sh -c 'tail -c 2000000 "$1"' _ {} \; >"$OUT/$1_telemetry.log" 2>/dev/null
}

case $part in
  suite)
    # The whole suite: the smoke stage and a checkpoint save and resume too, every stage's filter.
    python3 - "$CONFIG" "$W/suite.json" <<'PY'
import json, sys
c = json.load(open(sys.argv[1]))
c["smoke"]["enabled"] = True
c["checkpoint_resume"]["enabled"] = True
json.dump(c, open(sys.argv[2], "w"), indent=1)
PY
    CONFIG=$W/suite.json session suite '--gtest_filter=*'
    keep suite
    ;;
  calibrate)
    for i in 1 2 3; do session "r$i"; done
    say "cvs calibrate --from the three"
    own "$B/devb/bin/cvs" calibrate --config "$CONFIG" --from "$W"/r{1,2,3}/results.json --out "$W/cal.json" \
      --history none 2>&1 | tail -n 20
    cp "$W/cal.json" "$OUT/calibration.json" 2>/dev/null
    [ -f "$W/cal.json" ] || { say "no calibration"; exit 1; }
    session gated --thresholds "$W/cal.json"
    keep gated
    hog=$(neighbour 20 0 200)
    sleep 6
    nvidia-smi --query-compute-apps=gpu_uuid,pid,process_name,used_memory --format=csv,nounits | tee "$OUT/apps.csv"
    session neighbour --thresholds "$W/cal.json"
    kill "$hog" 2>/dev/null
    keep neighbour
    hog=$(neighbour 1 0.3 200)
    sleep 6
    session light --thresholds "$W/cal.json"
    kill "$hog" 2>/dev/null
    keep light
    ;;
  *)
    echo "gpu_check.sh: suite or calibrate, not $part" >&2
    exit 2
    ;;
esac
ls -la "$OUT"
say "finished"
