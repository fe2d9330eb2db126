"""The ``custom`` experiment (workflow/experiments/custom.py): a user's PyMC model file through the
``pmd-bench`` verbs (NUTS reference behind the gate, floor, runs, MLflow, the tables), the README's
example file end to end, clear errors for bad model files, and the Snakemake rules."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
import yaml
from cli_helpers import cli_workspace
from mlflow.tracking import MlflowClient

from pmd_bench.reports.posteriordb import GOAL
from pmd_bench.workflow import cli
from pmd_bench.workflow import config as config_mod
from pmd_bench.workflow import model_file
from pmd_bench.workflow.results import load_npz

pytest.importorskip("pymc")

REPO = Path(__file__).resolve().parents[1]
EXAMPLE = REPO / "examples" / "custom_model.py"

CONJUGATE = '''
import numpy as np
import pymc as pm

Y = np.random.default_rng(0).normal(1.0, 1.0, size=50)


def model():
    with pm.Model() as m:
        mu = pm.Normal("mu", 0.0, 10.0)
        pm.Normal("y", mu, 1.0, observed=Y)
    return m
'''


def write(tmp_path: Path, text: str, name: str = "model.py") -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(text))
    return path


def exact_draws(chains: int = 4, draws: int = 500) -> np.ndarray:
    """Exact posterior draws of :data:`CONJUGATE`'s ``mu`` (prior N(0, 10²), unit-variance data)."""
    y = np.random.default_rng(0).normal(1.0, 1.0, size=50)
    precision = 1 / 100 + len(y)
    return np.random.default_rng(1).normal(np.sum(y) / precision, precision ** -0.5, size=(chains, draws))


@pytest.mark.parametrize("body, message", [
    ("x = 1\n", r"defines no model\(\) function"),
    ("def model():\n    return 3\n", r"model\(\) returned int, not a pymc.Model"),
])
def test_a_model_file_without_a_model_is_refused_naming_the_file(tmp_path, body, message):
    path = write(tmp_path, body)
    with pytest.raises(model_file.ModelFileError, match=message) as err:
        model_file.load(path, "bad")
    assert str(path) in str(err.value)


def test_a_missing_model_file_names_the_path_and_the_model(tmp_path):
    with pytest.raises(model_file.ModelFileError, match=r"model file .*nowhere.py \(custom model 'm'\) does not exist"):
        model_file.load(tmp_path / "nowhere.py", "m")


@pytest.mark.parametrize("draws, message", [
    ("{'nu': np.zeros((4, 10))}", r"missing \['mu'\], not in the model \['nu'\]"),
    ("{'mu': np.zeros((1, 10))}", r"\(chains >= 2, draws\)"),
    ("{'mu': np.full((4, 10), np.nan)}", "column 'mu' holds 40 non-finite draws"),
    ("np.zeros((4, 10, 1))", "returned ndarray; expected a dict"),
])
def test_bad_reference_draws_are_refused_naming_the_file(tmp_path, draws, message):
    path = write(tmp_path, CONJUGATE + f"\n\ndef reference_draws():\n    return {draws}\n")
    loaded = model_file.load(path, "conjugate")
    with pytest.raises(model_file.ModelFileError, match=message) as err:
        loaded.reference()
    assert f"{path}: reference_draws()" in str(err.value)


@pytest.mark.workflow
def test_the_files_reference_draws_replace_nuts_and_pmd_reaches_them(tmp_path, monkeypatch):
    """A model file's own exact draws are the reference (no NUTS), in the model's columns; the
    default PMD scored against them by the posteriordb scorer is within the suite's goal."""
    from pmd_bench.workflow.experiments import custom

    np.save(tmp_path / "draws.npy", exact_draws())
    path = write(tmp_path, CONJUGATE + f"\n\ndef reference_draws():\n    return {{'mu': np.load({str(tmp_path / 'draws.npy')!r})}}\n")
    cfg = {"models": {"conjugate": str(path)}, "seeds": 1, "steps_per_pass": 10, "num_passes": 2,
           "eval_samples": 200, "reference": {"chains": 4, "draws": 500, "tune": 500},
           "methods": {"pmd": {"num_particles": 200}}}
    meta = custom.make_reference(cfg, "conjugate", tmp_path / "reference.npz")
    assert meta["source"] == f"{path}: reference_draws()" and meta["columns"] == ["mu"]
    arrays, _ = load_npz(tmp_path / "reference.npz")
    np.testing.assert_array_equal(arrays["draws"][..., 0], exact_draws())
    floor = custom.make_floor(cfg, "conjugate", tmp_path / "reference.npz", tmp_path / "floor.json")
    assert floor["floor_samples"] == 200 and floor["iid"] and floor["num_data"] == 50
    uri = f"sqlite:///{tmp_path / 'mlruns.db'}"
    monkeypatch.setenv("MLFLOW_TRACKING_URI", uri)
    run = custom.run_one(cfg, "pmd", "conjugate", 0, tmp_path / "reference.npz", tmp_path / "pmd.npz", uri,
                         "pmd-bench/custom")
    assert run["status"] == "ok" and run["params"]["budget_points"] == 100  # 2 passes of 50 rows
    # the floor of 200 exact draws lies near 0.1 sd; the suite's goal is 0.5 / 0.3
    assert run["final"]["mean_error_max"] <= GOAL[0] and abs(run["final"]["log_std_ratio_max"]) <= GOAL[1]


def test_a_reference_of_other_columns_is_refused(tmp_path):
    from pmd_bench.workflow.experiments import custom
    from pmd_bench.workflow.results import save_npz

    save_npz(tmp_path / "reference.npz", {"draws": np.zeros((2, 10, 1))}, {"columns": ["nu"]})
    problem = model_file.load(write(tmp_path, CONJUGATE), "conjugate").problem
    with pytest.raises(ValueError, match=r"reference columns \['nu'\] are not the model's \['mu'\]"):
        custom.load_reference(tmp_path / "reference.npz", problem)


@pytest.fixture(scope="module")
def example_run(tmp_path_factory):
    """The README's example file through the verbs Snakemake's rules call: reference (NUTS, its own
    process), floor, two methods, the model's table and cost report."""
    root = tmp_path_factory.mktemp("custom")
    cfg = config_mod.load(config_mod.DEFAULT_CONFIG)
    cfg["results_dir"] = str(root / "results")
    cfg["custom"].update(models={"robust": str(EXAMPLE)}, num_passes=2, eval_samples=200,
                         reference={"chains": 4, "draws": 1000, "tune": 1000, "seed": 0},
                         methods={"pmd": {"num_particles": 200},
                                  # Langevin steps of size 1e6 throw the chain to infinity: a failed cell
                                  "sgld_diverges": {"method": "sgld", "num_particles": 4, "burn_in": 2, "a": 1e6}})
    with cli_workspace(root, cfg) as (config, uri):
        run_example_verbs(root, config, uri)
        yield root, uri


def run_example_verbs(root: Path, config: Path, uri: str) -> None:
    """``reference``, ``floor``, ``run`` (pmd, sgld_diverges), ``report custom`` and ``report cost``
    on the model ``robust``, as the rules call them, writing under ``root``."""
    base = ["--config", str(config)]
    ref = root / "reference.npz"
    # float64 NUTS: its own process, as the rule runs it
    done = subprocess.run([sys.executable, "-m", "pmd_bench.workflow.cli", *base, "reference", "custom", "--model",
                           "robust", "--out", str(ref)], env={**os.environ, "MLFLOW_TRACKING_URI": uri},
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    assert cli.main([*base, "floor", "custom", "--model", "robust", "--reference", str(ref),
                     "--out", str(root / "floor.json")]) == 0
    runs = []
    for method in ("pmd", "sgld_diverges"):
        runs.append(root / method / "seed0.npz")
        assert cli.main([*base, "run", "custom", "--model", "robust", "--method", method, "--seed", "0",
                         "--reference", str(ref), "--out", str(runs[-1])]) == 0
    assert cli.main(["report", "custom", "--data", str(root / "floor.json"), "--runs", *map(str, runs),
                     "--out", str(root / "table.md"), "--figure", str(root / "heatmap.png")]) == 0
    assert cli.main(["report", "cost", "--experiment", "custom", "--runs", *map(str, runs),
                     "--out", str(root / "cost.md"), "--figure", str(root / "cost.png")]) == 0


@pytest.mark.workflow
def test_the_example_model_file_runs_end_to_end(example_run):
    root, uri = example_run
    arrays, meta = load_npz(root / "reference.npz")
    assert meta["columns"] == ["alpha", "beta[0]", "beta[1]", "sigma"] and arrays["draws"].shape == (4, 1000, 4)
    assert meta["source"].startswith("NUTS") and meta["diagnostics"]["rhat_max"] <= 1.01
    _, pmd_run = load_npz(root / "pmd" / "seed0.npz")
    assert pmd_run["status"] == "ok" and pmd_run["posterior"] == "robust" and pmd_run["params"]["num_data"] == 400
    # measured 0.017 / 0.057 at 300 particles (floor at n = 300: 0.090 / 0.050); the suite's goal
    assert pmd_run["final"]["mean_error_max"] <= GOAL[0] and abs(pmd_run["final"]["log_std_ratio_max"]) <= GOAL[1]
    _, failed = load_npz(root / "sgld_diverges" / "seed0.npz")
    assert failed["status"] == "failed" and "FloatingPointError" in failed["error"]
    table = (root / "table.md").read_text()
    assert "# Methods against the custom models' reference posteriors" in table
    assert "| robust (N=400, d=4, Gaussian) |" in table and "failed [1]" in table
    assert "PMD (`pmd`) ranks **1 of 2**" in (root / "cost.md").read_text()
    runs = MlflowClient(uri).search_runs([MlflowClient(uri).get_experiment_by_name("pmd-bench/custom").experiment_id])
    status = {r.data.tags["mlflow.runName"]: r.info.status for r in runs}
    assert status == {"pmd-robust-seed0": "FINISHED", "sgld_diverges-robust-seed0": "FAILED"}
    assert {r.data.tags["experiment"] for r in runs} == {"custom"}


def test_the_cli_names_a_model_missing_from_the_config(example_run, capsys):
    root, _ = example_run
    code = cli.main(["--config", str(root / "config.yaml"), "reference", "custom", "--model", "nope",
                     "--out", str(root / "x.npz")])
    assert code != 0
    assert "model 'nope' is not in the config's custom.models (known: robust)" in capsys.readouterr().err


def _dry_run(tmp_path: Path, models: dict, **custom) -> dict[str, int]:
    cfg = yaml.safe_load(config_mod.DEFAULT_CONFIG.read_text())
    cfg["results_dir"] = str(tmp_path / "results")
    cfg["custom"].update(models=models, **custom)
    config = tmp_path / "config.yaml"
    config.write_text(yaml.safe_dump(cfg))
    done = subprocess.run([sys.executable, "-m", "snakemake", "-n", "--nolock", "--cores", "1", "--configfile",
                           str(config)], cwd=REPO, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    return {line.split()[0]: int(line.split()[1]) for line in done.stdout.splitlines()
            if line.startswith("custom_") and len(line.split()) == 2}


@pytest.mark.workflow
def test_snakemake_runs_every_method_on_every_named_model(tmp_path):
    methods = len(yaml.safe_load(config_mod.DEFAULT_CONFIG.read_text())["custom"]["methods"])
    jobs = _dry_run(tmp_path, {"a": str(EXAMPLE), "b": {"file": str(EXAMPLE)}, "left_out": None})
    assert jobs == {"custom_reference": 2, "custom_floor": 2, "custom_run": 2 * methods, "custom_model_report": 2,
                    "custom_report": 1}
    tuned = _dry_run(tmp_path, {"a": str(EXAMPLE)}, tuning={"grids": {"pmd": {"num_particles": [100, 300]},
                                                                       "svi": {"learning_rate": [0.01, 0.1]}}})
    assert tuned == {"custom_reference": 1, "custom_floor": 1, "custom_run": methods, "custom_tune": 2,
                     "custom_run_tuned": 2, "custom_model_report": 1, "custom_report": 1}


def test_the_readmes_model_file_is_the_example_file():
    """README.md shows examples/custom_model.py's code (the file the tests and the default run)."""
    from pmd_bench.reports import docs

    blocks = [b for b in docs.readme_python_blocks(docs.README.read_text()) if "def model()" in b]
    code = EXAMPLE.read_text().split('"""', 2)[2].strip()
    assert [b.strip() for b in blocks] == [code]


def test_the_agreement_table_pairs_cells_and_counts_verdicts():
    from pmd_bench.reports import agreement

    def summary(pmd_error, svi_error):
        floor = {"mean_error_max": 0.06, "log_std_ratio_max": 0.03}
        cells = {"pmd": {"mean_error_max": pmd_error, "log_std_ratio_max": 0.05},
                 "svi": {"mean_error_max": svi_error, "log_std_ratio_max": 0.1}}
        return {"methods": ["pmd", "svi"], "posteriors": {"kidiq": {"floor": floor, "methods": cells}}}

    text = agreement.compare(summary(0.10, 0.2), summary(0.14, 3.0))
    assert "| kidiq | 0.06 / 0.06 | 0.14 / 0.1 | 3 / 0.2 |" in text  # JAX (posteriordb) first
    assert "in **1 of 2** cells" in text
    assert "the largest difference of max |mean error| is 0.04 reference sd (pmd on kidiq)" in text
    with pytest.raises(ValueError, match="share no posterior"):
        agreement.compare(summary(0.1, 0.2), {"methods": [], "posteriors": {"other": {}}})


@pytest.mark.workflow
@pytest.mark.parametrize("one_datum", [False, True])
def test_tuning_a_custom_model_and_running_the_choice(tmp_path, one_datum):
    """``tune custom`` chooses a grid point by held-out LPD on the model's rows and ``run --tuning``
    runs it as ``<label>_tuned`` with the tuning in its file; a one-datum model (``datum_axis =
    None``) has no validation split: tuned by minus the kernel Stein discrepancy of its own draws
    on all the data, its choice run the same way."""
    from pmd_bench.workflow.experiments import custom

    np.save(tmp_path / "draws.npy", exact_draws())
    body = CONJUGATE + f"\n\ndef reference_draws():\n    return {{'mu': np.load({str(tmp_path / 'draws.npy')!r})}}\n"
    path = write(tmp_path, body + ("\ndatum_axis = None\n" if one_datum else ""))
    cfg = config_mod.load(config_mod.DEFAULT_CONFIG)
    cfg["results_dir"] = str(tmp_path / "results")
    grid = {"a": [0.0005, 0.005]}
    cfg["custom"].update(models={"conjugate": str(path)}, eval_samples=100, methods={"sgld": {"num_particles": 50}},
                         tuning={"seeds": 1, "grids": {"sgld": grid}})
    with cli_workspace(tmp_path, cfg) as (config, uri):
        custom.make_reference(cfg["custom"], "conjugate", tmp_path / "reference.npz")
        base = ["--config", str(config)]
        assert cli.main([*base, "tune", "custom", "--model", "conjugate", "--method", "sgld",
                         "--out", str(tmp_path / "tuning.json")]) == 0
        assert cli.main([*base, "run", "custom", "--model", "conjugate", "--method", "sgld", "--seed", "0",
                         "--reference", str(tmp_path / "reference.npz"), "--tuning", str(tmp_path / "tuning.json"),
                         "--out", str(tmp_path / "tuned.npz")]) == 0
    _, meta = load_npz(tmp_path / "tuned.npz")
    assert meta["method"] == "sgld_tuned" and meta["status"] == "ok"
    if one_datum:  # no row to hold out: scored by the Stein discrepancy of its draws on all the data
        assert "Stein" in meta["tuning"]["criterion"] and meta["tuning"]["fraction"] is None
        assert meta["tuning"]["chosen"]["a"] in grid["a"] and meta["params"]["method.a"] == meta["tuning"]["chosen"]["a"]
    else:
        assert meta["tuning"]["chosen"]["a"] in grid["a"] and meta["params"]["method.a"] == meta["tuning"]["chosen"]["a"]
        assert meta["tuning"]["evals"] > 0


@pytest.mark.workflow
def test_the_agreement_asked_for_without_a_mirror_fails_with_the_reason(tmp_path):
    """workflow/config/custom_posteriordb.yaml without an offline mirror: the posteriordb experiment is
    skipped, and asking for the agreement table fails with why, not with "no rule to produce"."""
    from pmd_bench.datasets.settings import MIRROR_ENV

    cfg = yaml.safe_load(config_mod.DEFAULT_CONFIG.read_text())
    overlay = yaml.safe_load((config_mod.DEFAULT_CONFIG.parent / "custom_posteriordb.yaml").read_text())
    cfg["results_dir"] = str(tmp_path / "results")
    cfg["posteriordb"].update(overlay["posteriordb"])
    cfg["custom"]["models"] = {k: v for k, v in overlay["custom"]["models"].items() if v}
    config = tmp_path / "config.yaml"
    config.write_text(yaml.safe_dump(cfg))
    env = {k: v for k, v in os.environ.items() if k != MIRROR_ENV}
    target = f"{cfg['results_dir']}/figures/custom_agreement.md"
    done = subprocess.run([sys.executable, "-m", "snakemake", "--nolock", "--cores", "1", target, "--configfile",
                           str(config)], cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode != 0
    assert "the custom and posteriordb tables cannot be compared: no offline mirror" in done.stdout + done.stderr
    assert not Path(target).exists()
