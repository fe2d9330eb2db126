"""PMD against NUTS and the streaming and full-data baselines as the data grow: the wall time to meet
the moment criterion (:data:`reports.cost.MOMENTS`: the worst coordinate's |mean error| within 0.5
reference sd and its |log sd ratio| within 0.3) and keep it, and how each method's cost scales in N.

Problem: synthetic well-specified logistic regression (``bench_batched_logistic.synthetic``:
``x ~ N(0, I)``, ``w* ~ N(0, I/d)``, a bias column appended, so ``d = --features + 1``, default 21),
``N`` in ``--ns`` (default 10⁴, 10⁵, 10⁶; pass the ones that fit), the data drawn from
``--data-seed``. Reference posterior at each ``N``: the Laplace approximation of the full-data
posterior (:func:`baselines._common.laplace_approximation`, ``--reference-draws`` draws). At
``N ≥ 10⁴`` and ``d = 21`` the posterior's skewness is ``O(N^{-1/2})``, so the Laplace mean and sd
are within ``O(1/N)`` (relative) of the exact ones: far inside the criterion's bounds.

Methods, all in this one process, on the same data and reference, each for seeds ``0 .. --seeds − 1``
(default 3):

* the config's posteriordb entries ``--methods`` (default ``pmd``, ``blackjax_tempered_smc``, ``sgld``,
  ``svi``: the library's default PMD, BlackJAX's adaptive tempered SMC, SGLD and full-rank SVI), each
  under the posteriordb budget rule (:func:`workflow.experiments.posteriordb.budget`: 100 steps a
  pass, 5 passes) and scored ``--evals-per-pass`` times a pass, the clock the method's building
  (SVI's and SGLD's Laplace start) plus the runner's time from the init to the last step
  (compilation included, scoring excluded): :func:`bench_time_to_accuracy.time_method`;
* BlackJAX NUTS with window adaptation over a ladder of lengths (:func:`bench_time_to_accuracy.time_nuts`,
  ``--nuts-ladder``, default 100 250 500 1000: at each rung ``L`` a fresh chain, ``L`` warm-up steps
  then ``L`` draws scored once, the rung's warm-up, draws and compilation on its clock) at every
  ``N`` up to ``--nuts-max-n``; above it **extrapolated** (:func:`extrapolated_seconds`), seed by
  seed: NUTS's stepping time to the criterion at the largest timed ``N`` (compilation excluded)
  times the ratio of the full-data gradient's time at the larger ``N`` to its time at the timed one
  (``nuts_grad_ms``, timed at every ``N``), marked ``*`` in the table; the table with compilation
  adds the seed's compilation at the timed ``N`` to it, so both tables compare like with like.

Reached (:func:`bench_time_to_accuracy.first_kept`, the one rule of both benchmarks): a method's
curve meets the criterion (``MOMENTS.score ≤ 1``) at an evaluation and at every later one to the run's
end; NUTS's, at a rung and at every longer rung, at that rung's own time. A table cell is the median
seconds over the seeds that reached and ``reached k/n`` (none: the best score of any seed, in brackets).

PMD's particle count is the user's dial between accuracy and cost (its moves read every row once per
particle, so its work is proportional to ``m``; the Monte Carlo error of a mean from ``m`` equally
weighted particles is about ``m^{-1/2}`` sd): ``--pmd-particles`` adds a row ``pmd_m<m>``, the
config's ``pmd`` entry with ``num_particles: m``, for each ``m`` given (default 250; the config's
own is 1,000). The third table gives each method's score at the evaluation where it reached the
criterion, so that the times compare at stated accuracies.

The slope of each method's log time to accuracy against log N (least squares over the ``N`` where
some seed reached the criterion, each at its median) is its cost's growth: 1 for a method whose cost
is proportional to the data. Every method first runs once (seed 0) at ``--warmup-n``, unscored:
without it (docs/findings.md, 2026-11-26) the first N paid the process's first compilations and
every method was faster at N = 3·10⁴ than at 10⁴.

Run: ``python benchmarks/bench_growing_n.py [--ns 10000 100000 1000000] [--nuts-max-n 100000]
[--seeds 3] [--nuts-ladder 100 250 500 1000] [--out results/benchmarks/growing_n]``; writes
``growing_n.json`` (every seed's curve, ``curves[N][method]`` a list over seeds, and the times) and
``growing_n.md`` (the table), and prints the table.
"""

from __future__ import annotations

import argparse
import math
import time
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import yaml

from bench_batched_logistic import synthetic
from bench_time_to_accuracy import (Unconstrained, add_timing_arguments, cell_text, criterion_words, first_kept,
                                    median_reached, nuts_logdensity, progress, score_there, summarise,
                                    time_method, time_nuts, with_particle_counts)
from pmd.models.logistic import BayesianLogisticRegression
from pmd.sample_metrics import SampleReference
from pmd_bench.baselines._common import laplace_approximation
from pmd_bench.datasets.atomic import atomic_path
from pmd_bench.workflow.results import save_json


def gradient_ms(model, data, repeats: int = 5) -> float:
    """Median time of one full-data gradient of NUTS's target (compiled first), in ms."""
    grad = jax.jit(lambda theta, data: jax.grad(nuts_logdensity(model, data))(theta))
    theta = jnp.zeros(model.dim)
    jax.block_until_ready(grad(theta, data))
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        jax.block_until_ready(grad(theta, data))
        times.append(time.perf_counter() - t0)
    return 1e3 * float(np.median(times))


def nuts_gradients_to(curve: dict, num_data: int) -> float | None:
    """Full-data gradients of the NUTS rung where a timed curve reached the criterion for good (None:
    never; :func:`bench_time_to_accuracy.first_kept`)."""
    first = None if "error" in curve else first_kept(curve)
    return None if first is None else float(curve["visited"][first]) / num_data


def extrapolated_seconds(timed_seconds: float, timed_ms: float, ms: float) -> float:
    """NUTS's stepping seconds to the criterion at a timed ``N`` (compilation excluded), carried to a
    larger ``N`` by the ratio ``ms / timed_ms`` of its full-data gradient's times there: NUTS's
    stepping is its gradients, and it needs as many of them at either ``N`` (the gradient count at
    the timed ``N`` is recorded beside it). The ratio, not the count × ``ms``: a gradient timed
    alone took 2.0× (N = 2·10⁵) and 2.8× (10⁶) the time a gradient took inside NUTS's own run on
    the 2-core CPU, and the product put NUTS at 200 s at 10⁶ where it was timed at 87-96 s
    (docs/findings.md, 2026-11-27)."""
    return timed_seconds * ms / timed_ms


def slope(ns: list[int], times: list[float | None]) -> float | None:
    """Least-squares slope of log time against log N over the ``N`` with a time (None: under two)."""
    pairs = [(math.log(n), math.log(t)) for n, t in zip(ns, times) if t is not None and t > 0]
    if len(pairs) < 2:
        return None
    x, y = np.asarray(pairs).T
    return float(np.polyfit(x, y, 1)[0])


def timed_cell(curves: list[dict]) -> dict:
    """A timed method's cell at one ``N``, seed by seed: ``seconds`` and ``without_compilation`` to the
    criterion (None: not reached), ``best`` score, ``score_there`` (the score where reached)."""
    with_c, without = [summarise(c) for c in curves], [summarise(c, False)[0] for c in curves]
    return {"seconds": [s[0] for s in with_c], "best": [s[1] for s in with_c], "without_compilation": without,
            "score_there": [score_there(c) for c in curves], "extrapolated": False}


def times_by_method(ns: list[int], curves: dict, grad_ms: list[float], labels: list[str]) -> dict:
    """``method -> [cell per N]`` (:func:`timed_cell`); NUTS above the largest timed ``N``: each seed's
    time extrapolated from that seed at the largest timed ``N`` below (:func:`extrapolated_seconds`)."""
    times = {label: [] for label in [*labels, "nuts"]}
    timed = [n for n in ns if "nuts" in curves[n]]
    for n, ms in zip(ns, grad_ms):
        for label in labels:
            times[label].append(timed_cell(curves[n][label]))
        if "nuts" in curves[n]:
            times["nuts"].append(timed_cell(curves[n]["nuts"]))
            continue
        source = max((m for m in timed if m < n), default=None)
        if source is None:  # no timed N below: nothing to carry
            grads = [None] * max(map(len, curves[n].values()), default=0)
            seconds, stepping = list(grads), list(grads)
        else:
            at = ns.index(source)
            grads = [nuts_gradients_to(c, source) for c in curves[source]["nuts"]]
            timed = times["nuts"][at]
            stepping = [None if g is None else extrapolated_seconds(t, grad_ms[at], ms)
                        for g, t in zip(grads, timed["without_compilation"])]
            # the compilation the seed paid at the timed N, added as it was (the data are an argument
            # of the compiled programs: a larger N compiles the same programs)
            seconds = [None if s is None else s + (w - t) for s, w, t in
                       zip(stepping, timed["seconds"], timed["without_compilation"])]
        times["nuts"].append({"seconds": seconds, "best": [math.nan] * len(seconds), "without_compilation": stepping,
                              "score_there": [None] * len(seconds), "extrapolated": True, "gradients": grads,
                              "from_n": source})
    return times


def table(report: dict) -> str:
    ns = report["ns"]
    rows = report["times"]
    lines = [f"Wall time (s) to meet {criterion_words()} and keep it to the run's end (NUTS: the first rung of its "
             f"ladder {report['nuts_ladder']} from which every longer rung meets it, at that rung's own time), "
             f"synthetic logistic regression, d = {report['dim']}, one run of benchmarks/bench_growing_n.py on "
             f"{report['device']}, {report['seeds']} seeds: the median over the seeds that reached it, and how many "
             "did; [best score] where none did; NUTS marked * is extrapolated, seed by seed (its stepping time to the "
             "criterion at the largest timed N × the ratio of its full-data gradient's time at this N to that at the "
             "timed N; no compilation in it). The slope: over the N where some seed reached, at the medians. "
             "Then the same without the compilation of the init's and the stepping programs (what a method compiles "
             "while it is built, the Laplace starts, stays in)."]
    for key in ("seconds", "without_compilation"):
        lines += ["", f"| method{'' if key == 'seconds' else ' (without compilation)'} | "
                  + " | ".join(f"N = {n:,}" for n in ns) + " | slope in log N |", "|---|" + "---|" * (len(ns) + 1)]
        for name, cells in rows.items():
            text = [cell_text(c[key], c["best"], c.get("extrapolated", False)) for c in cells]
            fit = slope(ns, [median_reached(c[key]) for c in cells])
            lines.append(f"| {name} | " + " | ".join(text) + f" | {'-' if fit is None else f'{fit:.2f}'} |")
    lines += ["", "The criterion's score at the evaluation where each method reached it, median over the seeds "
              "that did (extrapolated NUTS: not scored there):", "",
              "| method | " + " | ".join(f"N = {n:,}" for n in ns) + " |", "|---|" + "---|" * len(ns)]
    for name, cells in rows.items():
        there = [median_reached(c.get("score_there", [])) for c in cells]
        lines.append(f"| {name} | " + " | ".join("-" if s is None else f"{s:.3f}" for s in there) + " |")
    lines += ["", "NUTS full-data gradient (ms): " + ", ".join(
        f"N = {n:,}: {ms:.2f}" for n, ms in zip(ns, report["nuts_grad_ms"]))]
    return "\n".join(lines) + "\n"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--ns", type=int, nargs="+", default=[10_000, 100_000, 1_000_000])
    parser.add_argument("--features", type=int, default=20)
    parser.add_argument("--config", default="workflow/config/standard.yaml", help="its posteriordb section's methods and budget")
    parser.add_argument("--methods", nargs="*", default=["pmd", "blackjax_tempered_smc", "sgld", "svi"])
    parser.add_argument("--warmup-n", type=int, default=2_000,
                        help="first run everything once (seed 0) at this N, unscored (0: not): the first compilation "
                             "of the programs whose shapes do not depend on N (PMD's init) then falls on no measured N")
    parser.add_argument("--reference-draws", type=int, default=20_000)
    parser.add_argument("--data-seed", type=int, default=0, help="the synthetic data's seed (the reference's: this + 1)")
    parser.add_argument("--nuts-max-n", type=int, default=100_000, help="time NUTS up to this N, extrapolate above")
    add_timing_arguments(parser)
    parser.add_argument("--out", default="results/benchmarks/growing_n")
    args = parser.parse_args(argv)
    with open(args.config) as f:
        section = yaml.safe_load(f)["posteriordb"]
    args.methods = with_particle_counts(section, args.methods, args.pmd_particles)
    model = BayesianLogisticRegression(dim=args.features + 1).model()

    def measure(n: int, seeds) -> tuple[dict, float]:
        data = synthetic(n, args.features, seed=args.data_seed)
        laplace = laplace_approximation(model, data)
        reference = SampleReference(laplace.sample(jax.random.key(args.data_seed + 1), args.reference_draws))
        problem = Unconstrained(model, data)
        out = {label: [time_method(label, section["methods"][label], section, problem, reference, args, s)
                       for s in seeds] for label in args.methods}
        ms = gradient_ms(model, jax.tree_util.tree_map(jnp.asarray, data))
        if n <= args.nuts_max_n:
            out["nuts"] = [time_nuts(problem, reference, args, section["eval_samples"], s) for s in seeds]
        print(n, progress(out), flush=True)
        return out, ms

    if args.warmup_n:
        measure(args.warmup_n, [0])  # discarded: see --warmup-n
    curves, grad_ms = {}, []
    for n in args.ns:
        curves[n], ms = measure(n, range(args.seeds))
        grad_ms.append(ms)
    report = {"device": f"{jax.devices()[0].device_kind} ({jax.default_backend()})", "ns": args.ns,
              "dim": args.features + 1, "criterion": criterion_words(), "seeds": args.seeds,
              "nuts_ladder": sorted(args.nuts_ladder), "config": args.config,
              "reference": "Laplace approximation (baselines._common.laplace_approximation)",
              "nuts_grad_ms": grad_ms, "times": times_by_method(args.ns, curves, grad_ms, args.methods),
              "curves": {str(n): c for n, c in curves.items()}}
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    save_json(out.with_suffix(".json"), report)
    with atomic_path(out.with_suffix(".md")) as tmp:
        tmp.write_text(table(report))
    print(out.with_suffix(".md").read_text())


if __name__ == "__main__":
    main()
