#!/usr/bin/env bash
# cvs certify on the one-host test Slurm (tests/integration/slurm_cluster.sh: CVS_SLURM_DIR,
# SLURM_CONF). (1) A certification inside one allocation: every tier's runs in that job, the job
# released after; the node certified (a fleet of one: its runs' own verdicts count). (2) --drain
# with a config whose train script is on no node: the node fails preflight, is drained with the
# reason (read back with scontrol show node), the drain command is in the certificate; the test
# returns the node to service. slurm_cluster.sh fails the test when an allocation is left behind.
#   certify_slurm_test.sh CERTIFY_BINARY CONFIG OUT_DIR
set -euo pipefail
certify=$1; config=$2; out=$3
dir=${CVS_SLURM_DIR:?run under tests/integration/slurm_cluster.sh run DIR --}
source "$(dirname "$0")/e2e_lib.sh" "$out"
host=$(sinfo --noheader --format=%n | head -1)
args=(--cluster "$dir/cluster.json" --poll-interval-s 1 --startup-budget-s 300 --step-budget-s 60
      "--gtest_filter=test_setup.*:sweep/test_training_run.run/BS_2*")

rc=0
"$certify" "${args[@]}" --config "$config" --output "$out/ok" >"$out/ok.log" 2>&1 || rc=$?
[[ $rc -eq 0 ]] || { tail -30 "$out/ok.log"; fail "exit $rc, expected 0"; }
[[ $(grep -c "slurm: job [0-9]* on $host" "$out/ok.log") -eq 1 ]] || fail "not one allocation: $(grep 'slurm: job' "$out/ok.log")"
grep -q "released" "$out/ok.log" || fail "the job was not released"
[[ -z $(squeue --noheader 2>/dev/null) ]] || fail "an allocation is left: $(squeue --noheader)"
python3 - "$out/ok" "$host" <<'PY' || fail "outputs"
import json, sys
d, host = sys.argv[1], sys.argv[2]
c = json.load(open(d + "/certificate.json"))
assert c["verdict"] == "CERTIFIED" and c["certified"] == [host], (c["verdict"], c["verdict_reason"], c["certified"])
jobs = set()
for t in ("preflight/setup", "nodes"):
    node = json.load(open(f"{d}/{t}/{host}/cluster.json"))
    assert node["slurm"]["nodelist"] == [host], node
    jobs.add(node["slurm"]["job_id"])
assert len(jobs) == 1, jobs  # every tier's runs in the one allocation
assert c["drain_commands"] == [], c["drain_commands"]
print(f"slurm certify: {host} certified, every run in job {jobs.pop()}")
PY

python3 - "$config" "$out/broken_config.json" <<'PY'
import json, os, sys
c = json.load(open(sys.argv[1]))
c["threshold_json"] = os.path.join(os.path.dirname(os.path.abspath(sys.argv[1])), "..", "thresholds", c["threshold_json"])
c["train_params"]["train_script_paths"] = ["/nonexistent/maxtext/train.py"]
json.dump(c, open(sys.argv[2], "w"), indent=1)
PY
trap 'scontrol update NodeName="$host" State=RESUME >/dev/null 2>&1 || true' EXIT
rc=0
"$certify" "${args[@]}" --config "$out/broken_config.json" --drain --output "$out/drain" >"$out/drain.log" 2>&1 || rc=$?
[[ $rc -eq 1 ]] || { tail -30 "$out/drain.log"; fail "drain: exit $rc, expected 1"; }
state=$(scontrol show node "$host")
grep -q "State=[A-Z+]*DRAIN" <<<"$state" || fail "not drained: $state"
grep -q "Reason=cvs-maxtext: .*train_script_paths" <<<"$state" || fail "no reason: $state"
python3 - "$out/drain" "$host" <<'PY' || fail "drain outputs"
import json, sys
d, host = sys.argv[1], sys.argv[2]
c = json.load(open(d + "/certificate.json"))
assert c["verdict"] == "NOT CERTIFIED" and [e["node"] for e in c["excluded"]] == [host], c
assert len(c["drain_commands"]) == 1 and c["drain_commands"][0].startswith(f"scontrol update NodeName={host} State=DRAIN"), c["drain_commands"]
assert "failed" not in c["drain_commands"][0], c["drain_commands"]
assert c["tiers"][1]["state"] == "not run" and "no healthy node" in c["tiers"][1]["why_not_run"], c["tiers"][1]
assert open(d + "/slurm_exclude.txt").read().strip() == f"--exclude={host}"
PY
scontrol update NodeName="$host" State=RESUME
sleep 1
! scontrol show node "$host" | grep -q "State=[A-Z+]*DRAIN" || fail "the node did not return to service"
[[ -z $(squeue --noheader 2>/dev/null) ]] || fail "an allocation is left: $(squeue --noheader)"
echo "drain: $host drained with the reason, then returned to service"

# (3) A fault mid-run: the output folder on a 4 MiB tmpfs that fills up once the job is allocated.
# The certificate's next write fails (a full disk), the error is caught once at certify's edge
# (exit 3, naming the file), and the allocation is released on the way out: no job is left.
mnt=$out/full
mkdir -p "$mnt"
mount -t tmpfs -o size=4m cvs-certify-full "$mnt"
trap 'umount "$mnt" 2>/dev/null || true; scontrol update NodeName="$host" State=RESUME >/dev/null 2>&1 || true' EXIT
rc=0
"$certify" "${args[@]}" --config "$config" --output "$mnt/cert" >"$out/full.log" 2>&1 &
pid=$!
for _ in $(seq 1 600); do
  grep -q "slurm: job [0-9]* on" "$out/full.log" && break
  sleep 0.2
done
grep -q "slurm: job [0-9]* on" "$out/full.log" || { kill "$pid"; fail "full disk: no allocation in 2 min"; }
dd if=/dev/zero of="$mnt/fill" bs=64k 2>/dev/null || true
wait "$pid" || rc=$?
[[ $rc -eq 3 ]] || { tail -30 "$out/full.log"; fail "full disk: exit $rc, expected 3"; }
grep -q "cannot write $mnt/cert/" "$out/full.log" || { tail -20 "$out/full.log"; fail "full disk: the error does not name the file"; }
grep -q "released" "$out/full.log" || fail "full disk: the job was not released"
[[ -z $(squeue --noheader 2>/dev/null) ]] || fail "full disk: an allocation is left: $(squeue --noheader)"
echo "full disk: exit 3 ($(grep -m1 'cannot write' "$out/full.log" | cut -c1-160)), no job left"
echo "PASS"
