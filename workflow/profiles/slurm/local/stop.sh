#!/usr/bin/env bash
# Ends the one-node cluster that start.sh started: exactly the daemons named in its pid files
# (slurmd, slurmctld, munged), each with SIGTERM and up to 30 s to exit, and the slurm.conf it wrote.
# The state folder stays (its logs and the job completion file that `sacct -c` reads).
set -uo pipefail
STATE="${PMD_BENCH_SLURM_DIR:-/tmp/pmd-bench-slurm}"
for daemon in slurmd slurmctld munge; do
  pidfile="$STATE/$daemon.pid"
  [ -s "$pidfile" ] || continue
  pid="$(cat "$pidfile")"
  if kill -0 "$pid" 2>/dev/null; then
    kill -TERM "$pid"
    for _ in $(seq 30); do kill -0 "$pid" 2>/dev/null || break; sleep 1; done
  fi
  rm -f "$pidfile"
done
if grep -qF "# written by pmd-bench's workflow/profiles/slurm/local/start.sh" /etc/slurm/slurm.conf 2>/dev/null; then
  rm -f /etc/slurm/slurm.conf
fi
