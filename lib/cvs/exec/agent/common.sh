# shellcheck shell=sh
# Functions the node-agent programs share (prepended to those that use them).

# alive PID: the process exists and is not a zombie (an init that does not reap, as in some
# sandboxes and containers, leaves killed processes as zombies that `kill -0` still finds).
# Shell builtins only: the stream runs it every interval on every node.
alive() {
  [ -r "/proc/$1/status" ] || return 1
  {
    while read -r k v; do
      if [ "$k" = State: ]; then
        case $v in Z*) return 1 ;; esac
        return 0
      fi
    done <"/proc/$1/status"
  } 2>/dev/null
}

# group_alive PGID: a process of the group exists and is not a zombie (the run's session: its
# training, and the telemetry sampler taking its last sample). Shell builtins only.
group_alive() {
  gpid=$1
  for st in /proc/[0-9]*/stat; do
    read -r x <"$st" 2>/dev/null || continue
    x=${x##*) }  # past "PID (COMM) ": the command may hold spaces and parentheses
    # shellcheck disable=SC2086 # its fields: state ppid pgrp ...
    set -- $x
    case $1 in Z*) continue ;; esac
    [ "$3" = "$gpid" ] && return 0
  done
  return 1
}

# names PID WORD: the process's command line has WORD in it (a warm trainer's: its socket's name).
names() {
  grep -qaF -- "$2" "/proc/$1/cmdline" 2>/dev/null
}

# p=<the run's session id from the pid file $pidf>, 0 when missing or not a number.
# shellcheck disable=SC2154 # pidf is set by the program this is prepended to
run_pid() {
  p=
  if [ -f "$pidf" ]; then read -r p <"$pidf"; fi
  case $p in '' | *[!0-9]*) p=0 ;; esac
}
