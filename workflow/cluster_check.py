"""The workflow through a running SLURM cluster and an MLflow server, with faults
(docs/cluster.md, "A cluster on one machine").

:func:`check` runs one config (or some of its targets) four times over, all on this machine:

1. starts the one-node cluster of ``workflow/profiles/slurm/local/start.sh`` (state under
   ``<work>/slurm``) and an ``mlflow server`` (:func:`tracking.mlflow_server`, ``<work>/mlflow``);
2. runs ``snakemake --profile workflow/profiles/slurm --workflow-profile workflow/profiles/slurm/local``
   (every job but the local rules an ``sbatch`` job, every run logged to the server through
   ``MLFLOW_TRACKING_URI``) and, while it runs, injects two faults: ``scancel`` of the first job
   whose MLflow run is RUNNING (found by the run's tag ``slurm_job_id``), then, once that job is
   CANCELLED, SIGKILL of ``slurmd`` while another job runs, restarted :data:`SLURMD_DOWN_S` seconds
   later;
3. runs the very same command again, which builds what the cancelled job left;
4. runs the same targets with ``snakemake --cores 2`` into a second results folder and a second
   server: the clean local run the cluster's MLflow runs are compared with.

It then reads ``sacct -c`` (the job completion file: no slurmdbd here, start.sh) and both servers'
runs, and returns (and :func:`main` writes as JSON and Markdown, the docs block ``slurm-ci``) what
must hold: every SLURM job COMPLETED but the cancelled one, CANCELLED; the rerun exiting 0; the
cluster server's runs equal, name and status alike and each once, to the local run's (all FINISHED
but a method's recorded failure, FAILED on both sides), besides the cancelled job's run, KILLED or
FAILED (or FINISHED before ``scancel`` was sent: a run seen RUNNING in its last second); no run
RUNNING. :func:`failures` lists what did not.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

import yaml
from mlflow.tracking import MlflowClient

from .results import atomic_path
from .tracking import git_commit, mlflow_server, project_root

LOCAL = Path("workflow/profiles/slurm/local")
SLURMD_DOWN_S = 5
POLL_S = 1.0


def _run(cmd: list[str], **kwargs) -> str:
    """``cmd``'s standard output; an error naming the command and its output when it fails."""
    done = subprocess.run(cmd, capture_output=True, text=True, **kwargs)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} exited {done.returncode}: {done.stdout[-2000:]}{done.stderr[-2000:]}")
    return done.stdout


class ClusterUnavailable(RuntimeError):
    """start.sh cannot start a cluster here: not root, slurm-wlm not installable, or a SLURM
    configuration or cluster already there (its message says which)."""


@contextmanager
def cluster(state: Path, root: Path) -> Iterator[Path]:
    """The one-node cluster of start.sh with its state in ``state``, stopped by stop.sh (only the
    daemons it started) when the block ends; :class:`ClusterUnavailable` when start.sh refuses."""
    env = {**os.environ, "PMD_BENCH_SLURM_DIR": str(state)}
    done = subprocess.run([str(root / LOCAL / "start.sh")], env=env, capture_output=True, text=True, timeout=600)
    if done.returncode in (2, 3, 4):  # start.sh's refusals (its messages)
        raise ClusterUnavailable(done.stderr.strip())
    if done.returncode != 0:
        raise RuntimeError(f"start.sh exited {done.returncode}: {done.stderr[-2000:]} (logs in {state}/log)")
    try:
        yield state
    finally:
        _run([str(root / LOCAL / "stop.sh")], env=env, timeout=120)


def squeue() -> list[dict[str, str]]:
    """Every job slurmctld knows (finished ones too, for start.sh's MinJobAge): id, state, comment
    (the SLURM executor's ``rule_<rule>_wildcards_<...>``)."""
    out = _run(["squeue", "-h", "--states=all", "-o", "%i|%T|%k"])
    return [dict(zip(("id", "state", "comment"), line.split("|", 2))) for line in out.splitlines() if line]


def sacct() -> list[dict[str, str]]:
    """``sacct -c``: the job completion file's record of every finished job (id, state, elapsed)."""
    out = _run(["sacct", "-c", "-n", "-P", "-o", "JobID,State,Elapsed,ExitCode"])
    return [dict(zip(("id", "state", "elapsed", "exit_code"), line.split("|"))) for line in out.splitlines() if line]


def runs(url: str) -> list[dict[str, str]]:
    """Every MLflow run on the server ``url``: experiment, run name, status, end (ms since the
    epoch; ``None`` while RUNNING), role tag, SLURM job id."""
    client = MlflowClient(url)
    out = []
    for experiment in client.search_experiments():
        for run in client.search_runs([experiment.experiment_id], max_results=50_000):
            out.append({"experiment": experiment.name, "name": run.info.run_name, "status": run.info.status,
                        "end_ms": run.info.end_time, "role": run.data.tags.get("pmd_bench.role", ""),
                        "slurm_job_id": run.data.tags.get("slurm_job_id", "")})
    return out


def _restart_slurmd(state: Path) -> float:
    """SIGKILL slurmd (its pid file under ``state``), wait :data:`SLURMD_DOWN_S`, start it again
    and wait until slurmctld sees the node respond; returns the seconds it was away."""
    pid = int((state / "slurmd.pid").read_text())
    t0 = time.monotonic()
    os.kill(pid, 9)
    time.sleep(SLURMD_DOWN_S)
    _run(["slurmd"])
    while True:  # responding: no `*` after the state, and not down, drained or failing
        node = _run(["sinfo", "-h", "-o", "%t"]).strip()
        if not node.endswith("*") and not node.startswith(("down", "drain", "fail")):
            return time.monotonic() - t0
        time.sleep(0.5)


def run_with_faults(cmd: list[str], env: dict, url: str, state: Path, log: Path) -> dict:
    """Run ``cmd`` (the SLURM invocation) and, while it runs, cancel the first job whose MLflow run
    is RUNNING, then kill and restart slurmd while another job runs (module docstring). Returns the
    exit status, wall time and what each fault hit (``None``: the invocation ended before the fault
    found its moment)."""
    client = MlflowClient(url)
    faults: dict = {"cancelled": None, "slurmd": None}
    t0 = time.monotonic()
    with open(log, "w") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, env=env, cwd=project_root())
        while proc.poll() is None:
            time.sleep(POLL_S)
            if faults["cancelled"] is None:
                running = [r for e in client.search_experiments()
                           for r in client.search_runs([e.experiment_id], "attributes.status = 'RUNNING'")
                           if r.data.tags.get("slurm_job_id")]
                if running:
                    run = running[0]
                    _run(["scancel", run.data.tags["slurm_job_id"]])
                    faults["cancelled"] = {"job": run.data.tags["slurm_job_id"], "run": run.info.run_name,
                                           "at_s": round(time.monotonic() - t0, 1), "at_ms": int(time.time() * 1000)}
            elif faults["slurmd"] is None:
                # once the cancel has been carried out (a slurmd killed before that loses the
                # request, and slurmctld resends it only after about 90 s), while another job runs
                jobs = {j["id"]: j["state"] for j in squeue()}
                busy = [job for job, state in jobs.items() if state == "RUNNING"]
                if jobs.get(faults["cancelled"]["job"]) == "CANCELLED" and busy:
                    at = time.monotonic() - t0
                    faults["slurmd"] = {"running_jobs": busy, "at_s": round(at, 1),
                                        "away_s": round(_restart_slurmd(state), 1)}
        return {"rc": proc.returncode, "wall_s": round(time.monotonic() - t0, 1), **faults}


def timed(cmd: list[str], env: dict, log: Path) -> dict:
    """Run ``cmd`` to its end, its output to ``log``: exit status and wall time."""
    t0 = time.monotonic()
    with open(log, "w") as out:
        rc = subprocess.run(cmd, stdout=out, stderr=subprocess.STDOUT, env=env, cwd=project_root()).returncode
    return {"rc": rc, "wall_s": round(time.monotonic() - t0, 1)}


def _config_copy(config: Path, results: Path, out: Path) -> Path:
    """``config`` with its ``results_dir`` set to ``results``, written to ``out``."""
    cfg = yaml.safe_load(config.read_text())
    cfg["results_dir"] = str(results)
    out.write_text(yaml.safe_dump(cfg, sort_keys=False))
    return out


def compare(cluster_runs: list[dict], local_runs: list[dict], cancelled_job: str | None) -> dict:
    """The cluster server's runs against the local run's, workflow parent runs apart, counted per
    ``experiment/name status`` (a method whose failure is its result, as posteriordb's runs record
    one, ends FAILED on both sides), the cancelled job's runs set aside; and every RUNNING run."""
    def key(run):
        return f"{run['experiment']}/{run['name']} {run['status']}"

    ours = [r for r in cluster_runs if r["role"] != "workflow"]
    cancelled = [r for r in ours if cancelled_job and r["slurm_job_id"] == cancelled_job]
    mine = collections.Counter(key(r) for r in ours if r not in cancelled)
    theirs = collections.Counter(key(r) for r in local_runs if r["role"] != "workflow")
    return {
        "local_runs": sum(theirs.values()),
        "cluster_runs": sum(mine.values()),
        "local_finished": sum(n for k, n in theirs.items() if k.endswith(" FINISHED")),
        "cluster_finished": sum(n for k, n in mine.items() if k.endswith(" FINISHED")),
        "missing_on_cluster": sorted((theirs - mine).elements()),
        "extra_on_cluster": sorted((mine - theirs).elements()),
        "cancelled_runs": cancelled,
        "running": sorted(key(r) for r in cluster_runs + local_runs if r["status"] == "RUNNING"),
        "workflow_parents": sorted(r["status"] for r in cluster_runs if r["role"] == "workflow"),
    }


def check(config: Path, work: Path, targets: list[str] | None = None, cores: int = 2) -> dict:
    """Steps 1-4 of the module docstring for ``config`` (``targets``: paths relative to its
    results folder; none: the whole config) in the folder ``work``; the report :func:`main` writes."""
    root, work = project_root(), Path(work).resolve()
    work.mkdir(parents=True, exist_ok=True)
    base_env = {k: v for k, v in os.environ.items() if k not in ("MLFLOW_TRACKING_URI", "PMD_BENCH_WORKFLOW_RUN")}
    base_env.setdefault("PMD_BENCH_DATA_DIR", str(work / "data"))
    snakemake = [sys.executable, "-m", "snakemake"]
    report: dict = {"config": str(config), "targets": targets or ["all"], "cores": cores,
                    "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "commit": git_commit()[:10]}
    with cluster(work / "slurm", root) as state, mlflow_server(work / "mlflow") as url:
        results = work / "slurm-results"
        cfg = _config_copy(config, results, work / "slurm-config.yaml")
        cmd = [*snakemake, *[str(results / t) for t in targets or []], "--profile", "workflow/profiles/slurm",
               "--workflow-profile", str(LOCAL), "--slurm-logdir", str(results / "logs" / "slurm"),
               "--configfile", str(cfg)]
        env = {**base_env, "MLFLOW_TRACKING_URI": url}
        report["slurm_command"] = " ".join(cmd[2:])
        report["first"] = run_with_faults(cmd, env, url, state, work / "first.log")
        report["rerun"] = timed(cmd, env, work / "rerun.log")
        comments = {j["id"]: j["comment"] for j in squeue()}
        report["sacct"] = [{**j, "rule": comments.get(j["id"], "").removeprefix("rule_")} for j in sacct()]
        cluster_runs = runs(url)
    with mlflow_server(work / "local-mlflow") as url:
        results = work / "local-results"
        cfg = _config_copy(config, results, work / "local-config.yaml")
        cmd = [*snakemake, *[str(results / t) for t in targets or []], "--cores", str(cores), "--configfile", str(cfg)]
        report["local"] = timed(cmd, {**base_env, "MLFLOW_TRACKING_URI": url}, work / "local.log")
        local_runs = runs(url)
    report["runs"] = {"cluster": cluster_runs, "local": local_runs}
    report["mlflow"] = compare(cluster_runs, local_runs, (report["first"]["cancelled"] or {}).get("job"))
    report["failures"] = failures(report)
    return report


def failures(report: dict) -> list[str]:
    """What the report shows going wrong (empty: the check passed; module docstring)."""
    bad = []
    first, ml = report["first"], report["mlflow"]
    if first["cancelled"] is None:
        bad.append("no job was cancelled: no MLflow run was seen RUNNING")
    if first["slurmd"] is None:
        bad.append("slurmd was not killed: no job was running after the cancel")
    if report["rerun"]["rc"] != 0:
        bad.append(f"the rerun exited {report['rerun']['rc']}")
    if report["local"]["rc"] != 0:
        bad.append(f"the local run exited {report['local']['rc']}")
    cancelled = (first["cancelled"] or {}).get("job")
    for job in report["sacct"]:
        expected = "CANCELLED" if job["id"] == cancelled else "COMPLETED"
        if job["state"].split()[0] != expected:
            bad.append(f"SLURM job {job['id']} ({job['rule']}) ended {job['state']}, not {expected}")
    if cancelled and cancelled not in {j["id"] for j in report["sacct"]}:
        bad.append(f"the cancelled job {cancelled} is not in sacct -c")
    if ml["missing_on_cluster"] or ml["extra_on_cluster"]:
        bad.append(f"the runs differ: missing on the cluster {ml['missing_on_cluster']}, extra {ml['extra_on_cluster']}")
    if ml["local_finished"] == 0:
        bad.append("the local run logged no FINISHED MLflow run")
    if cancelled and not ml["cancelled_runs"]:
        bad.append(f"no MLflow run of the cancelled job {cancelled}")
    for run in ml["cancelled_runs"]:  # ended by the cancel, or before scancel was sent (a run's last second)
        before = run["status"] == "FINISHED" and run["end_ms"] is not None and run["end_ms"] < first["cancelled"]["at_ms"]
        if run["status"] not in ("KILLED", "FAILED") and not before:
            bad.append(f"the cancelled job's run {run['experiment']}/{run['name']} is {run['status']}")
    if ml["running"]:
        bad.append(f"runs left RUNNING: {ml['running']}")
    return bad


def markdown(report: dict) -> str:
    """The report as the docs block ``slurm-ci``: the faults, the invocations, the MLflow counts and
    ``sacct -c``'s jobs per rule and state."""
    first, ml = report["first"], report["mlflow"]
    per_rule = collections.Counter((j["rule"].split("_wildcards_")[0], j["state"].split()[0]) for j in report["sacct"])
    cancelled, slurmd = first["cancelled"] or {}, first["slurmd"] or {}
    lines = [
        f"`{report['config']}` (targets: {', '.join(report['targets'])}) through a one-node SLURM cluster "
        f"(`workflow/profiles/slurm/local/start.sh`, {report['cores']} cores) and an `mlflow server`, "
        f"`python -m pmd_bench.workflow.cluster_check` on {report['date']}, commit `{report['commit']}`.",
        "",
        "| invocation | exit | wall time |",
        "|---|---|---|",
        f"| SLURM profile, with the faults | {first['rc']} | {first['wall_s'] / 60:.1f} min |",
        f"| the same command again | {report['rerun']['rc']} | {report['rerun']['wall_s'] / 60:.1f} min |",
        f"| `snakemake --cores {report['cores']}` (local, the comparison; JAX's compilation cache warm) "
        f"| {report['local']['rc']} "
        f"| {report['local']['wall_s'] / 60:.1f} min |",
        "",
        f"Faults: `scancel` of SLURM job {cancelled.get('job', '—')} (run `{cancelled.get('run', '—')}`, "
        f"{cancelled.get('at_s', '—')} s in); SIGKILL of `slurmd` {slurmd.get('at_s', '—')} s in while job(s) "
        f"{', '.join(slurmd.get('running_jobs', [])) or '—'} ran, back {slurmd.get('away_s', '—')} s later.",
        "",
        f"MLflow: **{ml['cluster_runs']}** runs on the cluster's server ({ml['cluster_finished']} FINISHED), "
        f"**{ml['local_runs']}** in the local run ({ml['local_finished']} FINISHED; a FAILED one is a method whose "
        f"failure is its result), name and status alike, each once ({len(ml['missing_on_cluster'])} missing, "
        f"{len(ml['extra_on_cluster'])} extra), {len(ml['running'])} RUNNING; besides them the cancelled job's: "
        + (", ".join(f"`{r['name']}` {r['status']}" + (" (it had ended before scancel was sent)"
                     if r["status"] == "FINISHED" and (r["end_ms"] or 0) < cancelled.get("at_ms", 0) else "")
                     for r in ml["cancelled_runs"]) or "none")
        + f". Workflow parent runs (one per experiment and invocation): "
        + ", ".join(f"{n} {status}" for status, n in sorted(collections.Counter(ml["workflow_parents"]).items()))
        + ".",
        "",
        f"`sacct -c`: {len(report['sacct'])} jobs.",
        "",
        "| rule | state | jobs |",
        "|---|---|---|",
        *[f"| {rule} | {state} | {n} |" for (rule, state), n in sorted(per_rule.items())],
        "",
        "Check: " + ("**passed**." if not report["failures"] else "**failed**: " + "; ".join(report["failures"])),
    ]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    """``python -m pmd_bench.workflow.cluster_check``: :func:`check`, the report as ``--out`` (JSON)
    and beside it as ``.md``; exit 1 when :func:`failures` lists anything."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--config", type=Path, default=Path("workflow/config/ci.yaml"))
    parser.add_argument("--targets", nargs="*", help="paths relative to the config's results folder (default: all)")
    parser.add_argument("--work", type=Path, required=True, help="a folder for the clusters' state, results and logs")
    parser.add_argument("--cores", type=int, default=2, help="the local comparison run's --cores")
    parser.add_argument("--out", type=Path, default=Path("results/benchmarks/slurm_ci.json"))
    args = parser.parse_args(argv)
    report = check(args.config, args.work, args.targets, args.cores)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    with atomic_path(args.out) as tmp:
        tmp.write_text(json.dumps(report, indent=1))
    with atomic_path(args.out.with_suffix(".md")) as tmp:
        tmp.write_text(markdown(report))
    print(markdown(report))
    return 1 if report["failures"] else 0


if __name__ == "__main__":
    sys.exit(main())
