"""Stochastic variational inference for Bayesian logistic regression with the Jaakkola-Jordan bound.

The SVI competitor of Dai et al. (2016, section 6: "SVI which relies on carefully designed lower
bound of the log-likelihood [22]"). Jaakkola & Jordan (1997; Statistics and Computing 2000, eq. 3)
bound each logistic likelihood by a Gaussian-shaped function of ``z = y wᵀx``:

    log σ(z) ≥ log σ(ξ) + (z - ξ)/2 - λ(ξ) (z² - ξ²),    λ(ξ) = tanh(ξ/2) / (4ξ)

(tight at ``z = ±ξ``). The bound is quadratic in ``w``, so with the prior ``N(0, s² I)`` the
optimal ``q(w)`` is Gaussian with natural parameters (precision ``P`` and ``h = P μ``)

    P = I/s² + Σ_n 2 λ(ξ_n) x_n x_nᵀ,    h = Σ_n y_n x_n / 2        (JJ 2000, eq. 10-11 with
                                                                      s_n - ½ = y_n / 2)

and the optimal variational parameter of each datum is ``ξ_n² = x_nᵀ (Σ + μμᵀ) x_n`` (eq. 12).

Stochastic natural-gradient ascent (Hoffman, Blei, Wang & Paisley, JMLR 2013, Algorithm 1): on
a mini-batch ``b`` of ``B`` points, set the local ``ξ_b`` optimally under the current ``q``, form the
"intermediate" global parameters as if the batch were replicated ``N/B`` times,

    P̂ = I/s² + (N/B) Σ_b 2 λ(ξ_b) x_b x_bᵀ,    ĥ = (N/B) Σ_b y_b x_b / 2,

and step ``(P, h) ← (1 - ρ_t)(P, h) + ρ_t (P̂, ĥ)`` — the natural gradient of the bound in the
natural parameters is ``(P̂ - P, ĥ - h)`` (Hoffman et al., eq. 21-23). ``ρ_t`` is any
:func:`pmd.schedules.step_size` schedule, by default H.2's ``1/(100 + √t)``; Robbins-Monro
convergence needs ``Σ ρ_t = ∞`` and ``Σ ρ_t² < ∞`` (the latter holds for ``1/t^κ``, ``κ > ½``; H.2's
schedule has ``Σ ρ_t²`` growing only like ``log t``). ``q`` starts at the prior.

The bound is tight only at ``±ξ``: ``q`` is the Gaussian maximising a lower bound on the evidence,
and its covariance is known to be smaller than the posterior's (Jaakkola & Jordan 2000, sec. 3;
Bishop 2006, sec. 10.6): ``tests/test_logistic_jj_svi.py`` measures both the mean's agreement and
the variance deficit against an exact posterior.

The method uses nothing of the model but its dimension, and checks (with
:meth:`pmd.models.logistic.BayesianLogisticRegression.check_model`) that the model is the logistic
regression with this prior; batches are ``{"x": (B, d), "y": (B,)}`` with ``y ∈ {-1, +1}``.

Work (:func:`pmd.interface.work`): a step evaluates each batch datum's bound once, at ``ξ_b``
(``ξ_b²`` and ``λ(ξ_b) x_b x_bᵀ``, the datum's term of the bound under ``q``): ``evals = B``. The
natural gradient is that closed form, not a gradient of the terms: ``grad_evals = 0``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp
from jax.scipy.linalg import cho_solve

from pmd.interface import ConfigError, work
from pmd.model import ModelError
from pmd.models.logistic import BayesianLogisticRegression, features_and_labels
from pmd.posterior import GaussianPosterior
from pmd.schedules import step_size as make_step_size

from .._common import require_common

Array = jax.Array
H2_STEP_SIZE = {"kind": "sqrt", "eta": 1.0, "offset": 100.0}


def jj_lambda(xi: Array) -> Array:
    """``λ(ξ) = tanh(ξ/2) / (4ξ)``, even in ``ξ``, with its limit ``1/8 - ξ²/96`` near 0."""
    xi = jnp.abs(xi)
    small = xi < 1e-3
    safe = jnp.where(small, 1.0, xi)
    return jnp.where(small, 0.125 - xi**2 / 96.0, jnp.tanh(0.5 * safe) / (4.0 * safe))


@jax.tree_util.register_dataclass
@dataclass(frozen=True)
class JJState:
    """Natural parameters of ``q(w) = N(P⁻¹h, P⁻¹)`` and the step count."""

    precision: Array  # (d, d), P
    shift: Array  # (d,), h = P μ
    step: Array  # int32


def _moments(state: JJState) -> tuple[Array, Array]:
    """``(μ, Σ)`` of ``q`` from its natural parameters (one Cholesky factorisation of ``P``)."""
    factor = (jnp.linalg.cholesky(state.precision), True)
    eye = jnp.eye(state.shift.shape[0], dtype=state.shift.dtype)
    return cho_solve(factor, state.shift), cho_solve(factor, eye)


class JaakkolaJordanSVI:
    """Gaussian SVI with the Jaakkola-Jordan bound, closed-form natural-gradient steps (module docstring).

    Args:
        model: the logistic-regression :class:`pmd.Model` (checked against ``prior_std``).
        data_size: ``N`` (the batch is scaled by ``N/B``).
        num_particles: accepted for the shared interface; SVI keeps no particles (its memory is
            the ``O(d²)`` precision matrix, Table 1 of Dai et al. 2016).
        prior_std: ``s`` of the prior ``N(0, s² I)`` (H.2: 1).
        step_size: the schedule ``ρ_t`` (a :func:`pmd.schedules.step_size` spec); ``ρ_1`` must lie
            in ``(0, 1]``. Default H.2's ``1/(100 + √t)``.
    """

    handles = ("logistic",)  # the target it runs on (workflow.methods.TARGETS)
    method_family = "variational inference"
    reference = "Jaakkola & Jordan, Statistics and Computing 2000; Hoffman, Blei, Wang & Paisley, JMLR 2013"

    def __init__(self, model, data_size: int, num_particles: int = 1, prior_std: float = 1.0,
                 step_size: Any = None):
        self.model, self.data_size, self.num_particles = require_common(model, data_size, num_particles)
        if isinstance(prior_std, bool) or not isinstance(prior_std, (int, float)) or not prior_std > 0:
            raise ConfigError(f"prior_std must be a positive number, got {prior_std!r}")
        self.prior_std = float(prior_std)
        try:
            BayesianLogisticRegression(self.model.dim, self.prior_std).check_model(self.model)
            self.rho = make_step_size(H2_STEP_SIZE if step_size is None else step_size)
        except (ModelError, ValueError) as err:
            raise ConfigError(str(err)) from err
        first = float(self.rho(1))
        if not 0 < first <= 1:
            raise ConfigError(f"step_size must give ρ_1 in (0, 1] (a convex combination), got ρ_1 = {first}")
        self._step = jax.jit(self._step_impl)

    def init(self, key: Array) -> JJState:
        """``q`` = the prior ``N(0, s² I)`` (``key`` unused: the method is deterministic given the batches)."""
        d = self.model.dim
        return JJState(jnp.eye(d) / self.prior_std**2, jnp.zeros((d,)), jnp.asarray(0, jnp.int32))

    def step(self, key: Array, state: JJState, batch: Any) -> tuple[JJState, dict]:
        """One natural-gradient step on a mini-batch ``{"x": (B, d), "y": (B,)}``."""
        features_and_labels(batch, self.model.dim)
        self.model.check_batch(batch)
        return self._step(key, state, batch)

    def posterior(self, state: JJState) -> GaussianPosterior:
        """``N(μ, Σ)`` with ``Σ = P⁻¹``, ``μ = Σ h``."""
        mean, cov = _moments(state)
        return GaussianPosterior(mean, jnp.linalg.cholesky(cov))

    def intermediate(self, state: JJState, x: Array, y: Array) -> tuple[Array, Array, Array]:
        """``(P̂, ĥ, ξ_b)``: the optimum of the bound if the batch were the whole data set, replicated."""
        mean, cov = _moments(state)
        xi = jnp.sqrt(jnp.einsum("bi,ij,bj->b", x, cov, x) + (x @ mean) ** 2)
        scale = self.data_size / x.shape[0]
        d = x.shape[1]
        precision = jnp.eye(d, dtype=x.dtype) / self.prior_std**2 + scale * (x * (2.0 * jj_lambda(xi))[:, None]).T @ x
        shift = scale * 0.5 * (y @ x)
        return precision, shift, xi

    def _step_impl(self, key: Array, state: JJState, batch: Any) -> tuple[JJState, dict]:
        t = state.step + 1
        precision, shift, xi = self.intermediate(state, batch["x"], batch["y"])
        rho = jnp.asarray(self.rho(t), precision.dtype)
        new = JJState((1.0 - rho) * state.precision + rho * precision, (1.0 - rho) * state.shift + rho * shift, t)
        return new, {"learning_rate": rho, "xi_mean": jnp.mean(xi), **work(xi.shape[0])}
