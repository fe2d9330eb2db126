"""``pmd-bench plan`` (workflow/plan.py): a config's jobs per rule from a dry run, each charged the
measured anchor of workflow/resources.py without its safety factor, and the wall time's upper
estimate on a number of job slots."""

from __future__ import annotations

import math

import pytest
import yaml

from pmd_bench.workflow import plan, resources

CI = plan.ROOT / "workflow/config/ci.yaml"


def test_expected_seconds_are_the_schedulers_runtime_without_its_safety_factor():
    config = plan.merged_config([CI])
    for method in config["mixture"]["methods"]:
        seconds = resources.expected_seconds("mixture_run", config, {"method": method})
        runtime = resources.estimate("mixture_run", config, {"method": method})["runtime"]
        assert runtime == max(resources.MIN_RUNTIME_MIN, math.ceil(resources.RUNTIME_SAFETY * seconds / 60))


def test_summary_adds_the_jobs_up_and_bounds_a_greedy_schedule():
    config = plan.merged_config([CI])
    jobs = [("mixture_run", {"method": m, "seed": "0"}) for m in config["mixture"]["methods"]]
    jobs.append(("mixture_figures", {}))
    each = [resources.expected_seconds(rule, config, wc) for rule, wc in jobs]
    out = plan.summarise(jobs, config, cores=2)
    assert out["jobs"] == len(jobs) and out["total_s"] == pytest.approx(sum(each))
    assert out["rules"]["mixture_run"]["jobs"] == len(jobs) - 1
    assert out["fixed_s"] == pytest.approx(sum(resources.ANCHORS[r].fixed_s for r, _ in jobs))
    assert out["wall_s"] == pytest.approx(sum(each) / 2 + max(each))  # Graham's bound


@pytest.mark.workflow
def test_the_ci_plan_lists_every_job_of_the_dry_run():
    config = plan.merged_config([CI])
    jobs = plan.dry_run([CI])  # raises if the parsed jobs disagree with snakemake's own job count
    runs = {(w["method"], int(w["seed"])) for rule, w in jobs if rule == "mixture_run"}
    assert runs == {(m, s) for m in config["mixture"]["methods"] for s in range(config["mixture"]["seeds"])}
    assert all(rule in resources.ANCHORS for rule, _ in jobs)


def test_a_missing_config_file_is_named(tmp_path):
    with pytest.raises(FileNotFoundError, match="nope.yaml"):
        plan.merged_config([tmp_path / "nope.yaml"])


def test_a_batched_job_is_charged_its_seeds_in_turn():
    config = plan.merged_config([CI])
    seeds = config["mixture"]["seeds"] = 3
    single = plan.summarise([("mixture_run", {"method": "pmd"})], config, cores=1)
    batched = plan.summarise([("mixture_run_batched", {"method": "pmd"})], config, cores=1)
    assert batched["total_s"] == pytest.approx(seeds * single["total_s"])


@pytest.mark.workflow
def test_with_no_config_named_the_embedded_default_runs_every_method_of_standard(monkeypatch):
    """`pmd-bench plan` with no config file plans the embedded default (the smoke size): with
    no offline mirror it still runs every method of the standard config (the former default) in
    every experiment that needs no mirror, and every figure's, Table 1's and the report's rule."""
    from pmd_bench.datasets.settings import MIRROR_ENV
    from pmd_bench.workflow.config import DEFAULT_CONFIG

    monkeypatch.delenv(MIRROR_ENV, raising=False)
    default = plan.merged_config([])
    standard = plan.merged_config([DEFAULT_CONFIG.with_name("standard.yaml")])
    jobs = plan.dry_run([])
    for experiment in ("mixture", "logistic", "sparse_gp", "lda"):
        ran = {w["method"] for rule, w in jobs if rule in (f"{experiment}_run", f"{experiment}_run_batched")}
        assert ran == set(standard[experiment]["methods"]), experiment
    assert set(default["posteriordb"]["methods"]) == set(standard["posteriordb"]["methods"])  # run with a mirror
    measured = {(w["part"], w["method"]) for rule, w in jobs if rule == "table1_measure"}
    assert measured == {(part, m) for part in ("rate", "cost") for m in standard["table1"][part]["methods"]}
    from pmd_bench.reports.table1 import CLAIMS  # the default probes the methods of Table 1's rows

    assert set(default["table1"]["black_box"]["methods"]) == {claim["key"][0] for claim in CLAIMS}
    assert standard["table1"]["black_box"]["methods"] is None  # standard: every registry method
    assert {"mixture_figures", "logistic_figures", "sparse_gp_figures", "sparse_gp_figure4", "lda_figures", "figure2",
            "table1_render", "rate", "cost_report", "report_html"} <= {rule for rule, _ in jobs}


@pytest.mark.workflow
def test_tunings_from_another_campaign_runs_its_choices_and_tunes_nothing(tmp_path):
    """With a tuning grid, a campaign tunes the method (a `tune` job) and runs it again as
    `<label>_tuned`; with `tunings_from` naming another results folder, the tuned runs read that
    folder's choice and no tune job is planned (the equal-work campaign's use of the tuning
    campaign's choices, workflow/config/equal_cost.yaml)."""
    grid = tmp_path / "grid.yaml"
    grid.write_text(yaml.safe_dump({"mixture": {"tuning": {"grids": {"sgld": {"a": [0.001, 0.01]}}}}}))
    own = plan.dry_run([CI, grid])
    assert [w["method"] for rule, w in own if rule == "tune"] == ["sgld"]
    (tmp_path / "tuned" / "mixture" / "tuning").mkdir(parents=True)
    (tmp_path / "tuned" / "mixture" / "tuning" / "sgld.json").write_text("{}")
    other = tmp_path / "other.yaml"
    other.write_text(yaml.safe_dump({"tunings_from": str(tmp_path / "tuned")}))
    borrowed = plan.dry_run([CI, grid, other])
    assert not [w for rule, w in borrowed if rule == "tune"]
    tuned = {(rule, w["method"]) for rule, w in borrowed if w.get("method") == "sgld"}
    assert ("run_tuned", "sgld") in tuned and tuned == {(rule, "sgld") for rule, w in own if w.get("method") == "sgld"
                                                         and rule != "tune"}
