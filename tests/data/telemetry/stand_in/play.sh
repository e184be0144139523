#!/bin/sh
# The stand-ins for the vendor tools (no GPU on these machines: a double at the tool's process
# boundary). Each call of nvidia-smi --query-gpu, amd-smi metric or rocm-smi prints the next
# recorded output named in the playlist $CVS_STAND_IN_PLAYLIST (one file of tests/data/telemetry per
# line; the last one repeats), counting its calls in $CVS_STAND_IN_PLAYLIST.calls.
#   {nvidia,amd,rocm}/<tool> ARGS...   (links to this file: put one folder on PATH)
tool=$(basename "$0")
# The compute-process lists print $CVS_STAND_IN_APPS (a recorded answer; none: no process).
case "$tool:$1" in
  nvidia-smi:--query-compute-apps=*|amd-smi:process|rocm-smi:--showpids)
    if [ -n "${CVS_STAND_IN_APPS:-}" ]; then cat "$CVS_STAND_IN_APPS"
    elif [ "$tool" = nvidia-smi ]; then echo "gpu_uuid, pid, process_name, used_gpu_memory [MiB]"
    else echo "[]"; fi
    exit 0 ;;
esac
# Row remapping: $CVS_STAND_IN_REMAPS (a recorded answer; none: no row).
case "$tool:$1" in
  nvidia-smi:--query-remapped-rows=*)
    [ -n "${CVS_STAND_IN_REMAPS:-}" ] && cat "$CVS_STAND_IN_REMAPS"
    exit 0 ;;
esac
case "$tool:$1" in
  nvidia-smi:--version) echo "NVIDIA-SMI 550.54.15 (stand-in playing recorded outputs)"; exit 0 ;;
  amd-smi:version) echo "AMDSMI Tool: 24.6.2+2b02a07 | AMDSMI Library version: 24.6.2.0 | ROCm version: 6.2.0 (stand-in)"; exit 0 ;;
  rocm-smi:--version) echo "ROCM-SMI version: 2.3.0 (stand-in)"; exit 0 ;;
esac
list=${CVS_STAND_IN_PLAYLIST:?set CVS_STAND_IN_PLAYLIST}
here=$(cd "$(dirname "$(readlink -f "$0")")/.." && pwd)
# play K: prints the playlist's entry K (the last one for any K beyond it).
play() {
  k=$1
  total=$(grep -c . "$list")
  [ "$k" -gt "$total" ] && k=$total
  cat "$here/$(grep . "$list" | sed -n "${k}p")"
}
# With $CVS_STAND_IN_STEPS_UNDER (a folder of training logs): until a training.log there, newer than
# the playlist, has a step line, the first entry is printed and not counted (the sampler's samples
# before the training's first step are left out of the figures; the playlist plays over the steps).
# With $CVS_STAND_IN_STEPS_PER_ENTRY too, the entry follows the training's last step line instead
# of the calls: entry 2 for its first N steps, 3 for the next N, ..., the last one from then on;
# so each entry's share of the training's samples is its share of the steps, however fast this
# machine steps and however many samples that makes.
if [ -n "${CVS_STAND_IN_STEPS_UNDER:-}" ]; then
  log=$(find "$CVS_STAND_IN_STEPS_UNDER" -name training.log -newer "$list" -exec grep -l 'completed step: ' {} + \
    2>/dev/null | head -n 1)
  if [ -z "$log" ]; then
    play 1
    exit 0
  fi
  if [ -n "${CVS_STAND_IN_STEPS_PER_ENTRY:-}" ]; then
    step=$(grep -o 'completed step: [0-9]*' "$log" | tail -n 1 | grep -o '[0-9]*$')
    play $((2 + step / CVS_STAND_IN_STEPS_PER_ENTRY))
    exit 0
  fi
fi
n=0
[ -f "$list.calls" ] && read -r n <"$list.calls"
echo $((n + 1)) >"$list.calls"
play $((n + 1))
