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

The start (``init``):

* ``"laplace"`` (the default): the Laplace approximation at a mode of the full-data log joint
  (:func:`baselines._common.laplace_approximation`: L-BFGS from NumPyro's ``init_to_median``, then
  the Hessian there), which is what NumPyro's ``AutoLaplaceApproximation`` returns and the exact
  optimum of both families when the posterior is Gaussian: ``μ`` at the mode, ``L`` the Cholesky
  factor of ``Λ⁻¹`` (full-rank) or ``diag(1/sqrt(Λ_kk))`` (mean-field), ``Λ = -∇² log p(θ, x)``.
  It needs the data set (``data=``, as the full-data methods take it). The optimizer then works
  in the coordinates this start whitens: ``μ = μ₀ + L₀ z``, ``L = L₀ L̃``, the parameters ``z``,
  ``ρ`` (``L̃_kk = e^{ρ_k}``) and the lower part of ``L̃`` all start at 0, and a step of Adam, whose
  steps are of the size of its learning rate whatever the gradient's scale (Kingma & Ba 2015, sec.
  2.1), moves ``μ`` by a fraction of a posterior sd, on any model: the default learning rate needs
  no tuning to the problem's scale. For ``μ`` this is the natural gradient (the Fisher information
  of ``q`` in ``μ`` is ``(L Lᵀ)⁻¹``; Amari 1998, Hoffman et al. 2013, sec. 2.3) with the metric
  frozen at the start.
* ``"prior"``: the start of Dai et al., who initialise every method with the prior: ``μ`` one prior
  draw, ``L`` the Cholesky factor of the covariance of ``_INIT_DRAWS`` prior draws, and the
  parameters ``μ``, ``log L_kk`` and ``L_kj`` optimised as they are (no whitening). Its learning
  rate is in the units of ``θ`` (0.05: four posterior sds on issue 31's 3-d regression).

The posterior is the :class:`pmd.posterior.GaussianPosterior` ``N(μ, L Lᵀ)``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp
import optax

from pmd.bandwidth import weighted_cov
from pmd.interface import ConfigError, work
from pmd.posterior import GaussianPosterior

from .._common import (INITS, laplace_approximation, minibatch_log_joint, require_common, require_full_data,
                       stochastic_optimizer)

Array = jax.Array
FAMILIES = ("meanfield", "fullrank")
_INIT_DRAWS = 1000
# the default learning rate of each start: in posterior sds after the Laplace start (see the
# module docstring), in the units of θ after the prior start (the value this class always had),
# each with its decay κ of ``(τ + t)^(-κ)``: after the Laplace start the mini-batch noise alone
# moves the optimum's estimate (log L_kk by up to 0.2 after 20 passes at a constant 0.01 on issue
# 31's regression), which Robbins-Monro decay with κ = 0.55 (Welling & Teh's exponent, inside
# Hoffman et al.'s (0.5, 1]) averages away
_LEARNING_RATE = {"laplace": (0.01, 0.55), "prior": (0.05, 0.0)}


@jax.tree_util.register_dataclass
@dataclass(frozen=True)
class SVIState:
    """Variational parameters ``{"loc", "log_scale"[, "tril"]}`` (in the start's whitened coordinates
    after the Laplace start), optimizer state, step count."""

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
        learning_rate, tau, kappa: the learning rate ``learning_rate · (τ + t)^(-κ)``; None takes
            the start's default (0.01 and κ = 0.55 after ``"laplace"``, a constant 0.05 after
            ``"prior"``).
        init: ``"laplace"`` or ``"prior"``, the start (module docstring).
        data: the whole data set, which the Laplace start reads once, at construction.
    """

    method_family = "variational inference"
    reference = "Hoffman, Blei, Wang & Paisley, JMLR 2013; black-box form of Titsias & Lázaro-Gredilla, ICML 2014"

    def __init__(
        self,
        model,
        data_size: int,
        num_particles: int = 1,
        family: str = "fullrank",
        optimizer: str = "adam",
        learning_rate: float | None = None,
        tau: float = 1.0,
        kappa: float | None = None,
        init: str = "laplace",
        data: Any = None,
    ):
        self.model, self.data_size, self.num_particles = require_common(model, data_size, num_particles)
        if family not in FAMILIES:
            raise ConfigError(f"unknown family {family!r}; expected one of {', '.join(FAMILIES)}")
        self.family = family
        if init not in INITS:
            raise ConfigError(f"unknown init {init!r}; expected one of {', '.join(INITS)}")
        self.init_from = init
        default_rate, default_kappa = _LEARNING_RATE[init]
        learning_rate = default_rate if learning_rate is None else learning_rate
        kappa = default_kappa if kappa is None else kappa
        self.optimizer, self.learning_rate = stochastic_optimizer(optimizer, learning_rate, tau, kappa)
        self.shift, self.whiten = self._whitening(data)
        self._log_joint = jax.vmap(minibatch_log_joint(self.model, self.data_size), in_axes=(0, None))
        self._step = jax.jit(self._step_impl)

    def _whitening(self, data: Any) -> tuple[Array, Array]:
        """``(μ₀, L₀)`` of ``μ = μ₀ + L₀ z``, ``L = L₀ L̃``: the Laplace start, or ``(0, I)`` (module docstring)."""
        self.start_work = (0.0, 0.0)
        if self.init_from == "prior":  # reads no data (the workflow hands data= to every method that takes it)
            return jnp.zeros((self.model.dim,)), jnp.eye(self.model.dim)
        try:
            data = require_full_data(self.model, data, self.data_size)
        except ConfigError as err:
            raise ConfigError(f"SVI's init='laplace' starts at the mode of the full-data log joint: {err} "
                              "(or take the prior start, init='prior')") from err
        laplace = laplace_approximation(self.model, data)
        self.start_work = laplace.work
        return laplace.mode, laplace.chol if self.family == "fullrank" else jnp.diag(laplace.conditional_sd)

    def init(self, key: Array) -> SVIState:
        """The Laplace start (``z = 0``, ``L̃ = I``), or ``μ`` at a prior draw and ``L`` at the prior's
        scale (module docstring)."""
        d = self.model.dim
        if self.init_from == "laplace":
            loc, chol = jnp.zeros((d,)), jnp.eye(d)
        else:
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
        return GaussianPosterior(*self.gaussian(state.params))

    def gaussian(self, params: dict) -> tuple[Array, Array]:
        """``(μ₀ + L₀ z, L₀ L̃)``, ``L̃`` = ``diag(exp(ρ))`` plus, for the full-rank family, the strictly
        lower part (both lower triangular, so ``L`` is too)."""
        chol = jnp.diag(jnp.exp(params["log_scale"]))
        if self.family == "fullrank":
            chol = chol + jnp.tril(params["tril"], -1)
        return self.shift + self.whiten @ params["loc"], self.whiten @ chol

    def elbo(self, params: dict, key: Array, batch: Any) -> Array:
        """The reparameterised ELBO estimate on a mini-batch (module docstring)."""
        d = params["loc"].shape[0]
        loc, chol = self.gaussian(params)
        eps = jax.random.normal(key, (self.num_particles, d), dtype=loc.dtype)
        thetas = loc + eps @ chol.T
        entropy = jnp.sum(jnp.log(jnp.diagonal(chol))) + 0.5 * d * (1.0 + math.log(2.0 * math.pi))
        return jnp.mean(self._log_joint(thetas, batch)) + entropy

    def _step_impl(self, key: Array, state: SVIState, batch: Any) -> tuple[SVIState, dict]:
        elbo, grads = jax.value_and_grad(self.elbo)(state.params, key, batch)
        neg = jax.tree_util.tree_map(jnp.negative, grads)  # optax minimises -ELBO
        updates, opt_state = self.optimizer.update(neg, state.opt_state, state.params)
        params = optax.apply_updates(state.params, updates)
        t = state.step + 1
        draws = jax.tree_util.tree_leaves(batch)[0].shape[0] * self.num_particles  # the batch at each draw
        return SVIState(params, opt_state, t), {"elbo": elbo, "learning_rate": self.learning_rate(t),
                                                **work(draws, draws)}
