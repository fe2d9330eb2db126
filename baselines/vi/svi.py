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
  rate is in the units of ``θ`` (0.05: four posterior sds on the 3-d test regression,
  tests/baselines_helpers.py).

The steps after the Laplace start (the defaults; each can be set):

* The location ``z`` takes Adam at ``learning_rate · min(t / w, (t / w)^(−κ))``: a linear warm-up
  over ``w = warmup`` = 100 steps to 0.02, then decay with ``κ = 0.5`` (Vaswani et al., NeurIPS 2017,
  eq. 3: Adam's first steps divide by a second-moment estimate of a few gradients; Liu et al., ICLR
  2020, on why a warm-up tames them). The reported ``μ`` is the polynomial-decay average of the
  iterates (Shamir & Zhang, ICML 2013, sec. 4: ``z̄_t = (1 − w_t) z̄_{t−1} + w_t z_t``,
  ``w_t = (η + 1)/(t + η)``, ``η = average`` = 3, which weights about the last quarter of the run
  and needs no run length). The reason for steps this large: the Laplace mode can lie an O(1)
  posterior sd from the best Gaussian's mean. For a regression's log noise scale the joint mode
  sits at ``σ² = S/(n−1)``, the Gaussian optimum near the marginal's ``S/(n−1−k)``; on
  posteriordb's mesquite (n = 46, k = 7) that is 0.85 reference sd (the full-batch optimum of this
  family is 0.02 sd from the reference mean), which Robbins-Monro steps of 0.01 ·
  t^−0.55 (about 0.4 sd of travel in 500 steps) never cover.
* The scale (``ρ`` and ``L̃``) takes Adam at ``scale_learning_rate · (τ + t)^−scale_kappa``,
  0.01 and 0.55: the Laplace curvature already puts it near the optimum on a near-Gaussian
  posterior, and larger steps' noise on it (batches of one row on mesquite, of 50 on diamonds)
  moved the log sds by up to 0.3 in 500 steps, where these keep them within 0.05.

Measured (3 seeds; max |mean error| in reference sd / max |log sd ratio|, ``docs/findings.md``):
on mesquite after 500 steps of the posteriordb rule Robbins-Monro steps (0.01 · t^−0.55 for every
parameter, no average) end 0.81-0.87 / 0.11-0.12 off, these 0.44-0.51 / 0.10-0.12, and 0.11-0.13
/ 0.10-0.11 after 5,000 (the equal-cost cap; Robbins-Monro 0.75-0.80). The 3-d test regression,
8 seeds, 1 and 20 passes: at most 0.087 sd / 0.050. A constant 0.03 reached mesquite sooner
(0.19-0.32 after 500 steps) but left the regression's mean up to 0.11 sd off after 20 passes.
After the prior start the steps stay as they were: one constant ``learning_rate`` 0.05 for every
parameter, no warm-up, no average.

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
# each start's defaults (module docstring): the location's learning rate and decay κ of
# ``(τ + t)^(-κ)`` (in posterior sds after the Laplace start, in the units of θ after the prior
# start, the value this class always had), the scale's (None: the location's), and the average's
# η (None: no average). After the Laplace start the scale's mini-batch noise alone moves the
# optimum's estimate (log L_kk by up to 0.2 after 20 passes at a constant 0.01 on the 3-d test
# regression), which Robbins-Monro decay with κ = 0.55 (Welling & Teh's exponent, inside Hoffman
# et al.'s (0.5, 1]) averages away
_LEARNING_RATE = {"laplace": (0.02, 0.5), "prior": (0.05, 0.0)}
_SCALE_LEARNING_RATE = {"laplace": (0.01, 0.55), "prior": None}
_AVERAGE = {"laplace": 3.0, "prior": None}
_WARMUP = {"laplace": 100, "prior": 0}


@jax.tree_util.register_dataclass
@dataclass(frozen=True)
class SVIState:
    """Variational parameters ``{"loc", "log_scale"[, "tril"]}`` (in the start's whitened coordinates
    after the Laplace start), optimizer state, step count."""

    params: dict
    opt_state: Any
    step: Array  # int32
    average: dict  # the polynomial-decay average of ``params`` (``params`` itself without one)


class SVI:
    """Gaussian black-box SVI by reparameterisation gradients on mini-batches.

    Args:
        model, data_size: as for :class:`pmd.PMD`.
        num_particles: ``S``, Monte Carlo draws of ``θ`` per gradient estimate.
        family: ``"meanfield"`` or ``"fullrank"``.
        optimizer: ``"adam"`` or ``"sgd"``.
        learning_rate, tau, kappa: the location's learning rate ``learning_rate · (τ + t)^(-κ)``
            (with a warm-up, ``learning_rate · min(t / w, ((τ + t) / (τ + w))^(-κ))``); None takes
            the start's default (0.02 and κ = 0.5 after ``"laplace"``, a constant 0.05 for every
            parameter after ``"prior"``).
        warmup: ``w``, the steps of the location's linear warm-up; None takes the start's
            default (100 after ``"laplace"``, 0 after ``"prior"``).
        init: ``"laplace"`` or ``"prior"``, the start (module docstring).
        scale_learning_rate, scale_kappa: the same for the scale parameters; None takes the
            start's default (0.01 and κ = 0.55 after ``"laplace"``, the location's after ``"prior"``).
        average: ``η`` of the polynomial-decay average that the posterior reports; None takes the
            start's default (3 after ``"laplace"``, none after ``"prior"``), false turns it off.
        data: the whole data set, which the Laplace start reads once, at construction.
    """

    # what it maximises (the ELBO), so the tuning protocol scores it by the ELBO
    # (workflow.tuning.elbo_criterion), not by a held-out predictive
    maximises = "elbo"

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
        warmup: int | None = None,
        scale_learning_rate: float | None = None,
        scale_kappa: float | None = None,
        average: float | bool | None = None,
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
        warmup = _WARMUP[init] if warmup is None else warmup
        location, self.learning_rate = stochastic_optimizer(optimizer, learning_rate, tau, kappa, warmup)
        scale_rate, scale_decay = _SCALE_LEARNING_RATE[init] or (learning_rate, kappa)
        scale_rate = scale_rate if scale_learning_rate is None else scale_learning_rate
        scale_decay = scale_decay if scale_kappa is None else scale_kappa
        if (scale_rate, scale_decay, warmup) == (learning_rate, kappa, 0):
            self.optimizer = location
        else:
            scale, _ = stochastic_optimizer(optimizer, scale_rate, tau, scale_decay)
            self.optimizer = optax.multi_transform(
                {"location": location, "scale": scale},
                {"loc": "location", "log_scale": "scale", **({"tril": "scale"} if family == "fullrank" else {})})
        self.average = _AVERAGE[init] if average is None else (None if average is False else average)
        if self.average is not None and (isinstance(self.average, bool) or not isinstance(self.average, (int, float))
                                         or not self.average >= 0):
            raise ConfigError(f"average must be a number η ≥ 0 (the polynomial-decay average's) or false, "
                              f"got {average!r}")
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
        return SVIState(params, self.optimizer.init(params), jnp.asarray(0, jnp.int32), params)

    def step(self, key: Array, state: SVIState, batch: Any) -> tuple[SVIState, dict]:
        """One optimizer step on the reparameterised mini-batch ELBO."""
        self.model.check_batch(batch)
        return self._step(key, state, batch)

    def posterior(self, state: SVIState) -> GaussianPosterior:
        """``N(μ, L Lᵀ)`` at the averaged parameters (the last iterate's without an average)."""
        return GaussianPosterior(*self.gaussian(state.average))

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
        if self.average is None:
            average = params
        else:  # Shamir & Zhang's polynomial-decay average: weight (η + 1) / (t + η) on the newest iterate
            weight = (self.average + 1.0) / (t + self.average)
            average = jax.tree_util.tree_map(lambda a, p: a + weight.astype(a.dtype) * (p - a), state.average, params)
        draws = jax.tree_util.tree_leaves(batch)[0].shape[0] * self.num_particles  # the batch at each draw
        return SVIState(params, opt_state, t, average), {"elbo": elbo, "learning_rate": self.learning_rate(t),
                                                **work(draws, draws)}
