"""Figure 2(1) of Dai et al. 2016 from the logistic-regression experiment's result files.

Panels against data points visited (log scale: Gibbs visits the whole training set every sweep),
mean ± one standard deviation over seeds for every method: (1) test error, as the paper, (2) test
log-likelihood of the posterior predictive, (3) energy distance and (4) posterior-mean error
(in reference standard deviations) to the NUTS reference, with the score of held-out NUTS draws
(dashed): the floor of a 1000-sample method. A JSON summary of the final values goes beside it.
"""

from __future__ import annotations

import json
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from .figure1 import summarize  # noqa: E402
from .resultfiles import atomic_path, curve_stats, load_npz, runs_by_method  # noqa: E402
from .styles import legend_outside, panel_styles, plot_line  # noqa: E402

PANELS = (
    ("test_error", "(1) test error", None),
    ("test_loglik", "(2) test log-likelihood", None),
    ("energy", "(3) energy distance to NUTS (standardised)", "energy"),
    ("mean_error", "(4) posterior-mean error (NUTS sd units)", "mean_error"),
)


def render(reference_path: str | Path, run_files: list[str | Path], out: str | Path) -> dict:
    """Render the figure to ``out`` and its summary to ``out`` with suffix ``.json``."""
    _, ref_meta = load_npz(reference_path)
    runs_by = runs_by_method(run_files)
    fig, axes = plt.subplots(1, len(PANELS), figsize=(5 * len(PANELS), 4.2))
    styles = panel_styles(runs_by)
    for ax, (metric, title, floor_key) in zip(axes, PANELS):
        for label, runs in runs_by.items():
            visited, mean, std = curve_stats(runs, metric)
            keep = visited > 0
            plot_line(ax, visited[keep], mean[keep], styles[label], label=f"{label} ({len(runs)} runs)")
            ax.fill_between(visited[keep], (mean - std)[keep], (mean + std)[keep], color=styles[label].color,
                            alpha=0.2)
        if floor_key is not None:
            ax.axhline(ref_meta["floor"][floor_key], color="k", ls="--", lw=1, label="held-out NUTS draws")
        if metric == "test_error":
            ax.axhline(ref_meta["predictive"]["test_error"], color="k", ls=":", lw=1, label="NUTS posterior")
        ax.set(xscale="log", xlabel="data points visited", title=title)
        if metric in ("energy", "mean_error"):
            ax.set_yscale("log")
    fig.tight_layout()
    legend_outside(fig, axes)
    out = Path(out)
    with atomic_path(out) as tmp:
        fig.savefig(tmp, dpi=110, bbox_inches="tight")
    plt.close(fig)
    summary = summarize(runs_by, ref_meta["floor"])
    summary["reference"] = {k: ref_meta[k] for k in ("diagnostics", "predictive", "num_data")}
    with atomic_path(out.with_suffix(".json")) as tmp:
        tmp.write_text(json.dumps(summary, indent=2, sort_keys=True))
    return summary
