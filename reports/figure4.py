"""Figure 4 of Dai et al. 2016 (H.3.1): PMD's posterior predictive on the 1-D problem as it visits data.

One panel per iteration of 0, 1, 5, 10, 20, 50 and 80 that the run reached: the mixture predictive
of structured PMD (mean, ± 2 standard deviations of the latent function), from the first seed's
snapshots, against the ground truth: the true function (cyan, as the paper) and the exact GP's
posterior mean (black, dashed: the best any method of this model can do). The last panel: the
convergence of the posterior mean, its RMSE to the exact GP mean against iterations (mean ± sd
over seeds). Panels are numbered as drawn, in two rows past four panels, with no empty panel.
Iteration ``k`` is the evaluation after ``k`` steps (the ``gp1d`` problem evaluates after every
step).
"""

from __future__ import annotations

import math
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from .resultfiles import curve_stats, load_npz  # noqa: E402
from .styles import log_ticks, save  # noqa: E402

ITERATIONS = (0, 1, 5, 10, 20, 50, 80)


def _snapshot(ax, number: int, k: int, x, truth, mean, sd) -> None:
    ax.plot(x, truth["f"], color="c", lw=2, label="ground truth f")
    ax.plot(x, truth["exact_mean"], color="k", ls="--", lw=1, label="exact GP mean")
    ax.plot(x, mean, color="r", label="PMD mean")
    ax.fill_between(x, mean - 2 * sd, mean + 2 * sd, color="r", alpha=0.2, label="PMD ± 2 sd")
    ax.set(title=f"({number}) iteration {k}", ylim=(-1.5, 2.0), xlabel="x", ylabel="latent function f(x)")


def _grid(panels: int):
    """A figure of ``panels`` panels: one row up to four, else two rows; the grid's spare cells removed."""
    rows = 1 if panels <= 4 else 2
    cols = math.ceil(panels / rows)
    fig, axes = plt.subplots(rows, cols, figsize=(4.5 * cols, 4 * rows), squeeze=False)
    for ax in axes.flat[panels:]:
        fig.delaxes(ax)
    return fig, list(axes.flat[:panels])


def draw(truth_files: list[str | Path], run_files: list[str | Path]):
    """Figure 4 (module docstring) from the ``gp1d`` truth and PMD's ``gp1d`` run files."""
    truth, tmeta = next((a, m) for a, m in map(load_npz, truth_files) if m["problem"] == "gp1d")
    runs = sorted((load_npz(p) for p in run_files), key=lambda r: r[1]["seed"])
    runs = [r for r in runs if r[1]["problem"] == "gp1d"]
    if not runs or "snapshot/mean" not in runs[0][0]:
        raise FileNotFoundError("Figure 4 needs gp1d run files with snapshots (PMD's)")
    arrays, meta = runs[0]
    batch = meta["params"]["batch_size"]
    iteration = np.asarray(arrays["visited"]) // batch
    shown = [k for k in ITERATIONS if k in set(iteration.tolist())]
    fig, axes = _grid(len(shown) + 1)
    for number, (ax, k) in enumerate(zip(axes, shown), start=1):
        i = int(np.flatnonzero(iteration == k)[0])
        _snapshot(ax, number, k, truth["x"][:, 0], truth, arrays["snapshot/mean"][i], np.sqrt(arrays["snapshot/var"][i]))
    axes[0].legend(fontsize=7)
    visited, mean, std = curve_stats(runs, "rmse_exact")
    last = axes[-1]
    last.plot(visited // batch, mean, color="r")
    last.fill_between(visited // batch, mean - std, mean + std, color="r", alpha=0.2)
    last.set(yscale="log", xlabel="iteration", ylabel="RMSE to the exact GP mean",
             title=f"({len(axes)}) posterior convergence ({len(runs)} runs)")
    log_ticks(last.yaxis)
    particles = meta["params"].get("method.num_particles", "")
    fig.suptitle(f"Structured PMD, {particles} particles, M = {tmeta['num_inducing']} inducing inputs, "
                 f"batch {batch} (H.3.1)")
    fig.tight_layout()
    return fig


def render(truth_files: list[str | Path], run_files: list[str | Path], out: str | Path) -> None:
    """Render Figure 4 (:func:`draw`) to ``out``."""
    save(draw(truth_files, run_files), out, dpi=100)
