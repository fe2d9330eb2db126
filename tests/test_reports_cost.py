"""The equal-cost view (reports/cost.py): cost to threshold on hand-made curves, the
table's PMD-rank sentence, the figure, and ``pmd-bench report cost`` end to end on fake run files."""

import math

import numpy as np
import pytest

from pmd.work import UNITS
from pmd_bench.reports import cost
from pmd_bench.workflow import cli
from pmd_bench.workflow.results import save_npz

VISITED = np.array([0, 10, 20, 30, 40])


def run(curves: dict, wall=(0.0, 1.0, 2.0, 3.0, 4.0), evals=(0.0, 5.0, 10.0, 15.0, 20.0), grads=None):
    """A run's arrays: ``curve/<metric>`` at VISITED, its wall time and work (None: not counted; no
    gradients unless ``grads``, so that its work in units is its ``evals``)."""
    arrays = {"visited": VISITED, "curve/wall_time": np.asarray(wall, float),
              **{f"curve/{k}": np.asarray(v, float) for k, v in curves.items()}}
    if evals is not None:
        arrays["curve/evals"] = np.asarray(evals, float)
        arrays["curve/grad_evals"] = np.asarray(np.zeros(len(evals)) if grads is None else grads, float)
    return arrays


def tv(arrays):
    return arrays["curve/tv"]


def test_the_cost_is_read_where_the_threshold_is_met_for_good_without_interpolation():
    runs = {"pmd": [(run({"tv": [1.0, 0.6, 0.4, 0.7, 0.3]}), {}),  # met at 20, left at 30, met again at 40: 40
                    (run({"tv": [1.0, 0.9, 0.8, 0.5, 0.4]}), {}),  # exactly at the threshold at 30, kept: 30
                    (run({"tv": [1.0, 0.9, 0.8, 0.7, 0.6]}), {}),  # never: not reached
                    (run({"tv": [0.3, 0.4, 0.9, 0.9, 0.9]}), {})]}  # met at its start, then left for good: not reached
    visited = cost.cost_to_threshold(runs, tv, lambda r: 0.5, "visited")["pmd"]
    assert visited.costs == (40.0, 30.0, math.inf, math.inf)
    assert visited.reached == 2 and math.isinf(visited.median)
    assert cost.cost_to_threshold(runs, tv, lambda r: 0.5, "wall_time")["pmd"].costs == (4.0, 3.0, math.inf, math.inf)
    assert cost.cost_to_threshold(runs, tv, lambda r: 0.5, "work")["pmd"].costs == (20.0, 15.0, math.inf, math.inf)
    gradients = {"pmd": [(run({"tv": [1.0, 0.6, 0.4, 0.7, 0.3]}, grads=(0.0, 5.0, 10.0, 15.0, 20.0)), {})]}
    charged = 1 + UNITS["grad_evals"]  # a value and its gradient, in units (pmd.work.UNITS)
    assert cost.cost_to_threshold(gradients, tv, lambda r: 0.5, "work")["pmd"].costs == pytest.approx((20.0 * charged,))
    kept = {"svi": [(run({"tv": [0.4] * 5}), {})]}  # met from the start: the cost of the first evaluation
    assert cost.cost_to_threshold(kept, tv, lambda r: 0.5, "visited")["svi"].costs == (0.0,)


def test_not_reached_by_half_the_seeds_has_no_median_cost():
    runs = {"svgd": [(run({"tv": [1.0, 0.4, 0.4, 0.4, 0.4]}), {}), (run({"tv": [1.0] * 5}), {})]}
    reach = cost.cost_to_threshold(runs, tv, lambda r: 0.5, "visited")["svgd"]
    assert reach.reached == 1 and math.isinf(reach.median)
    failed = {"svgd": [({"visited": np.zeros(0, np.int64)}, {"status": "failed"})]}  # no curves at all
    assert cost.cost_to_threshold(failed, tv, lambda r: 0.5, "visited")["svgd"].reached == 0


def test_uncounted_work_is_nan_not_a_cost():
    uncounted = run({"tv": [1.0, 0.4, 0.4, 0.4, 0.4]}, evals=(0.0, *[np.nan] * 4))
    before = run({"tv": [1.0, 0.4, 0.4, 0.4, 0.4]}, evals=None)  # a run file written before work was counted
    reach = cost.cost_to_threshold({"gibbs": [(uncounted, {}), (before, {})]}, tv, lambda r: 0.5, "work")["gibbs"]
    assert reach.reached == 2 and all(math.isnan(c) for c in reach.costs) and math.isnan(reach.median)
    assert cost._fmt(reach.median, "work") == "not counted" and cost._fmt(math.inf, "work") == "—"


def test_the_absolute_criteria_ask_for_both_bounds():
    logistic = cost.THRESHOLDS["logistic"]
    arrays = run({"mean_error_max": [0.4, 0.4, 0.4, 0.6, 0.4],
                  "log_std_ratio_max": [0.35, 0.25, 0.31, 0.1, 0.29],
                  # the averaged metrics would pass every evaluation: the criterion does not read them
                  "mean_error": [0.1] * 5, "log_std_ratio": [0.0] * 5})
    assert list(logistic.score(arrays) <= logistic.threshold({})) == [False, True, False, False, True]


def test_one_criterion_scores_every_moment_target():
    """posteriordb, the custom models and logistic regression: one criterion, the worst coordinate's
    mean error and log sd ratio (the posteriordb and custom ones split their runs by posterior)."""
    criteria = [cost.THRESHOLDS[e] for e in ("posteriordb", "custom", "logistic")]
    assert {(c.wording, c.metrics, c.bounds) for c in criteria} == {
        (cost.MOMENTS.wording, ("mean_error_max", "log_std_ratio_max"), (0.5, 0.3))}
    assert cost.THRESHOLDS["logistic"] is cost.MOMENTS


def test_relative_thresholds_come_from_the_floor_and_from_the_best_final(tmp_path):
    data = tmp_path / "data.npz"
    save_npz(data, {"log_prob": np.zeros(3)}, {"floor": {"tv": 0.9, "tv_sharp": 0.2}})
    assert cost.THRESHOLDS["mixture"].threshold({}, data) == pytest.approx(0.3)  # the LOO KDE's floor
    with pytest.raises(ValueError, match="--data"):
        cost.THRESHOLDS["mixture"].threshold({})
    runs = {"pmd": [(run({"log_perplexity_common": [9, 8, 7.1, 7.0, 7.0]}), {}),
                    (run({"log_perplexity_common": [9] * 4 + [8]}), {})],
            "svi": [(run({"log_perplexity_common": [9, 8, 7.5, 7.4, 7.4]}), {})]}
    assert cost.THRESHOLDS["lda"].threshold(runs) == pytest.approx(1.01 * 7.4)  # svi's 7.4 beats pmd's mean 7.5


def test_the_rank_sentence_says_where_pmd_stands():
    behind = cost.rank_sentence({"pmd": (2, 4, 100.0), "smc": (3, 4, 900.0), "svgd": (2, 4, 50.0),
                                 "sgld": (1, 4, 10.0)}, "visited", "posteriors")
    assert "ranks **3 of 4**" in behind and "behind `smc`, `svgd`" in behind and "2/4 posteriors reached" in behind
    # by the share of seeds: 2 of 2 beats 6 of 10, whatever the cost
    ahead = cost.rank_sentence({"pmd": (2, 2, 100.0), "smc": (6, 10, 50.0), "svi": (2, 2, 100.0)}, "work", "seeds")
    assert "ranks **1-2 of 3**" in ahead and "no method is ahead; level with `svi`" in ahead
    alone = cost.rank_sentence({"pmd": (2, 2, 100.0), "svi": (2, 2, 150.0)}, "work", "seeds")
    assert "ranks **1 of 2**" in alone and "ahead of every other method" in alone
    # methods that reached nothing tie at the bottom: PMD among them is not ranked above them
    none = cost.rank_sentence({"pmd": (0, 2, math.inf), "smc": (2, 2, 10.0), "svi": (0, 2, math.inf),
                               "sgld": (0, 2, math.inf)}, "work", "seeds")
    assert "ranks **2-4 of 4**" in none and "behind `smc`; level with `svi`, `sgld`; it reached nothing" in none
    assert "ranks **2 of 2**" in cost.rank_sentence({"pmd": (6, 10, 50.0), "smc": (2, 2, 900.0)}, "work", "seeds")
    assert "not ranked" in cost.rank_sentence({"smc": (3, 3, 900.0)}, "work", "seeds")


def write_runs(root, curves_by_method: dict, group: dict | None = None, **kwargs) -> list:
    """Run files ``root/<method>/seed<k>.npz`` of the curves given per method and seed."""
    paths = []
    for method, seeds in curves_by_method.items():
        for k, curves in enumerate(seeds):
            path = root / method / f"seed{k}.npz"
            save_npz(path, run(curves, **kwargs.get(method, {})), {"method": method, "seed": k, **(group or {})})
            paths.append(str(path))
    return paths


def test_posteriordb_table_has_a_column_per_posterior_and_ranks_pmd(tmp_path):
    good = {"mean_error_max": [2.0, 0.4, 0.3, 0.3, 0.3], "log_std_ratio_max": [1.0, 0.2, 0.2, 0.2, 0.2]}
    late = {"mean_error_max": [2.0, 1.0, 1.0, 0.4, 0.3], "log_std_ratio_max": [1.0, 0.2, 0.2, 0.2, 0.2]}
    never = {"mean_error_max": [2.0] * 5, "log_std_ratio_max": [1.0] * 5}
    files = (write_runs(tmp_path / "a", {"pmd": [good, good], "svgd": [late, late]}, {"posterior": "a"})
             + write_runs(tmp_path / "b", {"pmd": [good, never], "svgd": [late, late]}, {"posterior": "b"}))
    text = cost.render("posteriordb", files, tmp_path / "cost.md", tmp_path / "cost.png")
    first = text[:text.index("The other costs")]  # the work table; the seconds' table follows
    rows = {line.split(" | ")[0].strip("| "): line for line in first.splitlines() if line.startswith("| ")}
    assert rows["method"].split(" | ")[2:] == ["a", "b |"]
    assert rows["pmd"] == "| pmd | 1/2 | 5 (2/2) | — (1/2) |"  # work = evals: 5 at visited 10
    assert rows["svgd"] == "| svgd | 2/2 | 15 (2/2) | 15 (2/2) |"
    assert "PMD (`pmd`) ranks **2 of 2**" in text and "behind `svgd`" in text
    assert (tmp_path / "cost.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_several_targets_give_the_seconds_over_the_targets_each_method_reached(tmp_path):
    """Beside the work cells, the other costs: over the posteriors each method reached, the median
    of its per-posterior medians and their range. pmd reaches a and b at the second evaluation
    (10 points; 1.0 s with compilation, 1.0 - 0.75 = 0.25 s without), and c never; svgd reaches a
    at the fourth (30 points, 3 s) and b at the fifth (40, 4 s) and has no compilation clock (its
    run files predate it): its stepping is "not counted", not zero."""
    good = {"mean_error_max": [2.0, 0.4, 0.3, 0.3, 0.3], "log_std_ratio_max": [1.0, 0.2, 0.2, 0.2, 0.2]}
    never = {"mean_error_max": [2.0] * 5, "log_std_ratio_max": [1.0] * 5}
    late = {"mean_error_max": [2.0, 1.0, 1.0, 0.4, 0.3], "log_std_ratio_max": [1.0, 0.2, 0.2, 0.2, 0.2]}
    last = {"mean_error_max": [2.0, 1.0, 1.0, 1.0, 0.3], "log_std_ratio_max": [1.0, 0.2, 0.2, 0.2, 0.2]}
    files = []
    for posterior, curves in {"a": {"pmd": good, "svgd": late}, "b": {"pmd": good, "svgd": last},
                              "c": {"pmd": never, "svgd": never}}.items():
        for method, curve in curves.items():
            arrays = run(curve)
            if method == "pmd":
                arrays["curve/compile_time"] = np.array([0.0, 0.75, 0.75, 0.75, 0.75])
            path = tmp_path / posterior / method / "seed0.npz"
            save_npz(path, arrays, {"method": method, "seed": 0, "posterior": posterior})
            files.append(str(path))
    text = cost.render("posteriordb", files, tmp_path / "cost.md", tmp_path / "cost.png")
    second = text[text.index("The other costs"):]
    rows = {line.split(" | ")[0].strip("| "): line for line in second.splitlines() if line.startswith("| ")}
    assert rows["method"] == "| method | posteriors reached | visited | wall_time | stepping |"
    assert rows["pmd"] == "| pmd | 2/3 | 10 (10 to 10) | 1 (1 to 1) | 0.25 (0.25 to 0.25) |"
    assert rows["svgd"] == "| svgd | 2/3 | 35 (30 to 40) | 3.5 (3 to 4) | not counted |"


def test_sparse_gp_leaves_out_a_problem_without_test_rmse(tmp_path):
    files = (write_runs(tmp_path / "msd", {"pmd": [{"test_rmse": [1.0, 0.5, 0.3, 0.3, 0.3]}],
                                          "svi": [{"test_rmse": [1.0, 0.9, 0.5, 0.4, 0.3]}]}, {"problem": "msd"})
             + write_runs(tmp_path / "gp1d", {"pmd": [{"rmse_exact": [1.0] * 5}]}, {"problem": "gp1d"}))
    text = cost.render("sparse_gp", files, tmp_path / "cost.md", tmp_path / "cost.png")
    assert "Left out: problem `gp1d`" in text and "≤ 0.303." in text  # 1.01 × the best final, svi's 0.3
    assert "| pmd | 1/1 | 20 (20) | 2 (2) | 10 (10) |" in text and "| svi | 1/1 | 40 (40) | 4 (4) | 20 (20) |" in text


def test_cli_report_cost_end_to_end_on_the_mixture(tmp_path, capsys):
    data = tmp_path / "data.npz"
    save_npz(data, {"log_prob": np.zeros(3)}, {"floor": {"tv": 0.9, "tv_sharp": 0.2}})
    files = write_runs(tmp_path / "runs", {"pmd": [{"tv_sharp": [1.0, 0.5, 0.3, 0.25, 0.25]}] * 2,
                                           "gibbs": [{"tv_sharp": [1.0, 0.9, 0.8, 0.5, 0.28]}] * 2},
                       gibbs={"evals": (0.0, *[np.nan] * 4)})
    out, fig = tmp_path / "figures" / "cost_mixture.md", tmp_path / "figures" / "cost_mixture.png"
    argv = ["report", "cost", "--experiment", "mixture", "--runs", *files, "--out", str(out), "--figure", str(fig)]
    assert cli.main(argv) == 2 and "--data" in capsys.readouterr().err  # the floor is in the data file
    assert cli.main([*argv, "--data", str(data)]) == 0
    text = out.read_text()
    assert "TV (LOO KDE) ≤ 1.5 × the exact-draws floor's" in text and "≤ 0.3." in text
    assert "| pmd | 2/2 | 20 (20, 20) | 2 (2, 2) | 10 (10, 10) |" in text
    assert "| gibbs | 2/2 | 40 (40, 40) | 4 (4, 4) | not counted (not counted, not counted) |" in text
    assert "main measure is data points visited" in text and "PMD (`pmd`) ranks **1 of 2**" in text
    assert fig.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_cli_report_cost_needs_an_experiment_and_the_other_reports_still_need_data(tmp_path, capsys):
    files = write_runs(tmp_path, {"pmd": [{"tv": [1.0] * 5}]})
    assert cli.main(["report", "cost", "--runs", *files, "--out", str(tmp_path / "c.md")]) == 2
    assert "--experiment" in capsys.readouterr().err
    assert cli.main(["report", "figure1", "--runs", *files, "--out", str(tmp_path / "f.png")]) == 2
    assert "report figure1 needs --data" in capsys.readouterr().err


def test_after_tuning_each_method_is_ranked_once_at_its_tuned_row(tmp_path):
    keys = {"pmd": (1, 2, 100.0), "pmd_tuned": (2, 2, 80.0), "svi": (2, 2, 50.0), "svi_tuned": (2, 2, 200.0),
            "smc": (2, 2, 90.0)}
    assert cost.after_tuning(keys) == {"pmd": (2, 2, 80.0), "svi": (2, 2, 200.0), "smc": (2, 2, 90.0)}
    # at defaults PMD (1/2) is behind both; tuned, it reaches both seeds at the lowest cost
    text = cost.rank_sentence(cost.after_tuning(keys), "work", "seeds", tuned="pmd_tuned")
    assert "After tuning" in text and "PMD at `pmd_tuned`" in text and "ranks **1 of 3**" in text
    good = {"tv_sharp": [1.0, 0.5, 0.3, 0.25, 0.25]}
    late = {"tv_sharp": [1.0, 0.9, 0.8, 0.28, 0.25]}
    data = tmp_path / "data.npz"
    save_npz(data, {"log_prob": np.zeros(3)}, {"floor": {"tv": 0.9, "tv_sharp": 0.2}})
    untuned = write_runs(tmp_path / "a", {"pmd": [late], "svi": [good]})
    text = cost.render("mixture", untuned, tmp_path / "a.md", tmp_path / "a.png", data)
    assert "After tuning" not in text  # no tuning campaign: one sentence
    tuned = untuned + write_runs(tmp_path / "b", {"pmd_tuned": [good], "svi_tuned": [late]})
    text = cost.render("mixture", tuned, tmp_path / "b.md", tmp_path / "b.png", data)
    # every row ranked: pmd_tuned and svi reach at 20, pmd and svi_tuned at 30
    assert "PMD (`pmd`) ranks **3-4 of 4**" in text and "level with `svi_tuned`" in text
    assert "PMD at `pmd_tuned`): PMD ranks **1 of 2**" in text and "ahead of every other method" in text


def test_a_summary_reads_runs_written_before_and_after_a_new_curve():
    """Run files written before the runner recorded ``compile_time`` (2026-11-27) sit beside newer
    ones when only some seeds are rerun: the mixture summary keeps the curves every run holds (it
    read the first run's curves and failed on the next with a KeyError)."""
    from pmd_bench.reports.figure1 import summarize
    old = {"visited": np.array([0, 10]), "curve/tv": np.array([0.9, 0.4]), "curve/wall_time": np.array([0.0, 1.0])}
    new = {**old, "curve/compile_time": np.array([0.0, 0.5]), "curve/tv": np.array([0.8, 0.2])}
    summary = summarize({"pmd": [(new, {}), (old, {})]}, floors={})
    assert set(summary["methods"]["pmd"]) == {"tv", "wall_time"}
    assert summary["methods"]["pmd"]["tv"]["mean"] == pytest.approx(0.3)


def test_stepping_is_the_wall_time_less_the_compilation_and_only_where_a_run_timed_it():
    timed = run({"tv": [1.0, 0.6, 0.4, 0.4, 0.4]}, wall=(0.0, 6.0, 6.5, 7.0, 7.5))
    timed["curve/compile_time"] = np.array([0.0, 5.5, 5.5, 5.5, 5.5])
    runs = {"pmd": [(timed, {})]}
    assert cost.cost_to_threshold(runs, tv, lambda r: 0.5, "wall_time")["pmd"].costs == (6.5,)
    assert cost.cost_to_threshold(runs, tv, lambda r: 0.5, "stepping")["pmd"].costs == (pytest.approx(1.0),)
    older = run({"tv": [1.0, 0.6, 0.4, 0.4, 0.4]})  # written before the runner timed compilation
    assert not any(cost._counted([(older, {})], "stepping")) and all(cost._counted([(timed, {})], "stepping"))


def test_the_cost_figure_is_labelled_in_words_with_every_method_in_its_legend(tmp_path):
    runs = {"pmd": [(run({"tv_sharp": [1.0, 0.5, 0.3, 0.25, 0.25]}), {})],
            "svi": [(run({"tv_sharp": [1.0, 0.9, 0.8, 0.5, 0.28]}), {})]}
    drawn = cost.figure("mixture", {"": runs}, {"": 0.3}, [("", c) for c in ("visited", "wall_time", "work")],
                        tmp_path / "cost.png")
    assert drawn["legend"] == ["pmd", "threshold", "svi"] or set(drawn["legend"]) == {"pmd", "svi", "threshold"}
    for title, xlabel, ylabel in drawn["axes"]:
        for text in (title, xlabel, ylabel):
            assert text and not any(name in text for name in ("tv_sharp", "wall_time", "grad_evals", "_")), text
    assert [title for title, _, _ in drawn["axes"]] == ["data points read", "seconds", "work"]
    assert drawn["axes"][0][2] == "total variation (LOO KDE)"
