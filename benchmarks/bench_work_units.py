"""The unit of work, measured: what each kind of operation the methods perform costs on this
machine, as a multiple of one per-datum log-likelihood value.

The harness counts work by kind (:data:`pmd.work.WORK`: ``evals``, one datum's log-likelihood at
one parameter value, the unit; ``grad_evals``, its gradient; a Hessian-vector product (NPV's and
the Laplace start's Hessian columns, PMD's preconditioner); a Pólya-Gamma draw and a row of the
sweep's statistic (PG Gibbs); a kernel pair (SVGD's RBF kernel and its gradient); a KDE kernel
evaluation (PMD's kernel-density redraws)) and charges each by :data:`pmd.work.UNITS`. This benchmark times each, per item, on Bayesian logistic
regression (``d`` weights, ``B`` rows, ``m`` particles, float32, one XLA thread), and writes the
ratio of each to the time of one per-datum log-likelihood value, measured in the same run:

* ``value``: ``log p(x_n|θ_i)`` for every row and particle (``m·B`` items);
* ``value_and_gradient``: the same summed over the rows, with its gradient in ``θ``, at every
  particle (``m·B`` items: a gradient step's likelihood terms, the form every method takes them
  in);
* ``hessian_vector``: a Hessian-vector product of that sum at every particle, forward over
  reverse (``m·B`` items: one datum's contribution to a Hessian column at one particle);
* ``polya_gamma``: one Pólya-Gamma ``PG(1, c)`` draw, the PG Gibbs sampler's truncated series
  (``m·B`` items);
* ``gram_row``: one row's share of the PG Gibbs sweep's sufficient statistic ``XᵀΩX`` (a ``d × d``
  outer product, weighted, over ``m·B`` rows as a sweep sums them; ``m·B`` items);
* ``kernel_pair``: an RBF kernel value and its gradient for one pair of particles (``m²`` items);
* ``kde_pair``: one Gaussian kernel's log-density of a point under one centre: PMD's KDE density of
  ``m`` points under ``m`` centres, one kernel (:func:`pmd.kde.density_pairs` items: ``m²`` plus the
  kernel's solves).

Each time is the median of ``--repeats`` calls after a warm-up (compilation) call
(:func:`workflow.experiments.table1.median_seconds`), in ``--rounds`` interleaved rounds whose ratios
are all reported with their median, so that the load of the machine shows in their agreement. The
medians with ``--rounds 15 --repeats 100``, rounded, are the unit table every method is
charged by (:data:`pmd.work.UNITS`). Written to
``results/benchmarks/work_units.json`` and ``.md`` (:func:`reports.benchmarks.write`, atomically)::

    python benchmarks/bench_work_units.py
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

os.environ.setdefault("XLA_FLAGS", "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1")

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

from pmd.kde import Kernel, density_pairs, kernel_log_density  # noqa: E402
from pmd.models.logistic import BayesianLogisticRegression, labelled  # noqa: E402
from pmd_bench.baselines.gibbs.polya_gamma import sample_polya_gamma  # noqa: E402
from pmd_bench.reports import benchmarks as bench_report  # noqa: E402
from pmd_bench.workflow.experiments.table1 import median_seconds  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
OPERATIONS = ("value", "value_and_gradient", "hessian_vector", "polya_gamma", "gram_row", "kernel_pair", "kde_pair")


def programs(dim: int, rows: int, particles: int, seed: int = 0) -> dict[str, tuple]:
    """``operation -> (jitted function, its arguments, items it computes)`` on synthetic data."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((rows, dim - 1)).astype(np.float32)
    data = jax.tree_util.tree_map(jnp.asarray, labelled(x, np.where(x[:, 0] > 0, 1, -1), bias=True))
    model = BayesianLogisticRegression(dim, 1.0).model()
    thetas = jnp.asarray(0.1 * rng.standard_normal((particles, dim)), jnp.float32)
    directions = jnp.asarray(rng.standard_normal((particles, dim)), jnp.float32)
    per_datum = model.log_likelihood

    def value(thetas, data):
        return model.batch_log_likelihood(thetas, data)

    def batch_sum(t, data):  # a step's likelihood over its rows at one particle, as the methods take it
        return jnp.sum(jax.vmap(per_datum, in_axes=(None, 0))(t, data))

    def value_and_gradient(thetas, data):
        return jax.vmap(jax.value_and_grad(batch_sum), in_axes=(0, None))(thetas, data)

    def hessian_vector(thetas, directions, data):
        grad = jax.grad(batch_sum)
        return jax.vmap(lambda t, v: jax.jvp(lambda u: grad(u, data), (t,), (v,))[1])(thetas, directions)

    def polya_gamma(key, c):
        return sample_polya_gamma(key, c)

    def gram_row(data, omega):
        return (data["x"] * omega[:, None]).T @ data["x"]

    def kernel_pair(thetas):
        def k(a, b):
            return jnp.exp(-jnp.sum((a - b) ** 2))
        both = jax.value_and_grad(k)
        return jax.vmap(lambda a: jax.vmap(lambda b: both(a, b))(thetas))(thetas)

    def kde_pair(thetas):
        kernel = Kernel.shared(thetas, 0.3 * jnp.eye(dim, dtype=thetas.dtype))
        return kernel_log_density(thetas, kernel, jnp.zeros(thetas.shape[:1], thetas.dtype))

    c = jnp.abs(jnp.asarray(rng.standard_normal(particles * rows), jnp.float32))
    stacked = jax.tree_util.tree_map(lambda a: jnp.tile(a, (particles,) + (1,) * (a.ndim - 1)), data)  # m·B rows: a sweep's
    pairs, items = particles * particles, particles * rows
    return {"value": (jax.jit(value), (thetas, data), items),
            "value_and_gradient": (jax.jit(value_and_gradient), (thetas, data), items),
            "hessian_vector": (jax.jit(hessian_vector), (thetas, directions, data), items),
            "polya_gamma": (jax.jit(polya_gamma), (jax.random.key(seed), c), items),
            "gram_row": (jax.jit(gram_row), (stacked, c), particles * rows),
            "kernel_pair": (jax.jit(kernel_pair), (thetas,), pairs),
            "kde_pair": (jax.jit(kde_pair), (thetas,), density_pairs(particles, particles, 1, dim))}


def measure(dim: int, rows: int, particles: int, repeats: int, rounds: int = 2) -> dict:
    """Seconds per item of every operation in each round, and its ratio to ``value``'s."""
    progs = programs(dim, rows, particles)
    per_item = {name: [] for name in OPERATIONS}
    for _ in range(rounds):  # interleaved: a change of load touches every operation alike
        for name in OPERATIONS:
            fn, args, items = progs[name]
            per_item[name].append(median_seconds(fn, *args, repeats=repeats) / items)
    ratios = {name: [t / v for t, v in zip(per_item[name], per_item["value"])] for name in OPERATIONS}
    return {"settings": {"dim": dim, "rows": rows, "particles": particles, "repeats": repeats, "rounds": rounds,
                         "device": jax.devices()[0].platform},
            "seconds_per_item": per_item, "ratio_to_value": ratios}


WORDS = {"value": "a per-datum log-likelihood value", "value_and_gradient": "a value and its gradient",
         "hessian_vector": "a Hessian-vector product (a Hessian column)", "polya_gamma": "a Pólya-Gamma draw",
         "gram_row": "a row of the Gibbs sweep's statistic XᵀΩX",
         "kernel_pair": "an RBF kernel pair and its gradient", "kde_pair": "a KDE kernel evaluation"}


def table(result: dict) -> str:
    """The Markdown table: each operation's time per item and its ratio to a value, per round."""
    s = result["settings"]
    lines = [f"Bayesian logistic regression, d = {s['dim']}, B = {s['rows']} rows, m = {s['particles']} particles, "
             f"float32, one XLA thread, on {s['device']}, {result['cpus']} CPUs, load average "
             f"{result['load_average']:.1f} at the end; median of {s['repeats']} calls after compilation, "
             f"{s['rounds']} interleaved rounds (`benchmarks/bench_work_units.py`).", "",
             "| operation | ns per item (each round) | ratio to a value (each round) | median ratio |", "|---|---|---|---|"]
    for name in OPERATIONS:
        ns = " / ".join(f"{1e9 * t:.3g}" for t in result["seconds_per_item"][name])
        ratio = " / ".join(f"{r:.3g}" for r in result["ratio_to_value"][name])
        lines.append(f"| {WORDS[name]} | {ns} | {ratio} | {np.median(result['ratio_to_value'][name]):.3g} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--dim", type=int, default=51)
    parser.add_argument("--rows", type=int, default=100)
    parser.add_argument("--particles", type=int, default=100)
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--out", default=str(ROOT / "results" / "benchmarks" / "work_units"))
    args = parser.parse_args(argv)
    result = measure(args.dim, args.rows, args.particles, args.repeats, args.rounds)
    out = Path(args.out).with_suffix(".json")
    bench_report.write(out, result, table)
    print(out.with_suffix(".md").read_text())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
