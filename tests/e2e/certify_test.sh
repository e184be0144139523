#!/usr/bin/env bash
# cvs certify on the four netns ssh hosts of tests/integration/netns_cluster.sh (run under it with
# CVS_NETNS_HOSTS=4: each host's cvs0 a link of its own into one bridge), two JAX devices a host
# (as real nodes have several GPUs: the ladder's rungs are 2, 4 and 8 devices). Real MaxText on the CPU
# in every tier: preflight (setup, probe facts, the distributed config's setup and RDMA check),
# nodes (single-node training on each host, one at a time), links (two-node runs over Gloo, one at
# a time), scale (the distributed config on 1, 2, 4 hosts). These hosts share this machine's two
# cores, so a 2-node rung keeps a few % of the 1-node rung's tokens/s per CPU "GPU": the bound per
# doubling is 1 % here (--scaling-per-doubling-pct 1; 90 on a real cluster).
#  1. Healthy, interrupted by Ctrl-C once the nodes tier is decided (exit 1, the certificate says
#     which tiers did not run), then --resume: all four certified, every tier PASS, the ladder 1, 2,
#     4 with efficiency intervals, every output written, exit 0, and no decided tier run again. Both
#     are in the results history (--history at the start; the resume records where the start did):
#     INCONCLUSIVE, then PASS with every host certified.
#  2. ns-b's CPU capped (its sshd's cgroup, 30 % of one CPU) and ns-d's link limited (tc tbf,
#     100 Mbit/s): exactly those two excluded, ns-b by the nodes tier (slow again when run once
#     more) and ns-d by the links tier, with their evidence; ns-a and ns-c certified (--min-nodes
#     2), the ladder on them; exit 0. The exclude line, the healthy cluster file, JUnit, the page and
#     the Markdown summary (--summary-md).
#     (Two healthy nodes, not three: the tiny model's FSDP cannot shard over three processes, so a
#     3-node full-scale rung ends in JAX's IndivisibleError.)
#  3. --budget-minutes the preflight alone uses up: the later tiers not run, with the reason; exit 1.
#   certify_test.sh CERTIFY_BINARY SINGLE_CONFIG DISTRIBUTED_CONFIG OUT_DIR
set -euo pipefail
certify=$1; single=$2; dist=$3; out=$4
dir=${CVS_NETNS_DIR:?run under tests/integration/netns_cluster.sh run DIR -- (CVS_NETNS_HOSTS=4)}
source "$(dirname "$0")/e2e_lib.sh" "$out"
PYTHONPATH="$(dirname "$0")" python3 - "$dir/cluster.json" "$single" "$dist" "$out" <<'PY'
import json, os, sys
import heavier_config as hc
c = json.load(open(sys.argv[1]))
assert len(c["nodes"]) == 4, "needs CVS_NETNS_HOSTS=4"
iface = c.pop("overrides")["container"]["env"]["GLOO_SOCKET_IFNAME"]  # single-node runs need none
json.dump(c, open(sys.argv[4] + "/cluster.json", "w"), indent=1)
# Steps of ~0.1 s (heavier_config.py, fleet_test.sh's model): the capped host is several times slower.
single = sys.argv[4] + "/single_config.json"
s = hc.heavier(hc.gated_by_loss(json.load(open(sys.argv[2])), single))
# 40 steps: a steady-state interval on every node (25 steady steps at least), so the nodes tier's
# stated power comes from the noise each node measured, not from the one that happened to have one.
s["train_params"]["maxtext_config"]["steps"] = 40
hc.write(hc.devices(s, 2), single)
# The distributed config: enough steps for a steady-state interval on every rung, its own gates
# (the shipped file's loss gates are for 20 steps): the loss must fall.
dist = sys.argv[4] + "/dist_config.json"
d = hc.gated_by_loss(json.load(open(sys.argv[3])), dist)
d["container"]["env"]["GLOO_SOCKET_IFNAME"] = iface
d["train_params"]["maxtext_config"].update({"steps": 60, "log_period": 10})
hc.write(hc.devices(d, 2), dist)
PY
args=(--cluster "$out/cluster.json" --config "$out/single_config.json" --distributed-config "$out/dist_config.json"
      --min-deviation-pct 50 --detect-slowdown-pct 75 --max-parallel 1 --scaling-per-doubling-pct 1
      --poll-interval-s 1 --startup-budget-s 300 --step-budget-s 60
      "--gtest_filter=test_setup.*:sweep/test_training_run.run/BS_2*:sweep/test_metric.check/BS_2*")

check_outputs() {  # DIR EXPECTED_CERTIFIED EXPECTED_EXCLUDED(json)
  python3 - "$@" <<'PY'
import json, sys, xml.etree.ElementTree as ET
d, certified, excluded = sys.argv[1], sys.argv[2].split(","), json.loads(sys.argv[3])
c = json.load(open(d + "/certificate.json"))
assert c["schema_version"] == 1 and c["verdict"] == "CERTIFIED", (c["verdict"], c["verdict_reason"])
assert c["certified"] == certified, c["certified"]
assert {e["node"]: e["tier"] for e in c["excluded"]} == excluded, c["excluded"]
tiers = {t["tier"]: t for t in c["tiers"]}
assert list(tiers) == ["preflight", "nodes", "links", "scale"], list(tiers)
assert all(t["state"] == "decided" for t in tiers.values()), [(t["tier"], t["state"]) for t in c["tiers"]]
rungs = tiers["scale"]["rungs"]
ladder = [k for k in (1, 2, 4) if k < len(certified)] + [len(certified)]  # 1, 2, 4 or 1, 2, 3
assert [r["nodes"] for r in rungs] == ladder, rungs
for r in rungs[1:]:
    lo, hi = r["efficiency_interval_pct"]
    assert lo <= r["efficiency_pct"] <= hi and r["verdict"] == "PASS", r
assert c["node_minutes"] > 0 and c["node_steps"] > 0, (c["node_minutes"], c["node_steps"])
assert all(t["node_minutes"] > 0 for t in c["tiers"]), [t["node_minutes"] for t in c["tiers"]]
assert c["git_commit"] and c["tool_version"] and c["inputs"]["cluster_sha256"]
hc = json.load(open(d + "/healthy_cluster.json"))
assert [n["name"] for n in hc["nodes"]] == certified, hc
hosts = {n["name"]: n["host"] for n in json.load(open(d + "/inputs/../../cluster.json"))["nodes"]}
ex = open(d + "/slurm_exclude.txt").read().strip()
assert ex == ("--exclude=" + ",".join(hosts[n] for n in excluded) if excluded else ""), ex
root = ET.parse(d + "/junit.xml").getroot()
failed = {tc.get("name") for tc in root.iter("testcase") if tc.find("failure") is not None or tc.find("error") is not None}
want = {"node." + n for n in excluded} | {"tier." + t for t in set(excluded.values())}
assert failed == want, (failed, want)
html = open(d + "/certificate.html").read()
assert html.index("CERTIFIED") < html.index("Excluded") and "Scaling ladder" in html
for e in c["excluded"]:
    print(f"  excluded {e['node']} ({e['tier']}): {e['evidence'][:150]}")
print("  ladder:", "; ".join(f"{r['nodes']} node(s) {r['efficiency_pct']:.1f} % {r['efficiency_interval_pct']}" for r in rungs))
print("  node-minutes", round(c["node_minutes"], 1), "node-steps", c["node_steps"])
PY
}

# 1. Healthy, interrupted by Ctrl-C once the nodes tier is decided, then --resume: the resumed
# certification is the healthy one (all four certified, every tier PASS, every output: the same
# check_outputs an uninterrupted run met; one certification fewer for CI's 2 cores).
"$certify" "${args[@]}" --history "$out/history.sqlite" --output "$out/resumed" >"$out/interrupted.log" 2>&1 &
pid=$!
for _ in $(seq 1200); do
  if python3 -c 'import json,sys; c=json.load(open(sys.argv[1])); sys.exit(0 if c["tiers"][1]["state"]=="decided" else 1)' \
      "$out/resumed/certificate.json" 2>/dev/null; then break; fi
  kill -0 $pid 2>/dev/null || break
  sleep 0.5
done
kill -INT $pid 2>/dev/null || true
rc=0; wait $pid || rc=$?
[[ $rc -eq 1 ]] || { tail -30 "$out/interrupted.log"; fail "interrupted: exit $rc, expected 1"; }
python3 - "$out/resumed" <<'PY' || fail "the interrupted certificate"
import json, sys
c = json.load(open(sys.argv[1] + "/certificate.json"))
states = [(t["tier"], t["state"]) for t in c["tiers"]]
assert c["verdict"] == "INCOMPLETE" and "did not run" in c["verdict_reason"], (c["verdict"], c["verdict_reason"])
assert states[:2] == [("preflight", "decided"), ("nodes", "decided")] and states[3] == ("scale", "not run"), states
assert "interrupted" in c["tiers"][3]["why_not_run"], c["tiers"][3]
print("interrupted:", states)
PY
rc=0
"$certify" --resume "$out/resumed" >"$out/resume.log" 2>&1 || rc=$?
[[ $rc -eq 0 ]] || { tail -30 "$out/resume.log"; fail "resume: exit $rc, expected 0"; }
grep -q "preflight tier already decided" "$out/resume.log" || fail "resume ran the preflight again"
grep -q "nodes tier already decided" "$out/resume.log" || fail "resume ran the nodes tier again"
[[ ! -e $out/resumed/preflight-2 && ! -e $out/resumed/nodes-2 ]] || fail "a decided tier ran twice: $(ls "$out/resumed")"
check_outputs "$out/resumed" ns-a,ns-b,ns-c,ns-d '{}' || fail "resumed outputs"
# One import of MaxText a node and config for a whole certification: every training of every tier
# was forked from its node's warm trainer (the first session on a node started it, the tiers after
# used it), and none outlives its certification (the interrupted one's nor the resumed one's).
python3 - "$out/resumed" <<'PY' || fail "warm starts"
import glob, sys
logs = glob.glob(sys.argv[1] + "/**/training.log", recursive=True)
tiers = {l[len(sys.argv[1]) + 1:].split("/")[0].split("-")[0] for l in logs}  # links-2: resumed
assert {"nodes", "links", "scale"} <= tiers, tiers
cold = [l for l in logs if "cvs-warm: training in process " not in open(l, errors="replace").read()]
assert not cold, (len(cold), len(logs), cold[:3])
print(f"  {len(logs)} training logs over {sorted(tiers)}: every one forked from a warm trainer")
PY
if pgrep -f "cvs-warm-cert-" >/dev/null; then fail "warm trainers outlived their certification: $(pgrep -af cvs-warm-cert- | cut -c1-120)"; fi
junit_valid "$out/resumed/junit.xml"
python3 - "$out/history.sqlite" <<'PY' || fail "the certifications in the history"
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
runs = db.execute("SELECT id, status FROM sessions WHERE kind = 'certify' ORDER BY finished_at").fetchall()
assert [s for _, s in runs] == ["INCONCLUSIVE", "PASS"], runs
nodes = db.execute("SELECT node, outcome, suspect FROM nodes WHERE session_id = ? ORDER BY node", (runs[1][0],)).fetchall()
assert nodes == [(n, "PASS", 0) for n in ("ns-a", "ns-b", "ns-c", "ns-d")], nodes
rungs = db.execute("SELECT sweep FROM metrics WHERE session_id = ? AND metric = 'scaling_efficiency_pct' ORDER BY sweep",
                   (runs[1][0],)).fetchall()
assert [r for (r,) in rungs] == ["rung-1", "rung-2", "rung-4"], rungs
suites = db.execute("SELECT count(*) FROM sessions WHERE kind = 'suite'").fetchone()[0]
assert suites > 0, "the suite runs record in the certification's store"
print(f"history: the interrupted and the resumed certification, {suites} suite session(s)")
PY
echo "resumed: all four certified, no decided tier run again"
# The resumed part recorded in the store the certificate names; another --history is refused.
python3 - "$out/resumed/certificate.json" "$out/history.sqlite" <<'PY' || fail "the certificate's store"
import json, sys
c = json.load(open(sys.argv[1]))
assert c["inputs"]["history"] == sys.argv[2], c["inputs"]["history"]
assert "--history" not in c["inputs"]["suite_args"], c["inputs"]["suite_args"]
PY
rc=0
"$certify" --resume "$out/resumed" --history "$out/other.sqlite" >"$out/resume_other.log" 2>&1 || rc=$?
[[ $rc -eq 2 ]] && grep -q "/inputs/history" "$out/resume_other.log" && [[ ! -e $out/other.sqlite ]] ||
  { cat "$out/resume_other.log"; fail "--resume --history OTHER: exit $rc, expected 2 naming /inputs/history"; }

# --plan from the store: the resumed certification's tiers (the clean one of these four hosts), each
# tier's time as recorded, nothing started or written; the phases in the certificate.
rc=0
"$certify" "${args[@]}" --history "$out/history.sqlite" --plan --output "$out/planned" >"$out/plan.log" 2>&1 || rc=$?
[[ $rc -eq 0 && ! -e $out/planned ]] || { cat "$out/plan.log"; fail "--plan: exit $rc or it wrote $out/planned"; }
python3 - "$out/plan.log" "$out/resumed/certificate.json" <<'PY' || { cat "$out/plan.log"; fail "--plan's estimate"; }
import json, re, sys
text, c = open(sys.argv[1]).read(), json.load(open(sys.argv[2]))
assert "in the history's certification" in text and "(guess)" not in text, text
est = float(re.search(r"estimate: ([0-9.]+) min", text).group(1))
took = sum(t["seconds"] for t in c["tiers"]) / 60
assert abs(est - took) <= 0.3 * took, (est, took)
for t in c["tiers"][1:]:  # the training tiers: where their node-minutes went
    p = t["phase_node_minutes"]
    parts = sum(p[k] for k in ("startup", "compile", "training", "checkpoint", "teardown", "other"))
    assert p["runs"] > 0 and p["training"] > 0 and abs(parts - t["node_minutes"]) <= 0.05 * t["node_minutes"] + 0.01, (t["tier"], p, t["node_minutes"])
print(f"plan: {est:.1f} min from the history; the tiers took {took:.1f}")
PY

# 2. ns-b's CPU capped, ns-d's link limited.
cleanup() {
  ip netns exec cvs-d tc qdisc del dev cvs0 root 2>/dev/null || true
  uncap_cpu
}
trap cleanup EXIT
cap_netns_cpu cvs-b cvs-certify-slow 30
ip netns exec cvs-d tc qdisc add dev cvs0 root tbf rate 100mbit burst 64kb latency 200ms
rc=0
"$certify" "${args[@]}" --min-nodes 2 --output "$out/degraded" --summary-md "$out/degraded.md" >"$out/degraded.log" 2>&1 || rc=$?
cleanup
[[ $rc -eq 0 ]] || { tail -30 "$out/degraded.log"; fail "degraded: exit $rc, expected 0 (--min-nodes 2)"; }
check_outputs "$out/degraded" ns-a,ns-c '{"ns-b": "nodes", "ns-d": "links"}' || { tail -20 "$out/degraded.log"; fail "degraded outputs"; }
junit_valid "$out/degraded/junit.xml"
# No import of the certification beside what a tier measures: every warm trainer the preflight
# started (four hosts, two configs; ns-b's capped) served before the nodes tier's first training
# started (a trainer's log: its start, then its import's seconds; it serves a little after).
python3 - "$out/degraded" <<'PY' || fail "a warm trainer imported beside the nodes tier"
import glob, json, re, sys
d = sys.argv[1]
words = json.dumps(json.load(open(d + "/nodes/ns-a/report/results.json")))
scope = re.search(r"the certification's: (cert-[0-9a-f]{16})", words).group(1)
def clock(line):  # "I1206 05:48:25.293717832 cvs-run: started": seconds of the day
    h, m, s = line.split()[1].split(":")
    return int(h) * 3600 + int(m) * 60 + float(s)
served = {}
for f in glob.glob(f"/tmp/*/jaxmaxtext/warm-trainer/scope-{scope}/*/trainer-*.log"):
    text = open(f).read()
    served[f] = clock(text.splitlines()[0]) + float(re.search(r"imported in ([0-9.]+) s", text).group(1))
assert len(served) == 8, (scope, served)
first = min(clock(open(f).readline()) for f in glob.glob(d + "/nodes/*/report/runs/*/node-0/training.log"))
last = max(served.values())
assert last < first or last - first > 12 * 3600, (f"a trainer served {last - first:.1f} s after the first training started", served)
print(f"  every warm trainer served {first - last:.1f} s or more before the nodes tier's first training")
PY
# What the certificate could have seen: the nodes tier's detection power is what fleet.hpp's rule
# gives on its healthy nodes' measured runs (each node's last run: ns-b's rerun does not count, it is
# excluded), worked out here again from their results.json: the least slowdown of one node, in the
# place among them that hides it best and on the unlucky side of its noise (the median interval's),
# that the scoring flags (modified z of the log beyond max_z, min_deviation from the median, the
# interval's near end too). Whether it is below ns-b's own slowdown depends on how alike the healthy
# nodes measured: run one at a time on two shared cores, a few seconds of the host's load apart can
# spread them by a third (then the power is ~98 %); it is printed beside it, not gated on. Spread
# further (67 % here once, ns-c and ns-d without an interval), no slowdown of one node stands out,
# a standstill included: the certificate says it has no detection power, and this model agrees.
python3 - "$out/degraded" "$out/single_config.json" <<'PY' || fail "the nodes tier's detection power"
import json, math, os, re, sys
from statistics import NormalDist, median
d = sys.argv[1]
c = json.load(open(d + "/certificate.json"))
confidence = json.load(open(sys.argv[2])).get("statistics", {}).get("confidence", 0.95)
nodes = [t for t in c["tiers"] if t["tier"] == "nodes"][0]
power = nodes.get("detection_power_pct")
if power is None:
    assert "no detection power: the 3 healthy node(s)' tokens/s lie too far apart" in nodes["summary"], nodes
else:
    assert c["inputs"]["min_deviation_pct"] <= power < 100, nodes
    assert "would have caught a node >= " in nodes["summary"], nodes["summary"]
# The target it stepped for (--detect-slowdown-pct 75), each run until its tokens/s interval was
# narrow enough for it; met unless the fleet's own spread hid it.
target = c["inputs"]["detect_slowdown_pct"]
assert target == 75, c["inputs"]
assert f"each run until its tokens/s is within +-" in nodes["ran"] and f"for a node {target:g} % slow" in nodes["ran"], nodes["ran"]
assert f"target {target:g} %: " + ("met" if power is not None and power <= target else "not met") in nodes["summary"], nodes["summary"]
sweep, metric = nodes["detection_power_figure"].rsplit(" ", 1) if power is not None else (
    next(k for k, s in json.load(open(d + "/nodes/ns-a/report/results.json"))["sweeps"].items() if s.get("metrics")),
    "tokens_per_sec_per_gpu")
assert metric == "tokens_per_sec_per_gpu", nodes["detection_power_figure"]
out = {e["node"] for e in nodes["excluded"]}
values, halves = [], []
for name in sorted(set(os.listdir(d + "/nodes")) - {"rerun"} - out):
    run = d + "/nodes/" + (f"rerun/{name}" if os.path.isdir(f"{d}/nodes/rerun/{name}") else name)
    s = json.load(open(run + "/report/results.json"))["sweeps"][sweep]
    iv = s.get("steady_state", {}).get("intervals", {}).get(metric)
    values.append(iv["estimate"] if iv else s["metrics"][metric])
    if iv and all(math.isfinite(iv[k]) for k in ("lo", "hi")):
        halves.append((iv["hi"] - iv["lo"]) / 2)
assert len(values) == 3, values
max_z, min_dev = c["inputs"]["max_z"], c["inputs"]["min_deviation_pct"] / 100
half = median(halves) if halves else 0.0
noise = NormalDist().inv_cdf(0.95) * half / NormalDist().inv_cdf((1 + confidence) / 2)
def outlier(x, v):  # below the median beyond both bounds (tokens/s: lower is worse)
    m = median(v)
    log_mad = median(abs(math.log(y / m)) for y in v) if all(y > 0 for y in v) else 0
    if log_mad > 0 and x > 0:
        z = 0.6745 * math.log(x / m) / log_mad
    else:
        mad = median(abs(y - m) for y in v)
        z = 0.6745 * (x - m) / mad if mad > 0 else (0 if x == m else math.copysign(math.inf, x - m))
    return z < -max_z and abs((x - m) / m) >= min_dev
def flagged(v, i, slowdown):
    measured = median(v) * (1 - slowdown) + noise
    v = v[:i] + [measured] + v[i + 1:]
    return outlier(measured, v) and outlier(measured + half, v)
v, mine = sorted(values), 0.0
if power is None:
    assert not all(flagged(v, i, 1.0) for i in (len(v) - 1, len(v) // 2)), (v, halves)
    print(f"  nodes tier: no detection power (healthy nodes {100 * (max(v) / min(v) - 1):.0f} % apart)")
    sys.exit(0)
for i in (len(v) - 1, len(v) // 2):  # the fastest node slowed, the median node slowed
    lo, hi = 0.0, 1.0
    assert flagged(v, i, hi), (v, i)
    for _ in range(40):
        mid = (lo + hi) / 2
        lo, hi = (lo, mid) if flagged(v, i, mid) else (mid, hi)
    mine = max(mine, hi)
assert abs(100 * mine - power) < 0.01, (100 * mine, power, values, halves)
ev = [e["evidence"] for e in c["excluded"] if e["node"] == "ns-b"][0]
slow = float(re.search(r"tokens_per_sec_per_gpu \S+ is ([0-9.]+) % below", ev).group(1))
spread = 100 * (max(values) / min(values) - 1)
print(f"  nodes tier: would have caught a node >= {power:.1f} % slow (target {target:g} %; healthy nodes {spread:.0f} % apart); ns-b was {slow:.1f} % slow")
PY
python3 - "$out/degraded/certificate.json" <<'PY' || fail "the links tier's detection power"
import json, re, sys
c = json.load(open(sys.argv[1]))
# The links tier's: a pair's step time risen above the bound and its noise, less than ns-d's pairs rose.
links = [t for t in c["tiers"] if t["tier"] == "links"][0]
lp = links.get("detection_power_pct")
assert lp is not None and lp >= c["inputs"]["min_deviation_pct"], links
assert "would have caught a link slowing its pair's step >= " in links["summary"], links["summary"]
evd = [e["evidence"] for e in c["excluded"] if e["node"] == "ns-d"][0]
rises = [float(x) for x in re.findall(r"([0-9.]+) % above the pairs' reference", evd)]
assert rises and lp < min(rises), (lp, evd)
print(f"  links tier: would have caught a link slowing its pair's step >= {lp:.1f} %; ns-d's pairs rose {min(rises):.0f} %")
PY
python3 - "$out/degraded" <<'PY' || fail "degraded evidence"
import json, sys
c = json.load(open(sys.argv[1] + "/certificate.json"))
ev = {e["node"]: e["evidence"] for e in c["excluded"]}
# the speed figure furthest from the fleet's leads (tokens/s, or a step time when it strays more)
assert any(m in ev["ns-b"] for m in ("tokens_per_sec_per_gpu", "step_time_")), ev["ns-b"]
assert "slow again when run once more" in ev["ns-b"], ev["ns-b"]
assert "the training had" in ev["ns-b"], ev["ns-b"]  # its telemetry: the CPUs it got
assert "every two-node run with it was slow" in ev["ns-d"], ev["ns-d"]
nodes = next(t for t in c["tiers"] if t["tier"] == "nodes")
assert nodes["reruns"] == ["ns-b"], nodes["reruns"]
links = next(t for t in c["tiers"] if t["tier"] == "links")
assert "ns-b" not in links["nodes_in"] and len(links["nodes_in"]) == 3, links["nodes_in"]
md = open(sys.argv[1] + "/../degraded.md").read()
assert md.startswith("## jaxmaxtext_certify: **CERTIFIED**") and "Certified: `ns-a`, `ns-c`." in md, md[:300]
assert "| ns-b | nodes |" in md and "| ns-d | links |" in md and "(degraded/certificate.html)" in md, md
PY
echo "degraded: ns-b and ns-d excluded with their evidence, ns-a and ns-c certified"

# 3. A budget the preflight alone uses up (3 s): the tiers after it do not start, and say why.
rc=0
"$certify" "${args[@]}" --budget-minutes 0.05 --output "$out/budget" >"$out/budget.log" 2>&1 || rc=$?
[[ $rc -eq 1 ]] || { tail -20 "$out/budget.log"; fail "budget: exit $rc, expected 1"; }
python3 - "$out/budget" <<'PY' || fail "budget certificate"
import json, sys
c = json.load(open(sys.argv[1] + "/certificate.json"))
states = [(t["tier"], t["state"]) for t in c["tiers"]]
assert c["verdict"] == "INCOMPLETE" and states[0] == ("preflight", "decided"), (c["verdict"], states)
assert all(s == "not run" for _, s in states[1:]), states
assert all("budget" in t["why_not_run"] for t in c["tiers"][1:]), [t["why_not_run"] for t in c["tiers"]]
print("budget:", c["tiers"][1]["why_not_run"])
PY
echo "PASS"
