#!/usr/bin/env bash
# Test-only one-host Slurm cluster: munged, slurmctld and slurmd from Debian's slurm-wlm and
# munge, with a slurm.conf written here (proctrack/linuxproc, task/none: no cgroups needed).
#
#   slurm_cluster.sh up DIR     starts the daemons; writes DIR/slurm.conf and DIR/cluster.json
#   slurm_cluster.sh down DIR   cancels every job, stops the daemons
#   slurm_cluster.sh run DIR -- CMD...   up, CMD with SLURM_CONF and CVS_SLURM_DIR set, down (always);
#                                        fails when CMD leaves an allocation behind
# Needs root.
set -euo pipefail

up() {
  local d=$1
  down "$d" 2>/dev/null || true
  mkdir -p "$d/state" "$d/spool" /run/munge /var/log/munge /var/lib/munge /etc/munge
  if [[ ! -s /etc/munge/munge.key ]]; then
    dd if=/dev/urandom bs=1 count=1024 of=/etc/munge/munge.key 2>/dev/null
  fi
  chown -R munge:munge /etc/munge /run/munge /var/log/munge /var/lib/munge 2>/dev/null || true
  chmod 400 /etc/munge/munge.key
  if ! pgrep -x munged >/dev/null; then
    su -s /bin/sh munge -c /usr/sbin/munged 2>/dev/null || /usr/sbin/munged --force
  fi
  local h cpus mem
  h=$(hostname)
  cpus=$(nproc)
  mem=$(( $(awk '/MemTotal/ {print $2}' /proc/meminfo) / 1024 - 1024 ))
  cat > "$d/slurm.conf" <<CONF
ClusterName=cvs
SlurmctldHost=$h
SlurmUser=root
SlurmctldPort=6917
SlurmdPort=6918
StateSaveLocation=$d/state
SlurmdSpoolDir=$d/spool
SlurmctldPidFile=$d/slurmctld.pid
SlurmdPidFile=$d/slurmd.pid
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ReturnToService=2
MpiDefault=none
KillWait=5
SlurmctldLogFile=$d/slurmctld.log
SlurmdLogFile=$d/slurmd.log
NodeName=$h CPUs=$cpus RealMemory=$mem State=UNKNOWN
PartitionName=cvs Nodes=$h Default=YES MaxTime=INFINITE State=UP OverSubscribe=FORCE:4
CONF
  export SLURM_CONF=$d/slurm.conf
  /usr/sbin/slurmctld -f "$d/slurm.conf"
  /usr/sbin/slurmd -f "$d/slurm.conf"
  for _ in $(seq 60); do
    sinfo --noheader --format=%T 2>/dev/null | grep -qE "idle|mix" && break
    sleep 0.5
  done
  sinfo --noheader --format=%T | grep -qE "idle|mix" || { echo "slurm did not come up" >&2; cat "$d"/*.log >&2; return 1; }
  cat > "$d/cluster.json" <<JSON
{
  "_comment": "Written by tests/integration/slurm_cluster.sh: the one-host test Slurm.",
  "scheduler": "slurm",
  "slurm": {"nodes": 1, "partition": "cvs", "time_limit": "00:30:00"}
}
JSON
}

down() {
  local d=$1
  if [[ -f "$d/slurm.conf" ]]; then
    SLURM_CONF=$d/slurm.conf scancel --full --user="$(id -un)" 2>/dev/null || true
  fi
  for f in slurmd slurmctld; do
    if [[ -f "$d/$f.pid" ]]; then kill "$(cat "$d/$f.pid")" 2>/dev/null || true; fi
  done
  sleep 0.5
  pkill -x slurmd 2>/dev/null || true
  pkill -x slurmctld 2>/dev/null || true
  rm -rf "$d/state" "$d/spool"
}

# CMD with the cluster's slurm.conf; it fails when CMD leaves an allocation behind.
run_under() {
  local rc=0 left
  export SLURM_CONF=$1/slurm.conf CVS_SLURM_DIR=$1
  "${@:2}" || rc=$?
  left=$(squeue --noheader --format='%i %T' 2>/dev/null || true)
  if [[ -n "$left" ]]; then
    echo "FAIL: allocations left behind: $left"
    exit 1
  fi
  exit $rc
}

source "$(dirname "${BASH_SOURCE[0]}")/harness_main.sh"
harness_main "$@"
