#!/usr/bin/env bash
# A one-node SLURM cluster on this machine (docs/cluster.md, "A cluster on one machine"): installs
# Debian's slurm-wlm and munge when missing, writes a slurm.conf for this host's cores and memory
# into a state folder (PMD_BENCH_SLURM_DIR, default /tmp/pmd-bench-slurm), starts munged, slurmctld
# and slurmd there with pid files, and waits until `sinfo` shows the node idle. Root only (the
# daemons and apt-get). Prints the line to export: every SLURM command reads that slurm.conf.
# stop.sh ends exactly the daemons this script started.
set -euo pipefail
STATE="${PMD_BENCH_SLURM_DIR:-/tmp/pmd-bench-slurm}"
[ "$(id -u)" = 0 ] || { echo "start.sh: needs root (the SLURM daemons and apt-get)" >&2; exit 2; }

if ! command -v slurmctld >/dev/null || ! command -v munged >/dev/null; then
  (apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends slurm-wlm munge) \
    > "${TMPDIR:-/tmp}/pmd-bench-slurm-apt.log" 2>&1 \
    || { echo "start.sh: apt-get could not install slurm-wlm and munge" >&2; exit 3; }
fi
if [ -e "$STATE/slurmctld.pid" ] && kill -0 "$(cat "$STATE/slurmctld.pid")" 2>/dev/null; then
  echo "start.sh: a cluster from $STATE is already running (stop.sh first)" >&2; exit 4
fi

mkdir -p "$STATE"/{munge,ctld,spool,log}
chmod 700 "$STATE/munge"
# munge: its own key, socket and pid in the state folder (no system service needed)
[ -s "$STATE/munge/munge.key" ] || { dd if=/dev/urandom of="$STATE/munge/munge.key" bs=1024 count=1 status=none; }
chmod 400 "$STATE/munge/munge.key"

# This host as the only node: its CPUs and memory as `slurmd -C` measures them, less 1 GB for the
# daemons and the submitting snakemake. Finished jobs stay visible to squeue and scontrol for a day
# (MinJobAge); sacct reads the job completion file (jobcomp/filetxt, no slurmdbd needed).
HOST="$(hostname -s)"
NODE="$(slurmd -C | head -1 | sed -E "s/^NodeName=\S+/NodeName=$HOST NodeAddr=127.0.0.1/")"
MEM="$(sed -nE 's/.*RealMemory=([0-9]+).*/\1/p' <<<"$NODE")"
NODE="$(sed -E "s/RealMemory=[0-9]+/RealMemory=$((MEM - 1024))/" <<<"$NODE")"
cat > "$STATE/slurm.conf.tmp" <<CONF
ClusterName=pmdbench
SlurmctldHost=$HOST(127.0.0.1)
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$STATE/munge/munge.socket
SlurmUser=root
SlurmdUser=root
StateSaveLocation=$STATE/ctld
SlurmdSpoolDir=$STATE/spool
SlurmctldPidFile=$STATE/slurmctld.pid
SlurmdPidFile=$STATE/slurmd.pid
SlurmctldLogFile=$STATE/log/slurmctld.log
SlurmdLogFile=$STATE/log/slurmd.log
SlurmctldPort=${PMD_BENCH_SLURMCTLD_PORT:-6817}
SlurmdPort=${PMD_BENCH_SLURMD_PORT:-6818}
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
ReturnToService=2
MinJobAge=86400
SlurmdTimeout=60
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/linux
JobCompType=jobcomp/filetxt
JobCompLoc=$STATE/log/jobcomp.txt
$NODE State=UNKNOWN
PartitionName=local Nodes=$HOST Default=YES MaxTime=INFINITE State=UP
CONF
mv "$STATE/slurm.conf.tmp" "$STATE/slurm.conf"
export SLURM_CONF="$STATE/slurm.conf"

munged --key-file="$STATE/munge/munge.key" --socket="$STATE/munge/munge.socket" \
  --pid-file="$STATE/munge.pid" --log-file="$STATE/log/munged.log" --seed-file="$STATE/munge/munge.seed" --force
slurmctld -f "$SLURM_CONF"
slurmd -f "$SLURM_CONF"

for _ in $(seq 60); do
  if [ "$(sinfo -h -n "$HOST" -o %t 2>/dev/null)" = idle ]; then
    echo "export SLURM_CONF=$SLURM_CONF"
    exit 0
  fi
  sleep 1
done
echo "start.sh: the node did not become idle in 60 s (logs in $STATE/log)" >&2
exit 5
