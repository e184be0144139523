#!/usr/bin/env bash
# Fleet mode (jaxmaxtext_fleet) on five CPU "nodes" of two JAX devices each: three local processes and the two netns ssh
# hosts of tests/integration/netns_cluster.sh (run under it: CVS_NETNS_DIR), every node at once (on
# this one machine they share its two cores, fairly: the host's own noise is common to all).
#  1. Healthy: no suspect; five healthy nodes; exit 0 (CVS_FLEET_HEALTHY_RUNS times, default 1).
#  2. ns-b degraded (every process of its sessions capped at 15 % of one CPU by a cgroup), ns-a's
#     training killed (SIGKILL) a few seconds after it starts, and local2's crashed (SIGSEGV once it
#     logs steps: its own error line, "Fatal Python error: Segmentation fault", as a GPU fault
#     crashes a process). ns-b's evidence says why: its telemetry names the CPUs its training got
#     and the CPU pressure (PSI) the node saw.
#     Exactly ns-a and local2 (their runs failed, local2's with the error line) and ns-b (its
#     throughput below the fleet's) are suspects, with their reasons, in the text files, the Slurm
#     exclude line, the healthy cluster file, the JUnit file and the HTML page; exit 1.
# The outlier bound is 25 % here (--min-deviation-pct; the nodes of a healthy fleet agree to a few
# %); the degraded node is about 3x slower.
#   fleet_test.sh FLEET_BINARY CONFIG OUT_DIR
set -euo pipefail
fleet=$1; config=$2; out=$3
dir=${CVS_NETNS_DIR:?run under tests/integration/netns_cluster.sh run DIR --}
source "$(dirname "$0")/e2e_lib.sh" "$out"
python3 - "$dir/cluster.json" "$out/fleet_cluster.json" <<'PY'
import json, sys
c = json.load(open(sys.argv[1]))
c.pop("overrides", None)  # the distributed suite's Gloo interface: not for single-node runs
c["nodes"] = [{"name": f"local{i}", "host": "localhost", "transport": "local"} for i in range(3)] + c["nodes"]
c["head"] = "local0"
c["coordinator_address"] = "10.231.0.1"  # unused (no collectives); a loopback one is refused beside remote nodes
json.dump(c, open(sys.argv[2], "w"), indent=1)
PY
# A heavier model than the CPU default, gated by its loss, on two JAX devices a node, as real
# nodes have several GPUs (heavier_config.py).
python3 "$(dirname "$0")/heavier_config.py" "$config" "$out/fleet_config.json" 2
args=(--config "$out/fleet_config.json" --cluster "$out/fleet_cluster.json" --min-deviation-pct 25
      --poll-interval-s 1 --startup-budget-s 300 --step-budget-s 60
      "--gtest_filter=test_setup.*:sweep/test_training_run.run/BS_4*:sweep/test_metric.check/BS_4*")

# CVS_FLEET_HEALTHY_RUNS (default 1) healthy fleets in a row, each with no suspect.
for run in $(seq "${CVS_FLEET_HEALTHY_RUNS:-1}"); do
  h=$out/healthy; [[ $run -eq 1 ]] || h=$out/healthy-$run
  rc=0
  "$fleet" "${args[@]}" --output "$h" >"$h.log" 2>&1 || rc=$?
  [[ $rc -eq 0 ]] || { tail -30 "$h.log"; fail "healthy fleet $run: exit $rc, expected 0"; }
  [[ ! -s "$h/suspect_nodes.txt" ]] || fail "healthy fleet $run has suspects: $(cat "$h/suspect_nodes.txt")"
  [[ $(wc -l <"$h/healthy_nodes.txt") -eq 5 ]] || fail "healthy_nodes.txt: $(cat "$h/healthy_nodes.txt")"
done
echo "healthy fleet: no suspect (${CVS_FLEET_HEALTHY_RUNS:-1} run(s))"

# ns-b degraded: its sshd, so every process of its sessions, capped at 15 % of one CPU
# (cap_netns_cpu, e2e_lib.sh): a node slower whether or not the others run.
killer="" crasher=""
cleanup() {
  [[ -z $killer ]] || kill "$killer" 2>/dev/null || true
  [[ -z $crasher ]] || kill "$crasher" 2>/dev/null || true
  uncap_cpu
}
trap cleanup EXIT
cap_netns_cpu cvs-b cvs-fleet-slow 15
training_pids() {  # every process in netns cvs-a whose command line runs train.py with python
  local pid
  for pid in $(ip netns pids cvs-a); do
    if { tr '\0' ' ' <"/proc/$pid/cmdline"; } 2>/dev/null | grep -qE 'python[0-9.]* .*train\.py'; then echo "$pid"; fi
  done
}
(  # ns-a's training killed 5 s after it starts: every process of it (the python, its wrappers)
  for _ in $(seq 900); do
    if [[ -n $(training_pids) ]]; then
      sleep 5
      training_pids | xargs -r kill -9 2>/dev/null
      exit 0
    fi
    sleep 0.5
  done
) &
killer=$!
touch "$out/degraded.start"
local2_training() {  # the session of local2's run (its pid file, under the log_dir: the run tag ends its name)
  find /tmp -maxdepth 7 -path '*/LOGS/jaxmaxtext/*-local2/node-0/pid' -newer "$out/degraded.start" 2>/dev/null | head -1
}
(  # local2's training crashed once it logs steps: the python itself (not its sh wrapper, which
  # writes the exit code), in the session of local2's run
  for _ in $(seq 900); do
    pidf=$(local2_training)
    if [[ -n $pidf ]] && grep -q "completed step" "${pidf%/pid}/training.log" 2>/dev/null; then
      pkill -SEGV -s "$(cat "$pidf")" -f '^[^ ]*python[0-9.]* [^ ]*train\.py'
      exit 0
    fi
    sleep 0.5
  done
) &
crasher=$!
rc=0
"$fleet" "${args[@]}" --output "$out/degraded" >"$out/degraded.log" 2>&1 || rc=$?
cleanup
[[ $rc -eq 1 ]] || { tail -30 "$out/degraded.log"; fail "degraded fleet: exit $rc, expected 1"; }
python3 - "$out/degraded" <<'PY' || { tail -20 "$out/degraded.log"; fail "degraded fleet outputs"; }
import json, sys, xml.etree.ElementTree as ET
d = sys.argv[1]
sus = dict(l.rstrip("\n").split("\t", 1) for l in open(d + "/suspect_nodes.txt"))
assert set(sus) == {"ns-a", "ns-b", "local2"}, sus
assert "its run ended" in sus["ns-a"], sus["ns-a"]
assert "its run ended" in sus["local2"] and "Fatal Python error: Segmentation fault" in sus["local2"], sus["local2"]
assert "tokens_per_sec_per_gpu" in sus["ns-b"] and "below the fleet's median" in sus["ns-b"], sus["ns-b"]
# Why: its telemetry names the CPU it got and the CPU pressure it saw.
import re
m = re.search(r"telemetry: .*the training had ([0-9.]+) CPUs: PSI cpu some ([0-9]+) %", sus["ns-b"])
assert m and float(m.group(1)) < 0.5, sus["ns-b"]
assert "telemetry: " in open(d + "/fleet.html").read(), "no telemetry words on the fleet page"
assert open(d + "/healthy_nodes.txt").read().split() == ["local0", "local1"]
assert open(d + "/slurm_exclude.txt").read().strip() == "--exclude=localhost,10.231.0.1,10.231.0.2"
hc = json.load(open(d + "/healthy_cluster.json"))
assert [n["name"] for n in hc["nodes"]] == ["local0", "local1"] and hc["head"] == "local0", hc
root = ET.parse(d + "/junit.xml").getroot()
failed = {tc.get("name") for tc in root.iter("testcase") if tc.find("failure") is not None or tc.find("error") is not None}
assert failed == {"node.ns-a", "node.ns-b", "node.local2"}, failed
assert all(float(tc.get("time")) > 0 for tc in root.iter("testcase")), "a node's run has its seconds"
html = open(d + "/fleet.html").read()
assert html.index("ns-a") < html.index("local0") and html.count("SUSPECT") == 3
print("degraded fleet: suspects", ", ".join(f"{k} ({v[:90]})" for k, v in sus.items()))
PY
junit_valid "$out/degraded/junit.xml"
echo "PASS"
