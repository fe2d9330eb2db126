"""Time to accuracy: the wall time each method needs to bring its posterior mean within a fixed
error of a reference posterior, every method and NUTS timed in ONE run of this script (same
machine, same load), on the logistic model and posteriordb posteriors.

Problems:

* ``logistic``: Bayesian logistic regression on a prepared classification file (``--logistic-data``;
  default the 11,769-row MNIST 6-vs-8 of ``workflow/config/mnist.yaml``) against the NUTS reference
  the workflow wrote (``--logistic-reference``).
* ``--posteriors``: posteriordb posteriors (through the offline mirror) against their reference draws.

Every method runs under the posteriordb experiment's budget rule and method entries
(:func:`workflow.experiments.posteriordb.budget`, the config's ``posteriordb`` section): the same
steps and batches for every method, nothing tuned per problem. The posterior is scored every
``--evals-per-pass``-th of a pass; the clock is the method's building (SVI's and SGLD's Laplace
start) plus the runner's time from the init to the last step (compilation included, scoring
excluded). ``--pmd-particles`` adds rows ``pmd_m<m>``: the config's ``pmd`` entry with ``m`` particles
(default 250; the config's own is 1,000), since the particle count is PMD's dial between accuracy
and cost. NUTS is BlackJAX's (``--nuts-warmup`` steps of window adaptation, then draws scored in
chunks of ``--nuts-chunk``, one chain from a prior draw), its clock including warm-up. Each curve
also carries ``compile_time``, the compilation so far (the runner's ``compile_time``: the init's
program and the steps'; NUTS's warm-up and chunk programs, compiled ahead and timed apart), and
the table is given twice: with compilation, and without it (the clock less ``compile_time``; what a
method compiles while it is built, the Laplace starts, stays in).

The error is ``mean_error`` of :class:`pmd.sample_metrics.SampleReference`: the coordinates' mean
absolute error of the posterior mean in reference standard deviations. The time to accuracy is the
clock reading at the first evaluation from which it stays at most ``--threshold`` (default 0.5, the
posteriordb goal of issue 11) to the run's end: reached and kept, the rule of the workflow's
cost tables (:mod:`reports.cost`), so that an iterate that meets it between PMD's pass ends (where
it is not the posterior) and leaves it again, or an early estimate that meets it by chance, does
not count (measured at N = 10⁶: the default read 0.46 sd at 4/5 of pass 1 and 0.55 at 3/5 of pass
2, docs/findings.md 2026-11-27); a method that never gets there for good is reported as not
reaching it, with its best error.

Run (after the workflow has written the references, e.g. ``snakemake results/mnist/figures/table_logistic.md
--cores 2 --configfile workflow/config/mnist.yaml``)::

    python benchmarks/bench_time_to_accuracy.py --out results/benchmarks/time_to_accuracy

writes ``time_to_accuracy.json``, ``.md`` (the table) and ``.png`` (error against wall time).
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

import blackjax
from pmd_bench.datasets.atomic import atomic_path
from pmd_bench.datasets.settings import resolve_settings
from pmd import ParticlePosterior
from pmd.models.logistic import BayesianLogisticRegression
from pmd.models.posteriordb import load_problem, reference_draws
from pmd.runner import compilation_seconds
from pmd.sample_metrics import SampleReference
from pmd_bench.workflow import methods
from pmd_bench.workflow.experiments.logistic import load_data
from pmd_bench.workflow.experiments.posteriordb import Scorer, budget, run_budgeted
from pmd_bench.workflow.results import load_npz, save_json


class Unconstrained:
    """A problem whose parameters are already on the reference's scale (logistic regression)."""

    def __init__(self, model, data):
        self.model, self.data = model, data

    @staticmethod
    def constrain(thetas):
        return thetas


def problems(args, settings):
    """``name -> (problem, SampleReference)``."""
    out = {}
    if args.logistic_data:
        train, _ = load_data(args.logistic_data)
        ref, _ = load_npz(args.logistic_reference)
        model = BayesianLogisticRegression(dim=train["x"].shape[1], prior_std=args.prior_std).model()
        out["logistic"] = (Unconstrained(model, train), SampleReference(ref["draws"]))
    for name in args.posteriors:
        problem = load_problem(name, settings)
        draws = reference_draws(problem, settings).reshape(-1, len(problem.columns))
        out[name] = (problem, SampleReference(draws))
    return out


def time_method(label, spec, section, problem, reference, args):
    """One method's curve: ``{"wall_time", "visited", "mean_error"}`` lists, or ``{"error": ...}``."""
    num_data = int(jax.tree_util.tree_leaves(problem.data)[0].shape[0])
    spec, settings = budget(section, label, spec, num_data)
    batch = settings["batch_size"]
    eval_every = max(batch, settings["steps_per_pass"] * batch // args.evals_per_pass)
    try:
        t0 = time.perf_counter()
        method = methods.build(label, spec, problem.model, problem.data, settings["num_steps"])
        result = run_budgeted(method, problem.data, settings, jax.random.key(args.seed),
                              Scorer(problem, reference, section["eval_samples"]), eval_every=eval_every)
        total = time.perf_counter() - t0
    except Exception as err:  # noqa: BLE001 (a failure is a result)
        return {"error": f"{type(err).__name__}: {err}"}
    start = total - result.step_seconds - result.eval_seconds  # building: SVI's and SGLD's Laplace start
    return {"wall_time": (start + result.curves["wall_time"]).tolist(), "visited": result.visited.tolist(),
            "mean_error": result.curves["mean_error"].tolist(), "start_seconds": start,
            "compile_time": result.curves["compile_time"].tolist()}


def nuts_logdensity(model, data):
    """``θ ↦ log p(θ) + Σ_n log p(x_n|θ)`` on the whole ``data`` in one vectorised sum, NUTS's target as
    a BlackJAX user writes it. Build it inside the jitted function that takes ``data`` as an argument: a
    closed-over data set is a compile-time constant (docs/findings.md, 2026-11-25).

    Until 2026-11-29 the sum ran in blocks of 4,096 rows inside a ``scan`` (PMD's moves read the data
    that way, to bound an ``m × rows`` array); for one chain that is no saving, and on the synthetic
    logistic problem it made each gradient 3-6.5× as slow (N = 2·10⁵: 5.1 against 1.7 ms; N = 10⁶: 54
    against 8.4 ms; docs/findings.md, 2026-11-29), which had handicapped NUTS at large N."""
    return lambda theta: model.log_prior(theta) + jnp.sum(model.batch_log_likelihood(theta[None], data))


def time_nuts(problem, reference, args, eval_samples):
    """BlackJAX NUTS with window adaptation: the same curve, warm-up on the clock (its compilation
    included), ``visited`` the leapfrog steps' full-data gradients times ``N``."""
    model, data = problem.model, jax.tree_util.tree_map(jnp.asarray, problem.data)
    num_data = int(jax.tree_util.tree_leaves(data)[0].shape[0])
    k_init, k_warm, k_draw, k_score = jax.random.split(jax.random.key(args.seed), 4)
    scorer = Scorer(problem, reference, eval_samples)

    @jax.jit
    def warmup(key, position, data):
        adaptation = blackjax.window_adaptation(blackjax.nuts, nuts_logdensity(model, data))
        return adaptation.run(key, position, num_steps=args.nuts_warmup)

    @jax.jit
    def chunk(state, key, params, data):
        kernel = blackjax.nuts(nuts_logdensity(model, data), **params).step

        def one(s, k):
            s, info = kernel(k, s)
            return s, (s.position, info.num_integration_steps)
        return jax.lax.scan(one, state, jax.random.split(key, args.nuts_chunk))

    t_start = time.perf_counter()
    with compilation_seconds() as compiling:  # the runner's clock (pmd.runner): compiled ahead, or as it goes
        start = model.sample_prior(k_init, 1)[0]
        warmup = warmup.lower(k_warm, start, data).compile()
        (state, params), warm_info = warmup(k_warm, start, data)
        jax.block_until_ready(state)
        chunk = chunk.lower(state, k_draw, params, data).compile()
    clock, compiled = time.perf_counter() - t_start, compiling()
    visited = int(np.sum(warm_info.info.num_integration_steps)) * num_data
    draws, curve = [], {"wall_time": [], "visited": [], "mean_error": [], "compile_time": []}
    for i in range(args.nuts_draws // args.nuts_chunk):
        t0 = time.perf_counter()
        with compilation_seconds() as compiling:
            state, (positions, steps) = chunk(state, jax.random.fold_in(k_draw, i), params, data)
            jax.block_until_ready(positions)
        clock += time.perf_counter() - t0
        compiled += compiling()
        visited += int(np.sum(steps)) * num_data
        draws.append(positions)
        score = scorer(ParticlePosterior.equally_weighted(jnp.concatenate(draws)), jax.random.fold_in(k_score, i))
        for name, value in (("wall_time", clock), ("visited", visited), ("mean_error", score["mean_error"]),
                            ("compile_time", compiled)):
            curve[name].append(float(value))
    return curve


def first_kept(curve, threshold) -> int | None:
    """The first evaluation from which the curve's error stays at most ``threshold`` to the run's end
    (None: never; a NaN error counts as missed)."""
    err = np.asarray(curve["mean_error"], float)
    missed = np.flatnonzero(~(err <= threshold))
    first = int(missed[-1]) + 1 if missed.size else 0
    return first if first < err.size else None


def summarise(curve, threshold, compilation: bool = True):
    """``(seconds to reach the threshold and keep it to the end, or None; best error; final error)``
    (module docstring: reached and kept); without ``compilation``, the seconds less the compilation
    spent by then (NaN for a curve that did not time it)."""
    if "error" in curve:
        return None, math.nan, math.nan
    err = np.asarray(curve["mean_error"], float)
    first = first_kept(curve, threshold)
    best = float(np.nanmin(err)) if np.any(np.isfinite(err)) else math.nan
    if first is None:
        return None, best, float(err[-1])
    seconds = float(curve["wall_time"][first])
    if not compilation:
        seconds -= float(curve["compile_time"][first]) if "compile_time" in curve else math.nan
    return seconds, best, float(err[-1])


def error_there(curve: dict, threshold: float) -> float | None:
    """The curve's mean error at the evaluation where it reached ``threshold`` and kept it (None: never)."""
    first = None if "error" in curve else first_kept(curve, threshold)
    return None if first is None else float(curve["mean_error"][first])


def cell_text(seconds: float | None, best: float | None, extrapolated: bool = False) -> str:
    """A table cell: the seconds to the threshold (``*``: extrapolated), ``[best error]`` where it was
    not reached, "failed" where nothing was scored, "not timed" where the seconds are NaN (a
    curve that did not time its compilation, in the table without it)."""
    if seconds is None:
        return "failed" if best is None or math.isnan(best) else f"[{best:.3g}]"
    return "not timed" if math.isnan(seconds) else f"{seconds:.1f}{'*' if extrapolated else ''}"


def table(results, threshold):
    """Two tables of the seconds to the threshold, with compilation, then without it; then the error
    where each method reached it."""
    names = list(next(iter(results.values())))
    lines = [f"Wall time (s) to bring the posterior mean within {threshold} reference sd (coordinates' mean), "
             "one run of benchmarks/bench_time_to_accuracy.py; in brackets: not reached, best error. "
             "First with the compilation of the init's and the stepping programs, then without it (what a "
             "method compiles while it is built, the Laplace starts, stays in).", ""]
    for compilation in (True, False):
        lines += [f"| method ({'with' if compilation else 'without'} compilation) | " + " | ".join(results) + " |",
                  "|---|" + "---|" * len(results)]
        for name in names:
            cells = []
            for problem in results:
                reached, best, _ = summarise(results[problem][name], threshold, compilation)
                cells.append(cell_text(reached, best))
            lines.append(f"| {name} | " + " | ".join(cells) + " |")
        lines.append("")
    lines += ["Mean error (reference sd) at the evaluation where each method reached the threshold:", "",
              "| method | " + " | ".join(results) + " |", "|---|" + "---|" * len(results)]
    for name in names:
        errors = [error_there(results[problem][name], threshold) for problem in results]
        lines.append(f"| {name} | " + " | ".join("-" if e is None else f"{e:.3f}" for e in errors) + " |")
    return "\n".join(lines) + "\n"


def figure(results, threshold, path):
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(results), figsize=(5 * len(results), 4), squeeze=False)
    for ax, (problem, curves) in zip(axes[0], results.items()):
        for name, curve in curves.items():
            if "error" not in curve:
                ax.plot(curve["wall_time"], curve["mean_error"], label=name, lw=2.5 if name == "nuts" else 1.2)
        ax.axhline(threshold, color="k", ls=":", lw=1)
        ax.set(xscale="log", yscale="log", xlabel="wall time (s)", ylabel="mean error (reference sd)", title=problem)
    axes[0][0].legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def with_particle_counts(section: dict, labels: list[str], counts: list[int]) -> list[str]:
    """Add to ``section["methods"]`` an entry ``pmd_m<m>`` (the ``pmd`` entry with ``num_particles:
    m``) for each ``m`` in ``counts``: the labels to run, those rows right after ``pmd``."""
    out = list(labels)
    at = out.index("pmd") + 1 if "pmd" in out else len(out)
    for i, m in enumerate(counts):
        section["methods"][f"pmd_m{m}"] = {**section["methods"]["pmd"], "method": "pmd", "num_particles": m}
        out.insert(at + i, f"pmd_m{m}")
    return out


def add_timing_arguments(parser):
    """The options :func:`time_method`, :func:`time_nuts` and :func:`summarise` read (this script's and
    ``bench_growing_n.py``'s)."""
    for flag, default in (("--threshold", 0.5), ("--evals-per-pass", 5), ("--nuts-warmup", 500),
                          ("--nuts-draws", 1000), ("--nuts-chunk", 50), ("--seed", 0)):
        parser.add_argument(flag, type=type(default), default=default)
    parser.add_argument("--pmd-particles", type=int, nargs="*", default=[250],
                        help="also run the config's pmd entry with each of these particle counts (rows pmd_m<m>)")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--config", default="workflow/config/standard.yaml", help="its posteriordb section's methods and budget")
    parser.add_argument("--logistic-data", default="results/mnist/data/mnist-6v8.npz")
    parser.add_argument("--logistic-reference", default="results/mnist/logistic/reference.npz")
    parser.add_argument("--prior-std", type=float, default=1.0)
    parser.add_argument("--posteriors", nargs="*", default=["kidiq-kidscore_momiq", "eight_schools-eight_schools_noncentered"])
    parser.add_argument("--methods", nargs="*", default=None, help="labels of the section's methods (default: all)")
    add_timing_arguments(parser)
    parser.add_argument("--out", default="results/benchmarks/time_to_accuracy")
    args = parser.parse_args(argv)

    with open(args.config) as f:
        section = yaml.safe_load(f)["posteriordb"]
    labels = args.methods or list(section["methods"])
    unknown = sorted(set(labels) - set(section["methods"]))
    if unknown:
        parser.error(f"--methods {unknown} are not in {args.config}'s posteriordb.methods ({', '.join(section['methods'])})")
    labels = with_particle_counts(section, labels, args.pmd_particles)
    results = {}
    for name, (problem, reference) in problems(args, resolve_settings()).items():
        results[name] = {label: time_method(label, section["methods"][label], section, problem, reference, args)
                         for label in labels}
        results[name]["nuts"] = time_nuts(problem, reference, args, section["eval_samples"])
        print(name, {label: summarise(c, args.threshold)[:2] for label, c in results[name].items()}, flush=True)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    save_json(out.with_suffix(".json"), {"threshold": args.threshold, "config": args.config, "results": results})
    with atomic_path(out.with_suffix(".md")) as tmp:
        tmp.write_text(table(results, args.threshold))
    with atomic_path(out.with_suffix(".png")) as tmp:
        figure(results, args.threshold, tmp)
    print(out.with_suffix(".md").read_text())


if __name__ == "__main__":
    main()
