"""Data and performance profiles with bootstrap bands (reports/profiles.py), on hand-made run files:
the shares and ratios of known costs, the bands, the separation of two profiles, the verdicts'
words and the figure's legend and axes."""

import json
import math

import numpy as np
import pytest

from pmd_bench.reports import profiles
from pmd_bench.workflow.results import save_npz

VISITED = np.array([0, 10, 20, 30])
# the score of a run that meets the criterion (score ≤ 1) for good from evaluation k (work 10·k): k = 4, never
REACH = {0: [0.5, 0.5, 0.5, 0.5], 1: [2, 0.5, 0.5, 0.5], 2: [2, 2, 0.5, 0.5], 3: [2, 2, 2, 0.5], 4: [2, 2, 2, 2]}


def _run(folder, method, seed, reach_at, posterior="p1", work=(0.0, 10.0, 20.0, 30.0), wall=(0.0, 1.0, 2.0, 3.0)):
    arrays = {"visited": VISITED, "curve/mean_error_max": np.asarray(REACH[reach_at], float) * 0.5,
              "curve/log_std_ratio_max": np.zeros(4), "curve/evals": np.asarray(work, float),
              "curve/grad_evals": np.zeros(4), "curve/wall_time": np.asarray(wall, float),
              "curve/compile_time": np.zeros(4)}
    path = folder / posterior / method / f"seed{seed}.npz"
    save_npz(path, arrays, {"method": method, "seed": seed, "posterior": posterior})
    return path


def _cells(table):
    """{target: {method: costs}} from plain lists."""
    return {t: {m: np.asarray(c, float) for m, c in by.items()} for t, by in table.items()}


def test_cells_read_the_cost_to_threshold_of_each_target_and_seed(tmp_path):
    files = [_run(tmp_path, "a", 0, 1, "p1"), _run(tmp_path, "a", 1, 2, "p1"),
             _run(tmp_path, "a", 0, 3, "p2"), _run(tmp_path, "a", 1, 4, "p2")]
    measured = profiles.cells("posteriordb", files)
    assert list(measured["work"]) == ["p1", "p2"]
    assert measured["work"]["p1"]["a"].tolist() == [10.0, 20.0]
    assert measured["work"]["p2"]["a"].tolist() == [30.0, math.inf]
    assert measured["seconds"]["p2"]["a"].tolist() == [3.0, math.inf]  # the wall clock less compilation


def test_the_data_profile_is_the_share_of_cells_within_each_budget():
    # 2 targets × 2 seeds, costs 10, 20 | 30, not reached: shares 0, .25, .5, .75 and no more
    found = profiles.data_profile(_cells({"p1": {"a": [10, 20]}, "p2": {"a": [30, math.inf]}}), resamples=50)["a"]
    at = lambda b: found.share[np.searchsorted(found.grid, b)]  # noqa: E731  (b on the grid)
    assert found.grid[0] == 5.0 and found.grid[-1] == pytest.approx(45.0)  # half the least, 1.5 × the most
    assert {10.0, 20.0, 30.0} <= set(found.grid)
    assert found.share[0] == 0.0 and (at(10), at(20), at(30)) == (0.25, 0.5, 0.75)
    assert found.share[-1] == 0.75 and np.all(np.diff(found.share) >= 0)


def test_the_performance_profile_divides_by_the_targets_best_work_over_every_method_and_seed():
    work = _cells({"p1": {"a": [10, 40], "b": [20, math.inf]}, "p2": {"a": [0, 5], "b": [30, 2]}})
    r = profiles.ratios(work)
    assert r["p1"]["a"].tolist() == [1.0, 4.0] and r["p1"]["b"].tolist() == [2.0, math.inf]
    assert r["p2"]["a"].tolist() == [1.0, 5.0]  # work 0 read as 1, so the best is 1 and its own ratio 1
    assert r["p2"]["b"].tolist() == [30.0, 2.0]
    found = profiles.performance_profile(work, resamples=50)
    a, b = found["a"], found["b"]
    assert a.grid[0] == 1.0
    at = lambda p, tau: p.share[np.searchsorted(p.grid, tau)]  # noqa: E731
    assert (at(a, 1), at(a, 4), at(a, 5)) == (0.5, 0.75, 1.0)
    assert (at(b, 1), at(b, 2), at(b, 30)) == (0.0, 0.5, 0.75)


def test_the_band_holds_the_point_estimate_and_stays_open_when_every_cell_is_alike():
    rng = np.random.default_rng(1)
    table = {f"p{t}": {"a": rng.choice([5.0, 10.0, 50.0, math.inf], 4), "b": rng.choice([8.0, 80.0, math.inf], 4)}
             for t in range(5)}
    found = profiles.profiles(_cells(table), _cells(table))
    for panel in profiles.PANELS:
        for p in found[panel].values():
            assert np.all(p.lower <= p.share + 1e-12) and np.all(p.share <= p.upper + 1e-12)
    assert np.any(found["work"]["a"].upper - found["work"]["a"].lower > 0.1)  # seeds disagree: a wide band
    # every cell alike: the bootstrap has no spread to show, the band is the Wilson interval of the
    # share over the 9 cells (all reached: 0.77 to 1 at 90 %), not a line that claims certainty
    alike = _cells({f"p{t}": {"a": [10.0] * 3, "b": [10.0] * 3} for t in range(3)})
    flat = profiles.profiles(alike, alike, resamples=200)
    low, high = profiles.wilson(np.array([0.0, 1.0]), 9, profiles.LEVEL)
    assert high[0] > 0.2 and 0.7 < low[1] < 0.8 and high[1] == 1.0
    for panel in profiles.PANELS:
        for p in flat[panel].values():
            np.testing.assert_allclose(p.lower, profiles.wilson(p.share, 9, profiles.LEVEL)[0])
            np.testing.assert_allclose(p.upper, profiles.wilson(p.share, 9, profiles.LEVEL)[1])
    assert flat["performance"]["a"].share[0] == 1.0  # every cell is its target's best
    two = profiles.wilson(np.array([1.0]), 2, profiles.LEVEL)  # two seeds that both reached
    assert 0.4 < two[0][0] < 0.45


def test_the_bootstrap_is_fixed_by_its_seed():
    table = _cells({"p1": {"a": [1.0, 3.0, math.inf]}, "p2": {"a": [2.0, 5.0, 9.0]}})
    one, two = profiles.data_profile(table, seed=3)["a"], profiles.data_profile(table, seed=3)["a"]
    assert np.array_equal(one.lower, two.lower) and np.array_equal(one.upper, two.upper)


def test_separated_finds_where_one_band_is_clear_of_the_other():
    grid = np.array([1.0, 2.0, 3.0])
    fast = profiles.Profile(grid, np.array([0.5, 0.9, 1.0]), np.array([0.4, 0.8, 0.9]), np.array([0.6, 1.0, 1.0]))
    slow = profiles.Profile(grid, np.array([0.1, 0.3, 0.95]), np.array([0.0, 0.2, 0.85]), np.array([0.2, 0.5, 1.0]))
    assert profiles.separated(fast, slow).tolist() == [1.0, 2.0]  # at 3 the bands overlap
    assert profiles.separated(slow, fast).tolist() == []
    assert profiles.verdict(fast, slow) == "not separated" and profiles.verdict(slow, slow) == "not separated"
    lead = profiles.Profile(grid, fast.share, fast.lower, np.ones(3))
    lag = profiles.Profile(grid, slow.share, slow.lower, np.array([0.2, 0.5, 0.8]))
    assert profiles.verdict(lead, lag) == "ahead" and profiles.verdict(lag, lead) == "behind"
    with pytest.raises(ValueError, match="different grids"):
        profiles.separated(fast, profiles.Profile(grid * 2, *([fast.share] * 3)))


def test_render_writes_the_figure_json_and_generated_verdicts(tmp_path):
    files = [_run(tmp_path, "pmd", s, 1, p) for p in ("p1", "p2") for s in (0, 1)]  # reaches everywhere
    files += [_run(tmp_path, "svi", s, 4, p) for p in ("p1", "p2") for s in (0, 1)]  # never reaches
    files += [_run(tmp_path, "sgld", s, *at) for s in (0, 1) for at in ((2, "p1"), (4, "p2"))]  # one target of two
    out = tmp_path / "profiles_posteriordb.png"
    result = profiles.render("posteriordb", files, out, resamples=200)
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    saved = json.loads(out.with_suffix(".json").read_text())
    assert saved["cells"]["pmd"] == {"cells": 4, "reached": 4} and saved["costs"]["work"]["p1"]["svi"] == [None, None]
    assert set(saved["panels"]) == {"work", "seconds", "performance"}
    assert result["verdicts"]["pairs"] == {"svi": "ahead", "sgld": "not separated"}
    text = out.with_suffix(".md").read_text()
    assert "**ahead** of `svi` (0/4)" in text and "**not separated** from `sgld` (2/4)" in text
    assert "**behind** no method" in text and "Few cells: 2 targets and 4 cells per method" in text
    assert "| pmd | 4/4 | 1.00 (0.60-1.00) |" in text  # 4 of 4: the Wilson interval's width
    assert text.rstrip().endswith("Run files made at commit `not recorded`.")  # these files predate the record


def test_the_figure_has_one_legend_entry_per_method_and_labelled_axes(tmp_path):
    work = _cells({"p1": {"pmd": [10, 20], "svi": [30, math.inf], "sgld": [math.inf, math.inf]}})
    found = profiles.profiles(work, work, resamples=50)
    labels = {m: f"{m} (x)" for m in ("pmd", "svi", "sgld")}
    fig = profiles.draw("posteriordb", found, labels)
    assert [t.get_text() for t in fig.legends[0].get_texts()] == list(labels.values())
    axes = fig.axes
    assert len(axes) == 3 and all(ax.get_xlabel() and ax.get_ylabel() and ax.get_title() for ax in axes)
    assert "work" in axes[0].get_xlabel() and "seconds" in axes[1].get_xlabel() and "τ" in axes[2].get_xlabel()
    import matplotlib.pyplot as plt

    plt.close(fig)


def test_a_method_that_does_not_count_seconds_is_left_out_of_that_panel_only():
    work = _cells({"p1": {"pmd": [10, 20], "old": [30, math.inf]}})
    seconds = _cells({"p1": {"pmd": [1, 2], "old": [math.nan, math.inf]}})
    found = profiles.profiles(work, seconds, resamples=20)
    assert found["seconds"]["old"] is None and found["work"]["old"] is not None
    assert found["seconds"]["pmd"].share[-1] == 1.0


def test_nothing_reached_says_so_and_compares_nothing(tmp_path):
    files = [_run(tmp_path, m, 0, 4) for m in ("pmd", "svi")]
    result = profiles.render("posteriordb", files, tmp_path / "profiles_x.png", resamples=20)
    assert result["verdicts"]["pairs"] == {"svi": "not separated"}
    assert result["text"][0].startswith("No method reached the criterion on any cell (2 cells, 1 target)")
