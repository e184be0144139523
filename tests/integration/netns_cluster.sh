#!/usr/bin/env bash
# Test-only two-host cluster on this machine: two network namespaces joined by a veth pair,
# addresses inside the namespaces only (10.231.0.1 and 10.231.0.2, interface cvs0 in each),
# each with its own sshd (Debian's openssh-server) accepting one throw-away test key. The suite
# reaches them through ssh's ProxyCommand entering the first namespace.
# CVS_NETNS_HOSTS=3 or 4: that many hosts (ns-a .. ns-d, 10.231.0.1 ..), each namespace's cvs0
# a veth into a bridge in a namespace of its own (cvs-sw), so each host has a link of its own
# (a link can be slowed with tc on one host's cvs0).
#
#   netns_cluster.sh up DIR     writes DIR/cluster.json, DIR/cluster3.json (plus an unreachable node), DIR/id_ed25519
#   netns_cluster.sh down DIR
#   netns_cluster.sh run DIR -- CMD...   up, run CMD with CVS_NETNS_DIR=DIR, down (always)
# Needs root, iproute2, openssh-server and netcat-openbsd.
set -euo pipefail
ALL_NS=(cvs-a cvs-b cvs-c cvs-d)
HOSTS=${CVS_NETNS_HOSTS:-2}
[[ $HOSTS =~ ^[234]$ ]] || { echo "CVS_NETNS_HOSTS must be 2, 3 or 4" >&2; exit 2; }
NS=("${ALL_NS[@]:0:$HOSTS}")
ADDR=()
for i in $(seq "$HOSTS"); do ADDR+=("10.231.0.$i"); done

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
  for n in "${NS[@]}"; do ip netns add "$n"; done
  if [[ $HOSTS -eq 2 ]]; then
    ip link add cvs0 type veth peer name cvs0b
    ip link set cvs0 netns cvs-a
    ip link set cvs0b netns cvs-b
    ip -n cvs-b link set cvs0b name cvs0
  else
    ip netns add cvs-sw
    ip -n cvs-sw link add br0 type bridge
    ip -n cvs-sw link set br0 up
    for n in "${NS[@]}"; do
      ip link add cvs0 type veth peer name "sw-$n"
      ip link set cvs0 netns "$n"
      ip link set "sw-$n" netns cvs-sw
      ip -n cvs-sw link set "sw-$n" master br0
      ip -n cvs-sw link set "sw-$n" up
    done
  fi
  # JAX's Gloo CPU collectives advertise the address the host name resolves to: inside each
  # namespace it must be that namespace's address (ip netns exec bind-mounts /etc/netns/NAME/hosts).
  for i in "${!NS[@]}"; do
    mkdir -p "/etc/netns/${NS[$i]}"
    printf '127.0.0.1 localhost\n%s %s\n' "${ADDR[$i]}" "$(hostname)" > "/etc/netns/${NS[$i]}/hosts"
  done
  for i in "${!NS[@]}"; do
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
  for i in "${!NS[@]}"; do
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
  local nodes="" i
  for i in "${!NS[@]}"; do
    nodes+="${nodes:+,}"$'\n'"    {\"name\": \"ns-${NS[$i]#cvs-}\", \"host\": \"${ADDR[$i]}\", \"user\": \"root\", \"ssh_key\": \"$dir/id_ed25519\"}"
  done
  cat > "$dir/cluster.json" <<JSON
{
  "_comment": "Written by tests/integration/netns_cluster.sh: $HOSTS test hosts in network namespaces.",
  "transport": "ssh",
  "nodes": [$nodes
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
    {"name": "ns-gone", "host": "10.231.0.9", "user": "root", "ssh_key": "$dir/id_ed25519"}
  ],
  "ssh": {"connect_timeout_s": 3, "control_dir": "$dir/ctl", "options": ["$proxy", "UserKnownHostsFile=$dir/known_hosts"]}
}
JSON
  # Ready when each sshd's banner comes back through cvs-a (a bridge's ports take a moment).
  for i in "${!NS[@]}"; do
    local ok="" banner
    for _ in $(seq 100); do
      banner=$(timeout 2 ip netns exec cvs-a nc -w 1 "${ADDR[$i]}" 22 </dev/null 2>/dev/null || true)
      if [[ $banner == SSH-* ]]; then ok=1; break; fi
      sleep 0.1
    done
    [[ -n $ok ]] || { echo "netns_cluster.sh: no sshd answers on ${ADDR[$i]}" >&2; return 1; }
  done
}

down() {
  local dir=$1
  for n in "${ALL_NS[@]}"; do
    if [[ -f "$dir/sshd_$n.pid" ]]; then kill "$(cat "$dir/sshd_$n.pid")" 2>/dev/null || true; fi
    # every process still inside the namespace (sshd children, test runs) goes too
    for p in $(ip netns pids "$n" 2>/dev/null); do kill -9 "$p" 2>/dev/null || true; done
    ip netns del "$n" 2>/dev/null || true
    rm -rf "/etc/netns/$n"
  done
  ip netns del cvs-sw 2>/dev/null || true
  rm -rf "$dir/ctl"
}

run_under() {
  CVS_NETNS_DIR=$1 "${@:2}"
}

source "$(dirname "${BASH_SOURCE[0]}")/harness_main.sh"
harness_main "$@"
