"""MLflow tracking: the embedded SQLite store by default, any server through MLFLOW_TRACKING_URI.

A fresh SQLite store opened by several processes at once corrupts its schema migration (measured
with mlflow 3.17: 7 of 8 crashed), so :func:`init_store` creates it once — the Snakemake rule
``tracking_store`` runs it before any run — and runs only ever open an existing store.
"""

from __future__ import annotations

import math
import os
import subprocess
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator, Mapping

import mlflow
from mlflow.tracking import MlflowClient

import pmd


def tracking_uri(config_uri: str | None = None) -> str:
    """``MLFLOW_TRACKING_URI`` if set, else the config's ``tracking.uri``, else ``sqlite:///mlruns.db``
    in the current directory (the repository root when run by Snakemake)."""
    return os.environ.get("MLFLOW_TRACKING_URI") or config_uri or f"sqlite:///{Path.cwd() / 'mlruns.db'}"


def artifact_root() -> str:
    """Where runs' artifacts go for the embedded store: ``mlartifacts/`` beside it (git-ignored)."""
    return (Path.cwd() / "mlartifacts").as_uri()


def init_store(uri: str, experiments: list[str]) -> None:
    """Create (or migrate) the store and the named experiments, from one process."""
    client = MlflowClient(tracking_uri=uri)
    for name in experiments:
        if client.get_experiment_by_name(name) is None:
            client.create_experiment(name, artifact_location=artifact_root() if uri.startswith("sqlite") else None)


def git_commit() -> str:
    """The current git commit (with ``-dirty`` when the tree has changes), or ``unknown``."""
    try:
        sha = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True, check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain"], capture_output=True, text=True, check=True).stdout
        return sha + ("-dirty" if dirty.strip() else "")
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


class MlflowLogger:
    """The runner's logger (``log_metrics(metrics, step)``) writing to the active MLflow run."""

    def log_metrics(self, metrics: Mapping[str, float], step: int) -> None:
        finite = {k: float(v) for k, v in metrics.items() if math.isfinite(float(v))}
        mlflow.log_metrics(finite, step=int(step), timestamp=int(time.time() * 1000))


def _flatten(params: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in params.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping):
            out.update(_flatten(value, f"{name}."))
        else:
            out[name] = value
    return out


@contextmanager
def tracked_run(uri: str, experiment: str, run_name: str, params: Mapping[str, Any],
                tags: Mapping[str, str] | None = None) -> Iterator[MlflowLogger]:
    """An MLflow run with the parameters, the package version and the git commit logged; the run
    ends FAILED if the body raises."""
    mlflow.set_tracking_uri(uri)
    if mlflow.get_experiment_by_name(experiment) is None:
        raise RuntimeError(f"MLflow experiment {experiment!r} does not exist in {uri}: run "
                           f"`pmd-bench init-store` first (Snakemake's rule tracking_store does)")
    mlflow.set_experiment(experiment)
    all_tags = {"pmd_bench.version": pmd.__version__, "git_commit": git_commit(), **(tags or {})}
    with mlflow.start_run(run_name=run_name, tags=all_tags):
        mlflow.log_params(_flatten(params))
        yield MlflowLogger()
