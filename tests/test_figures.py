"""The report figures as readers see them, each rendered from small synthetic result files: one
legend entry per method drawn, every y-axis labelled and no axis label naming a result file's key
(``tv_sharp``, ``wall_time``), Figure 2's and Figure 4's panels numbered as drawn with none blank,
no two tick labels overlapping on Table 1's and the cost figure's log axes, and the heat map's
colour-bar label inside the figure."""

from __future__ import annotations

import itertools
import json
import re

import numpy as np
import pytest

from pmd_bench.reports import cost, figure2, figure4, lda, posteriordb, rate, sparse_gp, table1
from pmd_bench.workflow import cli
from pmd_bench.workflow.results import save_npz

VISITED = np.array([0, 100, 1000, 10000])
RAW_KEY = re.compile(r"\b[a-z0-9]+(?:_[a-z0-9]+)+\b")  # a result file's key: tv_sharp, wall_time, log_std_ratio_max
MATH = re.compile(r"\$[^$]*\$")  # mathtext ($E[\theta_1]$) is not a key


def write_runs(root, methods, metrics, meta=None, seeds=2, visited=VISITED) -> list[str]:
    """Run files ``root/<method>/seed<k>.npz``: each of ``metrics`` falling over ``visited``, a method's
    curve above the previous method's."""
    paths = []
    for i, method in enumerate(methods):
        for seed in range(seeds):
            curve = (1.0 + 0.2 * i + 0.01 * seed) / (1.0 + np.arange(len(visited)))
            path = root / method / f"seed{seed}.npz"
            save_npz(path, {"visited": visited, **{f"curve/{m}": curve for m in metrics}},
                     {"method": method, "seed": seed, **(meta or {})})
            paths.append(str(path))
    return paths


def logistic_files(root) -> tuple[str, list[str]]:
    reference = root / "reference.npz"
    save_npz(reference, {"draws": np.zeros((4, 3))},
             {"params": {"data": "results/data/mnist-small-6v8.npz"}, "predictive": {"test_error": 0.02},
              "floor": {"energy": 0.03, "mean_error": 0.05}, "diagnostics": {}, "num_data": 100})
    return str(reference), write_runs(root / "runs", ["pmd", "svi", "sgld"],
                                      ["test_error", "test_loglik", "energy", "mean_error"])


def sparse_gp_files(root) -> tuple[list[str], list[str]]:
    truths = [root / "msd.npz", root / "gp1d.npz"]
    save_npz(truths[0], {"x": np.zeros((3, 1))}, {"problem": "msd", "noise_std": 0.1, "standin": True})
    save_npz(truths[1], {"x": np.zeros((3, 1))}, {"problem": "gp1d", "noise_std": 0.1, "standin": False})
    runs = (write_runs(root / "msd", ["pmd", "svi", "smc"], ["test_rmse"], {"problem": "msd"})
            + write_runs(root / "gp1d", ["pmd", "svi"], ["rmse_exact", "var_ratio"], {"problem": "gp1d"}))
    return [str(t) for t in truths], runs


def lda_files(root) -> list[str]:
    meta = {"params": {"corpus": "results/data/lda-synth"}, "final": {"log_perplexity": 5.0}}
    return write_runs(root, ["pmd", "svi", "sgrld", "sklearn"], ["log_perplexity"], meta)


def labels_of(fig) -> list[str]:
    return [text for ax in fig.axes for text in (ax.get_xlabel(), ax.get_ylabel())]


def assert_in_words(fig) -> None:
    """Every panel's y-axis labelled; no axis label a result file's key."""
    assert all(ax.get_ylabel() for ax in fig.axes), [ax.get_title() for ax in fig.axes if not ax.get_ylabel()]
    raw = [text for text in labels_of(fig) if RAW_KEY.search(MATH.sub("", text))]
    assert not raw, raw


def legend_texts(fig) -> list[str]:
    legends = fig.legends or [ax.get_legend() for ax in fig.axes if ax.get_legend()]
    return [text.get_text() for legend in legends for text in legend.get_texts()]


def assert_one_entry_per_method(fig, methods) -> None:
    texts = legend_texts(fig)
    for method in methods:
        assert sum(t == method or t.startswith(f"{method} (") for t in texts) == 1, (method, texts)


def overlapping_ticks(fig, axis) -> list[tuple[str, str]]:
    """Pairs of tick labels drawn on ``axis`` (ticks in view, major and minor) whose boxes overlap."""
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    low, high = sorted(axis.get_view_interval())
    ticks = [*zip(axis.get_majorticklocs(), axis.get_majorticklabels()),
             *zip(axis.get_minorticklocs(), axis.get_minorticklabels())]
    boxes = [(label.get_text(), label.get_window_extent(renderer)) for loc, label in ticks
             if low <= loc <= high and label.get_visible() and label.get_text()]
    return [(a, b) for (a, box_a), (b, box_b) in itertools.combinations(boxes, 2) if box_a.overlaps(box_b)]


def test_figure2_draws_one_panel_per_experiment_numbered_and_in_words(tmp_path, drawn):
    summary = figure2.render(tmp_path / "figure2.png", logistic=logistic_files(tmp_path / "logistic"),
                             sparse_gp=sparse_gp_files(tmp_path / "sgp"), lda=lda_files(tmp_path / "lda"))
    (fig,) = drawn
    assert [ax.get_title() for ax in fig.axes] == ["(1) Bayesian logistic regression, MNIST 6 vs 8 (small)",
                                                   "(2) Sparse GP, MSD stand-in", "(3) LDA, synthetic corpus"]
    assert [ax.get_ylabel() for ax in fig.axes] == ["test error", "test RMSE", "held-out log-perplexity"]
    assert_in_words(fig)
    methods = ["pmd", "svi", "sgld", "smc", "sgrld", "sklearn"]
    lines = ["NUTS posterior", "best achievable (noise sd)", "paper's PMD on real MSD (0.027)"]
    assert sorted(legend_texts(fig)) == sorted(methods + lines)  # each method once, in all its panels
    assert all(ax.get_legend() is None for ax in fig.axes)
    assert summary["sparse_gp"]["final"]["smc"]["runs"] == 2
    assert json.loads((tmp_path / "figure2.json").read_text())["lda"]["title"] == "(3) LDA, synthetic corpus"


def test_figure2_leaves_out_the_panel_of_an_experiment_not_run(tmp_path, drawn):
    figure2.render(tmp_path / "figure2.png", logistic=logistic_files(tmp_path / "logistic"),
                   lda=lda_files(tmp_path / "lda"))
    (fig,) = drawn
    assert [ax.get_title() for ax in fig.axes] == ["(1) Bayesian logistic regression, MNIST 6 vs 8 (small)",
                                                   "(2) LDA, synthetic corpus"]
    with pytest.raises(ValueError, match="at least one of"):
        figure2.render(tmp_path / "none.png")


def test_the_workflows_command_draws_figure2_from_each_experiments_files(tmp_path, capsys):
    reference, runs = logistic_files(tmp_path / "logistic")
    truths, sgp_runs = sparse_gp_files(tmp_path / "sgp")
    out = tmp_path / "figures" / "figure2.png"
    argv = ["report", "figure2", "--data", reference, "--runs", *runs, "--lda-runs", *lda_files(tmp_path / "lda"),
            "--out", str(out)]
    assert cli.main([*argv, "--sparse-gp-runs", *sgp_runs]) == 2
    assert "--sparse-gp-data and --sparse-gp-runs together" in capsys.readouterr().err
    assert cli.main([*argv, "--sparse-gp-data", *truths, "--sparse-gp-runs", *sgp_runs]) == 0
    assert list(json.loads(out.with_suffix(".json").read_text())) == ["lda", "logistic", "sparse_gp"]
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_figure4_numbers_its_panels_as_drawn_and_leaves_none_blank(tmp_path, drawn):
    x = np.linspace(-0.5, 0.5, 20)
    truth = tmp_path / "truth.npz"
    save_npz(truth, {"x": x[:, None], "f": np.sin(x), "exact_mean": np.sin(x)}, {"problem": "gp1d", "num_inducing": 8})
    runs, steps = [], np.arange(11)  # iterations 0 to 10: Figure 4's 0, 1, 5 and 10
    for seed in range(2):
        runs.append(tmp_path / "runs" / "pmd" / f"seed{seed}.npz")
        save_npz(runs[-1], {"visited": 4 * steps, "curve/rmse_exact": 1.0 / (1.0 + steps),
                            "snapshot/mean": np.zeros((11, 20)), "snapshot/var": np.full((11, 20), 0.01)},
                 {"problem": "gp1d", "seed": seed, "params": {"batch_size": 4, "method.num_particles": 3}})
    figure4.render([truth], runs, tmp_path / "figure4.png")
    (fig,) = drawn
    assert len(fig.axes) == 5 and all(ax.axison and ax.has_data() for ax in fig.axes)
    assert [ax.get_title() for ax in fig.axes] == ["(1) iteration 0", "(2) iteration 1", "(3) iteration 5",
                                                   "(4) iteration 10", "(5) posterior convergence (2 runs)"]
    assert_in_words(fig)
    assert legend_texts(fig) == ["ground truth f", "exact GP mean", "PMD mean", "PMD ± 2 sd"]


def test_each_experiments_curves_have_a_legend_entry_per_method_and_axes_in_words(tmp_path, drawn):
    truths, runs = sparse_gp_files(tmp_path / "sgp")
    sparse_gp.figure(sparse_gp.by_problem(truths, runs), tmp_path / "curves_sparse_gp.png")
    assert_in_words(drawn[-1])
    assert [ax.get_title() for ax in drawn[-1].axes] == ["MSD stand-in: test RMSE", "1-D (H.3.1): RMSE to the exact GP mean",
                                                         "1-D (H.3.1): variance ratio to the exact GP"]
    assert_one_entry_per_method(drawn[-1], ["pmd", "svi", "smc"])
    lda.render_panel(lda_files(tmp_path / "lda"), tmp_path / "curves_lda.png")
    assert_in_words(drawn[-1])
    assert_one_entry_per_method(drawn[-1], ["pmd", "svi", "sgrld", "sklearn"])
    reference, runs = logistic_files(tmp_path / "logistic")
    figure2.render_curves(reference, runs, tmp_path / "curves_logistic.png")
    assert_in_words(drawn[-1])
    assert_one_entry_per_method(drawn[-1], ["pmd", "svi", "sgld"])


def test_table1s_and_the_rates_tick_labels_do_not_overlap(tmp_path, drawn):
    rate_result = {"particles": [100, 300, 1000], "rmse": [0.1, 0.06, 0.03], "seeds": 4, "slope": -0.52, "slope_se": 0.0}
    measured = {"particles": {"rows": [{"particles": m, "dim": 8, "seconds": 1e-3 * m, "peak_bytes": 1e4 * m}
                                       for m in (100, 300, 1000)]},
                "dim": {"rows": [{"particles": 100, "dim": d, "seconds": 1e-3 * d, "peak_bytes": 1e4 * d}
                                 for d in (2, 8, 32)]}}  # the default config's dimensions
    rows = [{"row": "PMD (particles)", "method": "pmd", "kde": False, "measured_rate": rate_result,
             "measured_cost": measured},
            {"row": "SGLD", "method": "sgld", "kde": False, "measured_rate": rate_result, "measured_cost": measured}]
    table1.figure({"rows": rows}, tmp_path / "table1.png")
    (tmp_path / "rate.json").write_text(json.dumps(rate_result))
    rate.render(tmp_path / "rate.json", tmp_path / "rate.png")
    table, rate_fig = drawn
    for fig in drawn:
        assert_in_words(fig)
        for ax in fig.axes:
            assert not overlapping_ticks(fig, ax.xaxis), (ax.get_title(), overlapping_ticks(fig, ax.xaxis))
            assert not overlapping_ticks(fig, ax.yaxis), (ax.get_title(), overlapping_ticks(fig, ax.yaxis))
    assert table.axes[2].get_xlabel() == "dimension d"
    assert_one_entry_per_method(table, ["PMD (particles)", "SGLD"])


def test_the_custom_models_cost_figure_is_in_words_and_its_seconds_ticks_do_not_overlap(tmp_path, drawn):
    files = []
    for i, method in enumerate(["pmd", "svi", "smc"]):
        for seed in range(2):
            path = tmp_path / "runs" / method / f"seed{seed}.npz"
            score = np.array([3.0, 2.0, 1.2, 0.8, 0.5]) * (1 + 0.3 * i)
            wall = np.array([0.0, 1.2, 2.5, 5.0, 9.5]) * (1 + 0.2 * i)  # seconds within one decade
            save_npz(path, {"visited": np.array([0, 40, 80, 120, 160]), "curve/wall_time": wall,
                            "curve/compile_time": np.full(5, 0.5), "curve/evals": 10.0 * np.arange(5),
                            "curve/grad_evals": 10.0 * np.arange(5), "curve/mean_error_max": 0.5 * score,
                            "curve/log_std_ratio_max": 0.3 * score},
                     {"method": method, "seed": seed, "posterior": "robust_regression"})
            files.append(str(path))
    cost.render("custom", files, tmp_path / "cost.md", tmp_path / "cost.png")
    (fig,) = drawn
    assert [ax.get_title() for ax in fig.axes] == ["data points read", "seconds", "work", "seconds without compilation"]
    seconds = fig.axes[1]
    assert not overlapping_ticks(fig, seconds.xaxis), overlapping_ticks(fig, seconds.xaxis)
    assert len([t for t in seconds.get_xticklabels() if t.get_text()]) >= 2  # the axis still reads
    assert_in_words(fig)
    assert_one_entry_per_method(fig, ["pmd", "svi", "smc"])


def test_the_heat_maps_colour_bar_label_lies_inside_the_figure(tmp_path, drawn):
    methods = ["pmd", "pmd_stream", "svi", "smc", "sgld", "npl", "svgd"]
    cell = lambda value: {"mean_error_max": value}  # noqa: E731
    summary = {"methods": methods,
               "posteriors": {"robust_regression": {"floor": cell(0.09), "methods": {m: cell(0.05 * (i + 1))
                                                                                   for i, m in enumerate(methods)}}}}
    posteriordb.heatmap(summary, tmp_path / "custom.png", posteriordb.TITLES["custom"])
    (fig,) = drawn
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    bar = fig.axes[1]
    for text in (bar.yaxis.label, fig.axes[0].title):
        box = text.get_window_extent(renderer)
        assert fig.bbox.x0 <= box.x0 and box.x1 <= fig.bbox.x1 and fig.bbox.y0 <= box.y0 and box.y1 <= fig.bbox.y1, \
            (text.get_text(), box, fig.bbox)
    assert_in_words(fig)
