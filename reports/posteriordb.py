"""The posteriordb table and heat map: every method against every reference posterior, from result files.

Rows are posteriors, columns the reference floor (:func:`workflow.experiments.posteriordb.make_floor`:
``n`` draws of the last reference chain scored against the others) and the methods, each scored
from ``n`` draws of its own distribution (the table states ``n``; a run scored at another ``n``
than its floor is refused). The accuracy table's cells
are ``max_k |mean error_k| / max_k |log σ_{q,k}/σ_k|`` (:class:`pmd.sample_metrics.SampleReference`:
the worst coordinate's posterior-mean error in reference standard deviations and log standard
deviation ratio), averaged over the seeds that succeeded; a failed run is marked and its reason
listed under the table. Its last row counts the posteriors each method solves: both numbers at
most :data:`SOLVED` (a quarter of a reference sd for the mean, about 28% for the sd; the floors
of 1000 NUTS draws lie near 0.06), and a second row the i.i.d. posteriors each method gets within
:data:`GOAL` (0.5 reference sd of the mean, 0.3 of the log sd: the accuracy asked of PMD's
defaults), and a third the same count over the i.i.d. posteriors whose
reference draws are close to Gaussian on the unconstrained scale (:func:`pmd.normality.normality`,
recorded in the floor file; each posterior's label says "Gaussian" or "non-Gaussian", nothing for a
floor file written before the verdict): only there can a Gaussian approximation (SVI) be exact.
A wall-time table (stepping seconds, compilation included) and a
data-visited table (points the method read, in passes over the data) follow; they count failed
runs too. The heat map colours
``max |mean error|`` on a log scale, each cell annotated, failed cells hatched. The JSON summary
beside the table holds every final metric (``null`` for NaN).
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from matplotlib.colors import LogNorm  # noqa: E402

from pmd.normality import KURTOSIS_RANGE, SKEWNESS_MAX  # noqa: E402

from .resultfiles import atomic_path, load_npz  # noqa: E402
from .styles import save  # noqa: E402

FLOOR = "reference floor"
ACCURACY = ("mean_error_max", "log_std_ratio_max")
SOLVED = 0.25
GOAL = (0.5, 0.3)  # (|mean error|, |log sd ratio|) on the i.i.d. posteriors
# whose reference posteriors a table compares against: posteriordb's, or the custom experiment's
# (a user's model files, workflow/experiments/custom.py), scored the same way
TITLES = {"posteriordb": "posteriordb's reference posteriors", "custom": "the custom models' reference posteriors"}


def _mean(values) -> float | None:
    """The mean of the finite values; None when there are none."""
    finite = [v for v in values if math.isfinite(v)]
    return float(np.mean(finite)) if finite else None


def collect(floor_files: list[str | Path], run_files: list[str | Path]) -> dict:
    """The summary: per posterior its size, floor and, per method, the seeds' final metrics averaged
    over the runs that succeeded, their times, data visited and the failures' reasons."""
    posteriors = {}
    for path in floor_files:
        floor = json.loads(Path(path).read_text())
        posteriors[floor["posterior"]] = {**{k: floor[k] for k in ("num_data", "dim", "iid", "chains", "draws",
                                                                    "floor_samples")},
                                          "floor": floor["floor"], "normality": floor.get("normality"),
                                          "methods": {}}
    runs: dict[tuple[str, str], list[dict]] = {}
    budgets = {}
    for path in run_files:
        _, meta = load_npz(path)
        if meta["posterior"] not in posteriors:
            raise ValueError(f"{path}: posterior {meta['posterior']!r} has no floor file among --data")
        runs.setdefault((meta["posterior"], meta["method"]), []).append(meta)
        n = posteriors[meta["posterior"]]["floor_samples"]
        if meta["params"]["eval_samples"] != n:
            raise ValueError(f"{path}: scored from {meta['params']['eval_samples']} draws, but the floor of "
                             f"{meta['posterior']} from {n}: a score and its floor must be at the same sample size")
        budget = {k: meta["params"][k] for k in ("num_passes", "steps_per_pass")}
        if budgets.setdefault(meta["method"], budget) != budget:
            raise ValueError(f"{path}: method {meta['method']!r} ran with the budget {budget} here and "
                             f"{budgets[meta['method']]} elsewhere: a table compares runs of one budget")
    for (posterior, method), metas in runs.items():
        ok = [m for m in metas if m["status"] == "ok"]
        cell = {name: _mean(m["final"][name] for m in ok) for name in metas[0]["final"]}
        posteriors[posterior]["methods"][method] = {
            **cell, "runs": len(metas), "failed": len(metas) - len(ok),
            "errors": sorted({m["error"] for m in metas if m["error"]}),
            "step_seconds": _mean(m["step_seconds"] for m in metas),
            "visited_passes": float(np.mean([m["visited"] for m in metas])) / posteriors[posterior]["num_data"],
        }
    methods = list(dict.fromkeys(method for _, method in runs))
    return {"posteriors": posteriors, "methods": methods, "budgets": {m: budgets[m] for m in methods}}


def _budget_line(summary: dict) -> str:
    """The data budget in words, one clause per distinct setting (a method entry may override it)."""
    groups: dict[tuple, list[str]] = {}
    for method, b in summary["budgets"].items():
        groups.setdefault((b["num_passes"], b["steps_per_pass"]), []).append(method)
    clauses = [f"{passes} whole passes in batches of ⌈N/{per}⌉ points (about {per} steps per pass)"
               + (f" for {', '.join(methods)}" if len(groups) > 1 else "")
               for (passes, per), methods in groups.items()]
    return ("Data budget: " + "; ".join(clauses) + " per run, the same rule on every posterior; every run ends at "
            "a pass end (N < steps per pass: batches of 1 point and ⌈passes × steps per pass / N⌉ passes; a "
            "non-i.i.d. posterior is one datum, N = 1).")


def _samples(posteriors: dict) -> str:
    """The scoring sample size ``n`` of the table (one number; several, listed, if posteriors differ)."""
    sizes = sorted({p["floor_samples"] for p in posteriors.values()})
    return ", ".join(map(str, sizes))


def _table(header: list[str], rows: list[list[str]]) -> list[str]:
    return ["| " + " | ".join(header) + " |", "|" + "---|" * len(header), *("| " + " | ".join(r) + " |" for r in rows)]


def tables(summary: dict, title: str = TITLES["posteriordb"]) -> str:
    """The Markdown text: the accuracy, wall-time and data-visited tables with the failures' reasons,
    against ``title``'s reference posteriors."""
    methods, posteriors = summary["methods"], summary["posteriors"]
    reasons: list[str] = []

    def mark(cell: dict) -> str:
        marks = []
        for error in cell["errors"]:
            if error not in reasons:
                reasons.append(error)
            marks.append(str(reasons.index(error) + 1))
        return f"[{','.join(marks)}]"

    def accuracy(cell: dict | None) -> str:
        if cell is None:
            return "—"
        if cell["failed"] == cell["runs"]:
            return f"failed {mark(cell)}"
        text = " / ".join(f"{cell[k]:.3g}" if cell[k] is not None else "nan" for k in ACCURACY)
        return text + (f" ({cell['failed']}/{cell['runs']} failed {mark(cell)})" if cell["failed"] else "")

    def label(name: str, p: dict) -> str:
        shape = "" if p["normality"] is None else ", Gaussian" if p["normality"]["close"] else ", non-Gaussian"
        return f"{name} (N={p['num_data']}{'' if p['iid'] else ', not i.i.d.'}, d={p['dim']}{shape})"

    def solved(cell: dict | None, bounds=(SOLVED, SOLVED)) -> bool:
        return cell is not None and all(cell[k] is not None and cell[k] <= b for k, b in zip(ACCURACY, bounds))

    def within(names: list[str]) -> list[str]:
        """The floor's and each method's count of the posteriors ``names`` within :data:`GOAL`."""
        return [f"{sum(solved(floors[n], GOAL) for n in names)}/{len(names)}",
                *(f"{sum(solved(posteriors[n]['methods'].get(m), GOAL) for n in names)}/{len(names)}"
                  for m in methods)]

    floors = {name: {**p["floor"], "runs": 1, "failed": 0, "errors": []} for name, p in posteriors.items()}
    acc = [[label(name, p), accuracy(floors[name]), *(accuracy(p["methods"].get(m)) for m in methods)]
           for name, p in posteriors.items()]
    acc.append([f"**solved** (both ≤ {SOLVED})", f"{sum(map(solved, floors.values()))}/{len(posteriors)}",
                *(f"{sum(solved(p['methods'].get(m)) for p in posteriors.values())}/{len(posteriors)}"
                  for m in methods)])
    iid = [n for n, p in posteriors.items() if p["iid"]]
    acc.append([f"**i.i.d. within {GOAL[0]} / {GOAL[1]}**", *within(iid)])
    gaussian = [n for n in iid if (posteriors[n]["normality"] or {}).get("close")]
    acc.append([f"**i.i.d. Gaussian within {GOAL[0]} / {GOAL[1]}**", *within(gaussian)])
    seconds = [[name, *(f"{p['methods'][m]['step_seconds']:.1f}" if p["methods"].get(m, {}).get("step_seconds")
                        is not None else "—" for m in methods)] for name, p in posteriors.items()]
    visited = [[name, *(f"{p['methods'][m]['visited_passes']:.3g}" if m in p["methods"] else "—" for m in methods)]
               for name, p in posteriors.items()]
    runs = max((c["runs"] for p in posteriors.values() for c in p["methods"].values()), default=0)
    lines = [
        f"# Methods against {title}",
        "",
        _budget_line(summary) + f" {runs} seed(s) per cell; metrics are the mean over the seeds that succeeded. "
        f"Every method and the floor are scored from n = {_samples(posteriors)} draws of their own distribution "
        "(the floor: held-out reference draws).",
        "",
        "## max |mean error| / max |log sd ratio| (worst coordinate, in reference sd; lower is better)",
        "",
        "Gaussian / non-Gaussian: the reference draws on the unconstrained scale are / are not close to Gaussian "
        f"(largest skewness of any 1-D projection ≤ {SKEWNESS_MAX}, every coordinate's excess kurtosis in "
        f"[{KURTOSIS_RANGE[0]}, {KURTOSIS_RANGE[1]}]: pmd/normality.py); only on those can a Gaussian "
        "approximation be exact. No mark: not computed.",
        "",
        *_table(["posterior", FLOOR, *methods], acc),
        "",
        *(f"[{i + 1}] {reason}" for i, reason in enumerate(reasons)),
        *([""] if reasons else []),
        "## Wall time (s, stepping incl. compilation; evaluation excluded)",
        "",
        *_table(["posterior", *methods], seconds),
        "",
        "## Data points visited, in passes over the data (full-data methods read all N per step)",
        "",
        *_table(["posterior", *methods], visited),
        "",
    ]
    return "\n".join(lines)


def draw_heatmap(summary: dict, title: str = TITLES["posteriordb"]):
    """Posteriors × (floor, methods), colour = max |mean error| on a log scale, each cell annotated;
    laid out so that every label, the colour bar's included, lies inside the figure."""
    methods, posteriors = summary["methods"], summary["posteriors"]
    columns = [FLOOR, *methods]
    values = np.full((len(posteriors), len(columns)), np.nan)
    failed = np.zeros_like(values, bool)
    for i, p in enumerate(posteriors.values()):
        cells = [p["floor"], *(p["methods"].get(m) for m in methods)]
        for j, cell in enumerate(cells):
            if cell is not None and cell.get("mean_error_max") is not None:
                values[i, j] = cell["mean_error_max"]
            failed[i, j] = cell is not None and cell.get("mean_error_max") is None
    finite = values[np.isfinite(values) & (values > 0)]
    norm = LogNorm(vmin=min(finite.min(), 0.01), vmax=max(finite.max(), 1.0)) if finite.size else LogNorm(0.01, 1.0)
    fig, ax = plt.subplots(figsize=(1.1 * len(columns) + 4, max(0.45 * len(posteriors) + 2, 4.0)), layout="constrained")
    image = ax.imshow(np.ma.masked_invalid(values), cmap="viridis", norm=norm, aspect="auto")
    cmap = image.get_cmap()
    for (i, j), value in np.ndenumerate(values):
        if failed[i, j]:
            ax.add_patch(plt.Rectangle((j - 0.5, i - 0.5), 1, 1, facecolor="0.85", hatch="//", edgecolor="0.5"))
            ax.text(j, i, "failed", ha="center", va="center", fontsize=7, color="k")
        elif np.isfinite(value):
            light = np.mean(cmap(norm(value))[:3]) > 0.5
            ax.text(j, i, f"{value:.2g}", ha="center", va="center", fontsize=7, color="k" if light else "w")
    ax.axvline(0.5, color="w", lw=4)  # the floor apart from the methods
    ax.set_xticks(range(len(columns)), columns, rotation=35, ha="right")
    ax.set_yticks(range(len(posteriors)), list(posteriors))
    ax.set_ylabel("posterior")
    bar = fig.colorbar(image, ax=ax)
    bar.set_label("max |mean error|\n(reference sd)", fontsize=9)
    ax.set_title(f"Methods against {title}:\nworst-coordinate mean error")
    return fig


def heatmap(summary: dict, out: str | Path, title: str = TITLES["posteriordb"]) -> None:
    """:func:`draw_heatmap` to ``out``."""
    save(draw_heatmap(summary, title), out)


def render(floor_files: list[str | Path], run_files: list[str | Path], out: str | Path, figure: str | Path,
           title: str = TITLES["posteriordb"]) -> dict:
    """Write the Markdown tables to ``out``, the JSON summary beside it and the heat map to ``figure``
    (``title``: whose reference posteriors, :data:`TITLES`)."""
    if not run_files:
        raise FileNotFoundError("no run files were given")
    summary = collect(floor_files, run_files)
    with atomic_path(out) as tmp:
        tmp.write_text(tables(summary, title))
    with atomic_path(Path(out).with_suffix(".json")) as tmp:
        tmp.write_text(json.dumps(summary, indent=2, sort_keys=True))
    heatmap(summary, figure, title)
    return summary
