#!/usr/bin/env bash
# Test-only two-host cluster on this machine: two network namespaces joined by a veth pair,
# addresses inside the namespaces only (10.231.0.1 and 10.231.0.2, interface cvs0 in each),
# each with its own sshd (Debian's openssh-server) accepting one throw-away test key. The suite
# reaches them through ssh's ProxyCommand entering the first namespace.
#
#   netns_cluster.sh up DIR     writes DIR/cluster.json, DIR/cluster3.json (plus an unreachable node), DIR/id_ed25519
#   netns_cluster.sh down DIR
#   netns_cluster.sh run DIR -- CMD...   up, run CMD with CVS_NETNS_DIR=DIR, down (always)
# Needs root, iproute2, openssh-server and netcat-openbsd.
set -euo pipefail
NS=(cvs-a cvs-b)
ADDR=(10.231.0.1 10.231.0.2)

# Each test host gets its own podman engine, as a real node has: a storage root, a run root and
# a per-boot folder of its own (file locks inside it), chosen through CONTAINERS_CONF and
# CONTAINERS_STORAGE_CONF set by that host's sshd. The engine settings of this machine's
# /etc/containers/containers.conf (tests/containers/engine_setup.sh) are copied in. Unused by tests
# that start no container.
podman_node_engine() {
  local dir=$1 n=$2 d=$1/podman-$2
  mkdir -p "$d"
  printf '[storage]\ndriver = "overlay"\ngraphroot = "%s/storage"\nrunroot = "%s/run"\n' "$d" "$d" > "$d/storage.conf"
  {
    printf '[engine]\ntmp_dir = "%s/tmp"\nlock_type = "file"\n' "$d"
    if [[ -f /etc/containers/containers.conf ]]; then
      sed -e '/^\[engine\]$/d' /etc/containers/containers.conf
    fi
  } > "$d/containers.conf"
}

up() {
  local dir=$1
  mkdir -p "$dir" /run/sshd
  down "$dir" 2>/dev/null || true
  ip netns add cvs-a
  ip netns add cvs-b
  ip link add cvs0 type veth peer name cvs0b
  ip link set cvs0 netns cvs-a
  ip link set cvs0b netns cvs-b
  ip -n cvs-b link set cvs0b name cvs0
  # JAX's Gloo CPU collectives advertise the address the host name resolves to: inside each
  # namespace it must be that namespace's address (ip netns exec bind-mounts /etc/netns/NAME/hosts).
  for i in 0 1; do
    mkdir -p "/etc/netns/${NS[$i]}"
    printf '127.0.0.1 localhost\n%s %s\n' "${ADDR[$i]}" "$(hostname)" > "/etc/netns/${NS[$i]}/hosts"
  done
  for i in 0 1; do
    ip -n "${NS[$i]}" addr add "${ADDR[$i]}/24" dev cvs0
    ip -n "${NS[$i]}" link set cvs0 up
    ip -n "${NS[$i]}" link set lo up
  done
  if mountpoint -q /sys/fs/cgroup && ! mountpoint -q /run/cvs-netns-cgroup; then
    mkdir -p /run/cvs-netns-cgroup
    mount --rbind /sys/fs/cgroup /run/cvs-netns-cgroup || true
  fi
  rm -f "$dir/id_ed25519" "$dir/id_ed25519.pub" "$dir/known_hosts"
  ssh-keygen -q -t ed25519 -N '' -C cvs-test-only -f "$dir/id_ed25519"
  for i in 0 1; do
    local n=${NS[$i]}
    rm -f "$dir/host_$n"*
    ssh-keygen -q -t ed25519 -N '' -f "$dir/host_$n"
    cat > "$dir/sshd_$n.conf" <<CFG
ListenAddress ${ADDR[$i]}
Port 22
HostKey $dir/host_$n
PidFile $dir/sshd_$n.pid
AuthorizedKeysFile $dir/id_ed25519.pub
PermitRootLogin prohibit-password
PasswordAuthentication no
KbdInteractiveAuthentication no
StrictModes no
UsePAM no
MaxSessions 64
MaxStartups 64:30:128
AcceptEnv LANG
SetEnv CONTAINERS_CONF=$dir/podman-$n/containers.conf CONTAINERS_STORAGE_CONF=$dir/podman-$n/storage.conf
CFG
    podman_node_engine "$dir" "$n"
    # `ip netns exec` mounts a fresh /sys, which hides the cgroup mounts a container engine needs
    # ("runc create failed: no cgroup mount found in mountinfo"): bind them back from a copy.
    # shellcheck disable=SC2016 # $1 and $2 are the inner sh's arguments
    ip netns exec "$n" sh -c 'if [ -d /run/cvs-netns-cgroup/cpu ] || mountpoint -q /run/cvs-netns-cgroup; then
        mount --rbind /run/cvs-netns-cgroup /sys/fs/cgroup; fi; exec /usr/sbin/sshd -f "$1" -E "$2"' \
      cvs-sshd "$dir/sshd_$n.conf" "$dir/sshd_$n.log"
  done
  local proxy="ProxyCommand=ip netns exec cvs-a nc %h %p"
  cat > "$dir/cluster.json" <<JSON
{
  "_comment": "Written by tests/integration/netns_cluster.sh: two test hosts in network namespaces.",
  "transport": "ssh",
  "nodes": [
    {"name": "ns-a", "host": "${ADDR[0]}", "user": "root", "ssh_key": "$dir/id_ed25519"},
    {"name": "ns-b", "host": "${ADDR[1]}", "user": "root", "ssh_key": "$dir/id_ed25519"}
  ],
  "head": "ns-a",
  "ssh": {"connect_timeout_s": 3, "control_dir": "$dir/ctl", "options": ["$proxy", "UserKnownHostsFile=$dir/known_hosts"]},
  "overrides": {"container": {"env": {"GLOO_SOCKET_IFNAME": "cvs0"}}}
}
JSON
  cat > "$dir/cluster3.json" <<JSON
{
  "transport": "ssh",
  "nodes": [
    {"name": "ns-a", "host": "${ADDR[0]}", "user": "root", "ssh_key": "$dir/id_ed25519"},
    {"name": "ns-b", "host": "${ADDR[1]}", "user": "root", "ssh_key": "$dir/id_ed25519"},
    {"name": "ns-gone", "host": "10.231.0.3", "user": "root", "ssh_key": "$dir/id_ed25519"}
  ],
  "ssh": {"connect_timeout_s": 3, "control_dir": "$dir/ctl", "options": ["$proxy", "UserKnownHostsFile=$dir/known_hosts"]}
}
JSON
  for i in 0 1; do
    for _ in $(seq 50); do
      ip netns exec cvs-a nc -z -w 1 "${ADDR[$i]}" 22 2>/dev/null && break
      sleep 0.1
    done
  done
}

down() {
  local dir=$1
  for n in "${NS[@]}"; do
    if [[ -f "$dir/sshd_$n.pid" ]]; then kill "$(cat "$dir/sshd_$n.pid")" 2>/dev/null || true; fi
    # every process still inside the namespace (sshd children, test runs) goes too
    for p in $(ip netns pids "$n" 2>/dev/null); do kill -9 "$p" 2>/dev/null || true; done
    ip netns del "$n" 2>/dev/null || true
    rm -rf "/etc/netns/$n"
  done
  rm -rf "$dir/ctl"
}

cmd=${1:-}; dir=${2:-}
[[ -n "$cmd" && -n "$dir" ]] || { echo "usage: $0 up|down|run DIR [-- CMD...]" >&2; exit 2; }
case "$cmd" in
  up) up "$dir" ;;
  down) down "$dir" ;;
  run)
    shift 2; [[ "${1:-}" == "--" ]] && shift
    trap 'down "$dir"' EXIT
    up "$dir"
    CVS_NETNS_DIR=$dir "$@"
    ;;
  *) echo "usage: $0 up|down|run DIR [-- CMD...]" >&2; exit 2 ;;
esac
