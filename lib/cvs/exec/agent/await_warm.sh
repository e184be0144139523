# shellcheck shell=sh
# await_warm DIR PREFIX LIMIT_S: waits until every warm trainer of this node whose pid file is
# DIR/*/pid serves (its socket @PREFIX<its folder's name> listed in its network namespace's
# /proc/<pid>/net/unix) or has ended; exit 0. After LIMIT_S seconds with one still importing:
# exit 1, its folder named on standard error. A pid file whose process is not that trainer (its
# command line does not name the socket: another node's, on a temp_dir they share) is not waited for.
dir=$1
prefix=$2
limit=$3
i=0
while :; do
  left=
  for pidf in "$dir"/*/pid; do
    [ -f "$pidf" ] || continue
    key=${pidf%/pid}
    key=${key##*/}
    run_pid  # p: its session id (common.sh)
    # shellcheck disable=SC2154
    if [ "$p" -le 1 ] || ! alive "$p" || ! names "$p" "$prefix$key"; then continue; fi
    grep -q " @$prefix$key\$" "/proc/$p/net/unix" 2>/dev/null || left="$left $key"
  done
  [ -z "$left" ] && exit 0
  if [ $i -ge $((limit * 5)) ]; then
    echo "cvs: warm trainer(s) still importing after ${limit} s:$left" >&2
    exit 1
  fi
  sleep 0.2
  i=$((i + 1))
done
