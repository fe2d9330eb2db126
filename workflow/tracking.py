"""MLflow tracking: the embedded SQLite store by default, any server through MLFLOW_TRACKING_URI.

A fresh SQLite store opened by several processes at once corrupts its schema migration (measured
with mlflow 3.17: 7 of 8 crashed), so :func:`init_store` creates it once — the Snakemake rule
``tracking_store`` runs it before any run — and runs only ever open an existing store.

**One parent run per workflow invocation.** Snakemake sets ``PMD_BENCH_WORKFLOW_RUN`` to a fresh
folder (``{results_dir}/logs/workflow-runs/<time>-<pid>``) for each invocation; every run of an
experiment then becomes a child (tag ``mlflow.parentRunId``) of that experiment's parent run for
the invocation, created by the first child (:func:`workflow_parent`, under a file lock in that
folder: jobs run in parallel). When the workflow ends, :func:`finish_workflow_runs` logs the
resolved config (as params and ``config.yaml``) and the experiment's rendered figures and tables
to each parent and closes it. Without the variable (a run by hand) a run has no parent.

**Metric names.** Curves are named by what they measure, the same in every experiment
(``tv``, ``mean_error``, ``log_perplexity``, ...; ``wall_time`` the stepping time so far), with
``step`` = data points visited; every run ends with the same summary (:func:`log_summary`).

**A run killed by its scheduler ends KILLED.** SLURM's ``scancel`` (and a job past its time limit)
sends SIGTERM before SIGKILL: :func:`tracked_run` turns SIGTERM into :class:`Terminated`, so the run
is ended with status KILLED and the process exits 143, instead of the run staying RUNNING for ever.
A run inside a SLURM job carries that job's id as the tag ``slurm_job_id``.

:func:`mlflow_server` starts an ``mlflow server`` on the loopback address (SQLite backend, local
artifact root) for as long as a ``with`` block lasts: the tests' and the local cluster's server.
"""

from __future__ import annotations

import fcntl
import json
import math
import os
import signal
import socket
import sys
import subprocess
import threading
import time
import urllib.request
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator, Mapping

import mlflow
from mlflow.entities import Param
from mlflow.tracking import MlflowClient

import pmd

from .results import atomic_path

WORKFLOW_RUN_ENV = "PMD_BENCH_WORKFLOW_RUN"
SUMMARY = ("step_seconds", "eval_seconds", "total_seconds", "num_steps", "visited")


def project_root(start: Path | None = None) -> Path:
    """The checkout the command runs in: the nearest folder at or above ``start`` (default: the
    current directory) holding the ``Snakefile`` and ``workflow/`` of this project, else ``start``
    itself. The embedded store lives there, whichever subfolder a command runs from."""
    start = Path.cwd() if start is None else Path(start)
    for folder in (start, *start.parents):
        if (folder / "Snakefile").is_file() and (folder / "workflow").is_dir():
            return folder
    return start


def tracking_uri(config_uri: str | None = None) -> str:
    """``MLFLOW_TRACKING_URI`` if set, else the config's ``tracking.uri``, else ``sqlite:///mlruns.db``
    at the :func:`project_root` (the repository root, also from a subfolder)."""
    return os.environ.get("MLFLOW_TRACKING_URI") or config_uri or f"sqlite:///{project_root() / 'mlruns.db'}"


def artifact_root() -> str:
    """Where runs' artifacts go for the embedded store: ``mlartifacts/`` beside it (git-ignored)."""
    return (project_root() / "mlartifacts").as_uri()


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
    """Nested mappings as dotted keys: ``{"a": {"b": 1}}`` -> ``{"a.b": 1}``; a whole-valued float
    as its integer (``2.0`` -> ``2``), so one parameter reads alike in every method's runs (MLflow
    keeps parameters as strings, and a filter ``params.num_passes = '2'`` would miss ``'2.0'``)."""
    out: dict[str, Any] = {}
    for key, value in params.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping):
            out.update(_flatten(value, f"{name}."))
        elif isinstance(value, float) and value.is_integer() and abs(value) < 2**53:
            out[name] = int(value)
        else:
            out[name] = value
    return out


def _log_params(client: MlflowClient, run_id: str, params: Mapping[str, Any]) -> None:
    flat = [Param(k, str(v)[:6000]) for k, v in _flatten(params).items()]
    for i in range(0, len(flat), 100):  # MLflow takes at most 100 params per batch
        client.log_batch(run_id, params=flat[i:i + 100])


def workflow_parent(uri: str, experiment: str, folder: str | Path) -> str:
    """The id of ``experiment``'s parent run of the workflow invocation whose folder is ``folder``
    (module docstring); the first caller creates it, the others find it in ``folder/parents.json``."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    record = folder / "parents.json"
    with open(folder / "lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        parents = json.loads(record.read_text()) if record.exists() else {}
        if experiment not in parents:
            client = MlflowClient(tracking_uri=uri)
            run = client.create_run(client.get_experiment_by_name(experiment).experiment_id,
                                    run_name=f"workflow {folder.name}",
                                    tags={"pmd_bench.role": "workflow", "pmd_bench.invocation": folder.name,
                                          "pmd_bench.version": pmd.__version__, "git_commit": git_commit()})
            parents[experiment] = {"run_id": run.info.run_id, "uri": uri}
            with atomic_path(record) as tmp:
                tmp.write_text(json.dumps(parents, indent=1))
    return parents[experiment]["run_id"]


def finish_workflow_runs(folder: str | Path, config_path: str | Path, outputs: Mapping[str, list[str]],
                         status: str = "FINISHED") -> list[str]:
    """Close the parent runs of one workflow invocation (module docstring): each gets the resolved
    config (its experiment's section as params, the whole file as ``config.yaml``) and the existing
    files of ``outputs[<experiment>]`` as artifacts, then ``status``. Returns the runs' ids."""
    record = Path(folder) / "parents.json"
    if not record.exists():  # no tracked run in this invocation
        return []
    import yaml

    config = yaml.safe_load(Path(config_path).read_text())
    done = []
    for experiment, entry in json.loads(record.read_text()).items():
        client, run_id, section = MlflowClient(tracking_uri=entry["uri"]), entry["run_id"], experiment.split("/")[-1]
        _log_params(client, run_id, {"config": config.get(section, {})})
        client.log_artifact(run_id, str(config_path))
        for path in outputs.get(section, []):
            if Path(path).exists():
                client.log_artifact(run_id, path, artifact_path="figures")
        client.set_terminated(run_id, status=status)
        done.append(run_id)
    return done


def log_summary(meta: Mapping[str, Any]) -> None:
    """Log a finished run's cost under the names every experiment shares: ``step_seconds`` (stepping,
    compilation included), ``eval_seconds``, ``total_seconds``, ``num_steps``, ``visited`` (data points)
    and ``seconds_per_visited``; those ``meta`` lacks or that are not finite are left out."""
    values = {k: float(meta[k]) for k in SUMMARY if k in meta and math.isfinite(float(meta[k]))}
    if values.get("visited", 0) > 0 and "step_seconds" in values:
        values["seconds_per_visited"] = values["step_seconds"] / values["visited"]
    mlflow.log_metrics(values)


def measurement_metrics(result: Mapping[str, Any], prefix: str = "") -> dict[str, float]:
    """The finite numbers of a measurement's JSON result (Table 1's rates, costs and probe, Theorem
    5's rate) as MLflow metrics, nested mappings as dotted names (``by_dim.time_exponent.slope``);
    lists and text are left to the result file, logged beside them as an artifact."""
    out: dict[str, float] = {}
    for key, value in result.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping):
            out.update(measurement_metrics(value, f"{name}."))
        elif isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value):
            out[name] = float(value)
    return out


def log_measurement(uri: str, experiment: str, run_name: str, params: Mapping[str, Any], result: Mapping[str, Any],
                    path: str | Path, tags: Mapping[str, str] | None = None) -> None:
    """One MLflow run for a measurement that is not a method's run on data (a Table 1 part, Theorem
    5's rate): its parameters, its numbers (:func:`measurement_metrics`) and its result file."""
    with tracked_run(uri, experiment, run_name, params, tags):
        mlflow.log_metrics(measurement_metrics(result))
        mlflow.log_artifact(str(path), artifact_path="result")


class Terminated(BaseException):
    """SIGTERM arrived during a :func:`tracked_run` (a ``BaseException``, like ``KeyboardInterrupt``:
    no ``except Exception`` in the body swallows it)."""


def _raise_terminated(signum: int, frame: Any) -> None:
    raise Terminated(signum)


@contextmanager
def tracked_run(uri: str, experiment: str, run_name: str, params: Mapping[str, Any],
                tags: Mapping[str, str] | None = None) -> Iterator[MlflowLogger]:
    """An MLflow run with the parameters, the package version and the git commit logged, the child
    of its workflow invocation's parent run when ``PMD_BENCH_WORKFLOW_RUN`` is set (module
    docstring); the run ends FAILED if the body raises, and KILLED, leaving the process with exit
    status 143, on SIGTERM (module docstring; the handler is installed in the main thread only)."""
    mlflow.set_tracking_uri(uri)
    if mlflow.get_experiment_by_name(experiment) is None:  # no `pmd-bench init-store` before this run
        print(f"pmd-bench: creating the MLflow experiment {experiment!r} in {uri}", file=sys.stderr)
        init_store(uri, [experiment])
    mlflow.set_experiment(experiment)
    all_tags = {"pmd_bench.version": pmd.__version__, "git_commit": git_commit(), **(tags or {})}
    if os.environ.get("SLURM_JOB_ID"):
        all_tags["slurm_job_id"] = os.environ["SLURM_JOB_ID"]
    if os.environ.get(WORKFLOW_RUN_ENV):
        all_tags["mlflow.parentRunId"] = workflow_parent(uri, experiment, os.environ[WORKFLOW_RUN_ENV])
    main_thread = threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGTERM, _raise_terminated) if main_thread else None
    mlflow.start_run(run_name=run_name, tags=all_tags)
    try:
        mlflow.log_params(_flatten(params))
        yield MlflowLogger()
    except Terminated:
        mlflow.end_run("KILLED")
        print(f"pmd-bench: SIGTERM: MLflow run {run_name!r} ended KILLED", file=sys.stderr)
        raise SystemExit(128 + signal.SIGTERM)
    except BaseException:
        mlflow.end_run("FAILED")
        raise
    else:
        mlflow.end_run("FINISHED")
    finally:
        if main_thread:
            signal.signal(signal.SIGTERM, previous)


def free_port() -> int:
    """A TCP port on the loopback address that no process listens on now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def mlflow_server(folder: str | Path, deadline_s: float = 120) -> Iterator[str]:
    """``http://127.0.0.1:<port>`` of a fresh ``mlflow server`` (this interpreter's) with its SQLite
    store ``folder/server.db``, its artifacts under ``folder/artifacts`` and its log
    ``folder/server.log``, stopped (its whole process group) when the block ends. The SQLite tables
    are created here first and the server's job executor is off: it then starts in about 10 s on
    an idle 2-core machine (50 s measured at a load average of 15, hence ``deadline_s``)."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    port, log, backend = free_port(), folder / "server.log", f"sqlite:///{folder / 'server.db'}"
    MlflowClient(tracking_uri=backend).search_experiments()  # creates the tables (the server only checks them)
    cmd = [sys.executable, "-m", "mlflow", "server", "--host", "127.0.0.1", "--port", str(port),
           "--workers", "1", "--backend-store-uri", backend, "--artifacts-destination", str(folder / "artifacts")]
    with open(log, "w") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
                                env={**os.environ, "MLFLOW_SERVER_ENABLE_JOB_EXECUTION": "false"})
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + deadline_s
        while True:
            try:
                with urllib.request.urlopen(f"{url}/health", timeout=2) as response:
                    if response.status == 200:
                        break
            except OSError:
                pass
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"mlflow server did not come up: {log.read_text()[-2000:]}")
            time.sleep(0.3)
        yield url
    finally:
        os.killpg(proc.pid, signal.SIGTERM)  # the server and its uvicorn worker: their own session
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
