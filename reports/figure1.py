"""Figure 1 (and Figure 3) of Dai et al. 2016 from the mixture experiment's result files.

Top row, as the paper: (1) the true posterior, (2) PMD's posterior (averaged over seeds), (3)
total variation and (4) cross entropy against data points visited, mean ± one standard deviation
over seeds, scored the paper's way (a density-less posterior by the better of a KDE at 0.1 ×
median distance and a Gaussian fit). Bottom row: the same curves under the sharper leave-one-out
KDE, with the score of exact posterior draws under each estimator (dashed): the floor no method
can beat with that many samples. Figure 3 shows every method's posterior averaged over its runs.
A JSON summary of the final values goes beside the figure, and a Markdown table of them
(``table_mixture.md``): each score's final mean ± standard error over seeds (ddof = 1), and the posterior mass on
``θ1 > 0`` of every run's final density on the grid (the mode the paper's Figure 3 shows on the
right) as its mean and its range over seeds, beside the exact mass; under the table, the paper's
claim beside what PMD reached (:func:`verdict`) and the related papers' claims (:func:`particle_claims`).
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from .resultfiles import atomic_path, curve_stats, load_npz, mean_se, runs_by_method, shared_curves  # noqa: E402
from .styles import legend_outside, panel_styles, plot_line  # noqa: E402

PMD_LABEL = "pmd"


def _grid_axes(meta: dict) -> list[np.ndarray]:
    g = meta["grid"]
    return [np.linspace(lo, hi, n) for lo, hi, n in zip(g["lower"], g["upper"], g["size"])]


def _density_panel(ax, axes, log_prob: np.ndarray, title: str) -> None:
    z = np.exp(log_prob - log_prob.max()).reshape(len(axes[0]), len(axes[1]))
    ax.contourf(axes[0], axes[1], z.T, levels=12, cmap="viridis")
    ax.set(title=title, xlabel=r"$\theta_1$", ylabel=r"$\theta_2$")


def _mean_density(runs) -> np.ndarray:
    """The log of the seed-averaged normalised density on the grid."""
    dens = [np.exp(lp - np.logaddexp.reduce(lp)) for lp in (a["final_log_density"].astype(np.float64) for a, _ in runs)]
    return np.log(np.mean(dens, axis=0) + 1e-300)


def _curve_panel(ax, runs_by, metric: str, floor_value: float | None, ylabel: str) -> None:
    styles = panel_styles(runs_by)
    for label, runs in runs_by.items():
        visited, mean, std = curve_stats(runs, metric)
        plot_line(ax, visited, mean, styles[label], label=label)
        ax.fill_between(visited, mean - std, mean + std, color=styles[label].color, alpha=0.2)
    if floor_value is not None:
        ax.axhline(floor_value, color="k", ls="--", lw=1, label="exact draws")
    # Gibbs visits every datum per sweep and one-pass SMC stops after one pass: the axis spans
    # decades. Cross entropies of a missed mode are huge: symlog keeps both ends readable.
    ax.set_xscale("symlog", linthresh=10)
    ax.set_xlim(left=0)
    if metric.startswith("ce"):
        ax.set_yscale("symlog", linthresh=1)
        ax.set_ylim(bottom=min(floor_value if floor_value is not None else 0.0, 0.0) - 0.5)
    ax.set(xlabel="data points visited", ylabel=ylabel)


def mass_right(log_prob: np.ndarray, axes: list[np.ndarray]) -> float:
    """The mass of a density on the grid (log values, any normalisation) on ``θ1 > 0``."""
    p = np.exp(log_prob.astype(np.float64) - np.logaddexp.reduce(log_prob.astype(np.float64)))
    return float(p.reshape(len(axes[0]), len(axes[1]))[axes[0] > 0].sum())


def summarize(runs_by: dict, floors: dict, axes: list[np.ndarray] | None = None) -> dict:
    """Final mean, standard deviation and standard error (ddof = 1, :func:`reports.resultfiles.mean_se`)
    of every score per method over its runs, with the floors, and (given the mixture's grid ``axes``)
    each method's mass on ``θ1 > 0`` per run."""
    out = {"floor": floors, "methods": {}}
    for label, runs in runs_by.items():
        metrics = shared_curves(runs)
        finals = {m: np.array([a[f"curve/{m}"][-1] for a, _ in runs]) for m in metrics}
        out["methods"][label] = {m: {"mean": mean_se(v)[0], "std": float(v.std(ddof=1)) if len(v) > 1 else math.nan,
                                     "se": mean_se(v)[1], "runs": len(v)} for m, v in finals.items()}
        if axes is not None:
            out["methods"][label]["mass_theta1_positive"] = [mass_right(a["final_log_density"], axes) for a, _ in runs]
    return out


TABLE_SCORES = (("tv", "TV (paper's estimator)"), ("tv_sharp", "TV (LOO KDE)"), ("ce", "cross entropy (paper's estimator)"))


def table(summary: dict, exact_mass: float, floor_samples: int, floor_sd: dict | None = None) -> str:
    """The Markdown table of :func:`summarize`'s finals (module docstring); the floor row gives the
    mean score of sets of exact draws and, where the data file records it (``floor_sd``), the
    standard deviation of one set's score: a method's sample scored within it does as well as exact
    draws."""
    def cell(stats: dict | None) -> str:
        if stats is None:
            return "—"
        return f"{stats['mean']:.3g}" if math.isnan(stats["se"]) else f"{stats['mean']:.3g} ± {stats['se']:.2g}"

    floors = summary["floor"]
    head = ["method", "runs", *(name for _, name in TABLE_SCORES), f"mass on θ1 > 0 (exact {exact_mass:.3f}): mean [min, max]"]
    def floor_cell(key: str) -> str:
        if floors.get(key) is None:
            return "—"
        return f"{floors[key]:.3g}" + (f" (sd of one set {floor_sd[key]:.2g})" if floor_sd and key in floor_sd else "")

    rows = [[f"exact posterior draws ({floor_samples}, the floor)", "—", *(floor_cell(k) for k, _ in TABLE_SCORES),
             f"{exact_mass:.3f}"]]
    for label, m in summary["methods"].items():
        mass = np.asarray(m["mass_theta1_positive"])
        runs = next(v["runs"] for k, v in m.items() if isinstance(v, dict))
        rows.append([label, str(runs), *(cell(m.get(k)) for k, _ in TABLE_SCORES),
                     f"{mass.mean():.3f} [{mass.min():.3f}, {mass.max():.3f}]"])
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    return "\n".join(lines + ["| " + " | ".join(r) + " |" for r in rows]) + "\n"


MASS_TOLERANCE, FLOOR_FACTOR = 0.1, 2.0  # the project's goal for PMD at the paper's settings


def verdict(summary: dict, exact_mass: float, label: str = PMD_LABEL) -> str:
    """The paper's claim for the mixture beside what ``label`` reached, in the terms of the project's goal:
    every run's mass on ``θ1 > 0`` within ``MASS_TOLERANCE`` of the exact mass (both modes kept, in
    proportion), total variation within ``FLOOR_FACTOR`` × the exact-draw floor, and its rank among all
    methods on each estimator (the LOO KDE is the one that separates methods)."""
    if label not in summary["methods"]:
        return ""
    mine = summary["methods"][label]
    miss = np.abs(np.asarray(mine["mass_theta1_positive"]) - exact_mass)
    within = int((miss <= MASS_TOLERANCE).sum())
    parts = [f"`{label}`: mass on θ1 > 0 within {MASS_TOLERANCE} of the exact {exact_mass:.3f} in "
             f"**{within} of {len(miss)}** runs (largest miss {miss.max():.3f})"]
    for key, name in TABLE_SCORES[:2]:
        floor = summary["floor"].get(key)
        ranked = sorted((m[key]["mean"], other) for other, m in summary["methods"].items() if key in m)
        ahead = [other for value, other in ranked if value < mine[key]["mean"]]
        rank = f"ranks **{len(ahead) + 1} of {len(ranked)}**" + (f" (behind {', '.join(ahead)})" if ahead else "")
        ratio = f"{mine[key]['mean'] / floor:.2f}× the floor, " if floor else ""
        parts.append(f"{name}: {ratio}{rank}")
    return ("Paper (Dai et al. 2016, sec. 6, Figure 1, H.1): PMD reaches the lowest total variation and cross "
            f"entropy of the methods compared. Measured, against the project's goal for PMD (mass within {MASS_TOLERANCE} in "
            f"every run, TV within {FLOOR_FACTOR:g}× the floor, ahead of every competitor): " + "; ".join(parts) + ".")


def particle_claims(summary: dict, exact_mass: float) -> list[str]:
    """The claims of the competitors' own papers beside the runs that test them, for the labels
    present: paper 001's (Fong et al. 2019) that NPL's random restarts sample a multimodal
    posterior (every run's mass on ``θ1 > 0`` within ``MASS_TOLERANCE`` of the exact), and paper
    002's (Yang et al.) that a growing batch (``opvi``) beats a constant one (``svgd``) at equal data
    (LOO-KDE total variation, ahead only where the difference of the means exceeds twice its
    standard error)."""
    methods, out = summary["methods"], []
    for label in (k for k in ("npl", "npl_full") if k in methods):
        miss = np.abs(np.asarray(methods[label]["mass_theta1_positive"]) - exact_mass)
        out.append(f"\nPaper 001 (random restarts let NPL sample multimodal posteriors): `{label}`'s mass on θ1 > 0 "
                   f"within {MASS_TOLERANCE} of the exact in **{int((miss <= MASS_TOLERANCE).sum())} of {len(miss)}** "
                   f"runs (largest miss {miss.max():.3f}).")
    if "opvi" in methods and "svgd" in methods:
        a, b = methods["opvi"]["tv_sharp"], methods["svgd"]["tv_sharp"]
        se = math.hypot(a["se"], b["se"])  # the difference's standard error (independent seeds)
        word = ("not judged (no spread over the seeds)" if math.isnan(se) else "agrees" if b["mean"] - a["mean"] > 2 * se
                else "reversed" if a["mean"] - b["mean"] > 2 * se else "within the seeds' spread")
        out.append(f"\nPaper 002 (a growing batch beats a constant one at equal data): TV (LOO KDE) `opvi` "
                   f"{a['mean']:.3g} ± {a['se']:.2g} against `svgd` {b['mean']:.3g} ± {b['se']:.2g} (mean ± standard "
                   f"error): **{word}**.")
    return out


def render(data_path: str | Path, run_files: list[str | Path], out: str | Path) -> dict:
    """Render Figure 1 to ``out`` and Figure 3 beside it (``figure3.png``), with a summary JSON."""
    arrays, meta = load_npz(data_path)
    axes = _grid_axes(meta)
    runs_by = runs_by_method(run_files)
    floors = meta["floor"]
    fig, ax = plt.subplots(2, 4, figsize=(18, 8.5))
    _density_panel(ax[0, 0], axes, arrays["log_prob"], "(1) true posterior")
    if PMD_LABEL in runs_by:
        _density_panel(ax[0, 1], axes, _mean_density(runs_by[PMD_LABEL]), "(2) PMD posterior (mean of runs)")
    else:
        ax[0, 1].set_axis_off()
    _curve_panel(ax[0, 2], runs_by, "tv", floors["tv"], "total variation (paper's estimator)")
    _curve_panel(ax[0, 3], runs_by, "ce", floors["ce"], "cross entropy (paper's estimator)")
    _curve_panel(ax[1, 2], runs_by, "tv_sharp", floors["tv_sharp"], "total variation (LOO KDE)")
    _curve_panel(ax[1, 3], runs_by, "ce_sharp", floors["entropy"], "cross entropy (LOO KDE); floor = entropy")
    ax[1, 0].set_axis_off()
    ax[1, 1].set_axis_off()
    ax[1, 0].text(0, 0.5, _caption(floors, meta["floor_samples"]), fontsize=9, va="center", family="monospace")
    fig.tight_layout()
    legend_outside(fig, ax[:, 2:])
    out = Path(out)
    with atomic_path(out) as tmp:
        fig.savefig(tmp, dpi=110, bbox_inches="tight")
    plt.close(fig)

    n = len(runs_by) + 1
    cols = min(n, 4)
    fig3, ax3 = plt.subplots(math.ceil(n / cols), cols, figsize=(4.2 * cols, 3.8 * math.ceil(n / cols)), squeeze=False)
    _density_panel(ax3.flat[0], axes, arrays["log_prob"], "true posterior")
    for a, (label, runs) in zip(ax3.flat[1:], runs_by.items()):
        _density_panel(a, axes, _mean_density(runs), f"{label} (mean of {len(runs)} runs)")
    for a in list(ax3.flat)[n:]:
        a.set_axis_off()
    fig3.tight_layout()
    with atomic_path(out.with_name("figure3.png")) as tmp:
        fig3.savefig(tmp, dpi=110)
    plt.close(fig3)

    summary = summarize(runs_by, floors, axes)
    with atomic_path(out.with_suffix(".json")) as tmp:
        tmp.write_text(json.dumps(summary, indent=2, sort_keys=True))
    with atomic_path(out.with_name("table_mixture.md")) as tmp:
        tmp.write_text("\n".join([table(summary, meta["mass_theta1_positive"], meta["floor_samples"], meta.get("floor_sd")),
                                   verdict(summary, meta["mass_theta1_positive"]),
                                   *particle_claims(summary, meta["mass_theta1_positive"])]) + "\n")
    return summary


def _caption(floors: dict, num_samples: int) -> str:
    return (f"Scores of {num_samples} exact posterior draws\n(the floor for sample-based methods):\n"
            f"  TV, paper's estimator  {floors['tv']:.3f}\n"
            f"  TV, LOO KDE            {floors['tv_sharp']:.3f}\n"
            f"  CE, paper's estimator  {floors['ce']:.3f}\n"
            f"  CE, LOO KDE            {floors['ce_sharp']:.3f}\n"
            f"  entropy of the truth   {floors['entropy']:.3f}")
