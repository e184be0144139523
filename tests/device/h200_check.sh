#!/bin/bash
# The checks that need a real NVIDIA GPU, run on the device machine a session may be lent (one
# H200; no package registry, so no MaxText). Prepared here, run there as one command:
#   tests/device/bundle.sh            (here: the stripped binaries and their libraries)
#   run: bash tests/device/h200_check.sh   with carry [".devbundle"]
# What it keeps under $OUT became test data (tests/data/gpu_probe/nvidia_smi_h200_*,
# tests/data/telemetry/nvidia_smi_h200_*): the real nvidia-smi's answers to the exact queries the
# probe and the telemetry sampler send, gpu_probe's JSON, the sampler's lines under a GPU load,
# and the suite's own test_setup (JAX probe + nvidia-smi probe + checks) as results.json.
set -u
OUT=${OUT:-/tmp/cvs-device-out}
mkdir -p "$OUT"
exec > >(tee "$OUT/log.txt") 2>&1
root=$(pwd)
B=/tmp/cvs-device
rm -rf "$B" && mkdir -p "$B/maxtext-not-installed"
: >"$B/maxtext-not-installed/train.py"
tar xJf .devbundle/devb.tar.xz -C "$B" || exit 1
L=$B/devb/lib
# The binaries were built on Debian: its loader and libraries, not the image's.
own() { "$L/ld-linux-x86-64.so.2" --library-path "$L" "$@"; }

echo "== machine"
{
  date -u
  uname -a
  nproc
  nvidia-smi --version
  nvidia-smi -L
  echo "== kmsg readable:"
  dd if=/dev/kmsg bs=16384 count=1 iflag=nonblock 2>&1 >/dev/null | tail -n 1
  echo "== nvidia-smi -q"
  nvidia-smi -q
} >"$OUT/env.txt" 2>&1
head -n 8 "$OUT/env.txt"
nvidia-smi --help-query-gpu >"$OUT/help_query_gpu.txt" 2>&1

echo "== the probe's query (gpu_probe_command / gpu_probe's fallback)"
nvidia-smi --query-gpu=index,name,memory.total,memory.free,compute_cap --format=csv,noheader,nounits \
  | tee "$OUT/nvidia_smi_h200_probe.csv"

echo "== gpu_probe (HIP build: no AMD device here, so the nvidia-smi fallback)"
own "$B/devb/bin/gpu_probe" | tee "$OUT/gpu_probe_h200.json"
echo "gpu_probe rc=${PIPESTATUS[0]}"

echo "== the telemetry sampler (lib/cvs/exec/agent) beside a GPU load"
cat lib/cvs/exec/agent/common.sh lib/cvs/exec/agent/telemetry.sh >"$B/telemetry.sh"
python3 - <<'PY' &
import time, torch
a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
end = time.time() + 12
while time.time() < end:
    for _ in range(50):
        b = a @ a
    torch.cuda.synchronize()
PY
load=$!
sleep 2
sh "$B/telemetry.sh" "$OUT/telemetry_h200_load.txt" 1 "$load"
wait "$load"
echo "sampler lines: $(wc -l <"$OUT/telemetry_h200_load.txt")"
grep -m 3 '^G ' "$OUT/telemetry_h200_load.txt"
# Idle, after the load: the same query once more.
sh "$B/telemetry.sh" "$OUT/telemetry_h200_idle.txt" 1 999999

echo "== the suite's test_setup on this node (jaxmaxtext_single, local runtime, gpu_name h200)"
cp tests/device/h200_setup_single.json "$B/"
CVS_ROOT=$root own "$B/devb/bin/jaxmaxtext_single" --config "$B/h200_setup_single.json" \
  --output "$B/suite" --gtest_filter='test_setup.*'
echo "suite rc=$?"
cp "$B/suite/results.json" "$OUT/setup_results.json" 2>/dev/null || ls -R "$B/suite"
exit 0
