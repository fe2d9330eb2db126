"""One-pass SMC for sparse GPs, initialised at the subset-of-data solution (Dai et al. 2016, H.3.2).

Balakrishnan & Madigan's one-pass SMC (:class:`baselines.smc.OnePassSMC`: reweight by each batch's
likelihood once, resample and Liu-West rejuvenate when the ESS halves) run on the sparse GP's
inducing values for one fixed ``Z``. H.3.2 initialises SMC "with the SoD solution": ``Z`` is the
SoD subset's inputs and the ``m`` particles are draws from the SoD posterior of ``u``
(:func:`baselines.gp.sod.subset_solution`); the one pass then reads every training row, so the
``s`` subset rows count twice (``s/N``: 2⁻⁹ of MSD at H.3.2's sizes; we keep H.3.2's recipe).

For a fixed ``Z`` the sparse GP in whitened coordinates is Bayesian linear regression on the
features ``a_i = L⁻¹K_mi`` with prior ``N(0, I)``: that is the :class:`pmd.Model` the SMC runs on
(a datum is ``{"a": (M,), "y": ()}``; each step turns the batch's inputs into features once). Its
posterior — the Liu-West kernel density of the particles — becomes a
:class:`pmd.models.sparse_gp.SparseGPPosterior` with one Gaussian component per particle.

Work: :class:`baselines.smc.OnePassSMC`'s, ``B·m`` likelihood terms a step that reads data (the
features of the batch are computed once for all particles and are no likelihood evaluation); the
SoD start in ``init`` is not a step and is not counted.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp

from pmd_bench.baselines.smc import OnePassSMC, SMCState
from pmd.interface import ConfigError
from pmd.model import Model
from pmd.models.sparse_gp import SparseGP, SparseGPPosterior, features, moments
from pmd.structured.sparse_gp import require_sparse_gp

from .sod import random_rows, require_data, subset_solution

Array = jax.Array


@jax.tree_util.register_dataclass
@dataclass(frozen=True)
class SMCGPState:
    """The fixed inducing inputs ``(M, d)`` and their whitening factor, and the SMC's state over ``v``."""

    inducing: Array
    chol_k: Array
    smc: SMCState


def whitened_regression(model: SparseGP) -> Model:
    """The sparse GP for a fixed ``Z``: ``v ~ N(0, I_M)``, ``y | a, v ~ N(aᵀv, β⁻¹)`` (module docstring)."""
    beta = model.precision

    def log_likelihood(v, datum):
        return -0.5 * beta * (datum["y"] - datum["a"] @ v) ** 2 + 0.5 * math.log(beta / (2 * math.pi))

    return Model(dim=model.num_inducing, log_prior=lambda v: -0.5 * v @ v, log_likelihood=log_likelihood,
                 sample_prior=lambda key, n: jax.random.normal(key, (n, model.num_inducing), jnp.result_type(float)),
                 name="whitened sparse-GP regression")


class OnePassSMCGP(OnePassSMC):
    """One-pass SMC over the whitened inducing values, started at the SoD posterior (module docstring).

    Args:
        model: the :class:`pmd.models.sparse_gp.SparseGP`.
        data_size: ``N``.
        num_particles: ``m`` (H.3.2: 16).
        data: the training set (the SoD subset, ``M`` rows so that ``Z`` has ``M`` points like the
            other methods, is drawn from it).
        threshold, bandwidth, jitter: as for :class:`baselines.smc.OnePassSMC`.
    """

    handles = ("sparse_gp",)  # the target it runs on (workflow.methods.TARGETS)
    method_family = "sequential Monte Carlo"
    reference = (
        "Balakrishnan & Madigan, Bayesian Analysis 2006, started at the SoD solution (Dai, He, Dai & Song, "
        "AISTATS 2016, H.3.2)"
    )

    def __init__(self, model, data_size: int, num_particles: int = 16, data: Any = None, threshold: float = 0.5,
                 bandwidth: float | None = None, jitter: float = 1e-5):
        self.gp = require_sparse_gp(model)
        super().__init__(whitened_regression(self.gp), data_size, num_particles, threshold, bandwidth, jitter)
        if self.gp.num_inducing > self.data_size:
            raise ConfigError(f"num_inducing={self.gp.num_inducing} exceeds the data's {self.data_size} rows")
        self.data = require_data(self.gp, data, self.data_size)
        self._gp_step = jax.jit(self._gp_step_impl)

    def init(self, key: Array) -> SMCGPState:
        """SoD on ``M`` random rows; ``m`` equally weighted draws of ``v`` from its posterior."""
        k_rows, k_draw = jax.random.split(key)
        sod = subset_solution(self.gp, random_rows(k_rows, self.data, self.gp.num_inducing))
        loc, scale = moments(sod.prec[0], sod.shift[0])
        eps = jax.random.normal(k_draw, (self.num_particles, loc.shape[0]), loc.dtype)
        m = self.num_particles
        zero = jnp.asarray(0, jnp.int32)
        smc = SMCState(loc + eps @ scale.T, jnp.full((m,), -jnp.log(m), loc.dtype), zero, zero)
        return SMCGPState(sod.inducing[0], sod.chol_k[0], smc)

    def step(self, key: Array, state: SMCGPState, batch: dict) -> tuple[SMCGPState, dict]:
        """One SMC step on the batch's features."""
        self.gp.check_batch(batch)
        return self._gp_step(key, state, batch)

    def _gp_step_impl(self, key: Array, state: SMCGPState, batch: dict) -> tuple[SMCGPState, dict]:
        regression = {"a": features(self.gp, state.inducing, state.chol_k, batch["x"]), "y": batch["y"]}
        smc, info = self._step_impl(key, state.smc, regression)
        return SMCGPState(state.inducing, state.chol_k, smc), info

    def posterior(self, state: SMCGPState) -> SparseGPPosterior:
        """One Gaussian ``N(centre_i, h²V)`` (whitened) per particle, all on the SoD inputs."""
        kde = super().posterior(state.smc)
        m = self.num_particles
        dtype = kde.samples.dtype
        return SparseGPPosterior(jnp.broadcast_to(state.inducing, (m, *state.inducing.shape)),
                                 jnp.broadcast_to(state.chol_k, (m, *state.chol_k.shape)), kde.log_weights,
                                 kde.samples, jnp.broadcast_to(kde.chol, (m, *kde.chol.shape)),
                                 jnp.asarray(self.gp.lengthscale, dtype), jnp.asarray(self.gp.variance, dtype))
