"""Time per step of every sparse-GP method against the ``M × M`` Cholesky factorisation, our SVI-GP
against GPJax's SVGP, and the memory peak of the paper's settings, in one run.

Settings: H.3.2's shape (``d = 90`` standardised features, batch 512, 16 particles for PMD and
SMC) on random inputs (the cost does not depend on the values), ``M`` inducing inputs (default
256, the standard config's; H.3.2: ``--inducing 1024``), float64 as the experiment runs. Each method
is built, warmed up (compiled) by ``--steps`` steps, then timed over the next ``--steps`` steps
inside one jitted ``lax.scan`` (as :func:`pmd.run` does; ``timed_scan`` of
``bench_logistic_cost.py``). SoD's work is its one solve (its first step), timed on its own.

Reference, timed in the same run and the same way: one Cholesky factorisation of an ``M × M``
kernel matrix per step — the work no sparse-GP method avoids (structured PMD factors one ``M × M``
precision per particle per step). ``x_cholesky`` is a method's step time over that reference;
``x_cholesky_per_particle`` divides further by the method's particle count (16 for PMD, 1 for the
single-Gaussian methods; SMC's particles share one ``Z``, so it factors nothing per particle).
``svi_over_gpjax`` is our SVI-GP's step time over GPJax's, same run, same ``Z`` draw and steps.
Every ratio is the median over ``--rounds`` interleaved rounds (each round times the reference,
then every method), so a busy machine's slow minutes hit numerator and denominator alike.

Memory: the process's peak resident set (``ru_maxrss``) after all of it, and the bytes of PMD's
state at these settings (``16 × 2 × M² + ...`` float64 numbers).

Run: ``python benchmarks/bench_sparse_gp_cost.py [--inducing 256] [--steps 10]
[--out results/benchmarks/sparse_gp_cost.json]``; writes the JSON report and its table (``.md``) and
prints the report.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import time

import jax

jax.config.update("jax_enable_x64", True)

import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
from bench_logistic_cost import timed_scan  # noqa: E402

from pmd.models.sparse_gp import SparseGP  # noqa: E402
from pmd_bench.baselines.gp.sod import random_rows, subset_solution  # noqa: E402
from pmd_bench.reports import benchmarks as bench_report  # noqa: E402
from pmd_bench.workflow import methods  # noqa: E402

SPECS = {
    "pmd": ("pmd_gp", {"num_particles": 16}),
    "svi": ("svi_gp", {}),
    "gpjax_svgp": ("gpjax_svgp", {}),
    "smc": ("smc_gp", {"num_particles": 16}),
    "sod": ("sod", {}),
}
PARTICLES = {"pmd": 16, "svi": 1, "gpjax_svgp": 1, "smc": 16, "sod": 1}


class CholeskyOnly:
    """The reference "method": one Cholesky factorisation of an ``M × M`` kernel matrix per step."""

    def __init__(self, model: SparseGP, data: dict):
        self.model, self.z = model, jnp.asarray(data["x"][: model.num_inducing])

    def init(self, key):
        # Z travels in the state: a captured constant would let XLA fold K_mm at compile time
        # (seconds per fold at M = 1,024) and leave only the factorisation in the step
        return jnp.zeros(()), self.z

    def step(self, key, state, batch):
        total, z = state
        shift = 1e-6 * jnp.mean(batch["y"])  # depends on the batch: not hoisted out of the scan
        chol = jnp.linalg.cholesky(self.model.kmm(z) + shift * jnp.eye(z.shape[0]))
        return (total + jnp.sum(chol), z), {}


def solve_seconds(sod, repeats: int = 3) -> float:
    """Seconds of SoD's one solve (its first step; later steps do nothing) on a subset drawn as its
    ``init`` draws one, after a compiled warm-up; the subset is an argument of the compiled solve."""
    solve = jax.jit(lambda subset: subset_solution(sod.model, subset))
    subsets = [random_rows(key, sod.data, sod.subset_size)
               for key in jax.random.split(jax.random.key(0), repeats + 1)]
    jax.block_until_ready(solve(subsets[0]))
    t0 = time.perf_counter()
    for subset in subsets[1:]:
        jax.block_until_ready(solve(subset))
    return (time.perf_counter() - t0) / repeats


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, default=20_000)
    parser.add_argument("--dim", type=int, default=90)
    parser.add_argument("--inducing", type=int, default=256)
    parser.add_argument("--batch", type=int, default=512)
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=3, help="interleaved rounds; medians are reported")
    parser.add_argument("--out", default="results/benchmarks/sparse_gp_cost.json")
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    train = {"x": rng.standard_normal((args.rows, args.dim)), "y": 0.1 * rng.standard_normal(args.rows)}
    model = SparseGP.from_data(train["x"], noise_variance=0.01, num_inducing=args.inducing, jitter=1e-6)
    out = {"backend": jax.default_backend(), "cpus": os.cpu_count(), "dtype": "float64", "rows": args.rows,
           "dim": args.dim, "inducing": args.inducing, "batch": args.batch, "steps_timed": args.steps,
           "rounds": args.rounds, "methods": {}}
    built = {label: methods.METHODS[name](model, data_size=args.rows, **spec,
                                          **({} if name == "pmd_gp" else {"data": train}))
             for label, (name, spec) in SPECS.items()}
    reference = CholeskyOnly(model, train)
    times: dict[str, list[float]] = {label: [] for label in ["cholesky", *built]}
    for _ in range(args.rounds):  # each round times the reference and then every method
        times["cholesky"].append(timed_scan(reference, train, args.steps, args.batch))
        for label, method in built.items():
            times[label].append(solve_seconds(method) if label == "sod"
                                else timed_scan(method, train, args.steps, args.batch))
    chol = np.asarray(times["cholesky"])
    out["cholesky_ms"] = {"median": 1e3 * float(np.median(chol)), "min": 1e3 * float(chol.min())}
    for label in built:
        t = np.asarray(times[label])
        out["methods"][label] = {"ms_per_step": 1e3 * float(np.median(t)), "ms_min": 1e3 * float(t.min()),
                                 "x_cholesky": float(np.median(t / chol)),
                                 "x_cholesky_per_particle": float(np.median(t / chol)) / PARTICLES[label]}
    out["svi_over_gpjax"] = float(np.median(np.asarray(times["svi"]) / np.asarray(times["gpjax_svgp"])))
    m = args.inducing
    out["pmd_state_mib"] = 16 * (3 * m * m + 2 * m * args.dim + m + 2) * 8 / 2**20  # L, Λ, R + Z, h, ...
    out["peak_rss_mib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    bench_report.write(args.out, out, bench_report.sparse_gp_cost)
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
