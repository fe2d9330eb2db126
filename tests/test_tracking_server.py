"""MLflow through a real tracking server: a ``mlflow server`` process started here (free port, SQLite
backend and artifact store in a temporary folder), written to by the project's own logging code
through ``MLFLOW_TRACKING_URI=http://...`` and read back: parameters, a metric curve against data
points visited, the parent run of the workflow invocation and its artifacts."""

import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import yaml
from mlflow.tracking import MlflowClient

from pmd import PMD, run
from pmd.models.conjugate import ConjugateGaussian
from pmd_bench.workflow.tracking import (WORKFLOW_RUN_ENV, finish_workflow_runs, init_store, log_summary, tracked_run,
                               tracking_uri)

EXPERIMENT = "pmd-bench/conjugate"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def server(tmp_path):
    """``http://127.0.0.1:<port>`` of a fresh ``mlflow server``, stopped after the test. Its SQLite
    tables are created here first and its job executor is off: the server then starts in about
    10 s on an idle 2-core machine (50 s measured at a load average of 15, hence the deadline)."""
    port, log, backend = _free_port(), tmp_path / "server.log", f"sqlite:///{tmp_path / 'server.db'}"
    MlflowClient(tracking_uri=backend).search_experiments()  # creates the tables (the server only checks them)
    cmd = [str(Path(sys.executable).with_name("mlflow")), "server", "--host", "127.0.0.1", "--port", str(port),
           "--workers", "1", "--backend-store-uri", backend, "--artifacts-destination", str(tmp_path / "artifacts")]
    with open(log, "w") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
                                env={**os.environ, "MLFLOW_SERVER_ENABLE_JOB_EXECUTION": "false"})
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                with urllib.request.urlopen(f"{url}/health", timeout=2) as response:
                    if response.status == 200:
                        break
            except OSError:
                pass
            if proc.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"mlflow server did not come up: {log.read_text()[-2000:]}")
            time.sleep(0.3)
        yield url
    finally:
        os.killpg(proc.pid, signal.SIGTERM)  # the server and its uvicorn worker: their own session
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


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
