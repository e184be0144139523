# Sourced by the e2e scripts after their arguments are read: a fresh output folder, fail(), and no
# calibration of this machine gating their runs (CVS_CALIBRATION_DIR names a folder that is none).
#   source "$(dirname "$0")/e2e_lib.sh" "$out"
# shellcheck shell=bash
rm -rf "$1"
mkdir -p "$1"
fail() {
  echo "FAIL: $*"
  exit 1
}
export CVS_CALIBRATION_DIR="$1/no-calibration"

# A JUnit file the tool wrote passes Jenkins' xunit-plugin schema whole (tests/data/junit).
junit_valid() {
  xmllint --noout --schema "$(dirname "${BASH_SOURCE[0]}")/../data/junit/junit-10.xsd" "$1" ||
    fail "$1 does not pass junit-10.xsd"
}

# The processes of network namespace $1 moved into a cgroup of their own, $2, capped at $3 % of one
# CPU (cgroup v1 cpu.cfs_quota_us, or v2 cpu.max): a node slower whether or not the others run.
# uncap_cpu moves them back and removes it (a trap's cleanup may call it at any time). Without a
# cpu controller the test is skipped (exit 77).
capped_cgroup=""
cap_netns_cpu() {
  local ns=$1 name=$2 pct=$3 p
  if [[ -f /sys/fs/cgroup/cpu/cpu.cfs_quota_us ]]; then
    capped_cgroup=/sys/fs/cgroup/cpu/$name
    mkdir -p "$capped_cgroup"
    echo 100000 >"$capped_cgroup/cpu.cfs_period_us"
    echo $((pct * 1000)) >"$capped_cgroup/cpu.cfs_quota_us"
  elif [[ -f /sys/fs/cgroup/cgroup.controllers ]] && grep -qw cpu /sys/fs/cgroup/cgroup.controllers; then
    capped_cgroup=/sys/fs/cgroup/$name
    echo +cpu >/sys/fs/cgroup/cgroup.subtree_control 2>/dev/null || true
    mkdir -p "$capped_cgroup"
    echo "$((pct * 1000)) 100000" >"$capped_cgroup/cpu.max"
  else
    echo "no cgroup cpu controller to slow a node with"
    exit 77
  fi
  for p in $(ip netns pids "$ns"); do echo "$p" >"$capped_cgroup/cgroup.procs"; done
}
uncap_cpu() {
  local p
  if [[ -n $capped_cgroup && -d $capped_cgroup ]]; then
    while read -r p; do
      echo "$p" >"$(dirname "$capped_cgroup")/cgroup.procs" 2>/dev/null || true
    done <"$capped_cgroup/cgroup.procs"
    rmdir "$capped_cgroup" 2>/dev/null || true
  fi
}
