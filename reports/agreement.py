"""The custom experiment beside the posteriordb experiment on the same posteriors: do models written
in PyMC (``examples/posteriordb_pymc/``, through :func:`pmd.from_pymc`) score as the hand-written JAX
models do? (the proof on models nobody here wrote; ``workflow/config/custom_posteriordb.yaml``).

Reads the two reports' JSON summaries (:func:`reports.posteriordb.collect`), keeps the posteriors
and methods both hold and writes, per accuracy number (``max |mean error|``, ``max |log sd
ratio|``), a table whose cells are ``JAX / PyMC`` (each the mean over its seeds), the floor first;
then how many cells reach the same verdict against the suite's goal (:data:`reports.posteriordb.GOAL`)
and, among the cells both place within it, the largest difference. The two sides' runs use different
seeds' streams of the same methods, so cells differ by seed noise even where the models agree; a
method that fails on both sides differs by more (its error is whatever its divergence reached).

Usage: ``python -m pmd_bench.reports.agreement CUSTOM.json POSTERIORDB.json --out agreement.md``
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from .posteriordb import ACCURACY, FLOOR, GOAL, _table
from .resultfiles import atomic_path


def _cell(values: dict | None, key: str) -> float | None:
    return None if values is None else values.get(key)


def _fmt(value: float | None) -> str:
    return "—" if value is None else f"{value:.3g}"


def _within(values: dict | None) -> bool:
    return values is not None and all(values.get(k) is not None and abs(values[k]) <= b for k, b in zip(ACCURACY, GOAL))


def compare(custom: dict, posteriordb: dict) -> str:
    """The Markdown of the module docstring from the two summaries."""
    names = [p for p in posteriordb["posteriors"] if p in custom["posteriors"]]
    if not names:
        raise ValueError("the custom and posteriordb summaries share no posterior: name the custom models as the "
                         "posteriordb posteriors (workflow/config/custom_posteriordb.yaml)")
    methods = [m for m in posteriordb["methods"] if m in custom["methods"]]
    pairs = {(p, m): (posteriordb["posteriors"][p]["methods"].get(m), custom["posteriors"][p]["methods"].get(m))
             for p in names for m in methods}
    lines = ["# The same posteriors as hand-written JAX models and as PyMC models", "",
             f"Cells: posteriordb experiment (JAX model) / custom experiment (PyMC model), each the mean over its "
             f"seeds; the floor is that many held-out reference draws on each model's own columns."]
    for key, words in zip(ACCURACY, ("max |mean error| (reference sd)", "max |log sd ratio|")):
        rows = [[p, f"{_fmt(posteriordb['posteriors'][p]['floor'][key])} / {_fmt(custom['posteriors'][p]['floor'][key])}",
                 *(f"{_fmt(_cell(pairs[p, m][0], key))} / {_fmt(_cell(pairs[p, m][1], key))}" for m in methods)]
                for p in names]
        lines += ["", f"## {words}", "", *_table(["posterior", FLOOR, *methods], rows)]
    same = sum(_within(a) == _within(b) for a, b in pairs.values())
    both = [(abs(a[ACCURACY[0]] - b[ACCURACY[0]]), p, m) for (p, m), (a, b) in pairs.items() if _within(a) and _within(b)]
    lines += ["", f"Same verdict against the goal (max |mean error| ≤ {GOAL[0]} and max |log sd ratio| ≤ {GOAL[1]}) "
              f"in **{same} of {len(pairs)}** cells (posterior × method)."]
    if both:
        gap, p, m = max(both)
        lines.append(f"Among the {len(both)} cells both place within the goal, the largest difference of max |mean "
                     f"error| is {gap:.3g} reference sd ({m} on {p}).")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m pmd_bench.reports.agreement", description=__doc__.split("\n")[0])
    parser.add_argument("custom", help="the custom report's table_custom.json")
    parser.add_argument("posteriordb", help="the posteriordb report's table_posteriordb.json")
    parser.add_argument("--out", required=True, help="the Markdown table")
    args = parser.parse_args(argv)
    text = compare(json.loads(Path(args.custom).read_text()), json.loads(Path(args.posteriordb).read_text()))
    with atomic_path(args.out) as tmp:
        tmp.write_text(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
