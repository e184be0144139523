# shellcheck shell=bash
# shellcheck disable=SC2034,SC2154 # sets work, gloo_iface and certify_args for the bench; reads its root
# What the certify benches share (bench/time_to_certificate.sh, bench/certify_early_stop.sh):
# four netns ssh hosts (tests/integration/netns_cluster.sh, root), a work folder with the hosts'
# cluster file, and the certify arguments they run with. Sourced after `root` is set.

# bench_in_netns BUILD_DIR SCRIPT ARGS...: runs SCRIPT ARGS again inside four netns hosts, unless
# this is that run already (CVS_NETNS_DIR set); then it returns.
bench_in_netns() {
  local build=$1
  shift
  [[ -n ${CVS_NETNS_DIR:-} ]] && return 0
  exec env CVS_NETNS_HOSTS=4 "$root/tests/integration/netns_cluster.sh" run "$build/netns4-bench" -- "$@"
}

# bench_work NAME: $work, a new folder under /tmp (removed at exit unless CVS_BENCH_KEEP is set),
# with cluster.json (the netns hosts, less their overrides); $gloo_iface, the hosts' Gloo interface
# (a distributed config's GLOO_SOCKET_IFNAME); $certify_args, certify over $work's cluster.json,
# single.json and distributed.json (the bench writes the two configs). No calibration, no history.
bench_work() {
  work=$(mktemp -d "/tmp/$1.XXXXXX")
  trap '[[ -n ${CVS_BENCH_KEEP:-} ]] || rm -rf "$work"' EXIT
  export CVS_CALIBRATION_DIR="$work/no-calibration" CVS_HISTORY=none
  gloo_iface=$(python3 - "$CVS_NETNS_DIR/cluster.json" "$work/cluster.json" <<'PY'
import json, sys
c = json.load(open(sys.argv[1]))
print(c.pop("overrides")["container"]["env"]["GLOO_SOCKET_IFNAME"])
json.dump(c, open(sys.argv[2], "w"), indent=1)
PY
  )
  certify_args=(--cluster "$work/cluster.json" --config "$work/single.json"
    --distributed-config "$work/distributed.json" --min-deviation-pct 50 --max-parallel 1
    --scaling-per-doubling-pct 1 --poll-interval-s 1 --startup-budget-s 300 --step-budget-s 60)
}
