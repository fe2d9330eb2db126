"""What one Metropolis-Hastings proposal of structured PMD's inducing-input moves costs
(:mod:`pmd.structured.sparse_gp_moves`): its evidence ``p(y|Z')`` from the carried
statistics with only the block's rows and columns recomputed
(:meth:`pmd.models.sparse_gp.DataKernel.replace`, the block's columns of the kept kernel, then
:func:`~pmd.models.sparse_gp.evidence_from_statistics`: what the chain does), against the
reference timed in the same rounds: the same ``Z'``'s evidence computed afresh
(:func:`~pmd.models.sparse_gp.collapsed_evidence`; a round still pays
the product ``K_mn K_nm`` once per ancestor at its chains' start).

Settings: H.3.2's shape by default (``d = 90``, ``M = 1,024``, blocks of 4, slices of 8,192 rows,
float64) on random inputs (the cost does not depend on the values) with ``--rows`` rows (H.3.2:
463,715). Both programs are compiled first, then timed with ``jax.block_until_ready`` on the same
proposal, ``--rounds`` interleaved rounds; the ratio is the median of the rounds' ratios, so a busy
machine's slow minutes hit both. The two evidences are compared as well (``max_abs_diff``, nats).

Run: ``python benchmarks/bench_inducing_moves.py [--rows 463715] [--inducing 1024] [--rounds 3]
[--out results/benchmarks/inducing_moves.json]``; writes the JSON report and its table (``.md``).
"""

from __future__ import annotations

import argparse
import json
import os
import time

import jax

jax.config.update("jax_enable_x64", True)

import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

from pmd.models.sparse_gp import DataKernel, SparseGP, collapsed_evidence, evidence_from_statistics  # noqa: E402
from pmd_bench.reports import benchmarks as bench_report  # noqa: E402


def timed(fn, *args) -> float:
    """Seconds of one call of a compiled ``fn``, to its result's readiness."""
    t0 = time.perf_counter()
    jax.block_until_ready(fn(*args))
    return time.perf_counter() - t0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, default=20_000)
    parser.add_argument("--dim", type=int, default=90)
    parser.add_argument("--inducing", type=int, default=1024)
    parser.add_argument("--block", type=int, default=4)
    parser.add_argument("--chunk-rows", type=int, default=8192)
    parser.add_argument("--rounds", type=int, default=3, help="interleaved rounds; the median ratio is reported")
    parser.add_argument("--out", default="results/benchmarks/inducing_moves.json")
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    data = {"x": jnp.asarray(rng.standard_normal((args.rows, args.dim))),
            "y": jnp.asarray(0.1 * rng.standard_normal(args.rows))}
    model = SparseGP.from_data(np.asarray(data["x"][:2000]), noise_variance=0.01, num_inducing=args.inducing,
                               jitter=1e-6)
    z = data["x"][rng.choice(args.rows, args.inducing, replace=False)]
    block = jnp.asarray(rng.choice(args.inducing, args.block, replace=False))
    points = data["x"][rng.choice(args.rows, args.block, replace=False)] + 0.01
    chunk = args.chunk_rows
    fresh = jax.jit(lambda zz: collapsed_evidence(model, zz, data, chunk)[0])

    @jax.jit
    def update(zz, kernel):
        z_new, _, phi, psi = kernel.replace(model, zz, block, points)
        return evidence_from_statistics(model, z_new, phi, psi, kernel.c)[0]

    kernel = jax.block_until_ready(jax.jit(lambda zz: DataKernel.build(model, zz, data, chunk))(z))
    z_new = z.at[block].set(points)
    ev_fresh, ev_update = jax.block_until_ready((fresh(z_new), update(z, kernel)))  # compiles both
    times: dict[str, list[float]] = {"fresh": [], "update": []}
    for _ in range(args.rounds):
        times["fresh"].append(timed(fresh, z_new))
        times["update"].append(timed(update, z, kernel))
    fresh_s, update_s = np.asarray(times["fresh"]), np.asarray(times["update"])
    report = {"backend": jax.default_backend(), "cpus": os.cpu_count(), "dtype": "float64", "rows": args.rows,
              "dim": args.dim, "inducing": args.inducing, "block": args.block, "chunk_rows": chunk,
              "rounds": args.rounds, "fresh_ms": 1e3 * float(np.median(fresh_s)),
              "update_ms": 1e3 * float(np.median(update_s)),
              "update_over_fresh": float(np.median(update_s / fresh_s)),
              "max_abs_diff": float(abs(ev_fresh - ev_update)), "log_evidence": float(ev_fresh)}
    bench_report.write(args.out, report, bench_report.inducing_moves)
    print(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
