# shellcheck shell=sh
# stop PID_FILE GRACE: TERM to the run's whole session, KILL after GRACE seconds.
pidf=$1
grace=$2
[ -f "$pidf" ] || exit 0
p=$(cat "$pidf")
case "$p" in '' | *[!0-9]*)
  echo "cvs: bad pid file $pidf" >&2
  exit 1
  ;;
esac
[ "$p" -gt 1 ] || {
  echo "cvs: refusing to signal process group $p" >&2
  exit 1
}
kill -TERM "-$p" 2>/dev/null || exit 0
i=0
while alive "$p" && [ $i -lt $((grace * 5)) ]; do
  sleep 0.2
  i=$((i + 1))
done
kill -KILL "-$p" 2>/dev/null
exit 0
