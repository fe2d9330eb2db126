"""Theorem 5's rate, measured: the error of a posterior expectation falls as ``O(m^{-1/2})``.

On the conjugate Gaussian model with a prior that covers the posterior (section 3.1), weighted
particles with ``γ_t = 1/t`` run one pass; the error of ``E[θ_1]`` against the closed form is
measured over many seeds for each particle count ``m``, and the log-log slope is fitted by least
squares on the root-mean-square errors. Theorem 5 predicts a slope of ``-1/2``.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from pmd import PMD
from pmd.models.conjugate import ConjugateGaussian


def errors(num_particles: int, seeds: int, *, dim: int = 2, num_data: int = 10, noise_std: float = 5.0,
           batch_size: int = 2, data_seed: int = 0) -> np.ndarray:
    """``|Ê[θ_1] - E[θ_1]|`` for ``seeds`` independent runs with ``num_particles`` particles."""
    prob = ConjugateGaussian(dim=dim, noise_std=noise_std)
    _, x = prob.simulate(data_seed, num_data)
    exact = prob.posterior(x)[0][0]
    algo = PMD(prob.model(), data_size=num_data, num_particles=num_particles, variant="paper",
               strategy="particles")
    batches = jnp.asarray(x).reshape(-1, batch_size, dim)

    def one(key):
        def body(state, inputs):
            k, batch = inputs
            return algo.step(k, state, batch)[0], None

        k_init, k_steps = jax.random.split(key)
        state, _ = jax.lax.scan(body, algo.init(k_init), (jax.random.split(k_steps, len(batches)), batches))
        return algo.posterior(state).mean()[0]

    estimates = jax.jit(jax.vmap(one))(jax.random.split(jax.random.key(num_particles), seeds))
    return np.abs(np.asarray(estimates, np.float64) - exact)


def measure(particle_counts: list[int], seeds: int, **kwargs) -> dict:
    """RMS error per ``m`` and the fitted log-log slope with its standard error."""
    rmse = np.array([np.sqrt(np.mean(errors(m, seeds, **kwargs) ** 2)) for m in particle_counts])
    logm, loge = np.log(particle_counts), np.log(rmse)
    slope, intercept = np.polyfit(logm, loge, 1)
    resid = loge - (slope * logm + intercept)
    dof = max(len(logm) - 2, 1)
    slope_se = float(np.sqrt(np.sum(resid**2) / dof / np.sum((logm - logm.mean()) ** 2)))
    return {"particles": list(map(int, particle_counts)), "rmse": rmse.tolist(), "seeds": seeds,
            "slope": float(slope), "slope_se": slope_se, "intercept": float(intercept)}
