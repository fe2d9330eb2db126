"""A mode's mass in one PMD run, over 40 seeds: the default's moves without and with the independence
sweeps that cross between modes (:func:`pmd.rejuvenation.independence_sweeps`).

Settings: the mixture experiment's (``N = 1000`` rows simulated with seed 0, batch 10, 2 passes,
``m = 1000``, float32), ``PMD(model, N, m, data=x)`` with the moves ``before`` (the
``DEFAULT_MOVES`` schedule with ``independence = 0``: resample and 5 MALA moves, which never cross
between modes; the default until 2026-11-26) and ``after`` (``DEFAULT_MOVES`` itself: the same and
2 independence sweeps after the MALA moves of every round), on two mixtures: the Welling-Teh
mixture of ``tests/test_pmd_mixture.py`` (the mass of ``θ1 > 0``, exact 0.5406 from the gridded
posterior) and :class:`pmd.models.mixture.SymmetricMixture`
(the mass of ``μ1 > μ2``, exactly ½ by symmetry). Per case: the mean error of the mass, its
run-to-run sd (ddof 1), the largest error, and the binomial sd ``sqrt(p(1-p)/m)`` of ``m``
independent exact draws, the floor no particle method beats.

Run: ``python benchmarks/bench_mode_balance.py [--seeds 40] [--cases welling_teh/after ...]
[--out results/benchmarks/mode_balance]``; each case's runs go to ``OUT/<mixture>_<moves>.json`` as
they end (a rerun resumes; two processes may run different ``--cases``), and the table of every case
found there to ``OUT.json`` and ``OUT.md``.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import jax
import numpy as np

from pmd import PMD, run
from pmd.metrics import Grid
from pmd.models.mixture import SymmetricMixture, WellingTehMixture
from pmd.rejuvenation import DEFAULT_MOVES

N, BATCH, PASSES, M = 1000, 10, 2, 1000
GRID = Grid((-3.0, -4.0), (3.0, 4.0), (61, 81))  # tests/test_pmd_mixture.py's
MOVES = {"before": {**DEFAULT_MOVES, "independence": 0}, "after": DEFAULT_MOVES}
CASES = [("welling_teh", "after"), ("symmetric", "after"), ("symmetric", "before"), ("welling_teh", "before")]


def mixture(name: str):
    """``(mixture, the data, the mode's side as a function of the particles, its exact mass)``."""
    if name == "welling_teh":
        mix = WellingTehMixture()
        x = mix.simulate(0, N)
        grid = np.exp(np.asarray(mix.grid_posterior(x, GRID).log_prob))
        return mix, x, lambda s: s[:, 0] > 0, float(grid[GRID.points[:, 0] > 0].sum())
    mix = SymmetricMixture()
    return mix, mix.simulate(0, N), lambda s: s[:, 0] > s[:, 1], 0.5


def summary(masses: list[float], exact: float) -> dict:
    err = np.asarray(masses) - exact
    return {"runs": len(err), "mean_error": float(err.mean()), "sd": float(err.std(ddof=1)),
            "largest_error": float(np.abs(err).max()), "binomial_sd": float(np.sqrt(exact * (1 - exact) / M))}


def table(cases: dict) -> str:
    lines = ["| mixture | moves | runs | exact mass | mean error | run-to-run sd | largest error | binomial sd |",
             "|---|---|---|---|---|---|---|---|"]
    for c in cases.values():
        lines.append(f"| {c['mixture']} | {c['moves']} | {c['runs']} | {c['exact']:.4f} | {c['mean_error']:+.4f} | "
                     f"{c['sd']:.4f} | {c['largest_error']:.4f} | {c['binomial_sd']:.4f} |")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seeds", type=int, default=40)
    parser.add_argument("--cases", nargs="*", default=[f"{name}/{moves}" for name, moves in CASES])
    parser.add_argument("--out", type=Path, default=Path("results/benchmarks/mode_balance"))
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    for label in args.cases:
        name, moves = label.split("/")
        path = args.out / f"{name}_{moves}.json"
        mix, x, side, exact = mixture(name)
        case = json.loads(path.read_text()) if path.exists() else {
            "mixture": name, "moves": moves, "spec": MOVES[moves], "N": N, "batch": BATCH, "passes": PASSES,
            "particles": M, "exact": exact, "masses": [], "seconds": []}
        algo = PMD(mix.model(), data_size=N, num_particles=M, data=x, rejuvenate=MOVES[moves])
        for seed in range(len(case["masses"]), args.seeds):
            start = time.perf_counter()
            post = run(algo, x, jax.random.key(seed), batch_size=BATCH, num_passes=PASSES).posterior
            w, s = np.asarray(post.weights), np.asarray(post.samples)
            case["masses"].append(float(w[side(s)].sum()))
            case["seconds"].append(time.perf_counter() - start)
            path.write_text(json.dumps(case, indent=1))
            print(f"{label} seed {seed}: mass {case['masses'][-1]:.4f} ({case['seconds'][-1]:.1f} s)", flush=True)
    cases = {f"{c['mixture']}/{c['moves']}": {**c, **summary(c["masses"], c["exact"])}
             for c in (json.loads(p.read_text()) for p in sorted(args.out.glob("*.json")))
             if len(c["masses"]) >= 2}
    args.out.with_suffix(".json").write_text(json.dumps(cases, indent=1))
    args.out.with_suffix(".md").write_text(table(cases))
    print(table(cases))


if __name__ == "__main__":
    main()
