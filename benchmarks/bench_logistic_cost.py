"""Runtime per data point visited of every logistic-regression method at H.2's settings, in one run,
the extrapolated cost of the full MNIST8M-scale run on this machine, and Gibbs's cost against the
size of the subset it sweeps.

Settings (Dai et al. 2016, H.2): batch 100, ``d = 51`` (PCA-50 + bias), ``m = 1000`` samples for the
Monte Carlo methods, the step size ``1/(100+√t)``, ``N = 1,588,815`` rows (MNIST8M 6-vs-8). Each
stochastic method is built with that ``N``, warmed up (compiled, and past PMD's first KDE step)
by ``--steps`` steps, then timed over the next ``--steps`` steps inside one jitted
``lax.scan`` (as :func:`pmd.run` does), on batches of the real features (``--data``, a prepared
classification file; default: the embedded ``mnist-small-6v8``, prepared if absent). Evaluation
is not included. One-pass SMC is timed in its first pass (afterwards its steps do nothing).

Reference, timed in the same run and the same way: the model's log-likelihoods of ``m = 1000``
particles on one batch (the ``(m×d)·(d×B)`` product and ``m×B`` log-sigmoids) — every Monte Carlo
method must compute them once per step. ``x_likelihood`` is each method's step time over it.

Full-run cost: ``N × passes × seconds per point`` (SMC: one pass). Gibbs: a sweep of ``n`` rows
costs ``O(n d²)``; its seconds per row are measured on subsets of the training rows tiled up to
each size, and the paper-scale run (1,100 sweeps: 100 burn-in + 1000 samples) is extrapolated.

Run: ``python benchmarks/bench_logistic_cost.py [--steps 300] [--gibbs-rows 1000 10000 100000]
[--out results/benchmarks/logistic_cost.json]``; writes the JSON report and its table (``.md``) and
prints the report.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

from pmd_bench.baselines.gibbs.polya_gamma import PolyaGammaGibbs
from pmd.models.logistic import BayesianLogisticRegression, labelled
from pmd.runner import stepper
from pmd_bench.reports import benchmarks as bench_report
from pmd_bench.workflow import methods

N_PAPER = 1_588_815
PASSES = 5
SWEEPS = 1100
H2_STEP = {"kind": "sqrt", "eta": 1.0, "offset": 100.0}
SPECS = {
    "pmd": {"strategy": "hybrid", "num_particles": 1000, "kde_steps": 1, "redraw_below": 0.5,
            "particle_ess_floor": 0.5, "step_size": H2_STEP, "bandwidth": {"kind": "silverman", "scale": 0.5,
                                                                          "jitter": 1e-5}},
    "jj_svi": {"step_size": H2_STEP},
    "sgld": {"num_particles": 1000, "burn_in": 1000, "a": 1e-4, "b": 1.0, "gamma": 0.33},
    "smc": {"num_particles": 1000},
    "npv": {"num_particles": 64, "learning_rate": 0.01},
}


def load_train(path: Path | None) -> dict:
    if path is None:
        from pmd_bench.datasets.mnist import prepare_mnist_small_6v8

        path = Path(tempfile.mkdtemp()) / "mnist-small-6v8.npz"
        prepare_mnist_small_6v8(path)
    with np.load(path) as f:
        return labelled(f["X_train"], f["y_train"])


def timed_scan(method, train: dict, steps: int, batch: int, seed: int = 0) -> float:
    """Seconds per step over ``steps`` steps, after one identical compiled warm-up call."""
    rng = np.random.default_rng(seed)
    rows = len(train["y"])
    data = jax.tree_util.tree_map(jnp.asarray, train)

    advance = stepper(method)
    keys = jax.random.split(jax.random.key(seed), steps)
    idx = jnp.asarray(rng.integers(0, rows, (steps, batch)))
    state = jax.block_until_ready(advance(method.init(jax.random.key(seed + 1)), keys, idx, data)[0])
    t0 = time.perf_counter()
    jax.block_until_ready(advance(state, keys, idx, data)[0])
    return (time.perf_counter() - t0) / steps


class LikelihoodOnly:
    """The reference "method": one ``m×B`` batch log-likelihood evaluation per step, accumulated."""

    def __init__(self, model, num_particles: int = 1000):
        self.model, self.num_particles = model, num_particles

    def init(self, key):
        return self.model.sample_prior(key, self.num_particles), jnp.zeros(())

    def step(self, key, state, batch):
        thetas, total = state
        return (thetas, total + self.model.batch_log_likelihood(thetas, batch).sum()), {}


def gibbs_seconds_per_row(train: dict, rows: int, sweeps: int) -> float:
    """Seconds per row visited of PG Gibbs sweeping ``rows`` rows (the training rows tiled)."""
    reps = -(-rows // len(train["y"]))
    data = {k: np.tile(v, (reps,) + (1,) * (v.ndim - 1))[:rows] for k, v in train.items()}
    model = BayesianLogisticRegression(data["x"].shape[1]).model()
    gibbs = PolyaGammaGibbs(model, data_size=rows, num_particles=1000, data=data, burn_in=0)
    per_sweep = timed_scan(gibbs, {k: v[:1] for k, v in data.items()}, sweeps, 1)
    return per_sweep / rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", type=Path, help="a prepared classification file (default: mnist-small-6v8)")
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--batch", type=int, default=100)
    parser.add_argument("--gibbs-rows", type=int, nargs="+", default=[1_000, 10_000, 100_000])
    parser.add_argument("--gibbs-sweeps", type=int, default=5)
    parser.add_argument("--out", type=Path, default=Path("results/benchmarks/logistic_cost.json"))
    args = parser.parse_args()
    train = load_train(args.data)
    model = BayesianLogisticRegression(train["x"].shape[1]).model()
    out = {"backend": jax.default_backend(), "cpus": os.cpu_count(), "batch": args.batch, "dim": model.dim,
           "N": N_PAPER, "passes": PASSES, "steps_timed": args.steps, "methods": {}, "gibbs": {}}
    reference = timed_scan(LikelihoodOnly(model), train, args.steps, args.batch)
    out["reference_ms_per_step"] = 1e3 * reference
    for label, spec in SPECS.items():
        method = methods.METHODS[label](model, data_size=N_PAPER, **spec)
        per_step = timed_scan(method, train, args.steps, args.batch)
        per_point = per_step / args.batch
        passes = 1 if label == "smc" else PASSES
        out["methods"][label] = {"us_per_point": 1e6 * per_point, "ms_per_step": 1e3 * per_step,
                                 "x_likelihood": per_step / reference,
                                 "full_run_hours": per_point * N_PAPER * passes / 3600}
        print(json.dumps({label: out["methods"][label]}), flush=True)
    for rows in args.gibbs_rows:
        per_row = gibbs_seconds_per_row(train, rows, args.gibbs_sweeps)
        out["gibbs"][str(rows)] = {"us_per_row": 1e6 * per_row, "seconds_per_sweep": per_row * rows}
        print(json.dumps({"gibbs_rows": rows, **out["gibbs"][str(rows)]}), flush=True)
    largest = max(args.gibbs_rows)
    out["gibbs_full_run_hours"] = out["gibbs"][str(largest)]["us_per_row"] * 1e-6 * N_PAPER * SWEEPS / 3600
    bench_report.write(args.out, out, bench_report.logistic_cost)
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
