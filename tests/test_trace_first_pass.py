"""``benchmarks/trace_logistic_first_pass.py``: its yardstick scores a cloud of the right shape
as right and a shrunken one as shrunken, and the script runs end to end on a tiny data file."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from bench_helpers import BENCHMARKS, load_benchmark
from pmd_bench.workflow.results import save_npz

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = BENCHMARKS / "trace_logistic_first_pass.py"
trace = load_benchmark("trace_logistic_first_pass")


def test_compare_measures_shape_and_offset():
    """20,000 exact draws of a correlated 5-d Gaussian: whitened eigenvalues within 0.1 of 1 (the
    sampling error of an eigenvalue is about sqrt(2/20000) · spread, far below), mean error below
    0.05 sd (0.007 expected); the same draws shrunk 10× about their mean score eigenvalues 0.01;
    shifted by 3 sd in every coordinate, mean error 3."""
    rng = np.random.default_rng(0)
    a = rng.normal(size=(5, 5))
    cov = a @ a.T + 0.5 * np.eye(5)
    mode = rng.normal(size=5)
    draws = rng.multivariate_normal(mode, cov, size=20_000)
    log_w = np.zeros(len(draws))
    exact = trace.compare(draws, log_w, mode, cov)
    assert 0.9 < exact["eig_min"] <= exact["eig_median"] < 1.1
    assert exact["mean_error"] < 0.05 and abs(exact["log_sd"]) < 0.02
    mean = draws.mean(axis=0)
    shrunk = trace.compare(mean + 0.1 * (draws - mean), log_w, mode, cov)
    assert 0.009 < shrunk["eig_min"] and shrunk["eig_median"] < 0.011
    assert abs(shrunk["log_sd"] - np.log(0.1)) < 0.02
    shifted = trace.compare(draws + 3.0 * np.sqrt(np.diag(cov)), log_w, mode, cov)
    assert abs(shifted["mean_error"] - 3.0) < 0.05


@pytest.mark.slow
def test_script_writes_its_rows(tmp_path):
    rng = np.random.default_rng(1)
    x = rng.normal(size=(400, 3)).astype(np.float32)
    y = np.where(x @ np.array([1.0, -1.0, 0.5]) + 0.3 * rng.normal(size=400) > 0, 1, -1)
    data = tmp_path / "tiny.npz"
    save_npz(data, {"X_train": x, "y_train": y, "X_test": x[:10], "y_test": y[:10]}, {"name": "tiny"})
    subprocess.run([sys.executable, str(SCRIPT), "--data", str(data), "--particles", "64", "--batch-size", "50",
                    "--checkpoints", "200", "400", "--label", "tiny", "--out", str(tmp_path)],
                   check=True, cwd=ROOT, capture_output=True, timeout=600)
    report = json.loads((tmp_path / "tiny.json").read_text())
    assert [r["rows"] for r in report["rows"]] == [200, 400]
    for row in report["rows"]:
        assert np.isfinite(row["mean_error"]) and row["eig_min"] > 0 and 0 < row["ess"] <= 64
