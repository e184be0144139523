#!/usr/bin/env bash
# Fleet mode on a Slurm cluster file (scheduler slurm), on the one-host test Slurm of
# tests/integration/slurm_cluster.sh (run under it: CVS_SLURM_DIR, SLURM_CONF). The fleet holds one
# allocation; the node's run is a run in that job on its host (slurm.job_id, slurm.nodelist: it
# allocates nothing itself); the job is released before the outputs are written, and the healthy
# cluster file asks for a new allocation of exactly the healthy hosts. One node: the fleet is too
# small to score, so the run's verdict counts (said in the log). slurm_cluster.sh fails the test
# when an allocation is left behind.
#   fleet_slurm_test.sh FLEET_BINARY CONFIG OUT_DIR
set -euo pipefail
fleet=$1; config=$2; out=$3
dir=${CVS_SLURM_DIR:?run under tests/integration/slurm_cluster.sh run DIR --}
rm -rf "$out"; mkdir -p "$out"
fail() { echo "FAIL: $*"; exit 1; }
export CVS_CALIBRATION_DIR="$out/no-calibration"
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
echo "PASS"
