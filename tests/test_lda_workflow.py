"""The LDA experiment end to end through the CLI: runs (a JAX method and a peer library), MLflow,
the table, the Figure 2(3) panel and Figure 5; and the configs that drive it."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import yaml
from mlflow.tracking import MlflowClient

from pmd.models import lda as lda_model
from pmd_bench.datasets.synthetic import prepare_lda_corpus
from pmd_bench.reports import lda as lda_report
from pmd_bench.reports.resultfiles import load_npz, mean_difference
from pmd_bench.workflow import cli, plan
from pmd_bench.workflow import config as config_mod

CONFIG_DIR = Path(config_mod.DEFAULT_CONFIG).parent


def _merge(base: dict, extra: dict) -> dict:
    """Snakemake's deep merge of config files."""
    out = dict(base)
    for key, value in extra.items():
        out[key] = _merge(out[key], value) if isinstance(value, dict) and isinstance(out.get(key), dict) else value
    return out


@pytest.mark.parametrize("name", ["ci.yaml", "default.yaml", "standard.yaml", "paper.yaml"])
def test_configs_have_a_valid_lda_section(name):
    cfg = config_mod.load(CONFIG_DIR / name)
    assert cfg["lda"]["figure5"]["method"] in cfg["lda"]["methods"]


def test_grid_overlay_merges_into_the_standard_config():
    merged = _merge(yaml.safe_load((CONFIG_DIR / "standard.yaml").read_text()),
                    yaml.safe_load((CONFIG_DIR / "lda_grid.yaml").read_text()))
    config_mod.validate(merged)
    assert set(merged["lda"]["grid"]["methods"]) <= set(merged["lda"]["methods"])
    assert merged["results_dir"] != "results"  # the overlay must not replace the default's resolved config


def test_synthetic_tuning_overlay_merges_over_the_standard_and_tuning_configs():
    merged = {}
    for name in ("standard.yaml", "tuning.yaml", "lda_synth_tuned.yaml"):
        merged = _merge(merged, yaml.safe_load((CONFIG_DIR / name).read_text()))
    config_mod.validate(merged)
    lda = merged["lda"]
    assert lda["dataset"] == lda["offline_dataset"] == "lda-synth" and merged["results_dir"] != "results"
    grids = lda["tuning"]["grids"]
    assert set(grids) == {"pmd", "pmd_m4", "svi", "svi_hoffman", "sgrld"} <= set(lda["methods"])
    for label, grid in grids.items():  # every point is a step size the method's schedule accepts
        for point in grid["step_size"]:
            assert lda_model.learning_rate(point)(1) > 0, (label, point)
    # one grid for the η/(n₀ + t^κ) methods, so that the choice compares settings, not grids
    assert grids["pmd"] == grids["pmd_m4"] == grids["svi"] == grids["sgrld"]


@pytest.mark.workflow
def test_lda_cli_end_to_end(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    store = f"sqlite:///{tmp_path / 'mlruns.db'}"
    monkeypatch.setenv("MLFLOW_TRACKING_URI", store)
    corpus = tmp_path / "corpus"
    prepare_lda_corpus(corpus, num_documents=80, vocabulary=30, topics=3, mean_length=20, heldout=20)
    cfg = config_mod.load(CONFIG_DIR / "ci.yaml")
    cfg["lda"].update(batch_size=20, eval_every=40, eval_sweeps=4, eval_burn_in=2,
                      figure5={"method": "pmd", "topics": 2, "words": 5})
    cfg["lda"]["methods"] = {k: cfg["lda"]["methods"][k] for k in ("pmd", "sklearn")}
    config = tmp_path / "config.yaml"
    config.write_text(yaml.safe_dump(cfg))
    assert cli.main(["--config", str(config), "init-store"]) == 0
    runs = []
    for method in ("pmd", "sklearn"):
        out = tmp_path / "runs" / method / "seed0.npz"
        assert cli.main(["--config", str(config), "run", "lda", "--method", method, "--seed", "0",
                         "--data", str(corpus), "--out", str(out)]) == 0
        arrays, meta = load_npz(out)
        assert list(arrays["visited"]) == [0, 40, 60], method  # evaluations every 40 documents, and the end
        assert arrays["top_words"].shape == (3, 10)
        assert meta["final"]["log_perplexity"] < 3.4  # log W = 3.40: better than a uniform guess
        assert meta["final"]["log_perplexity_common"] < 3.4 and meta["fold_in"]["sweeps"] == [6, 12, 24]
        assert meta["fold_in"]["log_perplexity"][-1] == meta["final"]["log_perplexity_common"]
        # the one estimator along the curve too (the LDA cost criterion reads it), at the ladder's last budget:
        # the final evaluation's differs from the ladder's value by its fold-in key only (measured 0.004 for pmd
        # and 0.006 for sklearn on this corpus; 0.05 leaves ten times that for another platform's rounding)
        common = arrays["curve/log_perplexity_common"]
        assert common.shape == (3,) and common[-1] == pytest.approx(meta["final"]["log_perplexity_common"], abs=0.05)
        runs.append(str(out))

    client = MlflowClient(store)
    (run,) = client.search_runs([client.get_experiment_by_name("pmd-bench/lda").experiment_id],
                                filter_string="tags.mlflow.runName = 'pmd-seed0'")
    assert run.info.status == "FINISHED" and run.data.params["method.method"] == "pmd_lda"
    assert [m.step for m in client.get_metric_history(run.info.run_id, "log_perplexity")] == [0, 40, 60]
    assert [a.path for a in client.list_artifacts(run.info.run_id, "result")] == ["result/seed0.npz"]

    # the report compares the label svi_hoffman with the peers: pmd's file under that label exercises it
    # (the comparison's numbers are not checked here; tests/test_lda_model.py checks the algorithm)
    stand_in = tmp_path / "runs" / "svi_hoffman" / "seed0.npz"
    stand_in.parent.mkdir()
    stand_in.write_bytes(Path(runs[0]).read_bytes())
    runs.append(str(stand_in))
    table, panel, fig5 = tmp_path / "table_lda.md", tmp_path / "curves_lda.png", tmp_path / "figure5.png"
    assert cli.main(["report", "lda", "--data", str(corpus), "--runs", *runs, "--out", str(table),
                     "--figure", str(panel)]) == 0
    text = table.read_text()
    assert all(f"| {m} | 1 |" in text for m in ("pmd", "sklearn", "svi_hoffman"))
    assert "against sklearn at equal K" in text and "Paper (Dai et al. 2016" in text
    assert "Ordering here, by mean final log-perplexity (one estimator)" in text
    assert "At the first evaluation (40 documents" in text and "over the fold-in ladder [6, 12, 24]" in text
    assert "| method | 6 sweeps | 12 sweeps | 24 sweeps | largest move 12 → 24 |" in text
    assert panel.stat().st_size > 10_000
    assert cli.main(["--config", str(config), "report", "figure5", "--data", str(corpus), "--runs", runs[0],
                     "--out", str(fig5)]) == 0
    assert fig5.stat().st_size > 10_000
    assert cli.main(["report", "figure5", "--data", str(corpus), "--runs", *runs, "--out", str(fig5)]) == 2


@pytest.mark.workflow
def test_peer_check_overlay_runs_the_peers_at_its_seeds():
    """lda_peers.yaml over the standard config: one lda_run per peer-check label and seed, and the
    check's table; the overlay keeps its own results folder (the standard run's resolved config is
    left alone)."""
    files = [CONFIG_DIR / "standard.yaml", CONFIG_DIR / "lda_peers.yaml"]
    merged = plan.merged_config(files)
    check = merged["lda"]["peer_check"]
    assert set(check["methods"]) <= set(merged["lda"]["methods"]) and merged["results_dir"] != "results"
    jobs = plan.dry_run(files)
    runs = {(w["method"], int(w["seed"])) for rule, w in jobs if rule == "lda_run"}
    assert {(m, s) for m in check["methods"] for s in range(check["seeds"])} <= runs
    assert [rule for rule, _ in jobs].count("lda_peer_check") == 1


def test_mean_difference_and_ordering_by_hand():
    # 7.0 - 7.2 = -0.2; se = sqrt(var([6.9, 7.1]) / 2 + 0) = sqrt(0.02 / 2) = 0.1
    diff, se = mean_difference([6.9, 7.1], [7.2])
    assert diff == pytest.approx(-0.2) and se == pytest.approx(0.1)

    def runs(*finals, start=7.5):
        return [({"visited": np.array([0, 100, 200]), "curve/log_perplexity": np.array([8.0, start, f])},
                 {"final": {"log_perplexity": f + 0.5, "log_perplexity_common": f}}) for f in finals]

    notes = lda_report.ordering_notes({"svi": runs(7.3, 7.5, start=7.4), "pmd": runs(7.1, 7.3), "sgrld": runs(7.6)})
    assert notes[0] == ("Ordering here, by mean final log-perplexity (one estimator) (lower is better): "
                        "pmd (7.2000) < svi (7.4000) < sgrld (7.6000).")
    assert notes[1].startswith("Ordering here, by mean final log-perplexity (H.4's per-family estimator)")
    assert "pmd (7.7000) < svi (7.9000)" in notes[1]
    assert notes[2] == ("At the first evaluation (100 documents visited, H.4's estimator): "
                        "svi (7.4000) < pmd (7.5000) < sgrld (7.5000).")
    assert notes[3].startswith("pmd − svi: -0.2000 ± 0.1414 nats") and notes[4].startswith("pmd − sgrld: -0.4000 ± 0.1000")


def test_grid_table_shows_the_best_points_and_writes_every_point_beside(tmp_path):
    from pmd_bench.workflow.results import save_npz

    files = []
    for i, (method, eta, value) in enumerate([("pmd", 0.1, 7.3), ("pmd", 0.5, 7.1), ("pmd", 1.0, 7.2), ("svi", 1.0, 7.4)]):
        path = tmp_path / f"{method}-{i}.npz"
        save_npz(path, {"visited": np.array([0])}, {"method": method, "final": {"log_perplexity": value},
                                                    "params": {"method.step_size": {"eta": eta, "n0": 10, "kappa": 0.7}}})
        files.append(path)
    text = lda_report.render_grid(files, tmp_path / "table_lda_grid.md", shown=2)
    assert "| pmd | 1 of 3 | η=0.5, n₀=10, κ=0.7 (best) | 1 | 7.1000 |" in text
    assert "| pmd | 2 of 3 | η=1, n₀=10, κ=0.7 | 1 | 7.2000 |" in text and "η=0.1" not in text
    assert "pmd 7.1000 to 7.3000; svi 7.4000 to 7.4000" in text
    every = (tmp_path / "table_lda_grid_all.md").read_text()
    assert "| pmd | 3 of 3 | η=0.1, n₀=10, κ=0.7 | 1 | 7.3000 |" in every


def test_perplexity_gap_by_hand():
    # means 100 and 100: no gap; se = 100 · sqrt(var([101, 99]) / (2 · 100²)) = 100 · sqrt(2 / 20000) = 1
    gap, se = lda_report.perplexity_gap([101.0, 99.0], [100.0, 100.0, 100.0])
    assert gap == pytest.approx(0.0) and se == pytest.approx(1.0)
    gap, se = lda_report.perplexity_gap([102.0], [100.0])  # one seed a side: a gap, no spread to give
    assert gap == pytest.approx(2.0) and se == 0.0


def test_fold_in_table_shows_the_estimate_at_every_rung_by_hand():
    """The table of the one estimator against its fold-in sweeps: each method's
    mean over seeds at every rung, the worst run's last-doubling move; runs folded in over different
    ladders are refused, since they would not be one estimator."""
    def run(values, sweeps=(25, 50, 100)):
        return None, {"fold_in": {"sweeps": list(sweeps), "log_perplexity": list(values)}}
    runs_by = {"pmd": [run([7.30, 7.20, 7.10]), run([7.50, 7.40, 7.14])],   # last moves 0.10 and 0.26
               "svi": [run([7.40, 7.35, 7.34])]}
    text = lda_report.fold_in_table(runs_by)
    assert "| method | 25 sweeps | 50 sweeps | 100 sweeps | largest move 50 → 100 |" in text
    assert "| pmd | 7.4000 | 7.3000 | 7.1200 | 0.2600 |" in text
    assert "| svi | 7.4000 | 7.3500 | 7.3400 | 0.0100 |" in text
    runs_by["svi"].append(run([7.4, 7.3, 7.3, 7.3], sweeps=(25, 50, 100, 200)))
    with pytest.raises(ValueError, match="different ladders"):
        lda_report.fold_in_table(runs_by)
