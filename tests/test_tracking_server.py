"""MLflow through a real tracking server: a ``mlflow server`` process started here (free port, SQLite
backend and artifact store in a temporary folder), written to by the project's own logging code
through ``MLFLOW_TRACKING_URI=http://...`` and read back: parameters, a metric curve against data
points visited, the parent run of the workflow invocation and its artifacts; and a run whose process
gets SIGTERM (SLURM's `scancel`) ends KILLED."""

import os
import signal
import subprocess
import sys
import time

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import yaml
from mlflow.tracking import MlflowClient

from pmd import PMD, run
from pmd.models.conjugate import ConjugateGaussian
from pmd_bench.workflow.tracking import (WORKFLOW_RUN_ENV, finish_workflow_runs, init_store, log_summary,
                                        mlflow_server, tracked_run, tracking_uri)

EXPERIMENT = "pmd-bench/conjugate"


@pytest.fixture
def server(tmp_path):
    """``http://127.0.0.1:<port>`` of a fresh ``mlflow server`` (:func:`tracking.mlflow_server`),
    stopped after the test."""
    with mlflow_server(tmp_path) as url:
        yield url


@pytest.mark.workflow
def test_runs_logged_through_a_server_read_back(server, tmp_path, monkeypatch):
    monkeypatch.setenv("MLFLOW_TRACKING_URI", server)
    invocation = tmp_path / "logs" / "workflow-runs" / "test-invocation"
    monkeypatch.setenv(WORKFLOW_RUN_ENV, str(invocation))
    uri = tracking_uri(None)
    assert uri == server
    init_store(uri, [EXPERIMENT])

    prob = ConjugateGaussian(dim=2, noise_std=1.0)
    _, x = prob.simulate(0, 40)
    exact_mean = np.asarray(prob.posterior(x)[0])
    params = {"method": "pmd", "seed": 0, "method.num_particles": 64, "batch_size": 10}
    for seed in (0, 1):  # two children of one parent
        with tracked_run(uri, EXPERIMENT, f"pmd-seed{seed}", {**params, "seed": seed}) as logger:
            algo = PMD(prob.model(), data_size=40, num_particles=64, variant="paper", strategy="particles")
            result = run(algo, jnp.asarray(x), jax.random.key(seed),
                         batch_size=10, num_passes=1, eval_every=10, logger=logger,
                         evaluate=lambda post, key: {"mean_error": float(jnp.linalg.norm(post.mean() - exact_mean))})
            log_summary({"step_seconds": result.step_seconds, "num_steps": result.num_steps,
                         "visited": int(result.visited[-1])})

    table = tmp_path / "figures" / "table_conjugate.md"
    table.parent.mkdir()
    table.write_text("| method | error |\n|---|---|\n| pmd | 0.1 |\n")
    config = tmp_path / "config.yaml"
    config.write_text(yaml.safe_dump({"conjugate": {"seeds": 2, "methods": {"pmd": {"num_particles": 64}}}}))
    (parent_id,) = finish_workflow_runs(invocation, config, {"conjugate": [str(table)]})

    client = MlflowClient(server)
    experiment_id = client.get_experiment_by_name(EXPERIMENT).experiment_id
    runs = {r.info.run_name: r for r in client.search_runs([experiment_id])}
    assert set(runs) == {"pmd-seed0", "pmd-seed1", "workflow test-invocation"}
    child, parent = runs["pmd-seed1"], client.get_run(parent_id)
    assert child.data.tags["mlflow.parentRunId"] == parent_id == runs["pmd-seed0"].data.tags["mlflow.parentRunId"]
    assert child.data.params["method.num_particles"] == "64" and child.data.params["seed"] == "1"
    assert child.info.status == "FINISHED" and child.data.tags["git_commit"]
    history = client.get_metric_history(child.info.run_id, "mean_error")
    assert [m.step for m in history] == [0, 10, 20, 30, 40]  # step = data points visited
    assert child.data.metrics["visited"] == 40 and child.data.metrics["seconds_per_visited"] > 0

    assert parent.info.status == "FINISHED" and parent.data.tags["pmd_bench.role"] == "workflow"
    assert parent.data.params["config.methods.pmd.num_particles"] == "64"
    artifacts = {a.path for a in client.list_artifacts(parent_id)} | {
        a.path for a in client.list_artifacts(parent_id, "figures")}
    assert {"config.yaml", "figures", "figures/table_conjugate.md"} <= artifacts
    stored = list((tmp_path / "artifacts").rglob("table_conjugate.md"))  # through the server's artifact proxy
    assert len(stored) == 1 and stored[0].read_text() == table.read_text()


SLEEPING_RUN = """
import sys, time
from pmd_bench.workflow.tracking import tracked_run
with tracked_run(sys.argv[1], "pmd-bench/conjugate", "sleeper", {"seed": 0}):
    print("started", flush=True)
    time.sleep(120)
"""


@pytest.mark.workflow
def test_sigterm_ends_the_run_killed(tmp_path):
    """SIGTERM in the body of a tracked run (what ``scancel`` sends first) ends the MLflow run KILLED
    and the process with 143; without the handler the run stayed RUNNING."""
    uri = f"sqlite:///{tmp_path / 'store.db'}"
    init_store(uri, [EXPERIMENT])
    env = {k: v for k, v in os.environ.items() if k not in (WORKFLOW_RUN_ENV, "MLFLOW_TRACKING_URI")}
    proc = subprocess.Popen([sys.executable, "-c", SLEEPING_RUN, uri], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env={**env, "SLURM_JOB_ID": "4242"}, cwd=tmp_path)
    assert proc.stdout.readline().strip() == "started", proc.stderr.read()
    time.sleep(0.5)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 143, err
    (only,) = MlflowClient(uri).search_runs([MlflowClient(uri).get_experiment_by_name(EXPERIMENT).experiment_id])
    assert only.info.status == "KILLED" and only.data.tags["slurm_job_id"] == "4242"
