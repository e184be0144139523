# shellcheck shell=sh
# shellcheck disable=SC2154 # alive comes from common.sh, prepended at build time
# telemetry OUT INTERVAL_S PID [LOG [WARM_PID_FILE]]: appends samples of the node to OUT every
# INTERVAL_S while PID (the training, whose output is LOG) lives, and one more after it is gone or a USR1 says so (with_telemetry, once the
# training ended); the lines are described in logs/telemetry.hpp. Started beside the training, in
# its session: a stop that ends the session ends it too. Nothing it cannot read stops it: it says
# so once, in an N line. A training forked from the warm trainer (warm_start.py) is not under PID:
# PID stands for it, and WARM_PID_FILE, once written, names it (its CPU time and GPU processes).
out=$1
iv=$2
pid=$3
log=${4:-}
warm=${5:-}
tpid=$pid
exec 5>>"$out" || exit 0
exec </dev/null >/dev/null 2>&1
tick=$(getconf CLK_TCK 2>/dev/null) || tick=100
cores=$(nproc 2>/dev/null) || cores=0
tool=none
for t in nvidia-smi amd-smi rocm-smi; do
  if command -v "$t" >/dev/null 2>&1; then
    tool=$t
    break
  fi
done
printf 'H tick=%s cores=%s tool=%s\n' "$tick" "$cores" "$tool" >&5
case $tool in
  nvidia-smi) v=$(nvidia-smi --version 2>&1 | tr '\n' ' ') ;;
  amd-smi) v=$(amd-smi version 2>&1 | tr '\n' ' ') ;;
  rocm-smi) v=$(rocm-smi --version 2>&1 | tr '\n' ' ') ;;
  *) v= ;;
esac
[ -n "$v" ] && printf 'V %s\n' "$v" >&5
# The kernel log from now on: /dev/kmsg open on fd 7 for the whole run, its old records read
# away once; each sample then reads only the records written since (the fd keeps its place).
kmsg=0
# (A failing exec would end the shell: true, a regular builtin, tries the open first.)
if true 7</dev/kmsg 2>/dev/null; then
  exec 7</dev/kmsg
  dd bs=16384 iflag=nonblock <&7 >/dev/null 2>&1
  kmsg=1
else
  printf 'N kernel log not readable: %s\n' "$(dd if=/dev/kmsg bs=16384 count=1 iflag=nonblock 2>&1 >/dev/null | tail -n 1)" >&5
fi
psi() {  # the "some" total (microseconds) of /proc/pressure/$1, or -
  v=-
  if [ -r "/proc/pressure/$1" ]; then
    while read -r kind _ _ _ total; do
      [ "$kind" = some ] && v=${total#total=}
    done <"/proc/pressure/$1"
  fi
  printf '%s' "$v"
}
# Whose a GPU process is: the training's (the training or a process under it), another this
# namespace sees, or unseen (a pid this namespace does not have: a container's PID namespace).
owner() {
  [ -r "/proc/$1/stat" ] || { echo unseen; return; }
  a=$1
  hops=0
  while [ "$a" -gt 1 ] 2>/dev/null && [ $hops -lt 64 ]; do
    [ "$a" = "$pid" ] || [ "$a" = "$tpid" ] && { echo ours; return; }
    l=$(cat "/proc/$a/stat" 2>/dev/null) || break
    r=${l##*) }
    # shellcheck disable=SC2086 # fields split on purpose
    set -- $r
    a=$2
    hops=$((hops + 1))
  done
  echo other
}
# Whether the training has logged a step yet (the samples before it are import and compile):
# once seen, every later sample is the training's; "-" when the log cannot be read from here.
steps=0
[ -r "$log" ] || steps=-
training() {
  if [ "$steps" = 0 ] && tail -c 65536 "$log" 2>/dev/null | grep -q 'completed step: '; then steps=1; fi
  printf '%s' "$steps"
}
# amd-smi's answer to ARGS as an X KIND block (logs/telemetry.hpp): what the GPUs are, once.
amd_block() {  # KIND ARGS...
  printf 'X %s\n' "$1" >&5
  shift
  amd-smi "$@" --json 2>&1 | sed 's/^/J /' >&5
  echo E >&5
}
# sample [first|last]: the first also reads amd-smi's list and static (index <-> PCI address, the
# power cap and its maximum, the link's maxima); the first and the last its bad pages.
sample() {
  which_sample=${1:-}  # before `set --` below takes the positional parameters
  read -r up _ </proc/uptime
  if [ -n "$warm" ] && [ "$tpid" = "$pid" ] && read -r w <"$warm" 2>/dev/null; then
    case $w in '' | *[!0-9]*) ;; *) tpid=$w ;; esac
  fi
  # The training's CPU time, with the children it reaped (one read: the training is one process).
  ticks=-
  if read -r l <"/proc/$tpid/stat" 2>/dev/null; then
    r=${l##*) }
    # shellcheck disable=SC2086 # fields split on purpose
    set -- $r
    ticks=$((${12} + ${13} + ${14} + ${15}))
  fi
  mem=-
  while read -r k v _; do
    if [ "$k" = MemAvailable: ]; then mem=$v; fi
  done </proc/meminfo
  training >/dev/null
  printf 'S %s cpu=%s psi_cpu=%s psi_mem=%s psi_io=%s mem_kb=%s steps=%s\n' "$up" "$ticks" "$(psi cpu)" \
    "$(psi memory)" "$(psi io)" "$mem" "$steps" >&5
  case $tool in
    nvidia-smi)
      nvidia-smi --query-gpu=index,power.draw,clocks.sm,clocks.mem,temperature.gpu,temperature.memory,utilization.gpu,clocks_event_reasons.active,ecc.errors.corrected.volatile.total,ecc.errors.uncorrected.volatile.total,pcie.link.width.current,pcie.link.width.max,pcie.link.gen.current,pcie.link.gen.max,enforced.power.limit,power.default_limit,uuid,pci.bus_id,retired_pages.pending \
        --format=csv,noheader,nounits 2>&1 | sed 's/^/G /' >&5
      # Row remapping (Ampere and later; older GPUs and drivers answer nothing): R lines.
      nvidia-smi --query-remapped-rows=gpu_bus_id,remapped_rows.pending,remapped_rows.failure \
        --format=csv,noheader,nounits 2>/dev/null | sed 's/^/R /' >&5
      procs=$(nvidia-smi --query-compute-apps=gpu_uuid,pid,process_name,used_memory --format=csv,nounits 2>&1)
      pids=$(printf '%s\n' "$procs" | awk -F', *' 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == "pid") c = i; next } c { print $c }')
      ;;
    amd-smi)
      if [ "$which_sample" = first ]; then
        amd_block list list
        amd_block static static
      fi
      amd-smi metric --json 2>&1 | sed 's/^/J /' >&5
      echo E >&5
      case $which_sample in first | last) amd_block bad-pages bad-pages ;; esac
      procs=$(amd-smi process --json 2>&1)
      pids=$(printf '%s\n' "$procs" | grep -o '"pid": *[0-9]*' | grep -o '[0-9]*$')
      ;;
    rocm-smi)
      rocm-smi --showtemp --showpower --showclocks --showuse --json 2>&1 | sed 's/^/J /' >&5
      echo E >&5
      procs=$(rocm-smi --showpids --json 2>&1)
      pids=$(printf '%s\n' "$procs" | grep -o 'PID[0-9]*' | cut -c4-)
      ;;
  esac
  if [ "$tool" != none ]; then
    # The compute processes on the GPUs (P lines, then Q), and whose each one is (O lines).
    printf '%s\n' "$procs" | sed 's/^/P /' >&5
    echo Q >&5
    for p in $pids; do printf 'O %s %s\n' "$p" "$(owner "$p")" >&5; done
  fi
  # The kernel's new records (their continuation lines, which start with a space, left out).
  if [ $kmsg = 1 ]; then dd bs=16384 iflag=nonblock <&7 2>/dev/null | sed -n 's/^\([0-9]\)/K \1/p' >&5; fi
}
woke=0
# USR1: the training ended (with_telemetry); TERM: the run is stopped (stop.sh waits for the group).
# Either way one last sample, at once: an incident's lines logged after the sample that failed
# the run are read.
trap 'woke=1' USR1
trap 'woke=1 stopped=1' TERM
stopped=0
which=first
while :; do
  sample "$which"
  which=
  if [ $woke = 1 ] || ! alive "$pid"; then
    # Stopped while it sampled: the TERM reached that sample's readers too; one whole sample more.
    if [ $stopped = 1 ]; then
      sample last
    # Gone at once: that sample was the last too (amd-smi's bad pages again).
    elif [ "$tool" = amd-smi ]; then amd_block bad-pages bad-pages; fi
    break
  fi
  # A USR1 during the sleep ends the wait: the last sample follows at once.
  sleep "$iv" 5>&- 7<&- &
  s=$!
  [ $woke = 0 ] && wait $s
  kill $s 2>/dev/null
  if [ $woke = 1 ] || ! alive "$pid"; then
    sample last
    break
  fi
done
echo F >&5
