"""The equal-cost view ("cost on the axis"): what each method spends to reach an
experiment's accuracy criterion, from result files, as a Markdown table and a figure.

Every run file holds its curves ``curve/<metric>`` at each evaluation and, at each, the cost spent
so far in the measures of :data:`COSTS`: ``visited`` (data points read), ``wall_time`` (seconds of
stepping, compilation included, evaluation excluded; in run files written since commit ``0a02ecf``,
counted from before the method's init, whose compilation it then includes), ``work`` (the raw
counts ``curve/evals``, ``curve/grad_evals`` and the others of :data:`pmd.work.WORK` that the run
file holds, charged by :data:`pmd.work.UNITS`: units of one per-datum log-likelihood value; NaN for
a method that does not count them, and for run files written before they were counted) and
``stepping`` (``wall_time`` less ``curve/compile_time``, the runner's compilation: NaN for run files
written before 2026-11-27). A table and a figure show the measures some run counts.

* Cost to threshold (:func:`cost_to_threshold`): per run, the cost at the first evaluation from
  which the criterion (:data:`THRESHOLDS`) holds at EVERY later evaluation to the run's end (reached
  and kept: wherever the run is stopped after that cost, its answer meets the criterion); no
  interpolation between evaluations. The first evaluation alone would reward a start that a
  method then leaves: at the equal-cost cap SGLD's Laplace-fitted start meets posteriordb's
  criterion on garch, gp_pois_regr and nes at its first evaluations and its chain then sits 3 to
  15 times over it for the rest of the run, and early estimates from a handful of draws can meet
  it by chance. A run that never meets it for good has not reached it within its own budget (the
  cap: the run's passes over the data); a failed run (no curves) has not reached it either. Per method: each seed's cost, how many seeds reached, and
  the median over ALL seeds with a seed that did not reach counted as infinite (so the median is a
  cost only when at least half the seeds reached).
* The table: rows = methods. One accuracy target per experiment (mixture, logistic, LDA): the
  seeds that reached and the median (each seed's) cost in every measure. Several (posteriordb's
  posteriors, the sparse GP's problems): one column per target, each cell the median cost in the
  main measure (``work`` when every run counts it, else ``visited``). Under it, PMD's (label
  ``pmd``) rank in the main measure: by the share of targets (one target: of its seeds) reached,
  then the median cost (several targets: the median of its cells' medians over those reached).
  Several targets: a second table gives the other measures (seconds with and without compilation,
  points read) over the targets each method reached (:func:`_other_costs`).
  Where the tuning campaign ran (``<label>_tuned`` rows, :mod:`workflow.tuning`), a second sentence
  ranks PMD after tuning: every method once, at its tuned row where it has one (:func:`after_tuning`).
* The figure: the criterion's score against cost (log x-axis), one line per method: at each
  evaluation the median over seeds of the cost and of the score (runs cut to the shortest), the
  threshold as a horizontal line. One target: a row of panels, one per measure some run counts;
  several: one panel per target in the main measure.
"""

from __future__ import annotations

import dataclasses
import math
import textwrap
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from pmd.work import WORK, units  # noqa: E402

from .posteriordb import GOAL  # noqa: E402
from .resultfiles import atomic_path, load_npz, runs_by_group, runs_by_method  # noqa: E402
from .styles import TUNED, legend_outside, log_ticks, panel_styles, plot_line, save, split_tuned  # noqa: E402

PMD_LABEL = "pmd"
COSTS = {
    "visited": "data points visited",
    "wall_time": "stepping seconds (compilation included, evaluation excluded)",
    "work": "work in units of one likelihood value (pmd.work.UNITS: values, gradients, Hessian-vector products, "
            "Pólya-Gamma draws, kernel pairs)",
    "stepping": "stepping seconds without compilation (wall_time less compile_time)",
}

EXPERIMENT_WORDS = {"mixture": "Two-mode mixture", "logistic": "Logistic regression", "posteriordb": "posteriordb",
                    "custom": "Custom models", "sparse_gp": "Sparse GP", "lda": "LDA"}
# the short words of a cost measure (a panel's title) and of a criterion's metrics (an axis label)
COST_WORDS = {"visited": "data points read", "wall_time": "seconds", "work": "work",
              "stepping": "seconds without compilation"}
METRIC_WORDS = {"tv_sharp": "total variation (LOO KDE)", "test_rmse": "test RMSE",
                "log_perplexity_common": "held-out log-perplexity", "mean_error": "|mean error| (reference sd)",
                "log_std_ratio": "|log sd ratio|", "mean_error_max": "worst |mean error| (reference sd)",
                "log_std_ratio_max": "worst |log sd ratio|"}

Runs = list[tuple[dict, dict]]


@dataclass(frozen=True)
class Criterion:
    """An experiment's accuracy criterion on its curves ``metrics``. Absolute (``bounds``): every
    ``|metric_k| ≤ bounds[k]``, scored as ``max_k |metric_k| / bounds[k]`` against a threshold of 1.
    Relative: ``metrics[0] ≤ factor ×`` a reference value, scored as the metric itself: the data
    file's ``floor[metrics[0]]`` (``reference="floor"``) or the lowest of the methods' final values
    (``reference="best"``; each method's final value is its mean over seeds). ``group``: the run
    files' meta key that splits them into separate targets (posteriors, problems)."""

    wording: str
    metrics: tuple[str, ...]
    bounds: tuple[float, ...] = ()
    factor: float = 1.0
    reference: str = ""
    group: str | None = None

    def label(self) -> str:
        """What :meth:`score` is, in words (the figure's y-axis)."""
        if self.bounds:
            return "the larger of " + " and ".join(f"{METRIC_WORDS.get(m, m)} / {b:g}" for m, b in zip(self.metrics, self.bounds))
        return METRIC_WORDS.get(self.metrics[0], self.metrics[0])

    def score(self, arrays: dict) -> np.ndarray:
        """The criterion's score at each evaluation of a run (lower is better; met at ≤ the threshold)."""
        if self.bounds:
            return np.max([np.abs(arrays[f"curve/{m}"]) / b for m, b in zip(self.metrics, self.bounds)], axis=0)
        return arrays[f"curve/{self.metrics[0]}"]

    def threshold(self, runs: dict[str, Runs], data: str | Path | None = None) -> float:
        """The score the criterion asks for, given the target's runs by method and, for a floor, the
        experiment's data file."""
        if self.bounds:
            return 1.0
        metric = self.metrics[0]
        if self.reference == "floor":
            if data is None:
                raise ValueError(f"the criterion '{self.wording}' needs --data (the data file holding the floor)")
            return self.factor * load_npz(data)[1]["floor"][metric]
        finals = [np.mean([a[f"curve/{metric}"][-1] for a, _ in rs if len(a["visited"])]) for rs in runs.values()]
        return self.factor * float(np.nanmin(finals))

    def applies(self, runs: dict[str, Runs]) -> bool:
        """Whether some run of the target has every curve the criterion reads."""
        return any(all(f"curve/{m}" in a for m in self.metrics) for rs in runs.values() for a, _ in rs)


# the one criterion of every target scored by its moments against reference draws (posteriordb,
# the custom models, logistic regression): the WORST coordinate's |mean error| ≤ 0.5 reference sd
# and its |log sd ratio| ≤ 0.3, so no coordinate's error hides behind an average or a signed mean
MOMENTS = Criterion("max |mean error| ≤ 0.5 reference sd and max |log sd ratio| ≤ 0.3",
                    ("mean_error_max", "log_std_ratio_max"), bounds=GOAL)
REFERENCE_DRAWS = dataclasses.replace(MOMENTS, group="posterior")  # one target per posterior or model

# The thresholds of the equal-cost view, one per experiment:
THRESHOLDS = {
    "posteriordb": REFERENCE_DRAWS,
    "custom": REFERENCE_DRAWS,
    # logistic: the same criterion against the NUTS reference (its runs score the worst coordinate too)
    "logistic": MOMENTS,
    # mixture: "tv ≤ 1.5 × the floor's tv" (the floor: exact posterior draws, in the data file), on the
    # LOO-KDE TV (tv_sharp): H.1's coarse estimator scores the floor's own exact draws at 0.58 on the
    # default config (n = 300) and one Gaussian in one mode at 0.55, so 1.5 times its floor is met by
    # every method before its first step; the LOO KDE's floor (0.196) separates them
    "mixture": Criterion("TV (LOO KDE) ≤ 1.5 × the exact-draws floor's", ("tv_sharp",), factor=1.5,
                         reference="floor"),
    # sparse GP: "test RMSE within 1% of the best final RMSE among methods"
    "sparse_gp": Criterion("test RMSE within 1% of the best final test RMSE among methods", ("test_rmse",),
                           factor=1.01, reference="best", group="problem"),
    # LDA: "log_perplexity within 1% of the best final", on the ONE estimator for every family
    # (log_perplexity_common, pmd.models.lda.common_log_perplexity), not H.4's per-family one
    "lda": Criterion("log-perplexity (one estimator) within 1% of the best final among methods",
                     ("log_perplexity_common",), factor=1.01, reference="best"),
}


@dataclass(frozen=True)
class Reach:
    """One method's cost to threshold: each seed's cost at its first evaluation meeting the
    criterion for good (``inf``: not reached within the run's budget; NaN: reached, but the run does not
    count this cost)."""

    costs: tuple[float, ...]

    @property
    def reached(self) -> int:
        """Seeds that met the criterion at some evaluation."""
        return sum(not math.isinf(c) for c in self.costs)

    @property
    def median(self) -> float:
        """The median over all seeds, ``inf`` for one not reached: ``inf`` unless at least half reached;
        NaN when a seed that reached did not count the cost."""
        return float(np.median(self.costs))


def cost_curve(arrays: dict, cost: str) -> np.ndarray:
    """A run's cost spent by each evaluation in the measure ``cost`` (a key of :data:`COSTS`)."""
    if cost == "visited":
        return np.asarray(arrays["visited"], float)
    missing = np.full(len(arrays["visited"]), np.nan)
    if cost == "wall_time":
        return arrays.get("curve/wall_time", missing)
    if cost == "work":
        counts = {name: arrays[f"curve/{name}"] for name in WORK if f"curve/{name}" in arrays}
        return np.asarray(units(counts), float) if "evals" in counts else missing
    if cost == "stepping":
        return arrays.get("curve/wall_time", missing) - arrays.get("curve/compile_time", missing)
    raise ValueError(f"unknown cost measure {cost!r}: one of {', '.join(COSTS)}")


def cost_to_threshold(runs: dict[str, Runs], metric_fn: Callable[[dict], np.ndarray],
                      threshold_fn: Callable[[dict[str, Runs]], float], cost: str) -> dict[str, Reach]:
    """Per method, each run's cost (measure ``cost``) at the first evaluation from which ``metric_fn``
    of its arrays stays at most ``threshold_fn(runs)`` to the run's end (no interpolation; module
    docstring)."""
    threshold = threshold_fn(runs)
    out = {}
    for method, rs in runs.items():
        costs = []
        for arrays, _ in rs:
            met = metric_fn(arrays) <= threshold if len(arrays["visited"]) else np.zeros(0, bool)
            missed = np.flatnonzero(~met)
            first = (missed[-1] + 1 if len(missed) else 0) if len(met) else None
            costs.append(float(cost_curve(arrays, cost)[first]) if first is not None and first < len(met) else math.inf)
        out[method] = Reach(tuple(costs))
    return out


def _counted(runs: list[tuple[dict, dict]], cost: str) -> list[bool]:
    """For each run that has curves: whether it counts ``cost`` (its final value is finite)."""
    return [bool(np.isfinite(cost_curve(a, cost)[-1])) for a, _ in runs if len(a["visited"])]


def _fmt(value: float, cost: str) -> str:
    if math.isinf(value):
        return "—"
    if math.isnan(value):
        return "not counted"
    return f"{value:,.0f}" if cost == "visited" else f"{value:.3g}"


def after_tuning(keys: dict[str, tuple[int, int, float]]) -> dict[str, tuple[int, int, float]]:
    """Each method once, at its tuned row (``<label>_tuned``) where it has one, else at its default
    row (a method without a grid runs only at its defaults), keyed by the default label."""
    bases = dict.fromkeys(split_tuned(m)[0] for m in keys)
    return {base: keys.get(base + TUNED, keys.get(base)) for base in bases}


def rank_sentence(keys: dict[str, tuple[int, int, float]], cost: str, unit: str, tuned: str | None = None) -> str:
    """PMD's rank among the methods by ``keys[method] = (reached, out of, median cost)``: the larger
    share of ``unit`` reached first, then the lower median cost (in ``cost``). Methods level with PMD
    on both keys are named and the rank is their span (``3-5 of 9``): a tie, most often of methods
    that reached nothing, is never read as PMD's better rank. ``tuned``: ``keys`` are
    :func:`after_tuning`'s and PMD's came from the row ``tuned``; the sentence says so."""
    if PMD_LABEL not in keys:
        return f"No `{PMD_LABEL}` runs: PMD is not ranked."
    order = lambda method: (-keys[method][0] / keys[method][1], keys[method][2])  # noqa: E731
    ahead = [m for m in keys if order(m) < order(PMD_LABEL)]
    level = [m for m in keys if m != PMD_LABEL and order(m) == order(PMD_LABEL)]
    reached, total, median = keys[PMD_LABEL]
    names = lambda methods: ", ".join(f"`{m}`" for m in methods)  # noqa: E731
    where = "; ".join(filter(None, [
        f"behind {names(ahead)}" if ahead else "no method is ahead" if level or not reached else
        "ahead of every other method",
        f"level with {names(level)}" if level else "",
        "it reached nothing" if not reached else ""]))
    rank = f"{len(ahead) + 1}-{len(ahead) + 1 + len(level)}" if level else f"{len(ahead) + 1}"
    if tuned:
        return (f"After tuning (every method at its `<label>{TUNED}` row where it was tuned, else at its defaults; "
                f"PMD at `{tuned}`): PMD ranks "
                f"**{rank} of {len(keys)}**: {reached}/{total} {unit} reached, median cost {_fmt(median, cost)}; {where}.")
    return (f"PMD (`{PMD_LABEL}`) ranks **{rank} of {len(keys)}** at equal cost ({COSTS[cost]}; ranked "
            f"by the share of {unit} reached, then median cost to threshold): {reached}/{total} {unit} reached, "
            f"median cost {_fmt(median, cost)}; {where}.")


def table(experiment: str, reach: dict[str, dict[str, dict[str, Reach]]], thresholds: dict[str, float],
          main: str, notes: list[str]) -> str:
    """The Markdown text (module docstring) of ``reach[target][cost][method]``."""
    criterion = THRESHOLDS[experiment]
    targets = list(reach)
    methods = list(dict.fromkeys(m for t in targets for m in reach[t][main]))
    head = [f"# Cost to threshold: {experiment}", "",
            f"Criterion: {criterion.wording}; score {criterion.label()} ≤ "
            + (f"{thresholds[targets[0]]:.4g}" if len(set(thresholds.values())) == 1 else
               ", ".join(f"{v:.4g} ({t})" for t, v in thresholds.items())) + ". "
            "Cost to threshold: the cost spent by the first evaluation from which the criterion holds at "
            "every later evaluation to the run's end (no interpolation between evaluations); — = not reached "
            "(or not kept) within the run's budget. Median over all "
            "seeds, a seed that did not reach counted as infinite. Costs: "
            + "; ".join(f"{c}: {COSTS[c]}" for c in reach[targets[0]]) + ".", ""]
    if len(targets) == 1:
        (target,) = targets
        costs = list(reach[target])
        header = ["method", "seeds reached", *(f"{c}: median (each seed)" for c in costs)]
        rows = [[m, f"{reach[target][main][m].reached}/{len(reach[target][main][m].costs)}",
                 *(f"{_fmt(r.median, c)} ({', '.join(_fmt(x, c) for x in r.costs)})"
                   for c in costs for r in [reach[target][c][m]])] for m in methods]
        keys = {m: (r.reached, len(r.costs), r.median) for m in methods for r in [reach[target][main][m]]}
        unit = "seeds"
    else:
        header = ["method", f"{criterion.group}s reached", *targets]
        cells = {m: {t: reach[t][main][m] for t in targets if m in reach[t][main]} for m in methods}
        hit = {m: [t for t, r in cells[m].items() if math.isfinite(r.median)] for m in methods}
        reached = {m: [cells[m][t].median for t in hit[m]] for m in methods}
        rows = [[m, f"{len(reached[m])}/{len(targets)}",
                 *(f"{_fmt(r.median, main)} ({r.reached}/{len(r.costs)})" if (r := cells[m].get(t)) else "no runs"
                   for t in targets)] for m in methods]
        keys = {m: (len(reached[m]), len(targets), float(np.median(reached[m])) if reached[m] else math.inf)
                for m in methods}
        unit = f"{criterion.group}s"
        head.append(f"Each cell: the median {main} to threshold ({COSTS[main]}) and the seeds that reached.")
        head.append("")
        notes = [*_other_costs(reach, hit, main, criterion.group), *notes]
    lines = [*head, "| " + " | ".join(header) + " |", "|" + "---|" * len(header),
             *("| " + " | ".join(r) + " |" for r in rows), "", rank_sentence(keys, main, unit), "",
             *([rank_sentence(after_tuning(keys), main, unit, tuned=PMD_LABEL + TUNED if PMD_LABEL + TUNED in keys
                              else PMD_LABEL), ""] if any(m.endswith(TUNED) for m in keys) else []), *notes]
    return "\n".join(lines) + "\n"


def _other_costs(reach: dict[str, dict[str, dict[str, Reach]]], hit: dict[str, list[str]], main: str,
                 group: str) -> list[str]:
    """Several targets: the costs other than ``main`` (seconds with and without compilation, points
    read), as a second table, one row per method: over ``hit[method]``, the targets it reached (its
    median in ``main`` finite, the cells the ranking counts), the median of its per-target medians
    in each cost, and their range; "not counted" where a run there did not count the cost."""
    targets = list(reach)
    others = [c for c in reach[targets[0]] if c != main]
    if not others:
        return []
    rows = []
    for m, reached in hit.items():
        cells = []
        for c in others:
            values = [reach[t][c][m].median for t in reached]
            if not values:
                cells.append("—")
            elif any(math.isnan(v) for v in values):
                cells.append("not counted")
            else:
                cells.append(f"{_fmt(float(np.median(values)), c)} ({_fmt(min(values), c)} to {_fmt(max(values), c)})")
        rows.append(f"| {m} | {len(reached)}/{len(targets)} | " + " | ".join(cells) + " |")
    return [f"The other costs, over the {group}s each method reached (the cells the ranking counts): the median of "
            f"its per-{group} median cost to threshold, and their range.", "",
            f"| method | {group}s reached | " + " | ".join(others) + " |", "|" + "---|" * (len(others) + 2), *rows, ""]


def _median_curve(runs: Runs, score: Callable[[dict], np.ndarray], cost: str) -> tuple[np.ndarray, np.ndarray]:
    """At each evaluation (runs cut to the shortest; failed runs left out) the median over seeds of
    the cost and of the score, where the cost is positive (a log axis)."""
    runs = [a for a, _ in runs if len(a["visited"])]
    if not runs:
        return np.zeros(0), np.zeros(0)
    n = min(len(a["visited"]) for a in runs)
    x = np.median([cost_curve(a, cost)[:n] for a in runs], axis=0)
    y = np.median([score(a)[:n] for a in runs], axis=0)
    keep = np.isfinite(x) & (x > 0)
    return x[keep], y[keep]


# the cost measures' words on a figure's x-axis (short: a panel is 4 inches wide)
AXIS_WORDS = {"visited": "data points visited", "wall_time": "seconds (compilation included)",
              "work": "work (units of one likelihood value)", "stepping": "seconds (compilation excluded)"}
LABEL_WIDTH = 34  # characters per line of a y-axis label: three lines fit a panel's height


def draw(experiment: str, groups: dict[str, dict[str, Runs]], thresholds: dict[str, float],
         panels: list[tuple[str, str]]):
    """One panel per ``(target, cost)`` of ``panels``: each method's median score against cost (log
    x-axis, few short tick labels) and the threshold; the legend outside the panels, on the right;
    the grid's spare cells removed."""
    criterion = THRESHOLDS[experiment]
    cols = min(len(panels), 4 if len(groups) > 1 else len(panels))
    rows = math.ceil(len(panels) / cols)
    fig, axes = plt.subplots(rows, cols, figsize=(4.2 * cols, 3.4 * rows), squeeze=False)
    for ax in axes.flat[len(panels):]:
        fig.delaxes(ax)
    axes = axes.flat[:len(panels)]
    styles = panel_styles(m for g in groups.values() for m in g)
    for ax, (target, cost) in zip(axes, panels):
        for method, runs in groups[target].items():
            x, y = _median_curve(runs, criterion.score, cost)
            plot_line(ax, x, y, styles[method], label=method)
        ax.axhline(thresholds[target], color="k", ls="--", lw=1, label="threshold")
        ax.set(xscale="log", xlabel=AXIS_WORDS[cost], title=target if len(groups) > 1 else COST_WORDS[cost])
        log_ticks(ax.xaxis)
        ax.set_ylabel(textwrap.fill(criterion.label(), LABEL_WIDTH), fontsize=8)
        ax.tick_params(labelsize=7)
    legend_outside(fig, axes)
    fig.suptitle(f"{EXPERIMENT_WORDS.get(experiment, experiment)}: accuracy against cost (median over seeds); "
                 f"criterion: {criterion.wording}", fontsize=9)
    fig.tight_layout()
    return fig


def figure(experiment: str, groups: dict[str, dict[str, Runs]], thresholds: dict[str, float],
           panels: list[tuple[str, str]], out: str | Path) -> dict:
    """:func:`draw` to ``out``. Returns what was drawn: ``{"axes": [(title, x label, y label)],
    "legend": [entries]}``."""
    fig = draw(experiment, groups, thresholds, panels)
    drawn = {"axes": [(ax.get_title(), ax.get_xlabel(), ax.get_ylabel()) for ax in fig.axes],
             "legend": [text.get_text() for text in fig.legends[0].get_texts()]}
    save(fig, out)
    return drawn


def render(experiment: str, run_files: list[str | Path], out: str | Path, figure_out: str | Path,
           data: str | Path | None = None) -> str:
    """Write ``experiment``'s cost-to-threshold table to ``out`` and its figure to ``figure_out``
    (module docstring); ``data``: the data file holding the floor where the criterion needs one."""
    if experiment not in THRESHOLDS:
        raise ValueError(f"no cost criterion for the experiment {experiment!r}: one of {', '.join(THRESHOLDS)}")
    criterion = THRESHOLDS[experiment]
    groups = runs_by_group(run_files, criterion.group) if criterion.group else {"": runs_by_method(run_files)}
    notes = [f"Left out: {criterion.group} `{g}` (its runs have no {', '.join(criterion.metrics)} curve)."
             for g, runs in groups.items() if not criterion.applies(runs)]
    groups = {g: runs for g, runs in groups.items() if criterion.applies(runs)}
    if not groups:
        raise ValueError(f"no run has the curves {', '.join(criterion.metrics)} that the {experiment} criterion reads")
    thresholds = {g: criterion.threshold(runs, data) for g, runs in groups.items()}
    every = [run for runs in groups.values() for rs in runs.values() for run in rs]
    costs = [c for c in COSTS if any(_counted(every, c))]
    main = "work" if all(_counted(every, "work")) else "visited"
    reach = {g: {c: cost_to_threshold(runs, criterion.score, lambda _, g=g: thresholds[g], c) for c in costs}
             for g, runs in groups.items()}
    charged = sorted({m for runs in groups.values() for m, rs in runs.items() for a, _ in rs
                      if len(a.get("curve/work_charged", ())) and a["curve/work_charged"][-1] > 0})
    if charged:
        notes.append(f"Work charged, not counted: {', '.join(f'`{m}`' for m in charged)} report no work, so each step "
                     "is charged the likelihood terms of its batch at its particles (m·B, no gradients).")
    if main != "work" and "work" in costs:
        notes.append("Work is counted by some methods only (\"not counted\": the others), so the main measure is "
                     "data points visited.")
    text = table(experiment, reach, thresholds, main, notes)
    with atomic_path(out) as tmp:
        tmp.write_text(text)
    panels = [(g, main) for g in groups] if len(groups) > 1 else [(g, c) for g in groups for c in costs]
    figure(experiment, groups, thresholds, panels, figure_out)
    return text
