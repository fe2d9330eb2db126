"""The posteriordb experiment through the ``pmd-bench`` CLI on one small posterior: floor, runs (one
that succeeds, one whose samples blow up, one whose method raises), MLflow, the report, and the
Snakemake rules (listed with an offline mirror, skipped with a note without one)."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import yaml
from cli_helpers import cli_workspace
from mlflow.tracking import MlflowClient

from pmd_bench.datasets.settings import MIRROR_ENV
from pmd.sample_metrics import SampleReference
from pmd_bench.workflow import cli
from pmd_bench.workflow import config as config_mod
from pmd_bench.workflow.experiments import posteriordb
from pmd_bench.workflow.results import load_npz

REPO = Path(__file__).resolve().parents[1]
CI_CONFIG = REPO / "workflow" / "config" / "ci.yaml"
POSTERIOR = "kidiq-kidscore_momiq"  # N = 434, d = 3


def test_worst_coordinate_scores():
    draws = np.random.default_rng(0).normal(size=(4000, 3)).astype(np.float32)
    reference = SampleReference(draws)
    # coordinate 3 is 2 sd off, coordinate 2 half as wide: the RMS and mean hide what the max shows
    moved = (draws - reference.mean) * np.array([1.0, 0.5, 1.0]) + reference.mean + [0.0, 0.0, 2.0] * reference.std
    scores = reference.score(moved, np.zeros(len(moved)))
    assert scores["mean_error_max"] == pytest.approx(2.0, abs=1e-3)
    assert scores["mean_error"] == pytest.approx(2 / 3**0.5, abs=1e-3)
    assert scores["log_std_ratio_max"] == pytest.approx(math.log(2.0), abs=1e-4)
    assert scores["log_std_ratio"] == pytest.approx(math.log(0.5) / 3, abs=1e-4)


def _mirror() -> str:
    value = os.environ.get(MIRROR_ENV)
    if not value:
        pytest.skip(f"{MIRROR_ENV} is unset: no offline data mirror holding posteriordb's reference posteriors")
    if not (Path(value) / "posteriordb").is_dir():
        pytest.skip(f"offline mirror {value} has no posteriordb/ folder")
    return value


@pytest.fixture(scope="module")
def workspace(tmp_path_factory):
    """A tiny config (10 steps of 44 points), a fresh MLflow store and ``cli(*args) -> exit code``."""
    _mirror()
    root = tmp_path_factory.mktemp("posteriordb")
    cfg = config_mod.load(CI_CONFIG)
    cfg["results_dir"] = str(root / "results")
    cfg["posteriordb"].update(posteriors=[POSTERIOR], steps_per_pass=10, num_passes=1, eval_samples=100, methods={
        "smc": {"num_particles": 100},
        # Langevin steps of size 1e6 throw the chain to infinity: a run recorded as failed
        "sgld_diverges": {"method": "sgld", "num_particles": 4, "burn_in": 2, "a": 1e6},
    })
    with cli_workspace(root, cfg) as (config, uri):
        yield root, cfg, uri, lambda *args: cli.main(["--config", str(config), *args])


def _run_file(root: Path, method: str) -> Path:
    return root / "results" / "posteriordb" / "runs" / POSTERIOR / method / "seed0.npz"


@pytest.mark.workflow
@pytest.mark.needs_data
def test_runs_floor_and_report(workspace):
    root, _, uri, run_cli = workspace
    floor = root / "results" / "posteriordb" / "floors" / f"{POSTERIOR}.json"
    assert run_cli("floor", "posteriordb", "--posterior", POSTERIOR, "--out", str(floor)) == 0
    floor_summary = json.loads(floor.read_text())
    assert floor_summary["chains"] == 10 and floor_summary["num_data"] == 434
    # held-out NUTS draws: each coordinate's mean within 0.25 sd, its sd within 25%
    assert floor_summary["floor"]["mean_error_max"] < 0.25 and floor_summary["floor"]["log_std_ratio_max"] < 0.25

    for method in ("smc", "sgld_diverges"):
        assert run_cli("run", "posteriordb", "--method", method, "--posterior", POSTERIOR, "--seed", "0",
                       "--out", str(_run_file(root, method))) == 0
    arrays, meta = load_npz(_run_file(root, "smc"))
    assert meta["status"] == "ok" and meta["error"] is None
    assert meta["params"]["batch_size"] == 44 and meta["num_steps"] == 10  # ⌈434/10⌉ points, 1 x 10 steps
    assert meta["params"]["budget_points"] == 434 and meta["visited"] == 434  # one whole pass; one-pass SMC reads each point once
    assert list(arrays["visited"]) == [0, 434]  # the prior, then once per steps_per_pass steps
    assert all(math.isfinite(meta["final"][k]) for k in posteriordb.METRICS)
    assert meta["final"]["mean_error_max"] >= meta["final"]["mean_error"] - 1e-6
    _, failed = load_npz(_run_file(root, "sgld_diverges"))
    assert failed["status"] == "failed" and "SGLD diverged" in failed["error"] and "step size" in failed["error"]
    assert all(math.isnan(v) for v in failed["final"].values())

    client = MlflowClient(tracking_uri=uri)
    experiment = client.get_experiment_by_name("pmd-bench/posteriordb")
    runs = {r.info.run_name: r for r in client.search_runs([experiment.experiment_id])}
    ok, bad = runs[f"smc-{POSTERIOR}-seed0"], runs[f"sgld_diverges-{POSTERIOR}-seed0"]
    assert ok.info.status == "FINISHED" and ok.data.tags["status"] == "ok"
    assert ok.data.params["posterior"] == POSTERIOR and "mean_error_max" in ok.data.metrics
    assert [a.path for a in client.list_artifacts(ok.info.run_id, "result")] == ["result/seed0.npz"]
    assert bad.info.status == "FAILED" and "SGLD diverged" in bad.data.tags["error"]

    table, figure = root / "figures" / "table_posteriordb.md", root / "figures" / "posteriordb.png"
    assert run_cli("report", "posteriordb", "--data", str(floor), "--runs", str(_run_file(root, "smc")),
                   str(_run_file(root, "sgld_diverges")), "--out", str(table), "--figure", str(figure)) == 0
    text = table.read_text()
    assert "1 whole passes in batches of ⌈N/10⌉ points" in text and "n = 100 draws" in text
    assert f"| {POSTERIOR} (N=434, d=3, Gaussian) |" in text and "| failed [1] |" in text
    assert "[1] FloatingPointError: SGLD diverged" in text
    within = int(meta["final"]["mean_error_max"] <= 0.5 and meta["final"]["log_std_ratio_max"] <= 0.3)
    assert f"| **i.i.d. within 0.5 / 0.3** | 1/1 | 0/1 | {within}/1 |" in text  # floor, sgld_diverges, smc
    assert f"| **i.i.d. Gaussian within 0.5 / 0.3** | 1/1 | 0/1 | {within}/1 |" in text  # kidiq is close to Gaussian
    summary = json.loads(table.with_suffix(".json").read_text())
    cell = summary["posteriors"][POSTERIOR]["methods"]["smc"]
    assert cell["mean_error_max"] == pytest.approx(meta["final"]["mean_error_max"])
    assert summary["posteriors"][POSTERIOR]["methods"]["sgld_diverges"]["failed"] == 1
    assert figure.stat().st_size > 10_000


@pytest.mark.needs_data
def test_an_exception_inside_the_method_is_recorded(workspace, monkeypatch):
    root, cfg, uri, _ = workspace

    def raises(*args, **kwargs):
        raise FloatingPointError("the step size collapsed")

    monkeypatch.setattr(posteriordb, "run", raises)
    out = root / "raises.npz"
    meta = posteriordb.run_one(cfg["posteriordb"], "smc", POSTERIOR, 1, out, uri, "pmd-bench/posteriordb")
    arrays, written = load_npz(out)
    assert written["status"] == "failed" and written["error"] == "FloatingPointError: the step size collapsed"
    assert meta["error"] == written["error"] and arrays["visited"].size == 0
    assert all(math.isnan(v) for v in written["final"].values()) and math.isnan(written["step_seconds"])


def _dry_run(tmp_path: Path, env: dict, **section) -> subprocess.CompletedProcess:
    cfg = yaml.safe_load(CI_CONFIG.read_text())
    cfg["results_dir"] = str(tmp_path / "results")
    cfg["posteriordb"].update(section)
    config = tmp_path / "config.yaml"
    config.write_text(yaml.safe_dump(cfg))
    return subprocess.run([sys.executable, "-m", "snakemake", "-n", "--nolock", "--cores", "1", "--configfile",
                           str(config)], cwd=REPO, env=env, capture_output=True, text=True, check=False)


@pytest.mark.workflow
@pytest.mark.needs_data
def test_snakemake_lists_the_jobs_with_a_mirror(tmp_path):
    done = _dry_run(tmp_path, {**os.environ, MIRROR_ENV: _mirror()})
    assert done.returncode == 0, done.stderr[-3000:]
    jobs = {line.split()[0]: int(line.split()[1]) for line in done.stdout.splitlines()
            if line.startswith("posteriordb_") and len(line.split()) == 2}
    assert jobs == {"posteriordb_floor": 2, "posteriordb_run": 6, "posteriordb_report": 1}  # 2 posteriors x 3 methods


@pytest.mark.workflow
@pytest.mark.needs_data
def test_snakemake_runs_a_methods_seeds_in_one_job(tmp_path):
    done = _dry_run(tmp_path, {**os.environ, MIRROR_ENV: _mirror()}, seeds=3, seeds_in_one_job=True,
                    tuning={"grids": {"pmd": {"num_particles": [1]}}})
    assert done.returncode == 0, done.stderr[-3000:]
    jobs = {line.split()[0]: int(line.split()[1]) for line in done.stdout.splitlines()
            if line.startswith("posteriordb_") and len(line.split()) == 2}
    # 2 posteriors x 3 methods (and pmd tuned on each), one job for the 3 seeds of each
    assert jobs["posteriordb_run_batched"] == 6 and jobs["posteriordb_run_tuned_batched"] == 2
    assert "posteriordb_run" not in jobs and "posteriordb_run_tuned" not in jobs
    outputs = [line for line in done.stdout.splitlines() if line.strip().startswith("output:") and "/posteriordb/runs/" in line and "/smc/" in line]
    assert outputs and all(line.count("/smc/seed") == 3 for line in outputs)  # seed0, seed1, seed2 of one job


@pytest.mark.workflow
@pytest.mark.needs_data
def test_seeds_in_one_job_give_each_seed_its_own_run(workspace):
    """Two seeds in one process write the same results as each seed in its own: the data,
    reference and method are built once, and each seed's run still starts from its own key."""
    root, _, uri, run_cli = workspace
    together = [root / "together" / f"seed{s}.npz" for s in (1, 2)]
    alone = root / "alone" / "seed2.npz"
    assert run_cli("run", "posteriordb", "--method", "smc", "--posterior", POSTERIOR, "--seed", "1", "2",
                   "--out", *map(str, together)) == 0
    assert run_cli("run", "posteriordb", "--method", "smc", "--posterior", POSTERIOR, "--seed", "2",
                   "--out", str(alone)) == 0
    (a1, m1), (a2, m2), (a_alone, m_alone) = map(load_npz, [*together, alone])
    assert (m1["seed"], m2["seed"]) == (1, 2) and m1["status"] == m2["status"] == "ok"
    assert m2["final"] == pytest.approx(m_alone["final"], rel=1e-5)
    assert list(a2["visited"]) == list(a_alone["visited"]) and m1["final"] != m2["final"]
    client = MlflowClient(tracking_uri=uri)
    experiment = client.get_experiment_by_name("pmd-bench/posteriordb")
    names = {r.info.run_name for r in client.search_runs([experiment.experiment_id])}
    assert {f"smc-{POSTERIOR}-seed1", f"smc-{POSTERIOR}-seed2"} <= names


@pytest.mark.workflow
@pytest.mark.needs_data
def test_snakemake_tunes_each_gridded_label_on_each_posterior(tmp_path):
    done = _dry_run(tmp_path, {**os.environ, MIRROR_ENV: _mirror()}, tuning={"grids": {"pmd": {"num_particles": [1]}}})
    assert done.returncode == 0, done.stderr[-3000:]
    jobs = {line.split()[0]: int(line.split()[1]) for line in done.stdout.splitlines()
            if line.startswith("posteriordb_") and len(line.split()) == 2}
    assert jobs["posteriordb_tune"] == 2 and jobs["posteriordb_run_tuned"] == 2 and jobs["posteriordb_run"] == 6


@pytest.mark.workflow
def test_snakemake_skips_the_experiment_without_a_mirror(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != MIRROR_ENV}
    done = _dry_run(tmp_path, env)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "the posteriordb experiment is skipped: no offline mirror" in done.stderr
    assert "posteriordb_" not in done.stdout + done.stderr


@pytest.mark.workflow
def test_the_table_asked_for_without_a_mirror_fails_with_the_reason(tmp_path):
    """No offline mirror: the experiment is left out of the default targets, and asking for its table
    by name fails with why (rule posteriordb_unavailable), not Snakemake's "no rule to produce"."""
    cfg = yaml.safe_load(config_mod.DEFAULT_CONFIG.read_text())
    cfg["results_dir"] = str(tmp_path / "results")
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(cfg))
    env = {k: v for k, v in os.environ.items() if k != MIRROR_ENV}
    root = Path(config_mod.DEFAULT_CONFIG).parents[2]
    done = subprocess.run([str(Path(sys.executable).with_name("snakemake")), "--cores", "1",
                           f"{cfg['results_dir']}/figures/table_posteriordb.md", "--configfile", str(path)],
                          cwd=root, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode != 0
    assert "the posteriordb experiment cannot run: no offline mirror" in done.stdout + done.stderr
    assert not (tmp_path / "results/figures/table_posteriordb.md").exists()


@pytest.mark.workflow
@pytest.mark.needs_data
def test_a_method_that_cannot_start_is_a_failed_cell(workspace, monkeypatch):
    """A method whose construction finds no start on a posterior (SVI's Laplace start raises
    FloatingPointError when L-BFGS ends at no mode) is recorded as a failed run with that message,
    as a method that fails while stepping is, and the job itself succeeds."""
    root, cfg, uri, _ = workspace

    def no_mode(*args, **kwargs):
        raise FloatingPointError("no Laplace start for this posterior: the Hessian is not negative definite")

    monkeypatch.setattr(posteriordb.methods, "build", no_mode)
    out = root / "results" / "posteriordb" / "runs" / POSTERIOR / "smc" / "nostart.npz"
    meta = posteriordb.run_one(cfg["posteriordb"], "smc", POSTERIOR, 0, out, uri, "pmd-bench/posteriordb")
    assert meta["status"] == "failed" and meta["error"].startswith("FloatingPointError: no Laplace start")
    assert all(math.isnan(v) for v in meta["final"].values())
