# shellcheck shell=sh
# shellcheck disable=SC2154 # p is set by run_pid, from common.sh, prepended at build time
# stream LOG RC_FILE PID_FILE OFFSET INTERVAL_S MAX_BYTES GRACE [TELEMETRY TOFF]: the log stream of
# one node (see node_agent.hpp for the frame protocol). Per interval it runs stat, head (when there
# is news) and sleep, and stat and head for the telemetry file; everything else is builtin.
log=$1
rcf=$2
pidf=$3
off=$4
iv=$5
max=$6
grace=$7
tel=${8:-}
toff=${9:-0}
opened=0
topened=0
slices=0
whole=${iv%%.*}
case $whole in '' | *[!0-9]*) ;; *) slices=$((whole * 4)) ;; esac
exec 4<&0
# The stop reader: a background list reads the controller's lines from fd 4 (its own stdin is
# /dev/null by POSIX rule), stops the run, and wakes the main loop (USR1 ends its wait) for the
# final frame. End of input: the controller is gone.
(
  while read -r cmd <&4; do
    case $cmd in
      stop)
        : >"$pidf.stopping"
        run_pid
        a=0
        if [ "$p" -gt 1 ]; then
          if alive "$p"; then a=1; fi
          if kill -TERM "-$p" 2>/dev/null; then
            i=0
            while alive "$p" && [ $i -lt $((grace * 5)) ]; do
              # shellcheck disable=SC2217 # closes the stream's pipes for the sleep
              sleep 0.2 </dev/null >/dev/null 2>&1 4<&-
              i=$((i + 1))
            done
            kill -KILL "-$p" 2>/dev/null
          fi
        fi
        # Only a run that was alive is "stopped"; one already dead stays gone (or exited).
        if [ $a = 1 ]; then : >"$pidf.stopped"; else rm -f "$pidf.stopping"; fi
        kill -USR1 $$
        ;;
    esac
  done
  kill $$ 2>/dev/null
) &
# A signal ends the loop through EXIT, which takes the reader along: never a reader left holding
# the stream open without its loop.
rpid=$!
trap 'kill $rpid 2>/dev/null' EXIT
trap 'exit 1' INT TERM HUP
woke=0
trap 'woke=1' USR1
while :; do
  if [ -s "$rcf" ]; then
    read -r rc <"$rcf"
    st="exited $rc"
  elif [ -e "$pidf.stopped" ]; then
    st=stopped
  elif [ -e "$pidf.stopping" ]; then
    st=running
  else
    run_pid
    if [ "$p" -gt 1 ] && alive "$p"; then
      st=running
    elif [ -f "$rcf" ]; then
      st=running
    else
      st=gone
    fi
  fi
  # The telemetry written so far, before the log frame: the final frame ends the stream, and by
  # then the sampler has written its last sample (with_telemetry waits for it).
  if [ -n "$tel" ]; then
    tsize=$(stat -c %s "$tel" 2>/dev/null || echo 0)
    if [ "$tsize" -gt "$toff" ]; then
      if [ $topened = 0 ]; then
        exec 6<"$tel"
        topened=1
        if [ "$toff" -gt 0 ]; then head -c "$toff" <&6 >/dev/null; fi
      fi
      printf 'CVS-TELEMETRY %s\n' $((tsize - toff)) || exit 0
      head -c $((tsize - toff)) <&6
      toff=$tsize
    fi
  fi
  size=$(stat -c %s "$log" 2>/dev/null || echo -1)
  n=0
  if [ "$size" -gt "$off" ]; then n=$((size - off)); fi
  if [ "$n" -gt "$max" ]; then n=$max; fi
  printf 'CVS-FRAME %s %s %s\n' "$size" "$n" "$st" || exit 0
  # fd 3 stays open on the log: each head continues where the last one stopped.
  if [ "$n" -gt 0 ]; then
    if [ $opened = 0 ]; then
      exec 3<"$log"
      opened=1
      if [ "$off" -gt 0 ]; then head -c "$off" <&3 >/dev/null; fi
    fi
    head -c "$n" <&3
    off=$((off + n))
  fi
  case $st in
    running) ;;
    *) if [ "$off" -ge "$size" ]; then exit 0; fi ;;
  esac
  # A USR1 that came while busy skips the sleep; one that comes during it ends the wait. The
  # sleeps hold none of the stream's pipes or files: the stream ends when its loop does.
  # An interval of a second or more is slept in quarters that end early when the run's exit code
  # appears: its final frame goes at once, not up to an interval after the exit.
  if [ "$n" -lt "$max" ] && [ $woke = 0 ]; then
    if [ "$slices" -gt 0 ]; then
      # shellcheck disable=SC2217 # closes the stream's pipes and the log for the sleep
      (i=0; while [ $i -lt "$slices" ] && [ ! -s "$rcf" ]; do sleep 0.25; i=$((i + 1)); done) \
        </dev/null >/dev/null 2>&1 3<&- 4<&- 6<&- &
    else
      # shellcheck disable=SC2217 # closes the stream's pipes and the log for the sleep
      sleep "$iv" </dev/null >/dev/null 2>&1 3<&- 4<&- 6<&- &
    fi
    s=$!
    [ $woke = 0 ] && wait $s
    kill $s 2>/dev/null
  fi
  woke=0
done
