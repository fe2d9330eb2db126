"""What the tuning protocol chose (:mod:`workflow.tuning`): one Markdown table per
experiment of every ``pmd-bench tune`` result, beside the experiment's tables whose ``<label>_tuned``
rows ran with the choice.

Each result names its criterion (``criterion``): the experiment's held-out one (:data:`CRITERIA`; also
for results written before 2026-11-26, which do not name it) or, for a method that maximises the ELBO,
that ELBO on all the training data (:func:`workflow.tuning.elbo_criterion`), or, on a posterior of one
datum, minus the kernel Stein discrepancy of its own draws (:func:`workflow.tuning.stein_criterion`).

One row per tuned method and target (the posterior, problem or model a result belongs to; ``—`` for an
experiment with one data set): its criterion, the grid's points with their mean criterion over the tuning
seeds (the chosen point in bold; a point whose runs failed shows its error), the chosen settings,
whether the choice lies on the grid's edge (the first or last value of a setting with three or more
values: the best may lie beyond the grid, so a wider grid could change it), and what the tuning cost
(stepping seconds and work in units summed over every point and seed, :func:`pmd.work.units`).
A result that was not tuned (a one-datum posterior under a held-out criterion, or a grid none of whose
points ran to a finite score) shows its reason; its tuned run is the default.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from pmd_bench.workflow.tuning import point_score

from .resultfiles import atomic_path

# the held-out criterion each experiment's tuning scores a grid point by (higher is better), as in
# workflow/tuning.py; a method that maximises the ELBO is scored by it instead (its result says so)
CRITERIA = {
    "mixture": "held-out log predictive density per validation row",
    "logistic": "held-out log predictive density per validation row",
    "posteriordb": "held-out log predictive density per validation row",
    "custom": "held-out log predictive density per validation row",
    "sparse_gp": "validation targets' log density under the method's predictive, per row",
    "lda": "minus the one held-out log-perplexity estimator on validation documents",
}


def target_of(path: Path) -> str:
    """The posterior, problem or model a tuning result belongs to: the folder above the file unless
    that is the experiment's ``tuning/`` folder itself (``.../tuning/<method>.json``: ``—``)."""
    if path.parent.name == "tuning":
        parent = path.parent.parent.name
        return "—" if parent in CRITERIA else parent
    return path.parent.name


def _value(value: Any) -> str:
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k}: {_value(v)}" for k, v in value.items()) + "}"
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


def _point(point: dict) -> str:
    return ", ".join(f"{k}={_value(v)}" for k, v in point.items())


def on_edge(result: dict) -> list[str]:
    """The settings whose chosen value is the first or last of three or more grid values."""
    edge = []
    for name, values in result["grid"].items():
        if len(values) >= 3 and name in result["chosen"] and result["chosen"][name] in (values[0], values[-1]):
            edge.append(name)
    return edge


def row(target: str, method: str, result: dict, experiment: str) -> list[str]:
    """The table row of one tuning result of ``experiment`` (module docstring)."""
    spent = result.get("work", result["evals"] + result["grad_evals"])  # in units; before units: the two counts
    cost = f"{result['seconds']:.1f} s; " + (f"{spent:.3g}" if math.isfinite(spent) else "not counted")
    if result.get("not_tuned"):
        return [target, method, result.get("criterion", "—"), f"not tuned: {result['not_tuned']}",
                "the default's settings", "—", cost]
    points = []
    for p in result["points"]:
        mean = point_score(p)
        score = f"{mean:.6g}" if math.isfinite(mean) else f"failed ({p['error']})"
        text = f"{_point(p['point'])}: {score}"
        points.append(f"**{text}**" if p["point"] == result["chosen"] else text)
    edge = on_edge(result)
    return [target, method, result.get("criterion", CRITERIA[experiment]), "; ".join(points),
            _point(result["chosen"]), ("yes: " + ", ".join(edge)) if edge else "no", cost]


def render(experiment: str, files: list[str | Path], out: str | Path) -> str:
    """Write the table of ``experiment``'s tuning results ``files`` (``.../<method>.json``) to ``out``."""
    if experiment not in CRITERIA:
        raise ValueError(f"no tuning criterion for the experiment {experiment!r}: one of {', '.join(CRITERIA)}")
    if not files:
        raise ValueError(f"no tuning results were given for the {experiment} experiment")
    rows, edges, fractions, seeds, own, stein = [], 0, set(), set(), False, False
    for path in map(Path, files):
        try:
            result = json.loads(path.read_text())
        except (OSError, json.JSONDecodeError) as err:
            raise ValueError(f"{path}: not a tuning result ({err})") from err
        missing = {"grid", "points", "chosen", "seconds", "evals", "grad_evals", "fraction", "seeds"} - set(result)
        if missing:
            raise ValueError(f"{path}: not a tuning result (no {', '.join(sorted(missing))})")
        rows.append(row(target_of(path), path.stem, result, experiment))
        edges += bool(not result.get("not_tuned") and on_edge(result))
        seeds.add(result["seeds"])
        if result["fraction"] is None:
            own = True
            stein = stein or "Stein" in result.get("criterion", "")
        else:
            fractions.add(result["fraction"])
    header = ["target", "method", "criterion", "grid: mean criterion over the tuning seeds (chosen in bold)", "chosen",
              "chosen on the grid's edge", "tuning cost: stepping s; work (units)"]
    held = (f"{CRITERIA[experiment]} ({' or '.join(f'{f:g}' for f in sorted(fractions))} of the rows or documents "
            "held out of the training data for validation)")
    own_text = "the ELBO on all the training data, which the method maximises"
    scored = (f"{held}, or, for a method that maximises the ELBO, by that ELBO on all the training data"
              if fractions and own else (held if fractions else own_text))
    if stein:
        scored += (", or, on a posterior of one datum (no row to hold out), by minus the kernel Stein discrepancy "
                   "of the method's own draws against the posterior on all its data")
    text = "\n".join([
        f"# Tuning: {experiment}", "",
        f"Each grid point ran with {' or '.join(map(str, sorted(seeds)))} tuning seeds that no reported run uses "
        f"and was scored by {scored}, higher is better, never by the reference posterior (`workflow/tuning.py`). "
        "Points within one standard error of a difference of the best (from the tuning seeds' spread) tie with it, "
        "and the tie goes to the point nearest the grid's middle. "
        "The `<method>_tuned` rows of the experiment's tables ran with the choice.", "",
        "| " + " | ".join(header) + " |", "|" + "---|" * len(header), *("| " + " | ".join(r) + " |" for r in rows), "",
        f"Choices on the grid's edge: {edges} of {len(rows)} (a wider grid could move them, except where `workflow/config/tuning.yaml` states a bound)." if edges else
        f"No choice lies on the grid's edge ({len(rows)} results).", ""])
    with atomic_path(out) as tmp:
        tmp.write_text(text)
    return text
