"""Time to accuracy: the wall time each method needs to meet the moment criterion against a
reference posterior and keep it, every method and NUTS timed for several seeds in ONE run of this
script (same machine, same load), on the logistic model and posteriordb posteriors.

Problems:

* ``logistic``: Bayesian logistic regression on a prepared classification file (``--logistic-data``;
  default the 11,769-row MNIST 6-vs-8 of ``workflow/config/mnist.yaml``) against the NUTS reference
  the workflow wrote (``--logistic-reference``).
* ``--posteriors``: posteriordb posteriors (through the offline mirror) against their reference draws.

The criterion is the project's one criterion for targets scored by their moments,
:data:`reports.cost.MOMENTS` (also posteriordb's, the custom models' and logistic regression's in
the workflow's tables): the worst coordinate's |mean error| within 0.5 reference sd AND its |log sd
ratio| within 0.3, scored as ``MOMENTS.score`` (met at ≤ 1) of the curves ``mean_error_max`` and
``log_std_ratio_max`` of :meth:`pmd.sample_metrics.SampleReference.score` (:func:`score`; no copy of
the bounds here). A method whose mean is right but whose spread is not has not reached it.

Every method runs under the posteriordb experiment's budget rule and method entries
(:func:`workflow.experiments.posteriordb.budget`, the config's ``posteriordb`` section): the same
steps and batches for every method, nothing tuned per problem. The posterior is scored every
``--evals-per-pass``-th of a pass; the clock is the method's building (SVI's and SGLD's Laplace
start) plus the runner's time from the init to the last step (compilation included, scoring
excluded). ``--pmd-particles`` adds rows ``pmd_m<m>``: the config's ``pmd`` entry with ``m`` particles
(default 250; the config's own is 1,000), since the particle count is PMD's dial between accuracy
and cost. Each curve also carries ``compile_time``, the compilation so far (the runner's
``compile_time``: the init's program and the steps'), and the table is given twice: with
compilation, and without it (the clock less ``compile_time``; what a method compiles while it is
built, the Laplace starts, stays in).

The time to accuracy is the clock reading at the first evaluation from which the score stays ≤ 1 to
the run's end (:func:`first_kept`): reached and kept, the rule of the workflow's cost tables
(:mod:`reports.cost`), so that an iterate that meets it between PMD's pass ends (where it is not the
posterior) and leaves it again, or an early estimate that meets it by chance, does not count
(measured at N = 10⁶: the default PMD's mean error read 0.46 sd at 4/5 of pass 1 and 0.55 at 3/5 of
pass 2, docs/findings.md 2026-11-27); a method that never gets there for good has not reached it,
and its best score is reported instead.

NUTS (BlackJAX's, window adaptation, one chain from a prior draw; :func:`time_nuts`) runs a ladder
of lengths, ``--nuts-ladder`` (default 100 250 500 1000): at each rung ``L`` a fresh chain (its own
key, its own prior draw) takes ``L`` warm-up steps then ``L`` draws, and those draws are scored once.
A rung is one point of NUTS's curve: its clock the rung's own warm-up and draws (compilation
included; its programs compiled ahead and timed apart as ``compile_time``), ``visited`` its leapfrog
steps' full-data gradients times ``N``, its score that of its draws. NUTS reaches the criterion at
the first rung from which every longer rung meets it too (the same :func:`first_kept` rule over the
rungs; the cheapest rung that meets it and is not contradicted by a longer one), at that rung's own
time, not the ladder's sum: the time of a user who had picked that length.

Seeds: every method and NUTS run for seeds ``0 .. --seeds − 1`` (default 3). A table cell is the
median seconds over the seeds that reached the criterion and ``reached k/n`` (where none did: the
best score of any seed, in brackets). The JSON holds ``results[problem][method]``: the list of the
seeds' curves.

Run (after the workflow has written the references, e.g. ``snakemake results/mnist/figures/table_logistic.md
--cores 2 --configfile workflow/config/mnist.yaml``)::

    python benchmarks/bench_time_to_accuracy.py --out results/benchmarks/time_to_accuracy

writes ``time_to_accuracy.json``, ``.md`` (the table) and ``.png`` (the criterion's score against
wall time, one line per seed).
"""

from __future__ import annotations

import argparse
import math
import textwrap
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
from pmd_bench.reports import cost
from pmd_bench.workflow import methods
from pmd_bench.workflow.experiments.logistic import load_data
from pmd_bench.workflow.experiments.posteriordb import Scorer, budget, run_budgeted
from pmd_bench.workflow.results import load_npz, save_json

NUTS_LADDER = (100, 250, 500, 1000)  # warm-up steps = draws at each rung


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


def score(curve: dict) -> np.ndarray:
    """The criterion's score at each point of a curve: :data:`reports.cost.MOMENTS`'s ``score`` of the
    curve's metrics (read at call time: the one criterion, no copy of its bounds); lower is better."""
    criterion = cost.MOMENTS
    arrays = {f"curve/{m}": np.asarray(curve[m], float) for m in criterion.metrics}
    return np.asarray(criterion.score(arrays), float)


def met(curve: dict) -> np.ndarray:
    """Whether the criterion holds at each point of a curve (a NaN score counts as missed)."""
    return score(curve) <= cost.MOMENTS.threshold({})


def scored(values: dict) -> dict:
    """The criterion's metrics out of a :class:`Scorer` output or a run's curves, as floats or lists."""
    return {m: np.asarray(values[m]).tolist() for m in cost.MOMENTS.metrics}


def time_method(label, spec, section, problem, reference, args, seed: int = 0):
    """One method's curve for ``seed``: ``wall_time``, ``visited``, ``compile_time`` and the
    criterion's metrics as lists (and ``start_seconds``), or ``{"error": ...}``."""
    num_data = int(jax.tree_util.tree_leaves(problem.data)[0].shape[0])
    spec, settings = budget(section, label, spec, num_data)
    batch = settings["batch_size"]
    eval_every = max(batch, settings["steps_per_pass"] * batch // args.evals_per_pass)
    try:
        t0 = time.perf_counter()
        method = methods.build(label, spec, problem.model, problem.data, settings["num_steps"])
        result = run_budgeted(method, problem.data, settings, jax.random.key(seed),
                              Scorer(problem, reference, section["eval_samples"]), eval_every=eval_every)
        total = time.perf_counter() - t0
    except Exception as err:  # noqa: BLE001 (a failure is a result)
        return {"error": f"{type(err).__name__}: {err}"}
    start = total - result.step_seconds - result.eval_seconds  # building: SVI's and SGLD's Laplace start
    return {"wall_time": (start + result.curves["wall_time"]).tolist(), "visited": result.visited.tolist(),
            **scored(result.curves), "start_seconds": start,
            "compile_time": result.curves["compile_time"].tolist()}


def nuts_logdensity(model, data):
    """``θ ↦ log p(θ) + Σ_n log p(x_n|θ)`` on the whole ``data`` in one vectorised sum, NUTS's target as
    a BlackJAX user writes it. Build it inside the jitted function that takes ``data`` as an argument: a
    closed-over data set is a compile-time constant (docs/findings.md, 2026-11-25).

    One sum, not PMD's blocked reader (blocks of 4,096 rows inside a ``scan``, which bounds PMD's
    ``m × rows`` arrays): for one chain the blocks save nothing, and on the synthetic logistic problem
    they made each gradient 3-6.5× as slow (N = 2·10⁵: 5.1 against 1.7 ms; N = 10⁶: 54 against 8.4 ms;
    docs/findings.md, 2026-11-29)."""
    return lambda theta: model.log_prior(theta) + jnp.sum(model.batch_log_likelihood(theta[None], data))


def nuts_rung(problem, scorer, key, length: int) -> dict:
    """One rung of NUTS's ladder: a fresh chain from a prior draw, ``length`` steps of window
    adaptation then ``length`` draws, the draws scored once. Returns the rung's point: ``wall_time``
    (the warm-up and the draws, compilation included), ``compile_time`` (the warm-up's and the draws'
    programs, compiled ahead and timed apart), ``visited`` (leapfrog steps × ``N``) and the scores."""
    model, data = problem.model, jax.tree_util.tree_map(jnp.asarray, problem.data)
    num_data = int(jax.tree_util.tree_leaves(data)[0].shape[0])
    k_init, k_warm, k_draw, k_score = jax.random.split(key, 4)

    @jax.jit
    def warmup(key, position, data):
        adaptation = blackjax.window_adaptation(blackjax.nuts, nuts_logdensity(model, data))
        return adaptation.run(key, position, num_steps=length)

    @jax.jit
    def draw(state, key, params, data):
        kernel = blackjax.nuts(nuts_logdensity(model, data), **params).step

        def one(s, k):
            s, info = kernel(k, s)
            return s, (s.position, info.num_integration_steps)
        return jax.lax.scan(one, state, jax.random.split(key, length))

    t_start = time.perf_counter()
    with compilation_seconds() as compiling:  # the runner's clock (pmd.runner): compiled ahead, timed apart
        start = model.sample_prior(k_init, 1)[0]
        warmup = warmup.lower(k_warm, start, data).compile()
        (state, params), warm_info = warmup(k_warm, start, data)
        jax.block_until_ready(state)
        draw = draw.lower(state, k_draw, params, data).compile()
        _, (positions, steps) = draw(state, k_draw, params, data)
        jax.block_until_ready(positions)
    clock, compiled = time.perf_counter() - t_start, compiling()
    visited = (int(np.sum(warm_info.info.num_integration_steps)) + int(np.sum(steps))) * num_data
    values = scorer(ParticlePosterior.equally_weighted(positions), k_score)
    return {"wall_time": clock, "visited": visited, "compile_time": compiled,
            **scored(values)}


def time_nuts(problem, reference, args, eval_samples, seed: int = 0):
    """BlackJAX NUTS's curve for ``seed``: one point per rung of ``args.nuts_ladder`` (:func:`nuts_rung`,
    rung ``L``'s key ``fold_in(key(seed), L)``: a rung's chain does not depend on the other rungs), the
    same fields as :func:`time_method`'s curve plus ``ladder``, the rungs' (warm-up steps, draws);
    ``{"error": ...}`` if a rung raised."""
    scorer = Scorer(problem, reference, eval_samples)
    curve = {"ladder": [], "wall_time": [], "visited": [], "compile_time": [], **{m: [] for m in cost.MOMENTS.metrics}}
    try:
        for length in sorted(args.nuts_ladder):
            point = nuts_rung(problem, scorer, jax.random.fold_in(jax.random.key(seed), length), length)
            curve["ladder"].append([length, length])
            for name, value in point.items():
                curve[name].append(value)
    except Exception as err:  # noqa: BLE001 (a failure is a result)
        return {"error": f"{type(err).__name__}: {err}"}
    return curve


def first_kept(curve) -> int | None:
    """The first point from which the curve meets the criterion (:func:`met`) at every later point to
    its end (None: never; a NaN score counts as missed). On a method's curve: the first evaluation
    from which it keeps it to the run's end; on NUTS's: the first rung from which every longer rung
    meets it."""
    ok = met(curve)
    missed = np.flatnonzero(~ok)
    first = int(missed[-1]) + 1 if missed.size else 0
    return first if first < ok.size else None


def summarise(curve, compilation: bool = True):
    """``(seconds to meet the criterion and keep it to the end, or None; best score; final score)``
    of one seed's curve (module docstring: reached and kept); without ``compilation``, the seconds
    less the compilation spent by then (NaN for a curve that did not time it)."""
    if "error" in curve:
        return None, math.nan, math.nan
    values = score(curve)
    first = first_kept(curve)
    best = float(np.nanmin(values)) if np.any(np.isfinite(values)) else math.nan
    if first is None:
        return None, best, float(values[-1])
    seconds = float(curve["wall_time"][first])
    if not compilation:
        seconds -= float(curve["compile_time"][first]) if "compile_time" in curve else math.nan
    return seconds, best, float(values[-1])


def score_there(curve: dict) -> float | None:
    """The curve's score at the point where it reached the criterion and kept it (None: never)."""
    first = None if "error" in curve else first_kept(curve)
    return None if first is None else float(score(curve)[first])


def median_reached(values: list[float | None]) -> float | None:
    """The median over the seeds that reached (those not None); None where none did."""
    reached = [v for v in values if v is not None]
    return float(np.median(reached)) if reached else None


def cell_text(seconds: list[float | None], best: list[float], extrapolated: bool = False) -> str:
    """A table cell over seeds: the median seconds over the seeds that reached (``*``: extrapolated)
    and ``reached k/n``; where none reached, the best score of any seed in brackets (``-`` where none
    was scored there: an extrapolated cell); "failed" where no seed scored; "not timed" for a median
    that is NaN (a curve that did not time its compilation, in the table without it)."""
    n, median = len(seconds), median_reached(seconds)
    count = f"reached {sum(s is not None for s in seconds)}/{n}"
    if median is not None:
        return f"{'not timed' if math.isnan(median) else f'{median:.1f}'}{'*' if extrapolated else ''} ({count})"
    finite = [b for b in best if b is not None and not math.isnan(b)]
    if finite:
        return f"[{min(finite):.3g}] ({count})"
    return f"- ({count})" if extrapolated else "failed"


def criterion_words() -> str:
    """The criterion and its score, in words, for a table's caption."""
    return (f"{cost.MOMENTS.wording} (reports.cost.MOMENTS; score: {cost.MOMENTS.label()}, met at "
            f"≤ {cost.MOMENTS.threshold({}):g})")


def table(results):
    """Two tables of the seconds to the criterion, with compilation, then without it; then the score
    where each method reached it. ``results[problem][method]``: the seeds' curves."""
    names = list(next(iter(results.values())))
    seeds = max(len(curves) for by_method in results.values() for curves in by_method.values())
    lines = [f"Wall time (s) to meet {criterion_words()} and keep it to the run's end (NUTS: the first rung of "
             "its ladder from which every longer rung meets it, at that rung's own time), one run of "
             f"benchmarks/bench_time_to_accuracy.py, {seeds} seeds: the median over the seeds that reached it, "
             "and how many did; in brackets where none did: the best score of any seed. First with the "
             "compilation of the init's and the stepping programs, then without it (what a method compiles "
             "while it is built, the Laplace starts, stays in).", ""]
    for compilation in (True, False):
        lines += [f"| method ({'with' if compilation else 'without'} compilation) | " + " | ".join(results) + " |",
                  "|---|" + "---|" * len(results)]
        for name in names:
            cells = []
            for problem in results:
                summaries = [summarise(c, compilation) for c in results[problem][name]]
                cells.append(cell_text([s[0] for s in summaries], [s[1] for s in summaries]))
            lines.append(f"| {name} | " + " | ".join(cells) + " |")
        lines.append("")
    lines += ["The criterion's score where each method reached it (median over the seeds that did):", "",
              "| method | " + " | ".join(results) + " |", "|---|" + "---|" * len(results)]
    for name in names:
        there = [median_reached([score_there(c) for c in results[problem][name]]) for problem in results]
        lines.append(f"| {name} | " + " | ".join("-" if s is None else f"{s:.3f}" for s in there) + " |")
    return "\n".join(lines) + "\n"


def figure(results, path):
    """The criterion's score against wall time, one panel per problem, one line per seed (a method's
    seeds in one colour; NUTS's points are its ladder's rungs), the threshold dotted."""
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(results), figsize=(5 * len(results), 4), squeeze=False)
    for ax, (problem, by_method) in zip(axes[0], results.items()):
        for i, (name, curves) in enumerate(by_method.items()):
            for j, curve in enumerate(c for c in curves if "error" not in c):
                ax.plot(curve["wall_time"], score(curve), color=f"C{i % 10}", marker="o" if name == "nuts" else None,
                        lw=2.5 if name == "nuts" else 1.2, label=name if j == 0 else None)
        ax.axhline(cost.MOMENTS.threshold({}), color="k", ls=":", lw=1)
        ax.set(xscale="log", yscale="log", xlabel="wall time (s)", title=problem)
        ax.set_ylabel(textwrap.fill(cost.MOMENTS.label(), 45), fontsize=7)
    axes[0][0].legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


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
    """The options :func:`time_method` and :func:`time_nuts` read (this script's and ``bench_growing_n.py``'s)."""
    parser.add_argument("--evals-per-pass", type=int, default=5)
    parser.add_argument("--seeds", type=int, default=3, help="run every method and NUTS for seeds 0 .. SEEDS-1")
    parser.add_argument("--nuts-ladder", type=int, nargs="+", default=list(NUTS_LADDER),
                        help="NUTS's rungs: at each L, a fresh chain with L warm-up steps then L draws")
    parser.add_argument("--pmd-particles", type=int, nargs="*", default=[250],
                        help="also run the config's pmd entry with each of these particle counts (rows pmd_m<m>)")


def progress(curves: dict) -> dict:
    """``method -> [(seconds, best score) per seed]``, for the log."""
    return {label: [tuple(round(v, 3) if v is not None else v for v in summarise(c)[:2]) for c in cs]
            for label, cs in curves.items()}


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
    seeds = range(args.seeds)
    results = {}
    for name, (problem, reference) in problems(args, resolve_settings()).items():
        results[name] = {label: [time_method(label, section["methods"][label], section, problem, reference, args, s)
                                 for s in seeds] for label in labels}
        results[name]["nuts"] = [time_nuts(problem, reference, args, section["eval_samples"], s) for s in seeds]
        print(name, progress(results[name]), flush=True)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    save_json(out.with_suffix(".json"), {"criterion": cost.MOMENTS.wording, "seeds": args.seeds,
                                         "nuts_ladder": sorted(args.nuts_ladder), "config": args.config,
                                         "results": results})
    with atomic_path(out.with_suffix(".md")) as tmp:
        tmp.write_text(table(results))
    with atomic_path(out.with_suffix(".png")) as tmp:
        figure(results, tmp)
    print(out.with_suffix(".md").read_text())


if __name__ == "__main__":
    main()
