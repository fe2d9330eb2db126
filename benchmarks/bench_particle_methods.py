"""Cost per data point visited of NPL's posterior bootstrap and SVGD beside PMD, SGLD and SVI, in one
run, with two same-run ratios: NPL's replicates ``vmap``-ed against the same update run one
replicate after another (``parallel=False``, ``lax.map``), and our SVGD's step against
``blackjax.svgd``'s at the same settings (same particles and batches, so the same answers).

Model: the Welling-Teh mixture (``N = 1000``, batch 10, ``m = 300`` as the standard config). Each
method is compiled and warmed up by ``--steps`` steps, then ``--steps`` steps are timed inside one
jitted ``lax.scan`` (as :func:`pmd.run` does); evaluation is not included; medians of
``--rounds`` interleaved rounds. Run: ``python benchmarks/bench_particle_methods.py
[--steps 100] [--rounds 3] [--out results/benchmarks/particle_methods.json]``; the table is written beside
the JSON (``.md``).
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

from pmd.models.mixture import WellingTehMixture
from pmd.runner import stepper
from pmd_bench.workflow import methods
from pmd_bench.reports import benchmarks as bench_report

N, BATCH, M = 1000, 10, 300
SPECS = {
    "pmd": {"num_particles": M},
    "sgld": {"num_particles": M, "burn_in": 0},
    "svi": {"family": "fullrank", "num_particles": 10},
    "npl": {"num_particles": M, "optimizer": "sgd", "learning_rate": 0.02, "tau": 10.0},
    "npl_sequential": {"method": "npl", "num_particles": M, "optimizer": "sgd", "learning_rate": 0.02,
                       "tau": 10.0, "parallel": False},
    "svgd": {"num_particles": M, "step_size": 0.005},
    "blackjax_svgd": {"num_particles": M, "step_size": 0.005},
}


def timed_scan(method, data, steps: int):
    """A function timing ``steps`` steps of ``method`` in one jitted scan from a warmed-up state."""
    idx = np.random.default_rng(0).integers(0, N, size=(2 * steps, BATCH))
    keys = jax.random.split(jax.random.key(0), 2 * steps)

    advance = stepper(method)
    state = jax.block_until_ready(advance(method.init(jax.random.key(1)), keys[:steps], idx[:steps], data)[0])

    def once() -> float:
        t0 = time.perf_counter()
        jax.block_until_ready(advance(state, keys[steps:], idx[steps:], data)[0])
        return (time.perf_counter() - t0) / steps

    return once


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--out", default="results/benchmarks/particle_methods.json")
    args = parser.parse_args()
    model = WellingTehMixture().model()
    data = jnp.asarray(WellingTehMixture().simulate(0, N))
    timers = {label: timed_scan(methods.build(label, dict(spec), model, data, 2 * args.steps), data, args.steps)
              for label, spec in SPECS.items()}
    samples = {label: [] for label in timers}
    for _ in range(args.rounds):
        for label, once in timers.items():
            samples[label].append(once())
    step = {label: float(np.median(v)) for label, v in samples.items()}
    out = {
        "settings": {"model": "welling-teh-mixture", "N": N, "batch": BATCH, "m": M, "steps": args.steps,
                     "rounds": args.rounds, "device": jax.devices()[0].device_kind},
        "ms_per_step": {k: 1e3 * v for k, v in step.items()},
        "us_per_point": {k: 1e6 * v / BATCH for k, v in step.items()},
        "npl_parallel_speedup": step["npl_sequential"] / step["npl"],
        "svgd_over_blackjax": step["svgd"] / step["blackjax_svgd"],
        "rounds_ms": {k: [1e3 * t for t in v] for k, v in samples.items()},
    }
    bench_report.write(args.out, out, bench_report.particle_methods)
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
