"""A method added to a config runs alone: Snakemake schedules its runs and the tables that read
them, never another method's run; ``pmd-bench add-method`` refuses results of another config."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from pmd_bench.workflow import add_method, config as config_mod

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "my_method.py"
CI = ROOT / "workflow" / "config" / "ci.yaml"


def _snakemake(*args: str) -> str:
    out = subprocess.run([sys.executable, "-m", "snakemake", "--cores", "1", *args], cwd=ROOT, capture_output=True,
                         text=True, timeout=300)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    return out.stdout + out.stderr


def _jobs(text: str) -> dict[str, int]:
    """Snakemake's "Job stats" table of a dry run: rule -> jobs."""
    if "Nothing to be done" in text:
        return {}
    table = text.split("Job stats:")[1].split("total")[0]
    return {line.split()[0]: int(line.split()[1]) for line in table.splitlines()[3:] if line.strip()}


@pytest.mark.workflow
def test_an_added_method_schedules_only_its_runs_and_the_tables_that_read_them(tmp_path):
    results = tmp_path / "results"
    base = ["--configfile", str(CI), "--config", f"results_dir={results}"]
    summary = _snakemake("--summary", *base)
    then = time.time() - 100  # every output done, as a finished (or restored) campaign leaves them
    for line in summary.splitlines():
        path = Path(line.split("\t")[0])
        if line.startswith(str(results)) and "\t" in line:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.touch()
            os.utime(path, (then, then))
    tables = [str(results / "figures" / "table_mixture.md"), str(results / "figures" / "cost_mixture.md")]
    assert _jobs(_snakemake("-n", *base, "--forcerun", *tables, "--", *tables)) == {
        "mixture_figures": 1, "cost_report": 1}
    overlay = tmp_path / "mine.yaml"
    overlay.write_text(yaml.safe_dump({"mixture": {"methods": {"langevin": {
        "method": f"{EXAMPLE}:LangevinEnsemble"}}}}))
    added = ["--configfile", str(CI), str(overlay), "--config", f"results_dir={results}"]
    jobs = _jobs(_snakemake("-n", *added, "--forcerun", *tables, "--", *tables))
    seeds = config_mod.load(CI)["mixture"]["seeds"]
    assert jobs == {"mixture_run": seeds, "mixture_figures": 1, "cost_report": 1}


def test_labels_targets_and_the_config_check(tmp_path):
    from pmd_bench.workflow.methods import resolve

    cls = resolve(f"{EXAMPLE}:LangevinEnsemble")
    assert add_method.label_for(cls) == "langevin_ensemble"
    cfg = config_mod.load()
    assert set(add_method.experiments_for(cls, cfg)) - {"posteriordb"} == {"custom", "mixture", "logistic"}
    assert add_method.targets(cfg, ["custom", "mixture"], str(tmp_path)) == [
        f"{tmp_path}/custom/robust_regression/table.md", f"{tmp_path}/custom/robust_regression/cost.md",
        f"{tmp_path}/figures/cost_custom.md", f"{tmp_path}/figures/leaderboard_custom.md",
        f"{tmp_path}/figures/profiles_custom.md",
        f"{tmp_path}/figures/table_mixture.md", f"{tmp_path}/figures/cost_mixture.md",
        f"{tmp_path}/figures/leaderboard_mixture.md", f"{tmp_path}/figures/profiles_mixture.md"]
    made = tmp_path / "config.yaml"
    made.write_text(yaml.safe_dump(config_mod.with_defaults(cfg)))
    add_method.check_same_config(made, cfg, {}, "default")
    other = config_mod.with_defaults(cfg)
    other["mixture"]["seeds"] = 5
    made.write_text(yaml.safe_dump(other))
    with pytest.raises(add_method.AddMethodError, match=r"differs in mixture\.seeds"):
        add_method.check_same_config(made, cfg, {}, "default")


@pytest.mark.workflow
def test_a_method_from_outside_the_project_joins_the_defaults_leaderboards(tmp_path, capfd):
    """The README's promise: a method file outside the project, added to the default config's
    committed results, runs alone (Snakemake's job list holds only its runs and the tables) and
    has its rows, with work, seconds and error, in the mixture's and the custom model's tables."""

    outside = tmp_path / "elsewhere" / "langevin.py"
    outside.parent.mkdir()
    outside.write_text(EXAMPLE.read_text())
    results = tmp_path / "results"
    assert add_method.add(f"{outside}:LangevinEnsemble", label="mine", results_root=results) == 0
    out = capfd.readouterr()
    jobs = _jobs(out.out + out.err)
    cfg = config_mod.load()
    # a job per seed, or one per method where the config runs its seeds in one job
    runs = sum(1 if config_mod.seeds_in_one_job(cfg[e]) else cfg[e]["seeds"] for e in ("mixture", "logistic", "custom"))
    assert sum(n for rule, n in jobs.items() if "_run" in rule) == runs, jobs
    assert set(jobs) <= {"mixture_run", "logistic_run", "mixture_run_batched", "logistic_run_batched", "custom_run",
                         "mixture_figures", "logistic_figures", "cost_report", "profile_report",
                         "custom_model_report"}, jobs
    assert (results / "default" / "mixture" / "runs" / "mine" / "seed0.npz").is_file()
    for table in ("figures/cost_mixture.md", "custom/robust_regression/cost.md", "figures/table_mixture.md",
                  "figures/leaderboard_mixture.md", "figures/leaderboard_custom.md"):
        text = (results / "default" / table).read_text()
        assert "| mine |" in text, table
    restored = results / "default" / "mixture" / "runs" / "pmd" / "seed0.npz"
    assert restored.read_bytes() == (ROOT / "archive" / "default" / "mixture" / "runs" / "pmd" / "seed0.npz").read_bytes()
    # a results folder made with another config is refused
    (results / "default" / "config.yaml").write_text(yaml.safe_dump({**config_mod.with_defaults(cfg), "mixture": {
        **config_mod.with_defaults(cfg)["mixture"], "seeds": 7}}))
    with pytest.raises(add_method.AddMethodError, match="differs in mixture.seeds"):
        add_method.add(f"{outside}:LangevinEnsemble", label="again", results_root=results)


def test_the_committed_default_results_are_of_the_default_config_as_it_stands():
    """archive/default/ is what add-method puts beside a new method: when the default config
    changes, this fails until the campaign is run again and archived (README, archive/README.md)."""
    add_method.check_same_config(ROOT / "archive" / "default" / "config.yaml", config_mod.load(), {}, "default")


@pytest.mark.workflow
def test_a_restored_campaign_renders_its_tables_without_running_a_method(tmp_path, monkeypatch):
    """`pmd-bench archive restore default/`, then the Snakemake target of its leaderboards' digest
    (docs/results.md's two commands): the restored runs count as done (one mtime, the resolved config
    restored and the tracking store made by the restore), so only the table jobs are scheduled: each
    experiment's cost table and leaderboard, its profiles, and the digest; no touch, no --forcerun."""
    from pmd_bench.workflow import archive, cli

    from pmd_bench.datasets.settings import MIRROR_ENV

    monkeypatch.setattr(archive, "RESULTS", tmp_path)
    monkeypatch.setenv("MLFLOW_TRACKING_URI", f"sqlite:///{tmp_path / 'mlruns.db'}")
    monkeypatch.delenv(MIRROR_ENV, raising=False)  # the campaign ran without the mirror: no posteriordb stage
    assert cli.main(["archive", "restore", "default/"]) == 0
    assert (tmp_path / "default" / ".tracking-store").is_file()
    jobs = _jobs(_snakemake("-n", "--configfile", str(ROOT / "workflow" / "config" / "default.yaml"),
                            "--config", f"results_dir={tmp_path / 'default'}", "--",
                            str(tmp_path / "default" / "figures" / "leaderboard.md")))
    experiments = len(config_mod.EXPERIMENT_TARGETS) - 1  # every experiment of the default but posteriordb
    assert jobs == {"cost_report": experiments, "profile_report": experiments, "leaderboard": 1}, jobs
