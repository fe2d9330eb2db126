"""The workflow through a running SLURM cluster and an MLflow server, with faults
(workflow/cluster_check.py): a one-node cluster started here (workflow/profiles/slurm/local/start.sh),
a small config (the ci config's mixture with two methods: 4 sbatch jobs) run through the SLURM
profile while one job is cancelled and slurmd is killed, run again, and compared with a local run.

Opt-in (measured on 2 cores: 2 min 54 s at a low load with a warm JAX compilation cache; 8 min 49 s
at a load average of 12, 90 s of it a wait since removed; root and Debian's slurm-wlm, which
start.sh installs): ``PMD_BENCH_SLURM_TEST=1 pytest -m slurm tests/test_slurm_cluster.py``; `.ci/run` runs it when its
time allows. The checks of the report itself (:func:`cluster_check.failures`) run always."""

import copy
import os
from pathlib import Path

import pytest
import yaml

from pmd_bench.workflow import cluster_check

ROOT = Path(__file__).resolve().parents[1]
OPT_IN = "PMD_BENCH_SLURM_TEST"


def small_config(folder: Path) -> Path:
    """The ci config with only the mixture's `pmd` (the cancelled job: about a minute) and `sgld`."""
    cfg = yaml.safe_load((ROOT / "workflow/config/ci.yaml").read_text())
    cfg["mixture"]["methods"] = {label: cfg["mixture"]["methods"][label] for label in ("pmd", "sgld")}
    path = folder / "ci-mixture.yaml"
    path.write_text(yaml.safe_dump(cfg, sort_keys=False))
    return path


@pytest.mark.slurm
def test_workflow_through_slurm_and_an_mlflow_server_survives_the_faults(tmp_path):
    if os.environ.get(OPT_IN) != "1":
        pytest.skip(f"opt-in: {OPT_IN}=1 runs it (3 to 9 min: a SLURM cluster, two MLflow servers, "
                    f"three workflow runs; .ci/run sets it when its time allows)")
    try:
        report = cluster_check.check(small_config(tmp_path), tmp_path / "work", ["figures/figure1.png"])
    except cluster_check.ClusterUnavailable as why:
        pytest.skip(f"no SLURM cluster here: {why}")
    summary = cluster_check.markdown(report)
    assert report["failures"] == [], summary
    first, ml = report["first"], report["mlflow"]
    assert first["rc"] != 0 and report["rerun"]["rc"] == 0, summary  # the cancel failed the first invocation
    assert first["cancelled"]["run"] in {"pmd-seed0", "sgld-seed0"}, summary
    states = sorted(job["state"].split()[0] for job in report["sacct"])
    # mixture_data, 2 runs, the rerun of the cancelled one, mixture_figures; the local rules are no jobs
    assert states == ["CANCELLED"] + ["COMPLETED"] * 4, summary
    assert ml["cluster_runs"] == ml["cluster_finished"] == ml["local_finished"] == 2, summary
    (killed,) = ml["cancelled_runs"]
    assert killed["status"] == "KILLED" and killed["name"] == first["cancelled"]["run"], summary


def passing_report() -> dict:
    """A report as :func:`cluster_check.check` returns it when everything held: job 3 cancelled,
    its run KILLED and run again as job 4; `npv` failed as a result, on both sides."""
    run = {"experiment": "pmd-bench/mixture", "role": "", "status": "FINISHED", "slurm_job_id": "", "end_ms": 2000}
    local_runs = [{**run, "name": "sgld-seed0"}, {**run, "name": "pmd-seed0"}, {**run, "name": "npv-seed0", "status": "FAILED"}]
    cluster_runs = [{**r, "slurm_job_id": str(i)} for i, r in enumerate(local_runs, 10)] + [
        {**run, "name": "pmd-seed0", "status": "KILLED", "slurm_job_id": "3", "end_ms": 1500},
        {**run, "name": "workflow x", "role": "workflow"}]
    return {
        "first": {"rc": 1, "wall_s": 1.0, "cancelled": {"job": "3", "run": "pmd-seed0", "at_s": 1.0, "at_ms": 1000},
                  "slurmd": {"running_jobs": ["2"], "at_s": 2.0, "away_s": 5.0}},
        "rerun": {"rc": 0, "wall_s": 1.0}, "local": {"rc": 0, "wall_s": 1.0},
        "sacct": [{"id": "2", "state": "COMPLETED", "rule": "mixture_run"},
                  {"id": "3", "state": "CANCELLED by 0", "rule": "mixture_run"},
                  {"id": "4", "state": "COMPLETED", "rule": "mixture_run"}],
        "runs": {"cluster": cluster_runs, "local": local_runs},
        "mlflow": cluster_check.compare(cluster_runs, local_runs, "3"),
    }


def test_the_report_names_each_thing_that_went_wrong():
    good = passing_report()
    assert cluster_check.failures(good) == []
    assert (good["mlflow"]["cluster_runs"], good["mlflow"]["local_finished"]) == (3, 2)
    broken = copy.deepcopy(good)
    broken["sacct"][0]["state"] = "FAILED"
    broken["rerun"]["rc"] = 1
    broken["runs"]["cluster"][3]["status"] = "RUNNING"  # the cancelled job's run left open
    broken["runs"]["cluster"][0]["name"] = "smc-seed0"  # a run under another name than the local one's
    broken["mlflow"] = cluster_check.compare(broken["runs"]["cluster"], broken["runs"]["local"], "3")
    problems = cluster_check.failures(broken)
    assert len(problems) == 5, problems
    assert any("job 2 (mixture_run) ended FAILED" in p for p in problems)
    assert any("pmd-seed0 is RUNNING" in p for p in problems)
    assert broken["mlflow"]["missing_on_cluster"] == ["pmd-bench/mixture/sgld-seed0 FINISHED"]
    early = copy.deepcopy(good)  # the cancelled job's run FINISHED: only before scancel was sent
    early["runs"]["cluster"][3]["status"] = "FINISHED"
    early["mlflow"] = cluster_check.compare(early["runs"]["cluster"], early["runs"]["local"], "3")
    assert cluster_check.failures(early) == ["the cancelled job's run pmd-bench/mixture/pmd-seed0 is FINISHED"]
    early["runs"]["cluster"][3]["end_ms"] = 900
    assert cluster_check.failures(early) == []
    twice = cluster_check.compare(good["runs"]["cluster"] + good["runs"]["cluster"][:1], good["runs"]["local"], "3")
    assert twice["extra_on_cluster"] == ["pmd-bench/mixture/sgld-seed0 FINISHED"]  # logged twice is not "each once"
