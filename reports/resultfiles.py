"""Result files (``.npz`` with a JSON ``meta`` entry): reading them; ``atomic_path`` (from
:mod:`datasets.atomic`, re-exported) writes any file atomically."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import numpy as np

from datasets.atomic import atomic_path  # noqa: F401  (re-exported for the reports and the workflow)


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


def curve_stats(runs: list[tuple[dict, dict]], metric: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(visited, mean, std)`` of ``curve/<metric>`` over runs (truncated to the shortest run)."""
    n = min(len(a["visited"]) for a, _ in runs)
    values = np.stack([a[f"curve/{metric}"][:n] for a, _ in runs])
    return runs[0][0]["visited"][:n], values.mean(axis=0), values.std(axis=0)
