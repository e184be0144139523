#!/usr/bin/env bash
# Fleet mode on a Slurm cluster file (scheduler slurm), on the one-host test Slurm of
# tests/integration/slurm_cluster.sh (run under it: CVS_SLURM_DIR, SLURM_CONF). The fleet holds one
# allocation; the node's run is a run in that job on its host (slurm.job_id, slurm.nodelist: it
# allocates nothing itself); the job is released before the outputs are written, and the healthy
# cluster file asks for a new allocation of exactly the healthy hosts. One node: the fleet is too
# small to score, so the run's verdict counts (said in the log). Then Ctrl-C (SIGINT to the
# fleet's process group) once training runs: the node's run stops, the fleet still writes its
# outputs (the node a suspect: interrupted) and releases the job. slurm_cluster.sh fails the test
# when an allocation is left behind.
#   fleet_slurm_test.sh FLEET_BINARY CONFIG OUT_DIR
set -euo pipefail
fleet=$1; config=$2; out=$3
dir=${CVS_SLURM_DIR:?run under tests/integration/slurm_cluster.sh run DIR --}
source "$(dirname "$0")/e2e_lib.sh" "$out"
rc=0
"$fleet" --config "$config" --cluster "$dir/cluster.json" --output "$out/fleet" --poll-interval-s 1 \
  --startup-budget-s 300 --step-budget-s 60 "--gtest_filter=test_setup.*:sweep/test_training_run.run/BS_2*" \
  >"$out/fleet.log" 2>&1 || rc=$?
[[ $rc -eq 0 ]] || { tail -30 "$out/fleet.log"; fail "exit $rc, expected 0"; }
host=$(sinfo --noheader --format=%n | head -1)
grep -q "slurm: job [0-9]* on $host" "$out/fleet.log" || fail "the fleet did not allocate $host: $(head -5 "$out/fleet.log")"
grep -q "too few to score the fleet" "$out/fleet.log" || fail "a fleet of one not said to be too small"
[[ $(cat "$out/fleet/healthy_nodes.txt") == "$host" ]] || fail "healthy_nodes.txt: $(cat "$out/fleet/healthy_nodes.txt")"
node_log=$out/fleet/nodes/$host/suite.log
[[ -f $node_log ]] || fail "no $node_log"
! grep -q "allocating" "$node_log" || fail "the node's run allocated a job of its own"
python3 - "$out/fleet" "$host" <<'PY' || fail "outputs"
import json, sys
d, host = sys.argv[1], sys.argv[2]
node = json.load(open(f"{d}/nodes/{host}/cluster.json"))
assert node["slurm"]["nodelist"] == [host] and node["slurm"]["job_id"].isdigit(), node
r = json.load(open(f"{d}/nodes/{host}/report/results.json"))
assert r["status"] == "PASS", r["status"]
hc = json.load(open(f"{d}/healthy_cluster.json"))
assert hc["scheduler"] == "slurm" and hc["slurm"]["nodes"] == 1, hc
assert hc["slurm"]["extra_args"] == [f"--nodelist={host}"] and "job_id" not in hc["slurm"], hc
print(f"slurm fleet: {host} healthy, its run in job {node['slurm']['job_id']}")
PY

# Ctrl-C during the node's training.
touch "$out/interrupt.start"
setsid "$fleet" --config "$config" --cluster "$dir/cluster.json" --output "$out/interrupted" --poll-interval-s 1 \
  --startup-budget-s 300 --step-budget-s 60 "--gtest_filter=test_setup.*:sweep/test_training_run.run/BS_2*" \
  >"$out/interrupted.log" 2>&1 &
pid=$!
for _ in $(seq 600); do
  pidf=$(find /tmp -maxdepth 7 -path "*/LOGS/jaxmaxtext/*-$host/node-0/pid" -newer "$out/interrupt.start" 2>/dev/null | head -1)
  [[ -z $pidf ]] || break
  sleep 0.5
done
[[ -n $pidf ]] || { kill -9 -- -"$pid"; fail "the interrupted fleet's training never started"; }
sleep 3
kill -INT -- -"$pid"
rc=0
wait "$pid" || rc=$?
[[ $rc -eq 1 ]] || { tail -20 "$out/interrupted.log"; fail "interrupted fleet: exit $rc, expected 1 (a suspect)"; }
grep -q "released" "$out/interrupted.log" || fail "the job was not released: $(tail -5 "$out/interrupted.log")"
grep -q "interrupted" "$out/interrupted/suspect_nodes.txt" || fail "suspect_nodes.txt: $(cat "$out/interrupted/suspect_nodes.txt")"
[[ -z $(squeue --noheader 2>/dev/null) ]] || fail "an allocation is left: $(squeue --noheader)"
echo "interrupted fleet: $(cut -c1-160 "$out/interrupted/suspect_nodes.txt")"
echo "PASS"
