"""The command line's rough edges: a version, ``--config`` on either side of the verb,
errors that name the option at fault, a run before ``init-store``, the store's place."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from mlflow.tracking import MlflowClient

from pmd_bench.workflow import cli
from pmd_bench.workflow import config as config_mod
from pmd_bench.workflow.tracking import project_root, tracked_run, tracking_uri

ROOT = Path(__file__).resolve().parent.parent
CI_CONFIG = str(ROOT / "workflow" / "config" / "ci.yaml")


def test_version(capsys):
    with pytest.raises(SystemExit) as done:
        cli.main(["--version"])
    assert done.value.code == 0 and capsys.readouterr().out.startswith("pmd-bench ")


@pytest.mark.parametrize("before", [True, False])
def test_config_before_or_after_the_verb(tmp_path, monkeypatch, before):
    uri = f"sqlite:///{tmp_path / 'mlruns.db'}"
    monkeypatch.setenv("MLFLOW_TRACKING_URI", uri)
    args = ["--config", CI_CONFIG, "init-store"] if before else ["init-store", "--config", CI_CONFIG]
    assert cli.main(args) == 0
    assert MlflowClient(uri).get_experiment_by_name("pmd-bench/mixture") is not None


def test_bad_params_name_the_option(capsys):
    assert cli.main(["--config", CI_CONFIG, "run", "mixture", "--method", "pmd", "--seed", "0", "--data", "x",
                     "--out", "y", "--params", "{bad"]) == 2
    assert "--params is not valid JSON" in capsys.readouterr().err
    assert cli.main(["run", "mixture", "--method", "pmd", "--seed", "0", "--data", "x", "--out", "y",
                     "--params", "[1, 2]"]) == 2
    assert "--params must be a JSON object" in capsys.readouterr().err


def test_a_run_before_init_store_creates_its_experiment(tmp_path, capsys):
    uri = f"sqlite:///{tmp_path / 'mlruns.db'}"
    with tracked_run(uri, "pmd-bench/mixture", "a-run", {"seed": 0}):
        pass
    assert "creating the MLflow experiment 'pmd-bench/mixture'" in capsys.readouterr().err
    runs = MlflowClient(uri).search_runs([MlflowClient(uri).get_experiment_by_name("pmd-bench/mixture").experiment_id])
    assert [r.info.run_name for r in runs] == ["a-run"]


def test_the_embedded_store_is_at_the_project_root_from_any_subfolder(monkeypatch, tmp_path):
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    monkeypatch.chdir(ROOT / "tests")
    assert project_root() == ROOT and tracking_uri(None) == f"sqlite:///{ROOT / 'mlruns.db'}"
    monkeypatch.chdir(tmp_path)  # outside a checkout: the current folder
    assert tracking_uri(None) == f"sqlite:///{tmp_path / 'mlruns.db'}"


def test_the_data_command_names_itself():
    script = Path(sys.executable).parent / "pmd-bench-data"
    if not script.exists():
        pytest.skip(f"the console script is not installed beside {sys.executable}")
    out = subprocess.run([str(script), "--help"], capture_output=True, text=True, check=True).stdout
    assert out.startswith("usage: pmd-bench-data")


def test_pmd_bench_data_is_the_data_command(capsys):
    """One command family: ``pmd-bench data VERB`` runs the datasets' CLI and names itself so."""
    with pytest.raises(SystemExit) as ended:
        cli.main(["data", "--help"])
    assert ended.value.code == 0
    assert capsys.readouterr().out.startswith("usage: pmd-bench data")
    assert cli.main(["data", "list"]) == 0
    assert "mnist-small-6v8" in capsys.readouterr().out


def test_make_data_lists_the_experiments_that_make_data():
    assert sorted(cli.MAKES_DATA) == sorted(name for name, module in cli.EXPERIMENTS.items()
                                            if hasattr(module, "make_data"))


def test_help_version_and_data_start_without_the_heavy_libraries():
    """``pmd-bench --help``, ``--version`` and ``pmd-bench data`` parse and answer before JAX, MLflow or
    the peers' libraries are imported (they took seconds to start when the CLI imported them first)."""
    probe = """
import sys
from pmd_bench.workflow import cli
for argv in (["--help"], ["--version"], ["data", "--help"]):
    try:
        cli.main(argv)
    except SystemExit:
        pass
heavy = sorted(m for m in ("jax", "mlflow", "gensim", "tomotopy", "sklearn", "pymc") if m in sys.modules)
print("heavy:", heavy, file=sys.stderr)
"""
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "heavy: []" in done.stderr


@pytest.mark.parametrize("args, message", [
    (["reference", "logistic", "--out", "x.npz"], "reference logistic needs --data"),
    (["reference", "sparse_gp", "--problem", "gp1d", "--out", "x.npz"], "reference sparse_gp needs --problem"),
    (["reference", "custom", "--out", "x.npz"], "reference custom needs --model"),
    (["floor", "posteriordb", "--out", "x.json"], "floor posteriordb needs --posterior"),
    (["run", "custom", "--method", "pmd", "--seed", "0", "--out", "x.npz"], "run custom needs --model"),
])
def test_a_verb_missing_its_experiments_option_names_it(capsys, args, message):
    assert cli.main(args) != 0  # the embedded default config, which has every section
    assert message in capsys.readouterr().err


def test_a_skipped_stage_leaves_no_empty_mlflow_experiment(tmp_path, monkeypatch):
    uri = f"sqlite:///{tmp_path / 'mlruns.db'}"
    monkeypatch.setenv("MLFLOW_TRACKING_URI", uri)
    monkeypatch.delenv("PMD_BENCH_DATA_MIRROR", raising=False)
    assert cli.main(["init-store"]) == 0  # the embedded default: posteriordb needs a mirror
    names = {e.name for e in MlflowClient(uri).search_experiments()}
    assert "pmd-bench/mixture" in names and "pmd-bench/posteriordb" not in names
    assert "pmd-bench/table1" in names  # Table 1's measurements and Theorem 5's rate are runs too


def test_a_table1_measurement_is_an_mlflow_run(tmp_path, monkeypatch):
    """A Table 1 part (here SMC's error against m, at two particle counts and three seeds) is logged
    as a run of ``<prefix>/table1`` with its slope as a metric and its result file as an artifact,
    so MLflow users find Table 1 where they find every other run."""
    import yaml

    uri = f"sqlite:///{tmp_path / 'mlruns.db'}"
    monkeypatch.setenv("MLFLOW_TRACKING_URI", uri)
    cfg = config_mod.load(None)
    cfg["table1"]["rate"].update(particles=[30, 100], seeds=3)
    (tmp_path / "c.yaml").write_text(yaml.safe_dump(cfg))
    out = tmp_path / "smc.json"
    assert cli.main(["--config", str(tmp_path / "c.yaml"), "table1", "rate", "--method", "smc", "--out", str(out)]) == 0
    (run,) = MlflowClient(uri).search_runs([MlflowClient(uri).get_experiment_by_name("pmd-bench/table1").experiment_id])
    assert run.info.run_name == "rate-smc" and run.data.params["method"] == "smc"
    assert run.data.metrics["slope"] == json.loads(out.read_text())["slope"]


def test_a_wrong_run_command_is_refused_before_jax_is_imported():
    """The argument checks run before the heavy imports (JAX, MLflow, the methods), so a wrong
    command answers at once; checked in a fresh interpreter by what it imported, not by a clock."""
    code = ("import sys\nfrom pmd_bench.workflow.cli import main\n"
            "assert main(['run', 'mixture', '--method', 'pmd', '--seed', '0', '--out', 'x.npz']) == 2\n"
            "assert main(['run', 'custom', '--method', 'pmd', '--seed', '0', '--out', 'x.npz']) == 2\n"
            "print(sorted(m for m in ('jax', 'mlflow', 'pymc') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.stdout.strip() == "[]", out.stdout + out.stderr
    assert "run mixture needs --data" in out.stderr and "run custom needs --model" in out.stderr


def test_a_parameter_reads_alike_in_every_methods_runs():
    from pmd_bench.workflow.tracking import _flatten

    assert _flatten({"num_passes": 2.0, "lr": 0.5, "method": {"num_passes": 2, "x": True}}) == {
        "num_passes": 2, "lr": 0.5, "method.num_passes": 2, "method.x": True}
