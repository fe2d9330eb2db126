"""The cost of one PMD step against the unavoidable core, measured in the same run.

* Weighted particles on Bayesian logistic regression (the project's model,
  :class:`pmd.models.logistic.BayesianLogisticRegression`; m = 1000, d = 50, batch 100): the core is
  the ``(m×d)·(d×B)`` matrix product every likelihood evaluation needs.
* A weighted-KDE step (m = 1000, the same model): the core is the ``m×m`` pairwise squared
  distances that evaluating ``q̃_t`` at the new draws needs.

Also printed: the model's own ``m×B`` log-likelihood evaluation (the matrix product plus the
element-wise log-sigmoid), which every likelihood-based method pays, so that PMD's own overhead is
visible.

Goal: each step within 3× its core. Run: ``python benchmarks/bench_pmd_step.py
[--out results/benchmarks/pmd_step.json]``; writes the JSON report and its table (``.md``).
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

import jax
import jax.numpy as jnp

from pmd import PMD
from pmd.kde import pairwise_sq_distances
from pmd.models.logistic import BayesianLogisticRegression
from pmd_bench.reports import benchmarks as bench_report
from pmd_bench.workflow.experiments.table1 import median_seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--particles", type=int, default=1000)
    parser.add_argument("--dim", type=int, default=50)
    parser.add_argument("--batch", type=int, default=100)
    parser.add_argument("--repeats", type=int, default=50)
    parser.add_argument("--out", type=Path, default=Path("results/benchmarks/pmd_step.json"))
    args = parser.parse_args()
    m, d, b = args.particles, args.dim, args.batch
    key = jax.random.key(0)
    batch = {"x": jax.random.normal(key, (b, d)), "y": jnp.sign(jax.random.normal(jax.random.key(1), (b,)))}
    model = BayesianLogisticRegression(d).model()  # H.2: N(0, I) prior
    report = {"backend": jax.default_backend(), "device": jax.devices()[0].device_kind, "cpus": os.cpu_count(),
              "particles": m, "dim": d, "batch": b, "repeats": args.repeats, "strategies": {}}
    for strategy, core_name, core in [
        ("particles", "(m×d)·(d×B) matmul", jax.jit(lambda th, x: th @ x.T)),
        # reduced over one axis, as any consumer does: XLA then fuses instead of writing m×m to memory
        ("kde", "m×m pairwise distances", jax.jit(lambda a, b: jnp.min(pairwise_sq_distances(a, b), axis=1))),
    ]:
        algo = PMD(model, data_size=10**5, num_particles=m, variant="paper", strategy=strategy)
        state, _ = algo.step(key, algo.init(key), batch)  # past the first step, which draws from the prior
        step = jax.jit(lambda k, s: algo.step(k, s, batch))
        t_step = median_seconds(step, key, state, repeats=args.repeats)
        core_args = (state.positions, batch["x"]) if strategy == "particles" else (state.positions, state.positions)
        t_core = median_seconds(core, *core_args, repeats=args.repeats)
        t_lik = median_seconds(jax.jit(model.batch_log_likelihood), state.positions, batch, repeats=args.repeats)
        report["strategies"][strategy] = {"step_ms": 1e3 * t_step, "core": core_name, "core_ms": 1e3 * t_core,
                                          "step_over_core": t_step / t_core, "likelihood_ms": 1e3 * t_lik,
                                          "step_over_likelihood": t_step / t_lik}
        print(f"{strategy:9s} step {t_step * 1e3:8.3f} ms | core ({core_name}) {t_core * 1e3:8.3f} ms "
              f"| ratio {t_step / t_core:6.2f} (goal ≤ 3) | the model's m×B log-likelihoods alone "
              f"{t_lik * 1e3:.3f} ms, step/likelihood {t_step / t_lik:.2f}")
    bench_report.write(args.out, report, bench_report.pmd_step)


if __name__ == "__main__":
    main()
