#!/usr/bin/env bash
# A one-node SLURM cluster on this machine (docs/cluster.md, "A cluster on one machine"): installs
# Debian's slurm-wlm and munge when missing, writes a slurm.conf for this host's cores and memory,
# starts munged, slurmctld and slurmd with their state, logs and pid files in a state folder
# (PMD_BENCH_SLURM_DIR, default /tmp/pmd-bench-slurm), and waits until `sinfo` shows the node idle.
# Root only (the daemons and apt-get). stop.sh ends exactly the daemons this script started.
#
# The slurm.conf goes to /etc/slurm/slurm.conf, SLURM's default path: Snakemake's SLURM job step
# removes every SLURM_* variable (SLURM_CONF included) before its nested `srun`, so a slurm.conf
# elsewhere is not found inside the jobs. An existing /etc/slurm/slurm.conf that this script did not
# write (no MARKER line) is left alone and the script stops.
set -euo pipefail
STATE="${PMD_BENCH_SLURM_DIR:-/tmp/pmd-bench-slurm}"
[ "$(id -u)" = 0 ] || { echo "start.sh: needs root (the SLURM daemons and apt-get)" >&2; exit 2; }

if ! command -v slurmctld >/dev/null || ! command -v munged >/dev/null; then
  (apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends slurm-wlm munge) \
    > "${TMPDIR:-/tmp}/pmd-bench-slurm-apt.log" 2>&1 \
    || { echo "start.sh: apt-get could not install slurm-wlm and munge" >&2; exit 3; }
fi
CONF_PATH=/etc/slurm/slurm.conf
MARKER="# written by pmd-bench's workflow/profiles/slurm/local/start.sh"
if [ -e "$CONF_PATH" ]; then
  grep -qF "$MARKER" "$CONF_PATH" \
    || { echo "start.sh: $CONF_PATH exists and is not this script's: a SLURM installation is configured here" >&2; exit 4; }
  running="$(sed -nE 's/.*\(state: (.*)\)$/\1/p' "$CONF_PATH" | head -1)"  # the cluster that wrote it
  if [ -s "$running/slurmctld.pid" ] && kill -0 "$(cat "$running/slurmctld.pid")" 2>/dev/null; then
    echo "start.sh: the cluster with state in $running is running (PMD_BENCH_SLURM_DIR=$running stop.sh first)" >&2; exit 4
  fi
fi

mkdir -p "$STATE"/{munge,ctld,spool,log} /etc/slurm
chmod 700 "$STATE/munge"
# munge: its own key, socket and pid in the state folder (no system service needed)
[ -s "$STATE/munge/munge.key" ] || { dd if=/dev/urandom of="$STATE/munge/munge.key" bs=1024 count=1 status=none; }
chmod 400 "$STATE/munge/munge.key"

# This host as the only node: its CPUs and memory as `slurmd -C` measures them, less 1 GB for the
# daemons and the submitting snakemake. Finished jobs stay visible to squeue and scontrol for a day
# (MinJobAge); `sacct -c` reads the job completion file (jobcomp/filetxt; plain sacct needs slurmdbd).
HOST="$(hostname -s)"
NODE="$(slurmd -C | head -1 | sed -E "s/^NodeName=\S+/NodeName=$HOST NodeAddr=127.0.0.1/")"
MEM="$(sed -nE 's/.*RealMemory=([0-9]+).*/\1/p' <<<"$NODE")"
NODE="$(sed -E "s/RealMemory=[0-9]+/RealMemory=$((MEM - 1024))/" <<<"$NODE")"
cat > "$CONF_PATH.tmp" <<CONF
$MARKER (state: $STATE)
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
mv "$CONF_PATH.tmp" "$CONF_PATH"

munged --key-file="$STATE/munge/munge.key" --socket="$STATE/munge/munge.socket" \
  --pid-file="$STATE/munge.pid" --log-file="$STATE/log/munged.log" --seed-file="$STATE/munge/munge.seed" --force
slurmctld
slurmd

for _ in $(seq 60); do
  if [ "$(sinfo -h -n "$HOST" -o %t 2>/dev/null)" = idle ]; then
    exit 0
  fi
  sleep 1
done
echo "start.sh: the node did not become idle in 60 s (logs in $STATE/log)" >&2
exit 5
