"""An experiment's repetitions batched into one vectorised program against the same repetitions run
one after another, in one run.

Model and settings: the mixture experiment of the standard config (Welling-Teh, ``N = 1000``, batch 10,
2 passes = 200 steps, ``m = 300``), ``--seeds`` repetitions of each method. Sequential: ``pmd.run``
once per seed, as one Snakemake job per seed does (each compiles its own program; the ~5 s of
starting a Python process and importing JAX that a separate job adds are *not* counted, so the
ratio understates what batching saves in the workflow). Batched: one ``pmd.run_batched`` over all
seeds (one compilation). Both evaluate only at the end; wall time of the whole call, compilation
included, best of ``--rounds`` interleaved rounds. ``speedup`` = sequential ÷ batched.

Run: ``python benchmarks/bench_batched_seeds.py [--seeds 10] [--rounds 2]
[--out results/benchmarks/batched_seeds.json]``; writes the JSON report and its table (``.md``).
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import jax
import jax.numpy as jnp

import pmd
from pmd.models.mixture import WellingTehMixture
from pmd_bench.reports import benchmarks as bench_report
from pmd_bench.workflow import methods

N, BATCH, PASSES, M = 1000, 10, 2.0, 300
SPECS = {
    # the streaming update: the default's moves are not batchable (pmd.PMD.batchable, run_batched refuses them)
    "pmd_stream": {"method": "pmd", "num_particles": M, "rejuvenate": None},
    "pmd_paper": {"method": "pmd", "num_particles": M, "variant": "paper", "strategy": "hybrid"},
    "sgld": {"num_particles": M, "burn_in": 100},
    "smc": {"num_particles": M},
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--out", type=Path, default=Path("results/benchmarks/batched_seeds.json"))
    args = parser.parse_args()
    model = WellingTehMixture().model()
    data = jnp.asarray(WellingTehMixture().simulate(0, N))
    keys = [jax.random.key(s) for s in range(args.seeds)]
    settings = {"batch_size": BATCH, "num_passes": PASSES}
    steps = int(PASSES * N / BATCH)
    report = {"device": jax.devices()[0].device_kind, "seeds": args.seeds, "rounds": args.rounds, "N": N,
              "batch": BATCH, "steps": steps, "particles": M, "methods": {}}
    for label, spec in SPECS.items():
        method = methods.build(label, dict(spec), model, data, steps)
        sequential, batched = [], []
        for _ in range(args.rounds):
            t0 = time.perf_counter()
            for key in keys:
                jax.block_until_ready(pmd.run(method, data, key, **settings).posterior.mean())
            sequential.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            jax.block_until_ready([r.posterior.mean() for r in pmd.run_batched(method, data, keys, **settings)])
            batched.append(time.perf_counter() - t0)
        report["methods"][label] = {"sequential_s": min(sequential), "batched_s": min(batched),
                                    "speedup": min(sequential) / min(batched)}
        print(json.dumps({label: report["methods"][label]}), flush=True)
    bench_report.write(args.out, report, bench_report.batched_seeds)


if __name__ == "__main__":
    main()
