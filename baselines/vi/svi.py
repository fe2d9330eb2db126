"""Stochastic variational inference for a black-box model (Hoffman, Blei, Wang & Paisley, JMLR 2013).

Hoffman et al.'s SVI needs conditionally conjugate models; for a model known only through
``log p(θ)`` and ``log p(x|θ)`` its black-box form is the doubly stochastic ELBO gradient
(Titsias & Lázaro-Gredilla, ICML 2014, Algorithm 1; the reparameterisation estimator of Kingma &
Welling, ICLR 2014): with ``q(θ) = N(μ, L Lᵀ)`` and ``θ_s = μ + L ε_s``, ``ε_s ~ N(0, I)``,

    ELBO ≈ 1/S Σ_s [log p(θ_s) + N · mean_b log p(x_b|θ_s)] + Σ_k log L_kk + const,

(the Gaussian entropy in closed form), ascended by optax (Adam or SGD) with the learning rate
``learning_rate · (τ + t)^(-κ)`` (Hoffman et al.'s ``ρ_t = (t + τ)^(-κ)``; ``κ = 0`` keeps it
constant). ``num_particles`` is ``S``, the Monte Carlo draws per gradient: SVI keeps no particles,
its memory is ``O(d)`` (mean-field) or ``O(d²)`` (full-rank), Table 1 of Dai et al. 2016.

* ``family="fullrank"``: ``L`` lower triangular, diagonal ``exp(ρ)``.
* ``family="meanfield"``: ``L = diag(exp(ρ))``. On a Gaussian posterior with precision ``Λ`` its
  optimum has the exact mean and variances ``1 / Λ_kk``, below the marginal variances
  ``(Λ⁻¹)_kk`` whenever the coordinates are correlated (Bishop 2006, sec. 10.1.2).

The optimisation starts from ``μ`` = one prior draw and ``L`` = the Cholesky factor of the
covariance of ``_INIT_DRAWS`` prior draws (the prior's scale; Dai et al. initialise every method
with the prior). The posterior is the :class:`pmd.posterior.GaussianPosterior` ``N(μ, L Lᵀ)``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp
import optax

from pmd.bandwidth import weighted_cov
from pmd.interface import ConfigError
from pmd.posterior import GaussianPosterior

from .._common import minibatch_log_joint, require_common, stochastic_optimizer

Array = jax.Array
FAMILIES = ("meanfield", "fullrank")
_INIT_DRAWS = 1000


@jax.tree_util.register_dataclass
@dataclass(frozen=True)
class SVIState:
    """Variational parameters ``{"loc", "log_scale"[, "tril"]}``, optimizer state, step count."""

    params: dict
    opt_state: Any
    step: Array  # int32


class SVI:
    """Gaussian black-box SVI by reparameterisation gradients on mini-batches.

    Args:
        model, data_size: as for :class:`pmd.PMD`.
        num_particles: ``S``, Monte Carlo draws of ``θ`` per gradient estimate.
        family: ``"meanfield"`` or ``"fullrank"``.
        optimizer: ``"adam"`` or ``"sgd"``.
        learning_rate, tau, kappa: the learning rate ``learning_rate · (τ + t)^(-κ)``.
    """

    def __init__(
        self,
        model,
        data_size: int,
        num_particles: int = 1,
        family: str = "fullrank",
        optimizer: str = "adam",
        learning_rate: float = 0.05,
        tau: float = 1.0,
        kappa: float = 0.0,
    ):
        self.model, self.data_size, self.num_particles = require_common(model, data_size, num_particles)
        if family not in FAMILIES:
            raise ConfigError(f"unknown family {family!r}; expected one of {', '.join(FAMILIES)}")
        self.family = family
        self.optimizer, self.learning_rate = stochastic_optimizer(optimizer, learning_rate, tau, kappa)
        self._log_joint = jax.vmap(minibatch_log_joint(self.model, self.data_size), in_axes=(0, None))
        self._step = jax.jit(self._step_impl)

    def init(self, key: Array) -> SVIState:
        """``μ`` at a prior draw, ``L`` at the prior's scale (see the module docstring)."""
        k_loc, k_scale = jax.random.split(key)
        loc = self.model.sample_prior(k_loc, 1)[0]
        draws = self.model.sample_prior(k_scale, _INIT_DRAWS)
        chol = jnp.linalg.cholesky(weighted_cov(draws, jnp.zeros((_INIT_DRAWS,), draws.dtype)))
        params = {"loc": loc, "log_scale": jnp.log(jnp.diagonal(chol))}
        if self.family == "fullrank":
            params["tril"] = jnp.tril(chol, -1)
        return SVIState(params, self.optimizer.init(params), jnp.asarray(0, jnp.int32))

    def step(self, key: Array, state: SVIState, batch: Any) -> tuple[SVIState, dict]:
        """One optimizer step on the reparameterised mini-batch ELBO."""
        self.model.check_batch(batch)
        return self._step(key, state, batch)

    def posterior(self, state: SVIState) -> GaussianPosterior:
        """``N(μ, L Lᵀ)``."""
        return GaussianPosterior(state.params["loc"], self.cholesky(state.params))

    def cholesky(self, params: dict) -> Array:
        """``L``: ``diag(exp(ρ))`` plus, for the full-rank family, the strictly lower part."""
        chol = jnp.diag(jnp.exp(params["log_scale"]))
        return chol + jnp.tril(params["tril"], -1) if self.family == "fullrank" else chol

    def elbo(self, params: dict, key: Array, batch: Any) -> Array:
        """The reparameterised ELBO estimate on a mini-batch (module docstring)."""
        d = params["loc"].shape[0]
        eps = jax.random.normal(key, (self.num_particles, d), dtype=params["loc"].dtype)
        thetas = params["loc"] + eps @ self.cholesky(params).T
        entropy = jnp.sum(params["log_scale"]) + 0.5 * d * (1.0 + math.log(2.0 * math.pi))
        return jnp.mean(self._log_joint(thetas, batch)) + entropy

    def _step_impl(self, key: Array, state: SVIState, batch: Any) -> tuple[SVIState, dict]:
        elbo, grads = jax.value_and_grad(self.elbo)(state.params, key, batch)
        neg = jax.tree_util.tree_map(jnp.negative, grads)  # optax minimises -ELBO
        updates, opt_state = self.optimizer.update(neg, state.opt_state, state.params)
        params = optax.apply_updates(state.params, updates)
        t = state.step + 1
        return SVIState(params, opt_state, t), {"elbo": elbo, "learning_rate": self.learning_rate(t)}
