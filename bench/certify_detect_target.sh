#!/usr/bin/env bash
# What --detect-slowdown-pct costs and buys: `cvs certify` with the CPU default single config as
# shipped (preflight and the nodes tier: no distributed config) on the four netns ssh hosts
# (tests/integration/netns_cluster.sh, root), one certification after the other, the compile cache
# warmed by a first one that is not counted: at --min-deviation-pct 50 and 10, each with the target
# off (--detect-slowdown-pct 0, the default: every run stops once its speed gates are decisive) and
# at 1.5 x the min deviation. Prints the nodes tier's node-minutes, the share MaxText stepped
# (training_stepping.py: the same reading as time_to_certificate.sh), its node-steps, the stated
# detection power, and the verdict. Real MaxText on the CPU. Not a test: nothing asserted.
#   bench/certify_detect_target.sh [BUILD_DIR (build)]
# shellcheck disable=SC2154 # work is bench_work's (certify_bench_lib.sh)
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${1:-$root/build}
# shellcheck source=bench/certify_bench_lib.sh
source "$root/bench/certify_bench_lib.sh"
bench_in_netns "$build" "$0" "$@"
bench_work cvs-detect-bench
python3 - "$root/configs" "$work" <<'PY'
import json, sys
cfg = json.load(open(f"{sys.argv[1]}/cpu_jaxmaxtext_tiny_single.json"))
cfg["threshold_json"] = f"{sys.argv[1]}/../thresholds/{cfg['threshold_json']}"
cfg.setdefault("paths", {})["compile_cache"] = sys.argv[2] + "/jax_compile"
json.dump(cfg, open(f"{sys.argv[2]}/single.json", "w"), indent=1)
PY
args=(--cluster "$work/cluster.json" --config "$work/single.json" --max-parallel 1 --poll-interval-s 1
  --startup-budget-s 300 --step-budget-s 60)
runs=(warmup:50:0 dev50_off:50:0 dev50_target:50:75 dev10_off:10:0 dev10_target:10:15)
for r in "${runs[@]}"; do
  IFS=: read -r name dev target <<<"$r"
  "$build/suites/jaxmaxtext_certify" "${args[@]}" --min-deviation-pct "$dev" --detect-slowdown-pct "$target" --output "$work/$name" >"$work/$name.log" 2>&1 || true
  echo "$name: $(grep -m1 '^certify: [A-Z]' "$work/$name.log" || tail -1 "$work/$name.log")"
done
python3 - "$work" "$root/bench" <<'PY'
import json, sys
sys.path.insert(0, sys.argv[2])
from training_stepping import tier_stepping_minutes
w = sys.argv[1]
print(f"{'run':<14}{'target %':>9}{'node-min':>10}{'stepping':>10}{'node-steps':>12}{'power %':>9}  summary")
for name in ("dev50_off", "dev50_target", "dev10_off", "dev10_target"):
    c = json.load(open(f"{w}/{name}/certificate.json"))
    t = next(t for t in c["tiers"] if t["tier"] == "nodes")
    nm = t["node_minutes"]
    share = tier_stepping_minutes(t["dir"]) / nm * 100 if nm else 0
    power = t.get("detection_power_pct")
    print(f"{name:<14}{c['inputs'].get('detect_slowdown_pct', 0):>9g}{nm:>10.2f}{share:>9.0f}%{t['node_steps']:>12}"
          f"{(f'{power:.1f}' if power is not None else '-'):>9}  {c['verdict']}: {t['summary']}")
PY
