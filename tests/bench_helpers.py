"""A script of ``benchmarks/`` loaded as a module, for the tests of its pure parts (the scripts are
not a package: they import each other by name when run from that folder); synthetic curves of the
benchmarks' time to accuracy."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

BENCHMARKS = Path(__file__).resolve().parent.parent / "benchmarks"


def load_benchmark(name: str) -> ModuleType:
    """``benchmarks/<name>.py``, executed as the module ``name``."""
    spec = importlib.util.spec_from_file_location(name, BENCHMARKS / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def moment_curve(scores, wall_time=None, visited=None) -> dict:
    """A benchmark curve whose :data:`reports.cost.MOMENTS` score at each point is ``scores`` (its worst |mean error|
    at ``score ×`` its bound, its worst |log sd ratio| at half that), its clock ``wall_time`` (default
    1, 2, …)."""
    from pmd_bench.reports.cost import MOMENTS  # here: the other users of this module do not need the reports

    (mean_metric, log_metric), (mean_bound, log_bound) = MOMENTS.metrics, MOMENTS.bounds
    n = len(scores)
    return {"wall_time": list(wall_time or range(1, n + 1)), "visited": list(visited or range(n)),
            mean_metric: [s * mean_bound for s in scores], log_metric: [0.5 * s * log_bound for s in scores]}
