"""Result files (``.npz`` with a JSON ``meta`` entry): reading them, summarising a metric over
seeds (curves, rankings, differences with standard errors); ``atomic_path`` (from
:mod:`datasets.atomic`, re-exported) writes any file atomically."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any

import numpy as np

from pmd_bench.datasets.atomic import atomic_path  # noqa: F401  (re-exported for the reports and the workflow)


def load_npz(path: str | Path) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
    """``(arrays, meta)`` of a result file."""
    with np.load(path, allow_pickle=False) as f:
        arrays = {k: f[k] for k in f.files if k != "meta"}
        meta = json.loads(str(f["meta"])) if "meta" in f.files else {}
    return arrays, meta


def runs_by_method(paths: list[str | Path]) -> dict[str, list[tuple[dict, dict]]]:
    """Load run files ``.../<method>/seed<k>.npz`` grouped by method (in the order given), in seed order."""
    groups: dict[str, list[Path]] = {}
    for path in map(Path, paths):
        groups.setdefault(path.parent.name, []).append(path)
    if not groups:
        raise FileNotFoundError("no run files were given")
    seed = lambda p: int(re.sub(r"\D", "", p.stem) or 0)  # noqa: E731
    return {method: [load_npz(f) for f in sorted(files, key=seed)] for method, files in groups.items()}


def runs_by_group(paths: list[str | Path], key: str) -> dict[str, dict[str, list[tuple[dict, dict]]]]:
    """``group -> method -> runs`` (:func:`runs_by_method`): run files split by the value of
    ``meta[key]`` (e.g. ``posterior`` or ``problem``), groups in the order they first appear."""
    groups: dict[str, list[str | Path]] = {}
    for path in paths:
        groups.setdefault(load_npz(path)[1][key], []).append(path)
    return {group: runs_by_method(files) for group, files in groups.items()}


def shared_curves(runs: list) -> list[str]:
    """The metrics whose curve (``curve/<metric>``) every run holds, sorted: runs written before a
    curve was recorded (``compile_time``, 2026-11-27) sit beside newer ones in one summary."""
    names = [{k[len("curve/"):] for k in arrays if k.startswith("curve/")} for arrays, _ in runs]
    return sorted(set.intersection(*names)) if names else []


def curve_stats(runs: list[tuple[dict, dict]], metric: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(visited, mean, std)`` of ``curve/<metric>`` over runs (truncated to the shortest run)."""
    n = min(len(a["visited"]) for a, _ in runs)
    values = np.stack([a[f"curve/{metric}"][:n] for a, _ in runs])
    return runs[0][0]["visited"][:n], values.mean(axis=0), values.std(axis=0)


def commits(metas) -> list[str]:
    """The commits (first ten characters) the run files of ``metas`` were made at, sorted; "not
    recorded" for a file written before run files recorded it."""
    return sorted({str(meta["commit"])[:10] if "commit" in meta else "not recorded" for meta in metas})


def mean_se(values) -> tuple[float, float]:
    """The mean of independent seeds' values and its standard error ``s / √n`` (``s`` with
    ``ddof = 1``, the unbiased variance; NaN for one seed: one value says nothing of the spread)."""
    values = np.asarray(values, float)
    se = float(values.std(ddof=1) / np.sqrt(len(values))) if len(values) > 1 else math.nan
    return float(values.mean()), se


def mean_pm(values, fmt: str) -> str:
    """``mean ± standard error`` over seeds (:func:`mean_se`), the mean alone for one seed: every
    table's cell for a final value; the table's ``runs`` column gives the seeds."""
    mean, se = mean_se(values)
    return f"{mean:{fmt}}" if math.isnan(se) else f"{mean:{fmt}} ± {se:{fmt.lstrip('+')}}"


def mean_difference(a, b) -> tuple[float, float]:
    """``mean(a) - mean(b)`` over independent seeds and its standard error ``sqrt(s_a²/n_a + s_b²/n_b)``
    (a side with one seed contributes no spread)."""
    a, b = np.asarray(a, float), np.asarray(b, float)
    var = sum(x.var(ddof=1) / len(x) for x in (a, b) if len(x) > 1)
    return float(a.mean() - b.mean()), float(np.sqrt(var))


def ranking(final: dict[str, np.ndarray], what: str, fmt: str = ".4f") -> str:
    """One sentence ordering the methods by the mean of ``final[label]`` (lower is better)."""
    ranked = sorted((np.mean(v), label) for label, v in final.items() if len(v))
    return (f"Ordering here, by mean {what} (lower is better): "
            + " < ".join(f"{label} ({value:{fmt}})" for value, label in ranked) + ".")


def difference_notes(final: dict[str, np.ndarray], ours: str, others, unit: str, fmt: str = ".4f") -> list[str]:
    """``ours − other`` for each of ``others`` present, with its standard error over seeds
    (:func:`mean_difference`): how the paper's "significantly better than" reads in our runs."""
    notes = []
    for other in (o for o in others if o in final and ours in final):
        diff, se = mean_difference(final[ours], final[other])
        notes.append(f"{ours} − {other}: {diff:+{fmt}} ± {se:{fmt}} {unit} "
                     f"(standard error over {len(final[ours])} and {len(final[other])} seeds).")
    return notes
