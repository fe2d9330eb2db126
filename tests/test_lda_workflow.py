"""The LDA experiment end to end through the CLI: runs (a JAX method and a peer library), MLflow,
the table, the Figure 2(3) panel and Figure 5; and the configs that drive it."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from mlflow.tracking import MlflowClient

from datasets.synthetic import prepare_lda_corpus
from reports.resultfiles import load_npz
from workflow import cli
from workflow import config as config_mod

CONFIG_DIR = Path(config_mod.DEFAULT_CONFIG).parent


def _merge(base: dict, extra: dict) -> dict:
    """Snakemake's deep merge of config files."""
    out = dict(base)
    for key, value in extra.items():
        out[key] = _merge(out[key], value) if isinstance(value, dict) and isinstance(out.get(key), dict) else value
    return out


@pytest.mark.parametrize("name", ["ci.yaml", "default.yaml", "paper.yaml"])
def test_configs_have_a_valid_lda_section(name):
    cfg = config_mod.load(CONFIG_DIR / name)
    assert cfg["lda"]["figure5"]["method"] in cfg["lda"]["methods"]


def test_grid_overlay_merges_into_the_default():
    merged = _merge(yaml.safe_load(config_mod.DEFAULT_CONFIG.read_text()),
                    yaml.safe_load((CONFIG_DIR / "lda_grid.yaml").read_text()))
    config_mod.validate(merged)
    assert set(merged["lda"]["grid"]["methods"]) <= set(merged["lda"]["methods"])
    assert merged["results_dir"] != "results"  # the overlay must not replace the default's resolved config


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
    table, panel, fig5 = tmp_path / "table_lda.md", tmp_path / "figure2_lda.png", tmp_path / "figure5.png"
    assert cli.main(["report", "lda", "--data", str(corpus), "--runs", *runs, "--out", str(table),
                     "--figure", str(panel)]) == 0
    text = table.read_text()
    assert all(f"| {m} | 1 |" in text for m in ("pmd", "sklearn", "svi_hoffman"))
    assert "against sklearn at equal K" in text and "Paper (Dai et al. 2016" in text
    assert panel.stat().st_size > 10_000
    assert cli.main(["--config", str(config), "report", "figure5", "--data", str(corpus), "--runs", runs[0],
                     "--out", str(fig5)]) == 0
    assert fig5.stat().st_size > 10_000
    assert cli.main(["report", "figure5", "--data", str(corpus), "--runs", *runs, "--out", str(fig5)]) == 2
