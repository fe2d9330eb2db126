"""The leaderboard: for each experiment, who reaches its accuracy criterion, at what work and
seconds, from result files; and one digest over the experiments.

Per experiment (:func:`board`), a row per method, from the same cost-to-threshold reading as the
cost tables (:func:`reports.cost.cost_to_threshold`: the first evaluation from which the
experiment's criterion, :data:`reports.cost.THRESHOLDS`, holds to the run's end):

* **reached**: the cells (targets × seeds; a target is a posterior, a problem, or the experiment's
  one data set) whose run reached the criterion, of all;
* **work** and **seconds to reach**: the median over the reached cells (with the interquartile
  range) of the work (in units of one likelihood value, :func:`pmd.work.units`) and of the
  seconds spent by then, on one clock for every method: from the method's construction (a Laplace
  start included) to that evaluation, JAX's compilation excluded (the cost tables' ``stepping``).
  Compilation is paid once per program and process and read back from JAX's cache by later ones,
  so its seconds say what ran before on the machine, not what the method costs; the cost tables
  give them;
* **final score**: the median over every cell of the criterion's score at the run's end, as a
  multiple of its threshold (≤ 1: met; the threshold is 1 for the absolute criteria).

Rows are ordered by the share of cells reached, then by the median work to reach. Only the cells
a method reached enter its work and seconds, so two methods' medians compare costs over different
cells: the reached column says how many. The digest (:func:`digest`) gives, per experiment, the
first row and PMD's (label ``pmd``) with its place.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np

from .cost import EXPERIMENT_WORDS as TITLES
from .cost import PMD_LABEL, THRESHOLDS, cost_to_threshold
from .resultfiles import atomic_path, commits, runs_by_group, runs_by_method


def _quartiles(values: list[float]) -> tuple[float, float, float]:
    if not values:
        return math.nan, math.nan, math.nan
    q1, q2, q3 = np.percentile(values, [25, 50, 75])
    return float(q2), float(q1), float(q3)


def board(experiment: str, run_files: list[str | Path], data: str | Path | None = None) -> dict:
    """The experiment's leaderboard (module docstring) as ``{"experiment", "criterion", "cells",
    "rows": [{"method", "reached", "cells", "work", "work_iqr", "seconds", "seconds_iqr",
    "final_score"}], "charged", "commits"}``, rows in rank order; ``commits``: the commits the run
    files were made at (their ``commit``; "not recorded" for files that predate it)."""
    criterion = THRESHOLDS[experiment]
    groups = runs_by_group(run_files, criterion.group) if criterion.group else {"": runs_by_method(run_files)}
    groups = {g: runs for g, runs in groups.items() if criterion.applies(runs)}
    if not groups:
        raise ValueError(f"no run has the curves {', '.join(criterion.metrics)} that the {experiment} criterion reads")
    cells: dict[str, dict[str, list[float]]] = {}
    charged = sorted({m for runs in groups.values() for m, rs in runs.items() for a, _ in rs
                      if len(a.get("curve/work_charged", ())) and a["curve/work_charged"][-1] > 0})
    for runs in groups.values():
        threshold = criterion.threshold(runs, data)
        reach = {cost: cost_to_threshold(runs, criterion.score, lambda _: threshold, cost)
                 for cost in ("work", "stepping")}
        for method, rs in runs.items():
            mine = cells.setdefault(method, {"work": [], "seconds": [], "final": []})
            mine["work"] += reach["work"][method].costs
            mine["seconds"] += reach["stepping"][method].costs
            mine["final"] += [float(criterion.score(a)[-1] / threshold) if len(a["visited"]) else math.inf
                              for a, _ in rs]
    rows = []
    for method, c in cells.items():
        reached = [i for i, w in enumerate(c["work"]) if not math.isinf(w)]
        work, work_lo, work_hi = _quartiles([c["work"][i] for i in reached])
        seconds, sec_lo, sec_hi = _quartiles([c["seconds"][i] for i in reached])
        rows.append({"method": method, "reached": len(reached), "cells": len(c["final"]), "work": work,
                     "work_iqr": [work_lo, work_hi], "seconds": seconds, "seconds_iqr": [sec_lo, sec_hi],
                     "final_score": float(np.median(c["final"]))})
    rows.sort(key=lambda r: (-r["reached"] / r["cells"], r["work"] if not math.isnan(r["work"]) else math.inf,
                             r["final_score"]))
    made_at = commits(meta for runs in groups.values() for rs in runs.values() for _, meta in rs)
    return {"experiment": experiment, "criterion": criterion.wording, "targets": len(groups), "rows": rows,
            "charged": charged, "commits": made_at}


def _num(value: float, digits: str = ".3g") -> str:
    return "—" if value is None or math.isnan(value) or math.isinf(value) else format(value, digits)


def _with_iqr(value: float, iqr: list[float]) -> str:
    if math.isnan(value):
        return "—"
    return f"{_num(value)} ({_num(iqr[0])}-{_num(iqr[1])})"


def markdown(result: dict) -> str:
    """One experiment's leaderboard as a Markdown table with its criterion."""
    lines = [f"Criterion: {result['criterion']}. Cells: {result['targets']} target(s) × each method's seeds. "
             "Work and seconds: median (interquartile range) over the cells reached, from the method's construction, "
             "compilation excluded; final score: median over all "
             "cells, in multiples of the threshold (≤ 1 meets it). The order is by cells reached, then median "
             "work: where two methods' ranges overlap, neither is ahead.", "",
             "| rank | method | reached | work to reach | seconds to reach | final score |", "|---|---|---|---|---|---|"]
    for k, r in enumerate(result["rows"], 1):
        lines.append(f"| {k} | {r['method']} | {r['reached']}/{r['cells']} | {_with_iqr(r['work'], r['work_iqr'])} | "
                     f"{_with_iqr(r['seconds'], r['seconds_iqr'])} | {_num(r['final_score'], '.2f')} |")
    if result.get("charged"):
        lines += ["", f"Work charged, not counted: {', '.join(f'`{m}`' for m in result['charged'])} report no work, so "
                      "each step is charged the likelihood terms of its batch at its particles (m·B, no gradients)."]
    if result.get("commits"):
        lines += ["", "Run files made at commit " + ", ".join(f"`{c}`" for c in result["commits"]) + "."]
    return "\n".join(lines) + "\n"


def render(experiment: str, run_files: list[str | Path], out: str | Path, data: str | Path | None = None) -> dict:
    """Write the experiment's leaderboard to ``out`` (.md) and ``out`` with ``.json``; return it."""
    result = board(experiment, run_files, data)
    out = Path(out)
    with atomic_path(out.with_suffix(".json")) as tmp:
        tmp.write_text(json.dumps(result, indent=1))
    with atomic_path(out) as tmp:
        tmp.write_text(f"# Leaderboard: {TITLES.get(experiment, experiment)}\n\n" + markdown(result))
    return result


def _against(board: Path) -> str:
    """PMD's verdicts against the other methods from the experiment's profiles beside its board
    (``profiles_<experiment>.json``, :mod:`reports.profiles`): how many it is ahead of, behind and
    not separated from where their 90% bands do or do not separate; "—" without profiles."""
    path = board.with_name(board.name.replace("leaderboard_", "profiles_"))
    if not path.exists():
        return "—"
    pairs = json.loads(path.read_text())["verdicts"]["pairs"]
    count = {v: sum(w == v for w in pairs.values()) for v in ("ahead", "behind", "not separated")}
    return f"ahead of {count['ahead']}, behind {count['behind']}, not separated from {count['not separated']}"


def digest(boards: list[str | Path], out: str | Path, source: str) -> str:
    """The digest of the experiments' leaderboards (their ``.json``): per experiment, the first
    row and PMD's with its place, PMD's verdicts from the profiles' bands (:func:`_against`) and the
    commits the run files were made at; ``source`` says which config the results are from."""
    lines = ["# The answer in brief", "",
             f"{source}. Per experiment: the method that reaches its criterion on the most cells at the least "
             "median work, and PMD's default; reached: cells (targets × seeds) of all; work and seconds: "
             "median over the cells reached; the order is the leaderboard's, while \"PMD against the others\" "
             "counts only where the profiles' 90% bands of the share reached separate (at the largest work budget).",
             "", "| experiment | first | reached | work | seconds | PMD's place | PMD reached | PMD work | PMD seconds "
             "| PMD against the others (bands) | run files' commit |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for path in boards:
        result = json.loads(Path(path).read_text())
        first = result["rows"][0]
        place = next((k for k, r in enumerate(result["rows"], 1) if r["method"] == PMD_LABEL), None)
        pmd = result["rows"][place - 1] if place else None
        name = (first["method"] if first["reached"] else
                f"none reached (closest at the end: {first['method']}, {_num(first['final_score'], '.2f')}× the threshold)")
        lines.append(
            f"| {TITLES.get(result['experiment'], result['experiment'])} | {name} | "
            f"{first['reached']}/{first['cells']} | {_num(first['work'])} | {_num(first['seconds'])} | "
            + (f"{place} of {len(result['rows'])} | {pmd['reached']}/{pmd['cells']} | {_num(pmd['work'])} | "
               f"{_num(pmd['seconds'])} |" if pmd else "— | — | — | — |")
            + f" {_against(Path(path))} | {', '.join(f'`{c}`' for c in result.get('commits', [])) or '—'} |")
    text = "\n".join(lines) + "\n"
    with atomic_path(out) as tmp:
        tmp.write_text(text)
    return text
