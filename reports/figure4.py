"""Figure 4 of Dai et al. 2016 (H.3.1): PMD's posterior predictive on the 1-D problem as it visits data.

Panels (1)-(7): the mixture predictive of structured PMD (mean, ± 2 standard deviations of the
latent function) at iterations 0, 1, 5, 10, 20, 50 and 80 (those the run reached), from the first
seed's snapshots, against the ground truth: the true function (cyan, as the paper) and the exact
GP's posterior mean (black, dashed: the best any method of this model can do). Panel (8): the
convergence of the posterior mean, its RMSE to the exact GP mean against iterations (mean ± sd
over seeds). Iteration ``k`` is the evaluation after ``k`` steps (the ``gp1d`` problem evaluates
after every step).
"""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from .resultfiles import atomic_path, curve_stats, load_npz  # noqa: E402

ITERATIONS = (0, 1, 5, 10, 20, 50, 80)


def render(truth_files: list[str | Path], run_files: list[str | Path], out: str | Path) -> list[int]:
    """Render Figure 4 from the ``gp1d`` truth and PMD's ``gp1d`` run files; returns the iterations shown."""
    truth, tmeta = next((a, m) for a, m in map(load_npz, truth_files) if m["problem"] == "gp1d")
    runs = sorted((load_npz(p) for p in run_files), key=lambda r: r[1]["seed"])
    runs = [r for r in runs if r[1]["problem"] == "gp1d"]
    if not runs or "snapshot/mean" not in runs[0][0]:
        raise FileNotFoundError("Figure 4 needs gp1d run files with snapshots (PMD's)")
    arrays, meta = runs[0]
    batch = meta["params"]["batch_size"]
    iteration = np.asarray(arrays["visited"]) // batch
    shown = [k for k in ITERATIONS if k in set(iteration.tolist())]
    x = truth["x"][:, 0]
    fig, axes = plt.subplots(2, 4, figsize=(18, 8))
    for ax, k in zip(axes.flat, shown):
        i = int(np.flatnonzero(iteration == k)[0])
        mean, sd = arrays["snapshot/mean"][i], np.sqrt(arrays["snapshot/var"][i])
        ax.plot(x, truth["f"], color="c", lw=2, label="ground truth f")
        ax.plot(x, truth["exact_mean"], color="k", ls="--", lw=1, label="exact GP mean")
        ax.plot(x, mean, color="r", label="PMD mean")
        ax.fill_between(x, mean - 2 * sd, mean + 2 * sd, color="r", alpha=0.2, label="PMD ± 2 sd")
        ax.set(title=f"({shown.index(k) + 1}) iteration {k}", ylim=(-1.5, 2.0), xlabel="x")
    axes.flat[0].legend(fontsize=7)
    for ax in list(axes.flat)[len(shown):7]:
        ax.set_axis_off()
    visited, mean, std = curve_stats(runs, "rmse_exact")
    it = visited // batch
    last = axes.flat[7]
    last.plot(it, mean, color="r")
    last.fill_between(it, mean - std, mean + std, color="r", alpha=0.2)
    last.set(yscale="log", xlabel="iteration", ylabel="RMSE to the exact GP mean",
             title=f"(8) posterior convergence ({len(runs)} runs)")
    particles = meta["params"].get("method.num_particles", "")
    fig.suptitle(f"Structured PMD, {particles} particles, M = {tmeta['num_inducing']} inducing inputs, "
                 f"batch {batch} (H.3.1)")
    fig.tight_layout()
    with atomic_path(out) as tmp:
        fig.savefig(tmp, dpi=100)
    plt.close(fig)
    return shown
