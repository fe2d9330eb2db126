"""The moves' block size: one full read of the log target at each block size, against the block the
default picks (:meth:`pmd.rejuvenation.MALAMoves.block_rows`), in the same run.

Problem: synthetic well-specified logistic regression (``bench_batched_logistic.py``'s ``synthetic``,
``d = --features + 1``), ``N = --rows``; particles drawn from the prior, scaled by 0.01. For each
particle count ``m`` and block size (``--chunks``, and the default's block at that ``m``), the
``LogTarget`` read of all ``N`` rows is timed in each of ``--rounds`` rounds (the median of
``--repeats`` executions after one untimed call, which compiles it the first time), the block sizes
interleaved within a round (the machine's load moves between rounds, not between the sizes of one
round): the value and gradient for all particles (what each MALA move reads) and the value alone
(what each independence sweep reads). Reported: each size's best round, the spread of its rounds,
and its ratio to the default's block at the same ``m``.

On a CPU the default's rule is about ``2²⁰`` particle-rows per block (cache-sized); on an
accelerator 4,096 rows: ``benchmarks/accelerator.sh block_rows`` measures whether that holds there.

Run: ``python benchmarks/bench_block_rows.py [--rows 1000000] [--features 20] [--particles 1000 250]
[--chunks 512 1024 4096 16384] [--out results/benchmarks/block_rows.json]``; writes the JSON report and
its table (``.md``).
"""

from __future__ import annotations

import argparse
from pathlib import Path

import jax
import jax.numpy as jnp

from bench_batched_logistic import synthetic
from pmd.models.logistic import BayesianLogisticRegression
from pmd.rejuvenation import DEFAULT_MOVES, LogTarget, MALAMoves
from pmd_bench.reports import benchmarks as bench_report
from pmd_bench.workflow.experiments.table1 import median_seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--features", type=int, default=20)
    parser.add_argument("--particles", type=int, nargs="+", default=[1000, 250])
    parser.add_argument("--chunks", type=int, nargs="+", default=[512, 1024, 4096, 16384])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--out", type=Path, default=Path("results/benchmarks/block_rows.json"))
    args = parser.parse_args()
    data = synthetic(args.rows, args.features, 0)
    model = BayesianLogisticRegression(args.features + 1).model()
    count = jnp.asarray(args.rows)
    default = MALAMoves.from_spec(DEFAULT_MOVES)
    report = {"backend": jax.default_backend(), "device": jax.devices()[0].device_kind, "rows": args.rows,
              "dim": args.features + 1, "repeats": args.repeats, "rounds": args.rounds, "particles": {}}
    for m in args.particles:
        rule = default.block_rows(m)
        chunks = sorted(set(args.chunks) | {rule})
        thetas = 0.01 * model.sample_prior(jax.random.key(m), m)
        programs = {}
        for chunk in chunks:
            target = LogTarget(model, data, chunk)
            programs[chunk] = {"value_and_grad": jax.jit(target.value_and_grad), "value": jax.jit(target.value)}
        rounds = {chunk: {read: [] for read in programs[chunk]} for chunk in chunks}
        for _ in range(args.rounds):
            for chunk in chunks:
                for read, fn in programs[chunk].items():
                    rounds[chunk][read].append(median_seconds(fn, thetas, count, repeats=args.repeats))
        sizes = {}
        for chunk in chunks:
            sizes[str(chunk)] = {read: {"best_s": min(ts), "rounds_s": ts,
                                        "over_default": min(ts) / min(rounds[rule][read])}
                                 for read, ts in rounds[chunk].items()}
        report["particles"][str(m)] = {"default_rows": rule, "sizes": sizes}
        print(f"m = {m} (default block {rule} rows): " + ", ".join(
            f"{c}: {sizes[str(c)]['value_and_grad']['best_s']:.3f} s" for c in chunks), flush=True)
    bench_report.write(args.out, report, bench_report.block_rows)


if __name__ == "__main__":
    main()
