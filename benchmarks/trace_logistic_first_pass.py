"""Where the robust PMD loses the posterior during its first pass on logistic regression.

The robust PMD's first pass multiplies the iterate by each batch's likelihood, so after ``n`` rows
its iterate should be the *partial posterior* of those rows. This script runs ``PMD`` over the
first pass of a prepared classification file (the rows in one random order, batch ``B``) and at
each checkpoint compares the weighted particles with the Laplace approximation of the partial
posterior of exactly the rows seen (Newton's method in float64, :func:`workflow.reference.laplace_approximation`):

* ``mean_error``: ``|mean - mode| / sd`` averaged over coordinates (partial-posterior sd);
* ``log_sd``: ``log(σ_cloud / σ_laplace)`` averaged over coordinates;
* ``eig_min`` / ``eig_median``: eigenvalues of the cloud's covariance whitened by the Laplace
  covariance (1 everywhere for a cloud of the right shape; a direction at 0.01 is 10× too narrow).

The Laplace approximation is the yardstick only where it is accurate: with ``n`` rows much larger
than ``d`` (the default checkpoints start at 10,000 rows for ``d = 51``). Each call writes one JSON
file (settings and rows) and prints a Markdown table.

    python benchmarks/trace_logistic_first_pass.py --data results/paper/data/mnist8m-synth-6v8.npz \
        --particles 1000 --label default --out results/benchmarks/first_pass
    python benchmarks/trace_logistic_first_pass.py ... --options '{"bandwidth": {"kind": "local", "h2": 0.99}}'
    python benchmarks/trace_logistic_first_pass.py ... --options \
        '{"rejuvenate": {"kind": "mala", "steps": 5, "first_pass": true, "precondition": "hessian"}}'
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

from pmd import PMD
from pmd.models.logistic import BayesianLogisticRegression
from pmd_bench.workflow.experiments.logistic import load_data, reference_log_density
from pmd_bench.workflow.reference import laplace_approximation
from pmd_bench.workflow.results import save_json

CHECKPOINTS = (10_000, 30_000, 100_000, 300_000, 1_000_000)


def partial_laplace(x: np.ndarray, y: np.ndarray, prior_std: float) -> tuple[np.ndarray, np.ndarray]:
    """Mode and covariance of the Laplace approximation of ``N(0, s² I) · Π σ(y xᵀw)`` over these
    rows, in float64 (the reference's log density, :func:`reference_log_density`)."""
    with jax.enable_x64(True):
        log_density = reference_log_density({"x": x, "y": y}, prior_std)
        return laplace_approximation(log_density, jnp.zeros(x.shape[1], jnp.float64))


def compare(positions: np.ndarray, log_weights: np.ndarray, mode: np.ndarray, cov: np.ndarray) -> dict:
    """The cloud's weighted moments against the Laplace approximation (module docstring)."""
    w = np.exp(log_weights - log_weights.max())
    w /= w.sum()
    mean = w @ positions
    centred = positions - mean
    cloud_cov = (centred * w[:, None]).T @ centred
    sd = np.sqrt(np.diag(cov))
    chol = np.linalg.cholesky(cov)
    whitened = np.linalg.solve(chol, np.linalg.solve(chol, cloud_cov).T)
    eig = np.linalg.eigvalsh(0.5 * (whitened + whitened.T))
    return {"mean_error": float(np.mean(np.abs(mean - mode) / sd)),
            "mean_error_max": float(np.max(np.abs(mean - mode) / sd)),
            "log_sd": float(np.mean(0.5 * np.log(np.diag(cloud_cov) / np.diag(cov)))),
            "eig_min": float(eig.min()), "eig_median": float(np.median(eig)),
            "ess": float(1.0 / np.sum(w**2))}


def trace(data: str, particles: int, options: dict, batch_size: int, checkpoints: list[int],
          prior_std: float, seed: int) -> list[dict]:
    """Run the first pass and compare at every checkpoint (a number of rows seen)."""
    train, _ = load_data(data)
    n, d = train["x"].shape
    order = np.random.default_rng(seed).permutation(n)
    x, y = train["x"][order], train["y"][order]
    checkpoints = sorted({c // batch_size * batch_size for c in checkpoints if batch_size <= c <= n})
    if "rejuvenate" in options:  # the moves read the rows seen so far: PMD holds the data set
        options = {**options, "data": train}
    algo = PMD(BayesianLogisticRegression(d, prior_std).model(), data_size=n, num_particles=particles, **options)
    key = jax.random.key(seed)
    state = algo.init(key)
    step = jax.jit(algo.step)
    rows, stepping, started = [], 0.0, time.perf_counter()
    for t in range(checkpoints[-1] // batch_size):
        lo, hi = t * batch_size, (t + 1) * batch_size
        batch = {"x": jnp.asarray(x[lo:hi]), "y": jnp.asarray(y[lo:hi])}
        state, _ = step(jax.random.fold_in(key, t), state, batch, jnp.asarray(order[lo:hi]) if algo.wants_rows else None)
        if hi in checkpoints:
            positions = np.asarray(state.positions, np.float64)
            stepping += time.perf_counter() - started
            mode, cov = partial_laplace(x[:hi], y[:hi], prior_std)
            rows.append({"rows": hi, **compare(positions, np.asarray(state.log_weights, np.float64), mode, cov),
                         "step_seconds": stepping})
            print(f"{hi} rows: {rows[-1]}", flush=True)
            started = time.perf_counter()
    return rows


def table(rows: list[dict]) -> str:
    """A Markdown table of the checkpoints."""
    lines = ["| rows seen | mean error (partial-posterior sd) | max | log σ ratio | whitened eig min | median | ESS |",
             "|---|---|---|---|---|---|---|"]
    lines += [f"| {r['rows']:,} | {r['mean_error']:.2f} | {r['mean_error_max']:.2f} | {r['log_sd']:+.2f} | "
              f"{r['eig_min']:.3f} | {r['eig_median']:.3f} | {r['ess']:.0f} |" for r in rows]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", required=True, help="a prepared classification .npz (python -m pmd_bench.datasets prepare)")
    parser.add_argument("--particles", type=int, default=1000)
    parser.add_argument("--options", default="{}", help="other PMD arguments, as JSON")
    parser.add_argument("--batch-size", type=int, default=100)
    parser.add_argument("--checkpoints", type=int, nargs="+", default=list(CHECKPOINTS))
    parser.add_argument("--prior-std", type=float, default=1.0)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--label", required=True, help="names the output file")
    parser.add_argument("--out", default="results/benchmarks/first_pass")
    args = parser.parse_args()
    options = json.loads(args.options)
    rows = trace(args.data, args.particles, options, args.batch_size, args.checkpoints, args.prior_std, args.seed)
    out = Path(args.out) / f"{args.label}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    save_json(out, {"data": args.data, "particles": args.particles, "options": options, "batch_size": args.batch_size,
                    "seed": args.seed, "prior_std": args.prior_std, "rows": rows})
    print(table(rows))
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
