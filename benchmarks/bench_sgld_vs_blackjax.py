"""Our parallel SGLD step against BlackJAX's SGLD on the same Bayesian logistic regression.

Both advance ``m`` chains (BlackJAX: ``jax.vmap`` of ``blackjax.sgld(...).step``; ours:
:class:`baselines.ParallelSGLD`, which vmaps the gradient inside its step) on the same synthetic
data (``d = 50`` as in Dai et al. H.2, batch 100), the same batch sequence and the same constant
step (``ε`` in Welling & Teh's eq. 4 is BlackJAX's ``2h``). Each is timed as the runner drives it,
a jitted ``lax.scan`` over ``--steps`` steps, after a compile-and-warm-up call; repeats alternate
between the two. The headline ratio ours / BlackJAX (goal: ≤ 1) uses the fastest repeat of each
(as ``timeit`` advises: slower repeats measure other processes' interference); medians are printed
beside it. Run with::

    python benchmarks/bench_sgld_vs_blackjax.py [--chains 100] [--steps 1000] [--repeats 15] \
        [--out results/benchmarks/sgld_vs_blackjax.json]

(writes the JSON report and its table, ``.md``, beside it).
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from pathlib import Path

import blackjax
import jax
import jax.numpy as jnp
import numpy as np

import pmd
from pmd_bench.baselines import ParallelSGLD
from pmd.runner import batch_indices
from pmd_bench.reports import benchmarks as bench_report


def logistic_regression(num_data: int, dim: int, seed: int):
    """Synthetic data ``y = ±1 ~ Bernoulli(σ(xᵀw*))`` and the model with prior ``N(0, I)`` (H.2)."""
    rng = np.random.default_rng(seed)
    w_true = rng.standard_normal(dim)
    x = rng.standard_normal((num_data, dim)) / np.sqrt(dim)
    y = np.where(rng.random(num_data) < 1 / (1 + np.exp(-x @ w_true)), 1.0, -1.0)
    model = pmd.Model(
        dim=dim,
        log_prior=lambda w: -0.5 * jnp.sum(w**2),
        log_likelihood=lambda w, datum: -jax.nn.softplus(-datum[1] * (datum[0] @ w)),
        sample_prior=lambda key, n: jax.random.normal(key, (n, dim)),
        name="logistic-regression",
    )
    return model, (jnp.asarray(x, jnp.float32), jnp.asarray(y, jnp.float32))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chains", type=int, default=100)
    parser.add_argument("--steps", type=int, default=1000)
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--num-data", type=int, default=10_000)
    parser.add_argument("--dim", type=int, default=50)
    parser.add_argument("--batch", type=int, default=100)
    parser.add_argument("--eps", type=float, default=1e-3)
    parser.add_argument("--out", type=Path, default=Path("results/benchmarks/sgld_vs_blackjax.json"))
    args = parser.parse_args()

    model, data = logistic_regression(args.num_data, args.dim, seed=0)
    m, n = args.chains, args.num_data
    idx = jnp.asarray(batch_indices(0, n, args.batch, args.steps))
    keys = jax.random.split(jax.random.key(1), args.steps)
    start = model.sample_prior(jax.random.key(2), m)

    ours = ParallelSGLD(model, data_size=n, num_particles=m, a=args.eps, gamma=0.0)

    def ours_body(state, inputs):
        k, rows = inputs
        return ours.step(k, state, jax.tree_util.tree_map(lambda a: a[rows], data))

    grad = blackjax.sgmcmc.gradients.grad_estimator(model.log_prior, model.log_likelihood, n)
    theirs = blackjax.sgld(grad)
    theirs_step = jax.vmap(theirs.step, in_axes=(0, 0, None, None))

    def theirs_body(positions, inputs):
        k, rows = inputs
        batch = jax.tree_util.tree_map(lambda a: a[rows], data)
        return theirs_step(jax.random.split(k, m), positions, batch, args.eps / 2), None

    ours_run = jax.jit(lambda s: jax.lax.scan(ours_body, s, (keys, idx))[0].positions)
    theirs_run = jax.jit(lambda p: jax.lax.scan(theirs_body, p, (keys, idx))[0])
    ours_state = ours.init(jax.random.key(2))  # the same m prior draws as BlackJAX's start
    assert np.array_equal(np.asarray(ours_state.positions), np.asarray(start))

    def timed(fn, arg):
        t0 = time.perf_counter()
        jax.block_until_ready(fn(arg))
        return time.perf_counter() - t0

    compile_ours, compile_theirs = timed(ours_run, ours_state), timed(theirs_run, start)
    t_ours, t_theirs = [], []
    for _ in range(args.repeats):
        t_ours.append(timed(ours_run, ours_state))
        t_theirs.append(timed(theirs_run, start))
    best_ours, best_theirs = min(t_ours), min(t_theirs)
    med_ours, med_theirs = statistics.median(t_ours), statistics.median(t_theirs)

    final_ours, final_theirs = np.asarray(ours_run(ours_state)), np.asarray(theirs_run(start))
    print(f"device: {jax.devices()[0].device_kind}; {m} chains, d={args.dim}, batch {args.batch}, "
          f"N={n}, {args.steps} steps, {args.repeats} repeats")
    print(f"compile+first run: ours {compile_ours:.2f} s, blackjax {compile_theirs:.2f} s")
    print(f"per step, fastest repeat: ours {1e6 * best_ours / args.steps:.1f} us, "
          f"blackjax {1e6 * best_theirs / args.steps:.1f} us")
    print(f"per step, median repeat:  ours {1e6 * med_ours / args.steps:.1f} us, "
          f"blackjax {1e6 * med_theirs / args.steps:.1f} us")
    print(f"ratio ours/blackjax: {best_ours / best_theirs:.3f} (fastest), {med_ours / med_theirs:.3f} (median)")
    max_diff = float(np.max(np.abs(final_ours.mean(0) - final_theirs.mean(0))))
    typical = float(np.mean(np.abs(final_ours.mean(0))))
    print(f"chain-mean of the final states, ours vs blackjax (same law, different noise): "
          f"max |diff| = {max_diff:.3f}, typical |w| = {typical:.3f}")
    per_step = lambda t: 1e6 * t / args.steps  # noqa: E731
    report = {"device": jax.devices()[0].device_kind, "cpus": os.cpu_count(), "chains": m, "dim": args.dim,
              "batch": args.batch, "num_data": n, "steps": args.steps, "repeats": args.repeats, "eps": args.eps,
              "compile_s": {"ours": compile_ours, "blackjax": compile_theirs},
              "us_per_step": {"ours_fastest": per_step(best_ours), "blackjax_fastest": per_step(best_theirs),
                              "ours_median": per_step(med_ours), "blackjax_median": per_step(med_theirs)},
              "ratio_fastest": best_ours / best_theirs, "ratio_median": med_ours / med_theirs,
              "max_mean_diff": max_diff, "typical_abs_w": typical}
    bench_report.write(args.out, report, bench_report.sgld_vs_blackjax)


if __name__ == "__main__":
    main()
