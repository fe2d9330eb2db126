"""Data and performance profiles with bootstrap bands: who reaches an experiment's accuracy
criterion within which budget, with the uncertainty of a few targets and seeds shown, not a rank.

The standard benchmarking views of optimisation software, read on the equal-cost criterion of
:mod:`reports.cost`:

* **Data profile** (Moré & Wild 2009, "Benchmarking derivative-free optimization algorithms",
  SIAM J. Optim. 20(1), 172-191): for a method, ``d(b)`` = the share of its cells whose cost to
  reach the criterion is at most the budget ``b``. A cell is one run: a target (the criterion's
  ``group``, a posterior or a problem, or the experiment's one data set) × one seed. Two panels: the
  budget in work (in units of one likelihood value, :func:`pmd.work.units`) and in seconds
  (the leaderboard's clock, :mod:`reports.leaderboard`: ``stepping``, from the method's
  construction, JAX's compilation excluded).
* **Performance profile** (Dolan & Moré 2002, "Benchmarking optimization software with
  performance profiles", Math. Program. 91(2), 201-213): for a method, ``ρ(τ)`` = the share of its
  cells whose work is at most ``τ`` times the best work on the cell's target.

The cost of a cell is :func:`reports.cost.cost_to_threshold`'s: the cost at the first evaluation
from which the criterion (:data:`reports.cost.THRESHOLDS`) holds at every later evaluation to the
run's end (reached and kept), ``inf`` where the run never reached it for good (it counts as reached
at no budget). A cell reached in a run that does not count the measure (NaN: run files written
before work or compilation time were recorded) cannot be placed on that budget axis: the method's
profile in that measure is left out ("not counted").

Choices:

* **Pairing** (performance profile). Seed ``k`` of two methods are independent runs (their own
  random streams, and methods may run different numbers of seeds), so cells are not paired by seed
  index: a target's best work is the lowest work of ANY method's ANY seed on that target that
  reached the criterion, and a cell's ratio is its work / that best (``inf`` where it did not
  reach, or no run on the target reached). Work counts whole likelihood terms, so a work of 0 (met
  at the first evaluation, before a step) is read as 1 in a ratio: ``max(w, 1) / max(best, 1)``.
* **Grid**. Budgets: a log grid (:data:`GRID_POINTS` points) from half the smallest positive
  finite cost to 1.5 times the largest, joined with every finite cost itself, so each step of a
  profile (a cost) is on the grid and the last budget is above every finite cost: there the
  profile is the share of cells reached at all. A cost of 0 is met at every budget. τ: the same
  from 1 to 1.5 times the largest finite ratio. Where no cell reached the criterion the grid is a
  placeholder decade and every profile is 0.
* **Bootstrap bands** (:func:`profiles`). Two levels: the targets are resampled with replacement
  (the same draw for every method: targets differ in difficulty and every method faces the same
  ones), and within each drawn target each method's own seeds with replacement (independently
  across methods and across repeated draws of a target). Each resample recomputes every profile,
  the performance profile's best works included (from the resampled cells of each drawn target).
  :data:`RESAMPLES` resamples from a fixed ``numpy`` Generator seed (:data:`SEED`); the band is the
  5th to 95th percentile (:data:`LEVEL`, 90 %). Work, seconds and τ panels use the same resamples.

  The bootstrap's band is the spread of the profile over resamples of the cells that were run: with
  one target and a few seeds it is wide wherever the seeds disagree, and of zero width where all of
  a method's cells agree (every one reached by the budget, or none), however few they are. So the
  band drawn is, at each budget, the wider of that and the Wilson score interval of the share over
  the method's cells (:func:`wilson`): 2 of 2 cells reached is a share between 0.42 and 1 at 90 %,
  and two methods with 2 seeds each are never "ahead" of one another on two seeds' evidence. The
  generated text also says so when a method has fewer than :data:`FEW_CELLS` cells.
* **"Ahead" only where bands separate** (:func:`separated`): method a is ahead of b at the budgets
  where a's lower band is above b's upper band; elsewhere neither is. :func:`verdicts` compares
  PMD's default (``pmd``) with every other method at the largest work budget (the share of cells
  reached) and lists the budgets of each panel where their bands separate; every comparative word
  of the Markdown is generated from these numbers.

Outputs (:func:`render`): ``profiles_<experiment>.png`` (three panels: data profile against work,
against seconds, performance profile against τ; one curve per method in its colour of every other
figure, :mod:`reports.styles`, with its shaded band), ``.json`` (the cells' costs, the grids,
every curve and band; a cost ``null``: not reached, ``"not counted"``: reached, measure not
recorded) and ``.md`` (the verdicts and a table: per method, the share reached at the largest
budget and the share at its target's best work, each with its band).
"""

from __future__ import annotations

import json
import math
import textwrap
from dataclasses import dataclass
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from .cost import EXPERIMENT_WORDS, PMD_LABEL, THRESHOLDS, cost_to_threshold  # noqa: E402
from .resultfiles import atomic_path, commits, load_npz, runs_by_group, runs_by_method  # noqa: E402
from .styles import legend_outside, log_ticks, panel_styles, plot_line, save  # noqa: E402

RESAMPLES = 1000
SEED = 20090101  # the bootstrap's numpy Generator seed: fixed, so a report is the same on every render
LEVEL = 0.9  # the band: the 5th to 95th percentile of the resamples
GRID_POINTS = 200
FEW_CELLS = 10  # fewer cells per method than this: the text warns that a zero-width band is not certainty

# the measures of the budget axes: name -> the cost measure of reports.cost.cost_curve
MEASURES = {"work": "work", "seconds": "stepping"}
PANELS = ("work", "seconds", "performance")
PANEL_TITLES = {"work": "Data profile: work", "seconds": "Data profile: seconds",
                "performance": "Performance profile: work against the best"}
AXIS_WORDS = {"work": "work budget (units of one likelihood value)",
              "seconds": "seconds budget (from construction, compilation excluded)",
              "performance": "τ: multiple of the target's best work"}
Y_WORDS = {"work": "share of cells (targets × seeds) reached within the budget",
           "seconds": "share of cells (targets × seeds) reached within the budget",
           "performance": "share of cells reached within τ × the target's best work"}
BUDGET_WORDS = {"work": "work budget", "seconds": "seconds budget", "performance": "τ"}
UNIT_WORDS = {"work": "work budgets", "seconds": "seconds budgets", "performance": "τ"}

# target -> method -> each seed's cost (inf: not reached; NaN: reached, the measure not counted)
Cells = dict[str, dict[str, np.ndarray]]


@dataclass(frozen=True)
class Profile:
    """One method's profile on ``grid`` (budgets or τ): the point estimate ``share`` (its cells)
    and the bootstrap band ``lower``..``upper``."""

    grid: np.ndarray
    share: np.ndarray
    lower: np.ndarray
    upper: np.ndarray

    def to_json(self) -> dict:
        return {"share": self.share.tolist(), "lower": self.lower.tolist(), "upper": self.upper.tolist()}


def cells(experiment: str, run_files: list[str | Path], data: str | Path | None = None) -> dict[str, Cells]:
    """The experiment's cells in each measure of :data:`MEASURES`: ``{"work": cells, "seconds":
    cells}``, ``cells[target][method]`` = each seed's cost to reach the criterion (reached and kept,
    :func:`reports.cost.cost_to_threshold`), ``inf`` where not reached. Targets and the floor as
    :func:`reports.leaderboard.board` reads them (``data``: the data file holding the floor)."""
    if experiment not in THRESHOLDS:
        raise ValueError(f"no criterion for the experiment {experiment!r}: one of {', '.join(THRESHOLDS)}")
    criterion = THRESHOLDS[experiment]
    groups = runs_by_group(run_files, criterion.group) if criterion.group else {"": runs_by_method(run_files)}
    groups = {g: runs for g, runs in groups.items() if criterion.applies(runs)}
    if not groups:
        raise ValueError(f"no run has the curves {', '.join(criterion.metrics)} that the {experiment} criterion reads")
    out: dict[str, Cells] = {name: {} for name in MEASURES}
    for target, runs in groups.items():
        threshold = criterion.threshold(runs, data)
        for name, measure in MEASURES.items():
            reach = cost_to_threshold(runs, criterion.score, lambda _: threshold, measure)
            out[name][target] = {m: np.asarray(r.costs, float) for m, r in reach.items()}
    return out


def budget_grid(values, start: float | None = None, points: int = GRID_POINTS) -> np.ndarray:
    """The log grid of budgets (module docstring): from half the smallest positive finite value
    (``start``, when given: τ from 1) to 1.5 times the largest, with every finite value on it."""
    values = np.asarray([v for v in np.ravel(values) if np.isfinite(v)], float)
    positive = values[values > 0]
    if not len(positive):
        lo = start if start is not None else 1.0
        return np.geomspace(lo, 10 * lo, points)
    lo = start if start is not None else positive.min() / 2
    hi = max(positive.max() * 1.5, 2 * lo)
    return np.unique(np.concatenate([np.geomspace(lo, hi, points), positive[positive >= lo]]))


def _structure(cells: Cells) -> tuple[list[str], list[str], dict[str, np.ndarray], dict[str, np.ndarray]]:
    """``(targets, methods, counts, values)``: per method, its seed count on each target (``T``) and
    its costs as a ``T × n_max`` matrix padded with NaN."""
    targets = list(cells)
    methods = list(dict.fromkeys(m for t in targets for m in cells[t]))
    counts, values = {}, {}
    for m in methods:
        n = np.array([len(cells[t].get(m, ())) for t in targets])
        matrix = np.full((len(targets), max(1, n.max())), np.nan)
        for i, t in enumerate(targets):
            matrix[i, :n[i]] = cells[t].get(m, ())
        counts[m], values[m] = n, matrix
    return targets, methods, counts, values


def _draws(counts: dict[str, np.ndarray], width: dict[str, int], resamples: int, seed: int,
           n_targets: int) -> tuple[np.ndarray, dict[str, tuple[np.ndarray, np.ndarray]]]:
    """The two-level bootstrap's indices (module docstring): the drawn targets ``B × T`` (row 0:
    the cells themselves, every target once, each seed once) and per method the drawn seeds and
    their mask ``B × T × n_max``."""
    rng = np.random.default_rng(seed)
    drawn = np.concatenate([np.arange(n_targets)[None], rng.integers(n_targets, size=(resamples, n_targets))])
    seeds = {}
    for m, n in counts.items():
        have = n[drawn][..., None]  # seeds of the method on each drawn target
        slots = np.arange(width[m])
        mask = slots < have
        index = np.floor(rng.random((resamples + 1, n_targets, width[m])) * have).astype(int)
        index[0] = slots  # row 0: the cells themselves
        seeds[m] = (np.where(mask, index, 0), mask)
    return drawn, seeds


def _shares(values: np.ndarray, mask: np.ndarray, grid: np.ndarray) -> np.ndarray:
    """Per resample (the first axis), the share of its masked cells whose value is at most each
    budget of ``grid`` (NaN for a resample with no cell)."""
    rows = values.shape[0]
    values = np.where(np.isnan(values), np.inf, values)
    first = np.searchsorted(grid, values, side="left")  # the first budget ≥ the value (len(grid): none)
    counts = np.zeros((rows, len(grid) + 1))
    np.add.at(counts, (np.broadcast_to(np.arange(rows)[:, None, None], values.shape)[mask], first[mask]), 1.0)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.cumsum(counts, axis=1)[:, :-1] / mask.sum(axis=(1, 2))[:, None]


def wilson(share: np.ndarray, cells: int, level: float) -> tuple[np.ndarray, np.ndarray]:
    """The Wilson score interval (Wilson 1927) of a share of ``cells`` cells at ``level``: the
    binomial uncertainty of a share from few cells, wide where every cell agrees (2 of 2: 0.42 to
    1 at 90 %), which a bootstrap of those cells cannot show."""
    from statistics import NormalDist

    z = NormalDist().inv_cdf(0.5 + level / 2)
    n = max(int(cells), 1)
    centre = (share + z**2 / (2 * n)) / (1 + z**2 / n)
    half = z * np.sqrt(np.clip(share * (1 - share), 0, None) / n + z**2 / (4 * n**2)) / (1 + z**2 / n)
    return np.clip(centre - half, 0.0, 1.0), np.clip(centre + half, 0.0, 1.0)


def _profile(grid: np.ndarray, shares: np.ndarray, level: float, cells: int) -> Profile:
    """The profile of the run cells (``shares[0]``) with its band: the wider, at each budget, of the
    bootstrap's percentile band (``shares[1:]``) and the Wilson interval of the share over the
    method's ``cells`` (:func:`wilson`)."""
    tail = (1 - level) / 2
    rest = shares[1:][~np.isnan(shares[1:]).all(axis=1)]
    lower, upper = (np.quantile(rest, [tail, 1 - tail], axis=0) if len(rest) else (shares[0], shares[0]))
    low, high = wilson(shares[0], cells, level)
    return Profile(grid, shares[0], np.minimum(lower, low), np.maximum(upper, high))


def profiles(work: Cells, seconds: Cells | None = None, resamples: int = RESAMPLES, seed: int = SEED,
             level: float = LEVEL) -> dict[str, dict[str, Profile | None]]:
    """Every method's data profile in work (and in seconds, given ``seconds``, the same targets,
    methods and seeds) and its performance profile in work, with ``level`` bootstrap bands from
    ``resamples`` two-level resamples (module docstring): ``{panel: {method: Profile}}``, panels
    of :data:`PANELS`; ``None`` for a method whose cells do not count the panel's measure. One
    grid per panel (:func:`budget_grid`), the same for every method."""
    targets, methods, counts, work_values = _structure(work)
    width = {m: v.shape[1] for m, v in work_values.items()}
    drawn, seeds = _draws(counts, width, resamples, seed, len(targets))
    measures = {"work": (work, work_values)}
    if seconds is not None:
        measures["seconds"] = (seconds, _structure(seconds)[3])
    counted = {name: {m: not np.isnan(_cells(cs, m)).any() for m in methods} for name, (cs, _) in measures.items()}
    out: dict[str, dict[str, Profile | None]] = {}
    picked = {}
    for name, (cs, values) in measures.items():
        grid = budget_grid([c for m in methods if counted[name][m] for c in _cells(cs, m)])
        picked[name] = {m: values[m][drawn[..., None], seeds[m][0]] for m in methods}
        out[name] = {m: _profile(grid, _shares(picked[name][m], seeds[m][1], grid), level, seeds[m][1][0].sum())
                     if counted[name][m] else None for m in methods}
    # performance: each drawn target's best work over every counted method's drawn seeds
    ones = {m: np.maximum(np.where(seeds[m][1] & counted["work"][m], picked["work"][m], np.inf), 1.0) for m in methods}
    ones = {m: np.where(np.isnan(v), np.inf, v) for m, v in ones.items()}
    best = np.min([v.min(axis=2) for v in ones.values()], axis=0)  # B × T
    with np.errstate(invalid="ignore"):
        ratio = {m: ones[m] / best[..., None] for m in methods}
    ratio = {m: np.where(np.isfinite(r), r, np.inf) for m, r in ratio.items()}
    grid = budget_grid([r for m in methods if counted["work"][m] for r in ratio[m][0][seeds[m][1][0]]], start=1.0)
    out["performance"] = {m: _profile(grid, _shares(ratio[m], seeds[m][1], grid), level, seeds[m][1][0].sum())
                          if counted["work"][m] else None for m in methods}
    return out


def _cells(cells: Cells, method: str) -> np.ndarray:
    """Every cost of ``method`` over the targets."""
    return np.concatenate([np.asarray(cells[t].get(method, ()), float) for t in cells] or [np.zeros(0)])


def data_profile(cells: Cells, **kw) -> dict[str, Profile | None]:
    """Each method's data profile of ``cells`` (one measure) with its band (:func:`profiles`)."""
    return profiles(cells, **kw)["work"]


def performance_profile(work: Cells, **kw) -> dict[str, Profile | None]:
    """Each method's performance profile of the work ``cells`` with its band (:func:`profiles`)."""
    return profiles(work, **kw)["performance"]


def ratios(work: Cells) -> Cells:
    """Each cell's work / its target's best work (module docstring: the best over every method's
    every seed on the target; a work of 0 read as 1; ``inf``: not reached, NaN: not counted)."""
    out = {}
    for t, by in work.items():
        finite = [c for costs in by.values() for c in costs if np.isfinite(c)]
        best = max(min(finite), 1.0) if finite else math.inf
        out[t] = {m: np.array([max(c, 1.0) / best if np.isfinite(c) else c for c in costs], float)
                  for m, costs in by.items()}
    return out


def separated(a: Profile, b: Profile) -> np.ndarray:
    """The budgets (of their shared grid) where ``a``'s lower band is above ``b``'s upper band:
    where ``a`` is ahead of ``b``."""
    if a.grid.shape != b.grid.shape or not np.array_equal(a.grid, b.grid):
        raise ValueError("the two profiles are on different grids: compare profiles of one panel")
    return a.grid[a.lower > b.upper]


def _runs(a: Profile, b: Profile) -> list[tuple[float, float]]:
    """The stretches of consecutive budgets where ``a`` is ahead of ``b``, as (first, last)."""
    ahead = a.lower > b.upper
    edges = np.flatnonzero(np.diff(np.concatenate([[0], ahead.astype(int), [0]])))
    return [(float(a.grid[i]), float(a.grid[j - 1])) for i, j in zip(edges[::2], edges[1::2])]


def verdict(ours: Profile, other: Profile) -> str:
    """``"ahead"``, ``"behind"`` or ``"not separated"``: the bands at the largest budget."""
    if ours.lower[-1] > other.upper[-1]:
        return "ahead"
    if other.lower[-1] > ours.upper[-1]:
        return "behind"
    return "not separated"


def _num(value: float) -> str:
    return f"{value:.3g}"


def _band(p: Profile, i: int = -1) -> str:
    return f"{p.share[i]:.2f} ({p.lower[i]:.2f}-{p.upper[i]:.2f})"


def verdicts(found: dict[str, dict[str, Profile | None]], ours: str = PMD_LABEL) -> dict:
    """PMD's default against every other method: at the largest budget of the work data profile
    (else of seconds, where work is not counted), ``{"panel", "budget", "pairs": {method: verdict}}``,
    and per panel the stretches of budgets where the bands separate, ``{"separations": {panel:
    {method: {"ahead": [(from, to)], "behind": [...]}}}}``."""
    panel = next((p for p in ("work", "seconds") if p in found and found[p].get(ours) is not None), None)
    out = {"method": ours, "panel": panel, "budget": None, "pairs": {}, "separations": {}}
    if panel is None:
        return out
    mine = found[panel][ours]
    out["budget"] = float(mine.grid[-1])
    out["pairs"] = {m: verdict(mine, p) for m, p in found[panel].items() if m != ours and p is not None}
    for name, by in found.items():
        if by.get(ours) is None:
            continue
        seps = {m: {"ahead": _runs(by[ours], p), "behind": _runs(p, by[ours])} for m, p in by.items()
                if m != ours and p is not None}
        out["separations"][name] = {m: s for m, s in seps.items() if s["ahead"] or s["behind"]}
    return out


def sentences(found: dict[str, dict[str, Profile | None]], judged: dict, cells_of: dict[str, int],
              reached_of: dict[str, int], targets: int) -> list[str]:
    """The Markdown paragraphs of :func:`verdicts`, every comparative word from its numbers."""
    ours = judged["method"]
    if judged["panel"] is None:
        return [f"No `{ours}` runs that count work or seconds: PMD is not compared."]
    if not any(reached_of.values()):
        return [f"No method reached the criterion on any cell ({sum(cells_of.values())} cells, {targets} "
                f"target{'s' if targets != 1 else ''}): every profile is 0 at every budget, so no method is ahead "
                "of another; the budget axes are placeholders."]
    names = lambda ms: ", ".join(f"`{m}` ({reached_of[m]}/{cells_of[m]})" for m in ms) or "no method"  # noqa: E731
    by = {v: [m for m, w in judged["pairs"].items() if w == v] for v in ("ahead", "behind", "not separated")}
    p = found[judged["panel"]][ours]
    out = [f"At the largest {BUDGET_WORDS[judged['panel']]} ({_num(judged['budget'])}, above every cell's cost: "
           f"the share of cells reached at all), PMD (`{ours}`, {reached_of[ours]}/{cells_of[ours]} cells reached, "
           f"share {_band(p)}) is **ahead** of {names(by['ahead'])}; **behind** {names(by['behind'])}; "
           f"**not separated** from {names(by['not separated'])} ({LEVEL:.0%} bands; a method is ahead only "
           "where its lower band is above the other's upper band)."]
    for name, seps in judged["separations"].items():
        said: dict[tuple[str, str], list[str]] = {}  # (word, the budgets) -> the methods, in order
        for m, s in seps.items():
            for word in ("ahead", "behind"):
                if s[word]:
                    spans = ", ".join(_num(lo) if lo == hi else f"{_num(lo)} to {_num(hi)}" for lo, hi in s[word])
                    said.setdefault((word, spans), []).append(f"`{m}`")
        out.append(f"Where the bands separate ({PANEL_TITLES[name].lower()}), PMD is "
                   + ("; ".join(f"{word} {'of ' if word == 'ahead' else ''}{', '.join(ms)} at {UNIT_WORDS[name]} {spans}"
                                for (word, spans), ms in said.items())
                      if said else "neither ahead of nor behind any method at any budget") + ".")
    few = min(cells_of.values())
    if few < FEW_CELLS:
        most = max(cells_of.values())
        out.append(f"Few cells: {targets} target{'s' if targets != 1 else ''} and "
                   f"{few if few == most else f'{few} to {most}'} cell{'s' if most != 1 else ''} per method. A band "
                   "is the wider of a bootstrap of these cells and the Wilson interval of the share over them: with "
                   "so few cells it is wide even where every seed agrees, and two methods are seldom separated; "
                   "more seeds narrow it.")
    return out


def draw(experiment: str, found: dict[str, dict[str, Profile | None]], labels: dict[str, str]):
    """The three panels (module docstring): each method's profile as a step curve in its colour with
    its shaded band (PMD's default drawn on top, its band darker); the legend (``labels[method]``)
    outside, right of the panels. A method that reached no cell has no band drawn: its band is the
    same for all such methods (0 up to the Wilson bound of 0 of n), and stacked they hid the others';
    the caption gives that bound."""
    methods = list(labels)
    styles = panel_styles(methods)
    fig, axes = plt.subplots(1, len(PANELS), figsize=(4.6 * len(PANELS), 4.0), squeeze=False)
    alpha = min(0.15, 1.0 / len(methods))  # many methods' bands overlap: lighter, so the curves stay readable
    axes = list(axes.flat)
    for ax, name in zip(axes, PANELS):
        by = found.get(name, {})
        for m in methods:
            p = by.get(m)
            if p is None:
                continue
            plot_line(ax, p.grid, p.share, styles[m], every=0.1, label=labels[m], drawstyle="steps-post", lw=1.4,
                      zorder=3 if m == PMD_LABEL else 2)  # PMD's default on top of the others
            if p.share[-1] > 0:
                ax.fill_between(p.grid, p.lower, p.upper, step="post", color=styles[m].color, lw=0,
                                alpha=0.2 if m == PMD_LABEL else alpha)
        ax.set(xscale="log", ylim=(-0.03, 1.03), title=PANEL_TITLES[name])
        ax.set_xlabel(AXIS_WORDS[name], fontsize=8)
        ax.set_ylabel(textwrap.fill(Y_WORDS[name], 34), fontsize=8)
        log_ticks(ax.xaxis)
        ax.tick_params(labelsize=7)
        missing = [m for m in methods if by.get(m) is None]
        if missing:
            ax.text(0.02, 0.98, textwrap.fill("not counted: " + ", ".join(missing), 50), transform=ax.transAxes,
                    fontsize=6, va="top")
        if not any(p is not None and p.share[-1] > 0 for p in by.values()):
            ax.text(0.5, 0.5, "no cell reached the criterion", transform=ax.transAxes, ha="center", fontsize=9)
    drawn = {label for ax in axes for label in ax.get_legend_handles_labels()[1]}
    for m in methods:  # a method no panel could draw (its runs count neither measure) keeps its legend entry
        if labels[m] not in drawn:
            axes[0].plot([], [], color=styles[m].color, label=labels[m])
    legend_outside(fig, axes)
    criterion = THRESHOLDS[experiment]
    never = [p for p in (found.get("work", {}).get(m) for m in methods) if p is not None and p.share[-1] == 0]
    bound = f"; a method that reached no cell: band 0 to {max(p.upper[-1] for p in never):.2f}, not drawn" if never else ""
    fig.suptitle(f"{EXPERIMENT_WORDS.get(experiment, experiment)}: share of cells (targets × seeds) reaching "
                 f"\"{criterion.wording}\"\nshaded: {LEVEL:.0%} band (bootstrap over targets and seeds, at least the "
                 f"Wilson interval of the share){bound}", fontsize=9)
    fig.tight_layout()
    return fig


def _jsonable(costs) -> list:
    return [None if math.isinf(c) else "not counted" if math.isnan(c) else float(c) for c in costs]


def render(experiment: str, run_files: list[str | Path], out: str | Path, data: str | Path | None = None,
           resamples: int = RESAMPLES, seed: int = SEED) -> dict:
    """Write ``profiles_<experiment>.png`` to ``out`` and its ``.json`` and ``.md`` beside it (module
    docstring); return the JSON's content."""
    measured = cells(experiment, run_files, data)
    found = profiles(measured["work"], measured["seconds"], resamples=resamples, seed=seed)
    work = measured["work"]
    methods = list(dict.fromkeys(m for t in work for m in work[t]))
    cells_of = {m: int(sum(len(work[t].get(m, ())) for t in work)) for m in methods}
    reached_of = {m: int(sum(np.sum(~np.isinf(work[t].get(m, np.zeros(0)))) for t in work)) for m in methods}
    judged = verdicts(found)
    text = sentences(found, judged, cells_of, reached_of, len(work))
    criterion = THRESHOLDS[experiment]
    result = {
        "experiment": experiment, "criterion": criterion.wording, "targets": list(work),
        "resamples": resamples, "seed": seed, "level": LEVEL,
        "cells": {m: {"cells": cells_of[m], "reached": reached_of[m]} for m in methods},
        "costs": {name: {t: {m: _jsonable(c) for m, c in by.items()} for t, by in cs.items()}
                  for name, cs in measured.items()},
        "panels": {name: {"grid": next((p.grid.tolist() for p in by.values() if p is not None), []),
                          "methods": {m: (p.to_json() if p is not None else None) for m, p in by.items()}}
                   for name, by in found.items()},
        "verdicts": judged, "text": text, "commits": commits(load_npz(f)[1] for f in run_files)}
    out = Path(out)
    labels = {m: f"{m} ({reached_of[m]}/{cells_of[m]})" for m in methods}
    save(draw(experiment, found, labels), out)
    with atomic_path(out.with_suffix(".json")) as tmp:
        tmp.write_text(json.dumps(result, indent=1))
    with atomic_path(out.with_suffix(".md")) as tmp:
        tmp.write_text(markdown(experiment, found, result))
    return result


def markdown(experiment: str, found: dict[str, dict[str, Profile | None]], result: dict) -> str:
    """The generated sentences and the table: per method, its cells, the share reached at the
    largest budget (work; seconds where work is not counted) and the share at its target's best
    work (ρ(1)), each with its band."""
    lines = [f"# Profiles: {EXPERIMENT_WORDS.get(experiment, experiment)}", "",
             f"Criterion: {result['criterion']}. Cells: {len(result['targets'])} target(s) × each method's seeds; a "
             "cell's cost: the work or seconds (from construction, compilation excluded) by the first evaluation from "
             "which the criterion holds to the run's end. Data profile (Moré & Wild 2009): the share of a method's "
             "cells reached within a budget; performance profile (Dolan & Moré 2002): within τ times the target's "
             "best work (the lowest of any method's any seed). Bands: "
             f"{result['level']:.0%}, the wider of a percentile bootstrap ({result['resamples']:,} resamples of the "
             "targets and, within each, of each method's seeds) and the Wilson interval of the share over the "
             "method's cells.", "", *(s + "\n" for s in result["text"]),
             "| method | cells reached | share reached at the largest budget (band) | share at the target's best "
             "work, ρ(1) (band) |", "|---|---|---|---|"]
    for m, c in result["cells"].items():
        main = found["work"].get(m) or found.get("seconds", {}).get(m)
        perf = found["performance"].get(m)
        lines.append(f"| {m} | {c['reached']}/{c['cells']} | {_band(main) if main else 'not counted'} | "
                     f"{_band(perf, 0) if perf else 'not counted'} |")
    if result.get("commits"):
        lines += ["", "Run files made at commit " + ", ".join(f"`{c}`" for c in result["commits"]) + "."]
    return "\n".join(lines) + "\n"
