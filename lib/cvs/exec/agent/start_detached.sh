# shellcheck shell=sh
# start_detached LOG RC_FILE PID_FILE FILE FILE_CONTENT ARGV...: starts ARGV detached in its own
# session with stdout+stderr to LOG, records its exit code in RC_FILE and the session id in
# PID_FILE (also printed). Refuses (exit 17) an existing LOG, and an existing FILE when FILE is set
# (then written first, as write_file).
log=$1
rcf=$2
pidf=$3
f=$4
fc=$5
shift 5
if [ -e "$log" ]; then
  echo "cvs: refusing to append to existing log $log" >&2
  exit 17
fi
if [ -n "$f" ]; then
  if [ -e "$f" ]; then
    echo "cvs: refusing to overwrite $f" >&2
    exit 17
  fi
  d=${f%/*}
  mkdir -p "${d:-/}" && printf '%s' "$fc" >"$f" || exit 18
fi
a=${log%/*}
b=${rcf%/*}
c=${pidf%/*}
mkdir -p "${a:-/}" "${b:-/}" "${c:-/}" || exit 18
rm -f "$rcf"
# The log's first and last lines mark the run's start and exit on the node's clock, in glog's
# header form as MaxText's lines are (logs/run_timeline.hpp: the run's phases), the exit's before
# the exit code is recorded: a stream that sees the code has the mark.
# shellcheck disable=SC2016 # $1 and $@ belong to the inner sh
# A last line the run left unfinished is ended first: the mark is a line of its own.
setsid sh -c 'rcf=$1; log=$2; shift 2
  echo "$(date "+I%m%d %H:%M:%S.%N") cvs-run: started"
  "$@"; rc=$?
  [ -n "$(tail -c 1 "$log")" ] && echo
  echo "$(date "+I%m%d %H:%M:%S.%N") cvs-run: exited $rc"
  echo $rc > "$rcf"' cvs-run "$rcf" "$log" "$@" >"$log" 2>&1 </dev/null &
# Written whole, then renamed: a warm start that reads PID_FILE while a trainer is (re)started sees
# the old pid or the new one, never an empty file (which it would take for a trainer gone).
echo $! >"$pidf.$$" && mv -f "$pidf.$$" "$pidf"
echo $!
