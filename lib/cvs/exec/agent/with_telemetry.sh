# shellcheck shell=sh
# with_telemetry OUT INTERVAL_S LOG WARM_PID_FILE SAMPLER ARGV...: runs ARGV (the training, its output
# LOG; WARM_PID_FILE: where warm_start.py names the training it stands for, or "") with the telemetry
# sampler (SAMPLER: telemetry.sh's text) beside it, in the same session, and exits with ARGV's
# exit code once the sampler has taken its last sample: by the time the run's exit code is written,
# everything the node saw during the run is in OUT.
out=$1
iv=$2
log=$3
warm=$4
prog=$5
shift 5
"$@" &
child=$!
sh -c "$prog" cvs-telemetry "$out" "$iv" "$child" "$log" "$warm" </dev/null >/dev/null 2>&1 &
sampler=$!
wait "$child"
rc=$?
kill -USR1 "$sampler" 2>/dev/null
wait "$sampler"
exit $rc
