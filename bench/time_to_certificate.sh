#!/usr/bin/env bash
# Time to certificate: `cvs certify` with the CPU default configs as shipped (every stage the
# tiers choose, no --gtest_filter) on the four netns ssh hosts (tests/integration/netns_cluster.sh,
# root), one certification after the other: BEFORE's build (another checkout's, e.g. a worktree
# of an earlier commit), then this build with an empty compile cache, then this build again (the
# cache warm). Prints each tier's node-minutes and the share of them MaxText spent stepping, read
# the same way for every build from the training logs the runs left (the first step line's start
# to the last step line, on the log's own glog clock), and the ratios. Real MaxText on the CPU.
# Not a test: nothing asserted.
#   bench/time_to_certificate.sh BEFORE_BUILD_DIR [BUILD_DIR (build)]
# shellcheck disable=SC2154 # work, gloo_iface and certify_args are bench_work's (certify_bench_lib.sh)
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
before=${1:?the build folder of the checkout to compare with}
build=${2:-$root/build}
# shellcheck source=bench/certify_bench_lib.sh
source "$root/bench/certify_bench_lib.sh"
bench_in_netns "$build" "$0" "$@"
bench_work cvs-ttc-bench
python3 - "$root/configs" "$work" "$gloo_iface" <<'PY'
import json, sys
for mode in ("single", "distributed"):
    cfg = json.load(open(f"{sys.argv[1]}/cpu_jaxmaxtext_tiny_{mode}.json"))
    cfg["threshold_json"] = f"{sys.argv[1]}/../thresholds/{cfg['threshold_json']}"
    # A compile cache of the bench's own: empty for the first certification of this build.
    cfg.setdefault("paths", {})["compile_cache"] = sys.argv[2] + "/jax_compile"
    if mode == "distributed":
        cfg["container"]["env"]["GLOO_SOCKET_IFNAME"] = sys.argv[3]
    json.dump(cfg, open(f"{sys.argv[2]}/{mode}.json", "w"), indent=1)
PY
for run in before cold warm; do
  b=$build; [[ $run == before ]] && b=$before
  start=$(date +%s.%N)
  "$b/suites/jaxmaxtext_certify" "${certify_args[@]}" --output "$work/$run" >"$work/$run.log" 2>&1 || true
  echo "$(date +%s.%N) - $start" | bc >"$work/$run.seconds"
  echo "$run: $(grep -m1 '^certify:' "$work/$run.log" || tail -1 "$work/$run.log")"
done
python3 - "$work" "$root/bench" <<'PY'
import json, sys
sys.path.insert(0, sys.argv[2])
from training_stepping import tier_stepping_minutes
w = sys.argv[1]

runs = ("before", "cold", "warm")
cert = {r: json.load(open(f"{w}/{r}/certificate.json")) for r in runs}
sec = {r: float(open(f"{w}/{r}.seconds").read()) for r in runs}
step = {}
for r in runs:
    for t in cert[r]["tiers"]:
        step[(r, t["tier"])] = tier_stepping_minutes(t["dir"])
print(f"{'tier':<10}" + "".join(f"{r + ' node-min':>17}{'stepping':>10}" for r in runs) + f"{'cold/before':>13}{'warm/before':>13}")
tot = {r: [0.0, 0.0] for r in runs}
for i, t in enumerate(cert["before"]["tiers"]):
    k = t["tier"]
    row = f"{k:<10}"
    for r in runs:
        nm = cert[r]["tiers"][i]["node_minutes"]
        tot[r][0] += nm
        tot[r][1] += step[(r, k)]
        row += f"{nm:>17.2f}{(step[(r, k)] / nm * 100 if nm else 0):>9.0f}%"
    nb = t["node_minutes"]
    row += "".join(f"{(cert[r]['tiers'][i]['node_minutes'] / nb if nb else 0):>13.2f}" for r in ("cold", "warm"))
    print(row)
row = f"{'all':<10}"
for r in runs:
    row += f"{tot[r][0]:>17.2f}{tot[r][1] / tot[r][0] * 100:>9.0f}%"
row += "".join(f"{tot[r][0] / tot['before'][0]:>13.2f}" for r in ("cold", "warm"))
print(row)
print("wall minutes: " + ", ".join(f"{r} {sec[r] / 60:.1f}" for r in runs) +
      "; verdicts " + " / ".join(cert[r]["verdict"] for r in runs))
for r in ("cold", "warm"):
    n = next(t for t in cert[r]["tiers"] if t["tier"] == "nodes")
    p = n.get("phase_node_minutes", {})
    print(f"{r} nodes tier by phase (node-min): " + ", ".join(f"{k} {p[k]:.2f}" for k in
          ("training", "startup", "compile", "checkpoint", "teardown", "other") if k in p) +
          f"; train step from the cache in {p.get('train_step_from_cache', 0)} of {p.get('runs', 0)} runs; ran: {n.get('ran', '')}")
PY
