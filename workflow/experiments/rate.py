"""Theorem 5's rate, measured: the error of a posterior expectation falls as ``O(m^{-1/2})``.

On the conjugate Gaussian model with a prior that covers the posterior (section 3.1), weighted
particles with ``γ_t = 1/t`` run one pass; the error of ``E[θ_1]`` against the closed form is
measured over many seeds for each particle count ``m``, and the log-log slope is fitted by least
squares on the root-mean-square errors. Theorem 5 predicts a slope of ``-1/2``.

:func:`errors` runs any method of the registry the same way (Table 1's integral-approximation
column for SGLD, one-pass SMC, SVI and NPV: :mod:`workflow.experiments.table1`).
"""

from __future__ import annotations

from typing import Callable

import jax
import jax.numpy as jnp
import numpy as np

from pmd import PMD, InferenceMethod, Model
from pmd.models.conjugate import ConjugateGaussian

# (model, data, num_particles, num_steps) -> the method to run
Builder = Callable[[Model, jax.Array, int, int], InferenceMethod]


def theorem5_pmd(model: Model, data: jax.Array, num_particles: int, num_steps: int) -> InferenceMethod:
    """Theorem 5's method: PMD's weighted particles with ``γ_t = 1/t`` (Algorithm 1 as published)."""
    return PMD(model, data_size=data.shape[0], num_particles=num_particles, variant="paper", strategy="particles")


def errors(num_particles: int, seeds: int, *, build: Builder = theorem5_pmd, num_steps: int | None = None,
           dim: int = 2, num_data: int = 10, noise_std: float = 5.0, batch_size: int = 2,
           data_seed: int = 0) -> np.ndarray:
    """``|Ê[θ_1] - E[θ_1]|`` for ``seeds`` independent runs with ``num_particles`` particles.

    ``build`` makes the method (default: Theorem 5's PMD); it takes ``num_steps`` mini-batch steps
    (default one pass), cycling through the batches in order. ``Ê`` is the mean of the method's
    posterior, ``E`` the closed form (Bishop 2006, eq. 2.141-2.142).
    """
    prob = ConjugateGaussian(dim=dim, noise_std=noise_std)
    _, x = prob.simulate(data_seed, num_data)
    exact = prob.posterior(x)[0][0]
    batches = jnp.asarray(x).reshape(-1, batch_size, dim)
    num_steps = len(batches) if num_steps is None else num_steps
    algo = build(prob.model(), jnp.asarray(x), num_particles, num_steps)
    per_step = batches[jnp.arange(num_steps) % len(batches)]

    def one(key):
        def body(state, inputs):
            k, batch = inputs
            return algo.step(k, state, batch)[0], None

        k_init, k_steps = jax.random.split(key)
        state, _ = jax.lax.scan(body, algo.init(k_init), (jax.random.split(k_steps, num_steps), per_step))
        return algo.posterior(state).mean()[0]

    estimates = jax.jit(jax.vmap(one))(jax.random.split(jax.random.key(num_particles), seeds))
    return np.abs(np.asarray(estimates, np.float64) - exact)


def loglog_fit(x, y) -> dict:
    """Least-squares slope of ``log y`` on ``log x``, its standard error from the residuals (meaningless
    with two points: ``points`` says how many), and the intercept."""
    logx, logy = np.log(np.asarray(x, np.float64)), np.log(np.asarray(y, np.float64))
    slope, intercept = np.polyfit(logx, logy, 1)
    resid = logy - (slope * logx + intercept)
    dof = max(len(logx) - 2, 1)
    slope_se = float(np.sqrt(np.sum(resid**2) / dof / np.sum((logx - logx.mean()) ** 2)))
    return {"slope": float(slope), "slope_se": slope_se, "intercept": float(intercept), "points": len(logx)}


def bootstrap_slope_se(particle_counts, errs: list, draws: int = 1000, seed: int = 0) -> float:
    """Standard error of the RMS errors' log-log slope from its Monte Carlo error: the seeds of each
    ``m`` resampled with replacement ``draws`` times, the slope refitted each time."""
    rng = np.random.default_rng(seed)
    logx = np.log(np.asarray(particle_counts, np.float64))
    logx = logx - logx.mean()
    slopes = []
    for _ in range(draws):
        log_rmse = np.array([0.5 * np.log(np.mean(rng.choice(np.asarray(e) ** 2, len(e)))) for e in errs])
        slopes.append(np.sum(logx * (log_rmse - log_rmse.mean())) / np.sum(logx**2))
    return float(np.std(slopes, ddof=1))


def measure(particle_counts: list[int], seeds: int, **kwargs) -> dict:
    """RMS error per ``m``, the fitted log-log slope with its standard error (from the residuals,
    ``slope_se``, and from the seeds' Monte Carlo error, ``slope_se_bootstrap``) and every error."""
    errs = [errors(m, seeds, **kwargs) for m in particle_counts]
    rmse = np.array([np.sqrt(np.mean(e**2)) for e in errs])
    return {"particles": list(map(int, particle_counts)), "rmse": rmse.tolist(), "seeds": seeds,
            **loglog_fit(particle_counts, rmse), "slope_se_bootstrap": bootstrap_slope_se(particle_counts, errs),
            "errors": [e.tolist() for e in errs]}
