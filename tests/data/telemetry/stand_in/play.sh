#!/bin/sh
# The stand-ins for the vendor tools (no GPU on these machines: a double at the tool's process
# boundary). Each call of nvidia-smi --query-gpu, amd-smi metric or rocm-smi prints the next
# recorded output named in the playlist $CVS_STAND_IN_PLAYLIST (one file of tests/data/telemetry per
# line; the last one repeats), counting its calls in $CVS_STAND_IN_PLAYLIST.calls.
#   {nvidia,amd,rocm}/<tool> ARGS...   (links to this file: put one folder on PATH)
tool=$(basename "$0")
case "$tool:$1" in
  nvidia-smi:--version) echo "NVIDIA-SMI 550.54.15 (stand-in playing recorded outputs)"; exit 0 ;;
  amd-smi:version) echo "AMDSMI Tool: 24.6.2+2b02a07 | AMDSMI Library version: 24.6.2.0 | ROCm version: 6.2.0 (stand-in)"; exit 0 ;;
  rocm-smi:--version) echo "ROCM-SMI version: 2.3.0 (stand-in)"; exit 0 ;;
esac
list=${CVS_STAND_IN_PLAYLIST:?set CVS_STAND_IN_PLAYLIST}
here=$(cd "$(dirname "$(readlink -f "$0")")/.." && pwd)
n=0
[ -f "$list.calls" ] && read -r n <"$list.calls"
echo $((n + 1)) >"$list.calls"
total=$(grep -c . "$list")
k=$((n + 1))
[ "$k" -gt "$total" ] && k=$total
file=$(grep . "$list" | sed -n "${k}p")
cat "$here/$file"
