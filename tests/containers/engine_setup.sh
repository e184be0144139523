#!/usr/bin/env bash
# Test-machine setup for the `containers` ctest label (run by .ci/run; idempotent):
#   1. Debian's podman + runc and docker.io (dockerd), installed when missing;
#   2. the test image localhost/cvs-test-host:latest in both engines, imported from a tiny rootfs
#      (merged-/usr symlinks, passwd/group, the loader cache): no registry is reachable here, and
#      the tests bind-mount this host's /usr, the Python the venv was made from and the checkout,
#      the way clusters mount their shared filesystem;
#   3. podman: when a container fails to start, the cgroupfs manager and the OCI runtime wrapper
#      (tests/containers/oci-runtime-wrapper) in /etc/containers/containers.conf;
#   4. dockerd on /var/run/docker.sock, with the wrapper as its default runtime only when a
#      privileged container fails to start without it.
# These machines refuse setrlimit(RLIMIT_NPROC) and lack CAP_SYS_RESOURCE; nothing here ships to
# users, and the workaround is applied only where the engine fails without it (tried first).
#   engine_setup.sh            set up (exit 0 when both engines run the image)
#   engine_setup.sh --check    exit 0 when both engines already run it, 1 otherwise
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
image=localhost/cvs-test-host:latest
state=/var/lib/cvs-test-engines
wrapper=/usr/local/libexec/cvs-test/oci-runtime-wrapper
log() { printf '[engine_setup] %s\n' "$*"; }

podman_runs() { podman run --rm --privileged --volume /usr:/usr:ro "$image" /bin/true >/dev/null 2>&1; }
docker_runs() { docker run --rm --privileged --volume /usr:/usr:ro "$image" /bin/true >/dev/null 2>&1; }
if [[ "${1:-}" == "--check" ]]; then
  command -v podman >/dev/null && command -v dockerd >/dev/null && podman_runs && docker_runs
  exit $?
fi

pkgs=(podman runc docker.io)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  log "installing ${missing[*]}"
  DEBIAN_FRONTEND=noninteractive apt-get update -q >/dev/null
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}" >/dev/null
fi
mkdir -p "$state" "$(dirname "$wrapper")"
install -m 0755 "$here/oci-runtime-wrapper" "$wrapper"

# ---- the image ------------------------------------------------------------------------------
rootfs_tar=$state/rootfs.tar
if [[ ! -s $rootfs_tar ]]; then
  tmp=$(mktemp -d)
  mkdir -p "$tmp"/{etc,tmp,proc,sys,dev,run,root,home,var/tmp,usr}
  for d in bin lib lib64 sbin; do ln -s "usr/$d" "$tmp/$d"; done
  cp /etc/passwd /etc/group /etc/nsswitch.conf /etc/ld.so.cache "$tmp/etc/"
  chmod 1777 "$tmp/tmp" "$tmp/var/tmp"
  tar -C "$tmp" -cf "$rootfs_tar" .
  rm -rf "$tmp"
fi

# ---- podman ---------------------------------------------------------------------------------
podman image exists "$image" || podman import --quiet "$rootfs_tar" "$image" >/dev/null
if ! podman_runs; then
  log "podman cannot start a container here: cgroupfs and the OCI runtime wrapper in /etc/containers/containers.conf"
  cat > /etc/containers/containers.conf <<CONF
# Written by cvs-maxtext's tests/containers/engine_setup.sh (test machines only).
[engine]
cgroup_manager = "cgroupfs"
runtime = "cvs-runc-wrapper"
[engine.runtimes]
cvs-runc-wrapper = ["$wrapper"]
CONF
  podman_runs || { echo "engine_setup: podman still cannot start a container:" >&2; podman run --rm --volume /usr:/usr:ro "$image" /bin/true; exit 1; }
fi
log "podman $(podman --version | awk '{print $3}') runs $image"

# ---- dockerd --------------------------------------------------------------------------------
start_dockerd() {
  local extra=("$@")
  if pkill -x dockerd 2>/dev/null; then sleep 1; fi
  nohup dockerd --iptables=false --ip6tables=false --bridge=none --exec-opt native.cgroupdriver=cgroupfs \
    --host unix:///var/run/docker.sock --data-root "$state/docker" "${extra[@]}" >"$state/dockerd.log" 2>&1 &
  for _ in $(seq 60); do docker info >/dev/null 2>&1 && return 0; sleep 0.5; done
  echo "engine_setup: dockerd did not start; its log:" >&2
  tail -20 "$state/dockerd.log" >&2
  return 1
}
if ! docker info >/dev/null 2>&1; then
  start_dockerd
fi
docker image inspect "$image" >/dev/null 2>&1 || docker import "$rootfs_tar" "$image" >/dev/null
if ! docker_runs; then
  log "dockerd cannot start a privileged container here: restarting it with the OCI runtime wrapper"
  start_dockerd --add-runtime "cvs-runc=$wrapper" --default-runtime cvs-runc
  docker image inspect "$image" >/dev/null 2>&1 || docker import "$rootfs_tar" "$image" >/dev/null
  docker_runs || { echo "engine_setup: docker still cannot start a container:" >&2; docker run --rm --volume /usr:/usr:ro "$image" /bin/true; exit 1; }
fi
log "dockerd $(dockerd --version | awk '{print $3}' | tr -d ,) runs $image"
