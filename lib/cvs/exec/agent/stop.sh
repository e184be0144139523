# shellcheck shell=sh
# stop PID_FILE GRACE: TERM to the run's whole session, KILL after GRACE seconds. PID_FILE a
# folder: every run whose pid file is PID_FILE/*/pid (a certification's warm trainers), at once.
grace=$2
# stop_run PIDF: TERM to the session whose id PIDF holds, its id in $p; 1 a bad pid file, 2 the
# session is gone already, or the process of that id is not the run's: its command line does not
# name PIDF's folder, as start_detached's does (another node's pid file, on a temp_dir they share).
stop_run() {
  pidf=$1
  run_pid
  if [ "$p" = 0 ]; then
    echo "cvs: bad pid file $pidf" >&2
    return 1
  fi
  if [ "$p" -le 1 ]; then
    echo "cvs: refusing to signal process group $p" >&2
    return 1
  fi
  if [ -e "/proc/$p" ] && ! names "$p" "${pidf%/*}/"; then return 2; fi
  kill -TERM "-$p" 2>/dev/null || return 2
}
# await_run: waits up to GRACE for session $p's process group to end (not its leader alone: the
# telemetry sampler takes a last sample on TERM, the kernel's lines of the incident that stopped
# the run among them), then KILL.
await_run() {
  i=0
  while group_alive "$p" && [ $i -lt $((grace * 5)) ]; do
    sleep 0.2
    i=$((i + 1))
  done
  kill -KILL "-$p" 2>/dev/null
  return 0
}
if [ -d "$1" ]; then
  stopped=
  for f in "$1"/*/pid; do
    [ -f "$f" ] || continue
    stop_run "$f" && stopped="$stopped $p"
  done
  for p in $stopped; do await_run; done
  exit 0
fi
[ -f "$1" ] || exit 0
stop_run "$1"
case $? in 1) exit 1 ;; 2) exit 0 ;; esac
await_run
