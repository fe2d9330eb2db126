"""The logistic experiment end to end through the ``pmd-bench`` CLI on a tiny synthetic data set:
store, NUTS reference (its own process, as Snakemake runs it), runs, Figure 2 and the table."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import yaml
from mlflow.tracking import MlflowClient

from workflow.config import DEFAULT_CONFIG

pytestmark = pytest.mark.slow


def _write_dataset(path: Path) -> None:
    """A prepared-classification-file look-alike: 2 features, labels ±1 from a logistic model."""
    rng = np.random.default_rng(0)
    x = rng.normal(size=(260, 2)).astype(np.float32)
    y = np.where(rng.random(260) < 1 / (1 + np.exp(-(2.0 * x[:, 0] - 1.0 * x[:, 1]))), 1, -1).astype(np.int8)
    np.savez(path, X_train=x[:200], y_train=y[:200], X_test=x[200:], y_test=y[200:])


@pytest.fixture(scope="module")
def workspace(tmp_path_factory):
    root = tmp_path_factory.mktemp("logistic")
    cfg = yaml.safe_load(DEFAULT_CONFIG.read_text())
    cfg["results_dir"] = str(root / "results")
    cfg["logistic"].update({
        "train_rows": None, "seeds": 1, "batch_size": 20, "num_passes": 2, "eval_every": 200, "eval_samples": 200,
        "reference": {"chains": 4, "draws": 500, "tune": 500, "seed": 0, "max_rhat": 1.01, "min_ess": 200},
        "methods": {
            "pmd": {"strategy": "hybrid", "num_particles": 300, "kde_steps": 1, "redraw_below": 0.5,
                    "particle_ess_floor": 0.5, "bandwidth": {"kind": "silverman", "scale": 0.5}},
            "jj_svi": {"step_size": {"kind": "harmonic"}},
            "pg_gibbs": {"num_particles": 100, "burn_in": 20, "batch_size": 200, "num_passes": 120,
                         "eval_every": 6000},
        },
    })
    config = root / "config.yaml"
    config.write_text(yaml.safe_dump(cfg))
    data = root / "data.npz"
    _write_dataset(data)
    env = {**os.environ, "MLFLOW_TRACKING_URI": f"sqlite:///{root / 'mlruns.db'}", "JAX_PLATFORMS": "cpu"}

    def cli(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "workflow.cli", "--config", str(config), *args],
                              capture_output=True, text=True, env=env, cwd=root, check=False)

    assert cli("init-store").returncode == 0
    return root, data, cli, env


def test_reference_runs_and_reports(workspace):
    root, data, cli, env = workspace
    reference = root / "results" / "logistic" / "reference.npz"
    done = cli("reference", "logistic", "--data", str(data), "--out", str(reference))
    assert done.returncode == 0, done.stderr[-3000:]
    ref = np.load(reference)
    assert ref["draws"].shape == (1500, 3) and ref["held_out"].shape == (500, 3)  # 3 chains + 1 held out, d = 2 + bias
    runs = []
    for method in ("pmd", "jj_svi", "pg_gibbs"):
        out = root / "results" / "logistic" / "runs" / method / "seed0.npz"
        done = cli("run", "logistic", "--method", method, "--seed", "0", "--data", str(data),
                   "--reference", str(reference), "--out", str(out))
        assert done.returncode == 0, done.stderr[-3000:]
        runs.append(str(out))
    figure, table = root / "figures" / "figure2.png", root / "figures" / "table.md"
    assert cli("report", "figure2", "--data", str(reference), "--runs", *runs, "--out", str(figure)).returncode == 0
    assert cli("report", "table-logistic", "--data", str(reference), "--runs", *runs, "--out", str(table)).returncode == 0
    assert figure.stat().st_size > 10_000
    summary = json.loads(figure.with_suffix(".json").read_text())
    nuts_error = summary["reference"]["predictive"]["test_error"]
    for method in ("pmd", "jj_svi", "pg_gibbs"):
        # 60 test points from a well-specified 2-feature model: every method's predictive is within
        # 4 test points (6.7%) of the NUTS predictive's error
        assert abs(summary["methods"][method]["test_error"]["mean"] - nuts_error) <= 4 / 60 + 1e-9
    text = table.read_text()
    assert all(f"| {m} | 1 |" in text for m in ("pmd", "jj_svi", "pg_gibbs")) and "98.8%" in text
    client = MlflowClient(tracking_uri=env["MLFLOW_TRACKING_URI"])
    experiment = client.get_experiment_by_name("pmd-bench/logistic")
    names = {r.info.run_name for r in client.search_runs([experiment.experiment_id])}
    assert names == {"reference-nuts", "pmd-seed0", "jj_svi-seed0", "pg_gibbs-seed0"}


def test_a_run_without_reference_or_with_unknown_method_fails_clearly(workspace):
    root, data, cli, _ = workspace
    done = cli("run", "logistic", "--method", "pmd", "--seed", "0", "--data", str(data), "--out", str(root / "x.npz"))
    assert done.returncode == 2 and "pass --reference" in done.stderr
    done = cli("run", "logistic", "--method", "nope", "--seed", "0", "--data", str(data), "--out", str(root / "x.npz"))
    assert done.returncode == 2 and "'nope' is not in the config's logistic.methods" in done.stderr
