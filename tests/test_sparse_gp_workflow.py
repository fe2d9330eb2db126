"""The sparse-GP experiment end to end through the ``pmd-bench`` CLI on tiny problems, in one
subprocess (the experiment turns on JAX's float64 for its process): store, the MSD-shaped stand-in,
both truths, runs on both problems, the table, the Figure 2(2) panel and Figure 4."""

from __future__ import annotations

import numpy as np
import pytest
import yaml
from mlflow.tracking import MlflowClient

from cli_helpers import cli_in_subprocess
from pmd_bench.datasets.synthetic import prepare_gp1d
from pmd_bench.reports import sparse_gp as sgp_report
from pmd_bench.reports.resultfiles import load_npz
from pmd_bench.workflow.config import DEFAULT_CONFIG, validate

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def workspace(tmp_path_factory):
    root = tmp_path_factory.mktemp("sparse_gp")
    cfg = yaml.safe_load(DEFAULT_CONFIG.read_text())
    cfg["results_dir"] = str(root / "results")
    problem = {"noise_variance": 0.001, "bandwidth_scale": 0.1, "num_inducing": 8, "jitter": 1e-6, "batch_size": 32,
               "num_passes": 1, "eval_every": 32, "test_points": 50, "exact_gp": True, "dataset": "gp1d-synth"}
    cfg["sparse_gp"] = {
        "seeds": 1, "figure4_method": "pmd",
        "standin": {"train": 300, "test": 60, "dim": 5, "features": 256, "seed": 0},
        "problems": {"gp1d": problem,
                     "msd": {**problem, "dataset": "msd-standin", "noise_variance": 0.01, "bandwidth_scale": 1.0,
                             "test_points": None, "exact_gp": False, "batch_size": 50, "num_passes": 2,
                             "eval_every": 100}},
        "methods": {"pmd": {"method": "pmd_gp", "num_particles": 3},
                    "svi": {"method": "svi_gp", "step_size": {"kind": "harmonic"}}},
    }
    validate(cfg)
    config = root / "config.yaml"
    config.write_text(yaml.safe_dump(cfg))
    gp1d, standin = root / "gp1d.npz", root / "standin.npz"
    prepare_gp1d(gp1d, num_points=128)
    out = {name: root / f"{name}.npz" for name in ("truth_gp1d", "truth_msd")}
    calls = [
        ["init-store"],
        ["make-data", "sparse_gp", "--out", str(standin)],
        ["reference", "sparse_gp", "--problem", "gp1d", "--data", str(gp1d), "--out", str(out["truth_gp1d"])],
        ["reference", "sparse_gp", "--problem", "msd", "--data", str(standin), "--out", str(out["truth_msd"])],
        *[["run", "sparse_gp", "--problem", p, "--method", m, "--seed", "0", "--data", str(d), "--reference",
           str(out[f"truth_{p}"]), "--out", str(root / "runs" / p / m / "seed0.npz")]
          for p, m, d in (("gp1d", "pmd", gp1d), ("msd", "svi", standin))],
        ["report", "sparse-gp", "--data", str(out["truth_gp1d"]), str(out["truth_msd"]), "--runs",
         *[str(root / "runs" / p / m / "seed0.npz") for p, m in (("gp1d", "pmd"), ("msd", "svi"))],
         "--out", str(root / "table.md"), "--figure", str(root / "curves_sparse_gp.png")],
        ["report", "figure4", "--data", str(out["truth_gp1d"]), "--runs", str(root / "runs/gp1d/pmd/seed0.npz"),
         "--out", str(root / "figure4.png")],
    ]
    return root, cli_in_subprocess(config, calls, root)


@pytest.mark.workflow
def test_standin_noise_is_the_models(workspace):
    """y - f on the stand-in is the model's noise: its sd within 4 standard errors of sqrt(0.01)
    (the sample sd of 360 normals has standard error σ/sqrt(2·360))."""
    root, _ = workspace
    arrays, meta = load_npz(root / "standin.npz")
    assert arrays["X_train"].shape == (300, 5) and arrays["X_test"].shape == (60, 5)
    resid = np.concatenate([arrays["y_train"] - arrays["f_train"], arrays["y_test"] - arrays["f_test"]])
    assert abs(resid.std() - 0.1) < 4 * 0.1 / np.sqrt(2 * 360)
    assert meta["floor"]["noise_std"] == pytest.approx(0.1) and meta["standin"] is True


def test_runs_score_against_the_truth(workspace):
    root, _ = workspace
    truth, tmeta = load_npz(root / "truth_gp1d.npz")
    # the exact GP's mean is closer to f than the noisy targets are (their noise sd is 0.1)
    assert tmeta["exact"]["rmse_exact"] == 0.0 and tmeta["exact"]["rmse_f"] < 0.1
    arrays, meta = load_npz(root / "runs/gp1d/pmd/seed0.npz")
    assert list(arrays["visited"]) == [0, 32, 64, 96, 128]  # every step (Figure 4's iterations)
    assert arrays["snapshot/mean"].shape == (5, 50)
    curve = arrays["curve/rmse_exact"]
    assert curve[-1] < curve[0]  # the prior's mean (0) is farther from the exact GP than one pass
    svi, smeta = load_npz(root / "runs/msd/svi/seed0.npz")
    assert "elbo" in smeta and np.isfinite(smeta["elbo"]) and "curve/rmse_f" in svi
    assert 0.1 < smeta["peak_rss_gib"] < 24  # the process's peak: at least the Python/JAX runtime, below the machine


@pytest.mark.workflow
def test_reports_and_tracking(workspace):
    root, env = workspace
    text = (root / "table.md").read_text()
    for row in ("| exact GP", "| pmd |", "| svi |", "| best achievable (noise sd) |", "**Stand-in data**", "0.027",
                "by mean final RMSE to the exact-GP mean", "by mean final test RMSE",
                "peak memory, GiB (max over runs)"):
        assert row in text
    assert (root / "curves_sparse_gp.png").stat().st_size > 0 and (root / "figure4.png").stat().st_size > 0
    client = MlflowClient(tracking_uri=env["MLFLOW_TRACKING_URI"])
    exp = client.get_experiment_by_name("pmd-bench/sparse_gp")
    runs = client.search_runs([exp.experiment_id])
    assert {r.info.run_name for r in runs} >= {"truth-gp1d", "truth-msd", "gp1d-pmd-seed0", "msd-svi-seed0"}
    run = next(r for r in runs if r.info.run_name == "gp1d-pmd-seed0")
    assert run.data.params["method.num_particles"] == "3" and "rmse_exact" in run.data.metrics
    history = client.get_metric_history(run.info.run_id, "rmse_exact")
    assert [m.step for m in history] == [0, 32, 64, 96, 128]  # against data points visited
    assert client.list_artifacts(run.info.run_id, "result")


def _runs(*finals):
    """Run files' (arrays, meta) with test-RMSE curves ending at ``finals``, one run each."""
    return [({"visited": np.array([0, 100]), "curve/test_rmse": np.array([1.0, f])}, {}) for f in finals]


def test_visited_cell_names_the_range_where_runs_differ():
    """One number where the runs agree; where seeds ran at different budgets, both ends and how many
    runs read each, never their mean (the old cell: 927,681 for 8 runs at 927,744 and 2 at 927,430,
    a count no run read)."""
    agree = [({}, {"visited": 927_430})] * 3
    mixed = [({}, {"visited": 927_744})] * 8 + [({}, {"visited": 927_430})] * 2
    assert sgp_report.visited_cell(agree) == "927,430"
    assert sgp_report.visited_cell(mixed) == "927,430 (2 runs) to 927,744 (8 runs)"
    assert sgp_report.visited_cell(mixed[:9]) == "927,430 (1 run) to 927,744 (8 runs)"


def test_ordering_notes_by_hand():
    """The ranking and PMD's differences from the table's final scores: pmd (0.10, 0.12) − svi
    (0.14, 0.18) = -0.05, se = sqrt(var(0.10, 0.12)/2 + var(0.14, 0.18)/2) = sqrt(0.0001 + 0.0004)."""
    notes = sgp_report.ordering_notes({"svi": _runs(0.14, 0.18), "pmd": _runs(0.10, 0.12), "sod": _runs(0.3)}, exact=False)
    assert notes[0] == ("Ordering here, by mean final test RMSE (lower is better): "
                        "pmd (0.1100) < svi (0.1600) < sod (0.3000).")
    assert notes[1] == f"pmd − svi: -0.0500 ± {np.sqrt(0.0005):.4f} of final test RMSE (standard error over 2 and 2 seeds)."
    assert notes[2].startswith("pmd − sod: -0.1900 ± 0.0100 ") and len(notes) == 3  # no smc run: no smc note


def test_ordering_notes_set_each_untuned_pmd_variant_against_svi_alone():
    """pmd_move (0.09, 0.11) − svi (0.14, 0.18) = -0.06 with se sqrt(0.0002/2 + 0.0008/2) =
    sqrt(0.0005); pmd_move has no line against sod, and the tuned variant none at all."""
    notes = sgp_report.ordering_notes({"svi": _runs(0.14, 0.18), "pmd": _runs(0.10, 0.12), "sod": _runs(0.3),
                                       "pmd_move": _runs(0.09, 0.11), "pmd_tuned": _runs(0.05)}, exact=False)
    assert notes[3] == (f"pmd_move − svi: -0.0600 ± {np.sqrt(0.0005):.4f} of final test RMSE "
                        "(standard error over 2 and 2 seeds).")
    assert len(notes) == 4 and not any(n.startswith("pmd_tuned") for n in notes)


def test_standin_overlay_runs_the_paper_settings_on_the_standin():
    """sparse_gp_standin.yaml over the paper config: H.3.2's settings (M = 1,024, batch 512, 2
    passes, 16 particles, 10 seeds) with the msd problem's data the stand-in of the paper's shape,
    in its own results folder (the paper's resolved config is left alone)."""
    from pmd_bench.workflow import plan

    config_dir = DEFAULT_CONFIG.parent
    paper = yaml.safe_load((config_dir / "paper.yaml").read_text())
    merged = plan.merged_config([config_dir / "paper.yaml", config_dir / "sparse_gp_standin.yaml"])
    validate(merged)
    section = merged["sparse_gp"]
    assert merged["results_dir"] not in (paper["results_dir"], "results")
    assert section["problems"]["msd"]["dataset"] == "msd-standin"
    assert {k: v for k, v in section["problems"]["msd"].items() if k != "dataset"} == \
        {k: v for k, v in paper["sparse_gp"]["problems"]["msd"].items() if k != "dataset"}
    assert section["problems"]["msd"]["num_inducing"] == 1024 and section["seeds"] == 10
    assert (section["standin"]["train"], section["standin"]["test"], section["standin"]["dim"]) == (463715, 5163, 90)
    assert section["methods"] == paper["sparse_gp"]["methods"]
