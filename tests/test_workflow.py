"""The workflow glue: config validation, the CLI end to end, MLflow logging (also concurrent),
and results that are never half-written."""

import json
import multiprocessing as mp
import os
import signal
import subprocess
import sys
from pathlib import Path

import mlflow
import numpy as np
import pytest
import yaml
from mlflow.tracking import MlflowClient

from pmd_bench.reports import figure1
from pmd_bench.workflow import cli
from pmd_bench.workflow import config as config_mod
from pmd_bench.workflow import plan
from pmd_bench.workflow.experiments import mixture
from pmd_bench.workflow.results import load_npz, save_npz
from pmd_bench.workflow.tracking import init_store, tracked_run

CI_CONFIG = Path(config_mod.DEFAULT_CONFIG).with_name("ci.yaml")


def tiny_config(tmp_path: Path) -> Path:
    cfg = config_mod.load(CI_CONFIG)
    cfg["results_dir"] = str(tmp_path / "results")
    cfg["mixture"].update(seeds=1, num_passes=0.2, eval_every=100, score_samples=100,
                          grid={"lower": [-3.0, -4.0], "upper": [3.0, 4.0], "size": [21, 27]})
    # no moves: every point visited is a batch's, so the evaluations fall at 0, 100, 200 points
    cfg["mixture"]["methods"] = {"pmd": {"strategy": "kde", "num_particles": 64, "rejuvenate": None}}
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return path


@pytest.fixture
def store(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    uri = f"sqlite:///{tmp_path / 'mlruns.db'}"
    monkeypatch.setenv("MLFLOW_TRACKING_URI", uri)
    return uri


def test_config_breaking_the_schema_names_the_field(tmp_path):
    cfg = yaml.safe_load(CI_CONFIG.read_text())
    cfg["mixture"]["seeds"] = 0
    cfg["mixture"]["batch_size"] = "ten"
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(cfg))
    with pytest.raises(config_mod.ConfigFileError) as err:
        config_mod.load(path)
    assert "mixture/seeds" in str(err.value) and "mixture/batch_size" in str(err.value)
    assert str(path) in str(err.value)


def test_cli_reports_config_errors_without_a_traceback(tmp_path, capsys):
    path = tmp_path / "bad.yaml"
    path.write_text("results_dir: [1, 2]\n")
    assert cli.main(["--config", str(path), "init-store"]) == 2
    assert "results_dir" in capsys.readouterr().err


@pytest.mark.workflow
def test_cli_end_to_end_logs_to_mlflow(tmp_path, store):
    config = str(tiny_config(tmp_path))
    data, out = tmp_path / "data.npz", tmp_path / "runs" / "pmd" / "seed0.npz"
    assert cli.main(["--config", config, "init-store"]) == 0
    assert cli.main(["--config", config, "make-data", "mixture", "--out", str(data)]) == 0
    assert cli.main(["--config", config, "run", "mixture", "--method", "pmd", "--seed", "0",
                     "--data", str(data), "--out", str(out)]) == 0
    arrays, meta = load_npz(out)
    assert list(arrays["visited"]) == [0, 100, 200]
    assert arrays["final_log_density"].shape == (21 * 27,)
    assert meta["method"] == "pmd" and meta["seed"] == 0

    client = MlflowClient(store)
    (run,) = client.search_runs([client.get_experiment_by_name("pmd-bench/mixture").experiment_id])
    assert run.info.status == "FINISHED"
    assert run.data.params["method.strategy"] == "kde" and run.data.params["batch_size"] == "10"
    assert {"pmd_bench.version", "git_commit"} <= set(run.data.tags)
    history = client.get_metric_history(run.info.run_id, "tv")
    assert [m.step for m in history] == [0, 100, 200]
    assert [a.path for a in client.list_artifacts(run.info.run_id, "result")] == ["result/seed0.npz"]

    figure = tmp_path / "fig" / "figure1.png"
    assert cli.main(["report", "figure1", "--data", str(data), "--runs", str(out), "--out", str(figure)]) == 0
    assert figure.stat().st_size > 10_000 and figure.with_name("figure3.png").exists()
    summary = json.loads(figure.with_suffix(".json").read_text())
    mass = summary["methods"]["pmd"]["mass_theta1_positive"]
    assert len(mass) == 1 and 0.0 <= mass[0] <= 1.0
    table = figure.with_name("table_mixture.md").read_text()
    assert f"| pmd | 1 | {summary['methods']['pmd']['tv']['mean']:.3g} |" in table  # one run: no standard error
    assert f"{mass[0]:.3f} [{mass[0]:.3f}, {mass[0]:.3f}] |" in table


@pytest.mark.workflow
def test_batched_seeds_leave_the_files_and_mlflow_runs_of_per_seed_runs(tmp_path, store):
    # SGLD does not resample, so its batched run equals its per-seed run up to float32 reassociation
    # (rtol 1e-4; tests/test_pmd_runner_batched.py says why a resampling method is compared step-wise)
    config = tiny_config(tmp_path)
    cfg = yaml.safe_load(config.read_text())
    cfg["mixture"]["batch_seeds"] = True  # vectorised seeds (without it a method's seeds run one after another)
    config.write_text(yaml.safe_dump(cfg))
    config = str(config)
    data, runs = tmp_path / "data.npz", tmp_path / "runs"
    params = json.dumps({"method": "sgld", "num_particles": 32, "burn_in": 5})
    assert cli.main(["--config", config, "init-store"]) == 0
    assert cli.main(["--config", config, "make-data", "mixture", "--out", str(data)]) == 0
    assert cli.main(["--config", config, "run", "mixture", "--method", "sgld", "--seed", "0", "1", "--params", params,
                     "--data", str(data), "--out", str(runs / "b0.npz"), str(runs / "b1.npz")]) == 0
    assert cli.main(["--config", config, "run", "mixture", "--method", "sgld", "--seed", "1", "--params", params,
                     "--data", str(data), "--out", str(runs / "s1.npz")]) == 0
    (batched, bmeta), (single, smeta) = load_npz(runs / "b1.npz"), load_npz(runs / "s1.npz")
    assert set(batched) == set(single) and set(bmeta) - set(smeta) == {"batched"} and bmeta["batched"] == 2
    assert bmeta["seed"] == 1 and bmeta["params"] == smeta["params"]
    for name in single:
        if name not in ("curve/wall_time", "curve/compile_time"):  # the clocks differ
            np.testing.assert_allclose(batched[name], single[name], rtol=1e-4, atol=1e-6, err_msg=name)
    assert not np.allclose(load_npz(runs / "b0.npz")[0]["curve/tv"], batched["curve/tv"])
    client = MlflowClient(store)
    found = client.search_runs([client.get_experiment_by_name("pmd-bench/mixture").experiment_id])
    by_tag = {(r.info.run_name, r.data.tags.get("pmd_bench.batched")) for r in found}
    assert by_tag == {("sgld-seed0", "2"), ("sgld-seed1", "2"), ("sgld-seed1", None)}
    histories = {r.data.tags.get("pmd_bench.batched"): client.get_metric_history(r.info.run_id, "tv")
                 for r in found if r.info.run_name == "sgld-seed1"}
    assert [m.step for m in histories["2"]] == [m.step for m in histories[None]]
    with pytest.raises(SystemExit):  # argparse: --seed needs a value
        cli.main(["--config", config, "run", "mixture", "--method", "sgld", "--seed", "--out", "x"])
    assert cli.main(["--config", config, "run", "mixture", "--method", "sgld", "--seed", "0", "1", "--params", params,
                     "--data", str(data), "--out", str(runs / "x.npz")]) == 2


def test_mass_on_the_right_mode_is_read_off_the_grid():
    axes = [np.linspace(-3, 3, 7), np.linspace(-4, 4, 5)]  # θ1 > 0 on 3 of 7 columns
    right = np.repeat(axes[0] > 0, 5)
    assert figure1.mass_right(np.where(right, 0.0, -np.inf), axes) == pytest.approx(1.0)
    assert figure1.mass_right(np.zeros(35), axes) == pytest.approx(3 / 7)
    assert figure1.mass_right(np.where(right, np.log(3.0), 0.0) - 50.0, axes) == pytest.approx(9 / 13)


def test_mixture_verdict_counts_runs_within_the_mass_tolerance_and_ranks_pmd():
    stats = lambda mean: {"mean": mean, "std": 0.0, "runs": 3}  # noqa: E731
    summary = {"floor": {"tv": 0.4, "tv_sharp": 0.1},
               "methods": {"pmd": {"tv": stats(0.3), "tv_sharp": stats(0.15), "mass_theta1_positive": [0.5, 0.62, 0.8]},
                           "npl": {"tv": stats(0.5), "tv_sharp": stats(0.12), "mass_theta1_positive": [0.54]},
                           "smc": {"tv": stats(0.6), "tv_sharp": stats(0.3), "mass_theta1_positive": [0.3]}}}
    text = figure1.verdict(summary, exact_mass=0.54)
    assert "within 0.1 of the exact 0.540 in **2 of 3** runs (largest miss 0.260)" in text
    assert "TV (paper's estimator): 0.75× the floor, ranks **1 of 3**" in text
    assert "TV (LOO KDE): 1.50× the floor, ranks **2 of 3** (behind npl)" in text
    assert figure1.verdict(summary, 0.54, label="pmd_paper") == ""
    (npl,) = figure1.particle_claims(summary, exact_mass=0.54)
    assert "`npl`'s mass on θ1 > 0 within 0.1 of the exact in **1 of 1** runs (largest miss 0.000)" in npl
    # ahead only where the difference exceeds twice its standard error: 0.3 against 2 × 0.1005, then 2 × 0.4
    summary["methods"]["opvi"] = {"tv_sharp": {"mean": 0.5, "se": 0.01, "runs": 3}, "mass_theta1_positive": [0.5]}
    summary["methods"]["svgd"] = {"tv_sharp": {"mean": 0.8, "se": 0.1, "runs": 3}, "mass_theta1_positive": [0.5]}
    assert ("`opvi` 0.5 ± 0.01 against `svgd` 0.8 ± 0.1 (mean ± standard error): **agrees**"
            in figure1.particle_claims(summary, 0.54)[1])
    summary["methods"]["svgd"]["tv_sharp"]["se"] = 0.4
    assert "**within the seeds' spread**" in figure1.particle_claims(summary, 0.54)[1]


@pytest.mark.workflow
def test_crashed_run_leaves_no_result_and_a_failed_mlflow_run(tmp_path, store, monkeypatch):
    config = config_mod.load(tiny_config(tmp_path))
    init_store(store, ["crash"])
    data, out = tmp_path / "data.npz", tmp_path / "out.npz"
    mixture.make_data(config["mixture"], data)

    def explode(*args, **kwargs):
        raise RuntimeError("disk full")

    monkeypatch.setattr(mixture, "display_density", explode)
    with pytest.raises(RuntimeError, match="disk full"):
        mixture.run_one(config["mixture"], "pmd", 0, data, out, store, "crash")
    assert not out.exists() and not list(tmp_path.glob(".out.npz*"))
    client = MlflowClient(store)
    (run,) = client.search_runs([client.get_experiment_by_name("crash").experiment_id])
    assert run.info.status == "FAILED"


@pytest.mark.workflow
def test_a_terminated_process_ends_its_mlflow_run_killed(tmp_path, store):
    """SIGTERM (a cancelled job) unwinds the run under the pmd-bench entry point's handler
    (workflow.cli.end_on_sigterm): exit status 143 and the MLflow run KILLED (the open run's own
    handler, workflow.tracking.tracked_run), not RUNNING forever."""
    init_store(store, ["terminated"])
    script = ("import time\nfrom pmd_bench.workflow.cli import end_on_sigterm\nfrom pmd_bench.workflow.tracking import tracked_run\n"
              "end_on_sigterm()\n"
              f"with tracked_run({store!r}, 'terminated', 'r', {{}}):\n"
              "    print('started', flush=True)\n    time.sleep(120)\n")
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True,
                            cwd=Path(__file__).resolve().parents[1])
    assert proc.stdout.readline().strip() == "started"
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=60) == 143
    client = MlflowClient(store)
    (run,) = client.search_runs([client.get_experiment_by_name("terminated").experiment_id])
    assert run.info.status == "KILLED"


def test_atomic_write_keeps_the_old_file_on_error(tmp_path):
    path = tmp_path / "r.npz"
    save_npz(path, {"a": np.arange(3)}, {"v": 1})
    with pytest.raises(TypeError):
        save_npz(path, {"a": np.arange(3)}, {"v": object()})  # meta not JSON-serialisable
    arrays, meta = load_npz(path)
    assert meta == {"v": 1} and list(arrays["a"]) == [0, 1, 2]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.npz"]


def test_result_files_get_the_umask_mode_and_an_npz_name(tmp_path):
    """mkstemp makes owner-only files; a finished result is readable like any other file."""
    umask = os.umask(0o022)
    os.umask(umask)
    path = tmp_path / "r.npz"
    save_npz(path, {"a": np.arange(3)}, {})
    assert path.stat().st_mode & 0o777 == 0o666 & ~umask
    with pytest.raises(ValueError, match="must end in .npz"):
        save_npz(tmp_path / "r.out", {"a": np.arange(3)}, {})


def _log_one(args):
    uri, index = args
    with tracked_run(uri, "parallel", f"worker-{index}", {"index": index}) as logger:
        for step in range(5):
            logger.log_metrics({"value": index * 10 + step}, step=step * 100)


@pytest.mark.workflow
def test_concurrent_runs_all_land_once_the_store_exists(tmp_path, store):
    """Measured with mlflow 3.17: concurrent first opens of a fresh SQLite store crash; once
    `init_store` has created it, concurrent writers all succeed."""
    init_store(store, ["parallel"])
    with mp.get_context("spawn").Pool(4) as pool:
        pool.map(_log_one, [(store, i) for i in range(8)])
    client = MlflowClient(store)
    runs = client.search_runs([client.get_experiment_by_name("parallel").experiment_id])
    assert len(runs) == 8 and all(r.info.status == "FINISHED" for r in runs)
    for r in runs:
        assert len(client.get_metric_history(r.info.run_id, "value")) == 5
    mlflow.set_tracking_uri(None)


@pytest.mark.workflow
def test_smooth_kernel_config_compares_the_kernels_and_nothing_else():
    """workflow/config/pmd_smooth.yaml (the README's redraw-kernel comparison) is a config of its
    own: its mixture and posteriordb sections hold the default PMD, ``pmd_smooth`` and
    ``pmd_neighbours``, identical but for the kernel's width, and a dry run plans all three at
    every mixture seed."""
    files = [CI_CONFIG.with_name("pmd_smooth.yaml")]
    cfg = plan.merged_config(files)
    config_mod.validate(cfg)
    assert cfg["results_dir"] != "results"
    for section in ("mixture", "posteriordb"):
        methods = cfg[section]["methods"]
        assert set(methods) == {"pmd", "pmd_smooth", "pmd_neighbours"}
        for label, kernel in (("pmd_smooth", {"kind": "local", "h2": 0.99}),
                              ("pmd_neighbours", {"kind": "local", "neighbours": 10})):
            variant = dict(methods[label])
            assert variant.pop("bandwidth") == kernel and variant.pop("method") == "pmd"
            assert variant == methods["pmd"]
    runs = {(w["method"], int(w["seed"])) for rule, w in plan.dry_run(files) if rule == "mixture_run"}
    assert runs == {(m, s) for m in ("pmd", "pmd_smooth", "pmd_neighbours") for s in range(cfg["mixture"]["seeds"])}


def test_a_job_exits_with_mains_code_and_its_output_flushed_without_the_teardown():
    """``python -m pmd_bench.workflow.cli`` leaves through ``exit_without_teardown``: the streams are flushed
    (piped stdout is block-buffered, so an unflushed line would be lost with ``os._exit``), the exit
    code is main's, and ``atexit`` handlers (where a native finaliser crashed once) do not run."""
    script = ("import atexit, logging, sys\nfrom pmd_bench.workflow.cli import exit_without_teardown\n"
              "atexit.register(lambda: print('teardown ran', flush=True))\n"
              "logging.basicConfig(stream=sys.stderr)\nlogging.getLogger('t').warning('logged')\n"
              "print('result written')\nprint('to stderr', file=sys.stderr)\nexit_without_teardown(3)\n")
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120,
                          cwd=Path(__file__).resolve().parents[1])
    assert proc.returncode == 3
    assert proc.stdout == "result written\n"
    assert "logged" in proc.stderr and "to stderr" in proc.stderr


@pytest.mark.workflow
def test_the_module_entry_point_returns_mains_exit_code():
    root = Path(__file__).resolve().parents[1]
    ok = subprocess.run([sys.executable, "-m", "pmd_bench.workflow.cli", "docs", "--check", "--sources",
                         "docs/sources.json"], capture_output=True, text=True, timeout=300, cwd=root)
    assert ok.returncode == 0, ok.stderr
    bad = subprocess.run([sys.executable, "-m", "pmd_bench.workflow.cli", "docs", "--block", "no-such-block"],
                         capture_output=True, text=True, timeout=300, cwd=root)
    assert bad.returncode == 2 and "no generated block 'no-such-block'" in bad.stderr
