"""A complete method in one file: an ensemble of stochastic-gradient Langevin chains.

Each of the ``m`` particles takes, on a batch of ``B`` of the ``N`` rows, the Langevin step
(Welling & Teh, ICML 2011, eq. 4, at a fixed step size)

    θ ← θ + (ε/2) (∇log p(θ) + (N/B) Σ_b ∇log p(x_b|θ)) + √ε ξ,    ξ ~ N(0, I),

with ``ε = step_size / N`` (the likelihood's curvature grows with N), and the posterior is the
particles, equally weighted. Copy this file, change ``step``, and name it in a config as
``method: my_method.py:LangevinEnsemble`` (the path relative to the config file); check it first
with ``pmd-bench check-method examples/my_method.py:LangevinEnsemble``.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from pmd import Model, ParticlePosterior
from pmd.interface import work


class LangevinEnsemble:
    """``m`` independent stochastic-gradient Langevin chains started from the prior."""

    method_family = "stochastic-gradient MCMC"  # the family its row is grouped in
    reference = "Welling & Teh, ICML 2011 (eq. 4), m chains at a fixed step"  # what it implements

    def __init__(self, model: Model, data_size: int, num_particles: int = 100, step_size: float = 0.5):
        if not step_size > 0:
            raise ValueError(f"step_size must be positive, got {step_size!r}")
        self.model, self.data_size, self.num_particles = model, data_size, num_particles
        self.epsilon = step_size / data_size
        self.step = jax.jit(self._step)  # pure in (key, state, batch): the runner compiles it

    def init(self, key: jax.Array) -> jax.Array:
        """The state: the particles ``(m, d)``, drawn from the prior."""
        return self.model.sample_prior(key, self.num_particles)

    def _log_target(self, theta: jax.Array, batch) -> jax.Array:
        rows = jax.vmap(self.model.log_likelihood, in_axes=(None, 0))(theta, batch)
        return self.model.log_prior(theta) + self.data_size / rows.shape[0] * jnp.sum(rows)

    def _step(self, key: jax.Array, state: jax.Array, batch) -> tuple[jax.Array, dict]:
        grads = jax.vmap(jax.grad(self._log_target), in_axes=(0, None))(state, batch)
        noise = jax.random.normal(key, state.shape, state.dtype)
        state = state + 0.5 * self.epsilon * grads + jnp.sqrt(self.epsilon) * noise
        terms = self.num_particles * jax.tree_util.tree_leaves(batch)[0].shape[0]
        return state, work(evals=terms, grad_evals=terms)  # its work: m·B terms and their gradients

    def posterior(self, state: jax.Array) -> ParticlePosterior:
        return ParticlePosterior.equally_weighted(state)
