#!/usr/bin/env bash
# cvs certify with early stop (every speed gate on_inconclusive extend: a sweep stops once its gates
# are decided) against the same tiers at fixed steps (--fixed-steps), side by side on the same four
# netns ssh hosts (tests/integration/netns_cluster.sh, root), one after the other. Prints each
# tier's node-steps and node-minutes, the certification's minutes, and the ratios. Real MaxText on
# the CPU: 200 configured steps per sweep, a tokens/s gate every healthy host clears by far (so
# the gate is decided early) and no loss gate (a sweep that gates loss values is never stopped
# before its configured steps). Not a test: nothing asserted.
#   bench/certify_early_stop.sh [BUILD_DIR (build)]
# shellcheck disable=SC2154 # work, gloo_iface and certify_args are bench_work's (certify_bench_lib.sh)
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${1:-$root/build}
# shellcheck source=bench/certify_bench_lib.sh
source "$root/bench/certify_bench_lib.sh"
bench_in_netns "$build" "$0" "$@"
bench_work cvs-certify-bench
python3 - "$root/configs" "$work" "$gloo_iface" <<'PY'
import json, sys
gate = {"kind": "min_tok_s", "value": 1.0}
for mode in ("single", "distributed"):
    cfg = json.load(open(f"{sys.argv[1]}/cpu_jaxmaxtext_tiny_{mode}.json"))
    # The speed gate alone: a sweep that gates loss values runs its configured steps either way.
    th = {k: {"training.tokens_per_sec_per_gpu": gate} for k in cfg["sweeps"]}
    json.dump(th, open(f"{sys.argv[2]}/{mode}_thresholds.json", "w"), indent=1)
    cfg["threshold_json"] = f"{sys.argv[2]}/{mode}_thresholds.json"
    cfg["train_params"]["maxtext_config"].update({"steps": 200, "log_period": 10})
    if mode == "distributed":
        cfg["container"]["env"]["GLOO_SOCKET_IFNAME"] = sys.argv[3]
    json.dump(cfg, open(f"{sys.argv[2]}/{mode}.json", "w"), indent=1)
PY
args=("${certify_args[@]}"
      "--gtest_filter=test_setup.*:sweep/test_training_run.run/BS_2*:sweep/test_metric.check/BS_2*")
for mode in early fixed; do
  extra=(); [[ $mode == early ]] || extra=(--fixed-steps)
  start=$(date +%s.%N)
  "$build/suites/jaxmaxtext_certify" "${args[@]}" "${extra[@]}" --output "$work/$mode" >"$work/$mode.log" 2>&1 || true
  echo "$(date +%s.%N) - $start" | bc >"$work/$mode.seconds"
done
python3 - "$work" <<'PY'
import json, sys
w = sys.argv[1]
c = {m: json.load(open(f"{w}/{m}/certificate.json")) for m in ("early", "fixed")}
sec = {m: float(open(f"{w}/{m}.seconds").read()) for m in c}
print(f"{'tier':<10} {'node-steps early':>17} {'fixed':>8} {'ratio':>6} {'node-min early':>15} {'fixed':>7} {'ratio':>6}")
for a, b in zip(c["early"]["tiers"], c["fixed"]["tiers"]):
    rs = a["node_steps"] / b["node_steps"] if b["node_steps"] else float("nan")
    rm = a["node_minutes"] / b["node_minutes"] if b["node_minutes"] else float("nan")
    print(f"{a['tier']:<10} {a['node_steps']:>17} {b['node_steps']:>8} {rs:>6.2f} {a['node_minutes']:>15.2f} {b['node_minutes']:>7.2f} {rm:>6.2f}")
e, f = c["early"], c["fixed"]
print(f"{'all':<10} {e['node_steps']:>17} {f['node_steps']:>8} {e['node_steps'] / f['node_steps']:>6.2f} "
      f"{e['node_minutes']:>15.2f} {f['node_minutes']:>7.2f} {e['node_minutes'] / f['node_minutes']:>6.2f}")
print(f"wall minutes: early stop {sec['early'] / 60:.1f}, fixed steps {sec['fixed'] / 60:.1f} "
      f"(ratio {sec['early'] / sec['fixed']:.2f}); verdicts {e['verdict']} / {f['verdict']}")
PY
