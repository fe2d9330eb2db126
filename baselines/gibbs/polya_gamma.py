"""Gibbs sampling for Bayesian logistic regression by Pólya-Gamma augmentation (Polson, Scott &
Windle, JASA 2013).

Dai et al. (2016, section 6) run a data-augmentation Gibbs sampler for logistic regression
(their ref. [20], Holmes & Held 2006) and call it unaffordable at MNIST8M's scale. We use the
Pólya-Gamma augmentation instead of Holmes & Held's, because

* it needs one auxiliary variable per datum with a known conditional, and the weights' conditional
  is then exactly Gaussian; Holmes & Held need two (a truncated-normal utility and a mixing scale
  from the Kolmogorov-Smirnov distribution drawn by rejection with alternating series), updated
  jointly to mix well;
* it mixes better: Polson et al. (sec. 3.3, Table 2) measure several-fold larger effective sample
  sizes per second than Holmes & Held's sampler on the same logistic regressions, and it is
  uniformly ergodic (Choi & Hobert, EJS 2013);
* both have the same cost per sweep, ``O(N d²)`` — the property the paper's argument is about.

With ``y ∈ {-1, +1}`` (so ``κ_n = y_n/2``) and the prior ``w ~ N(0, s² I)``, one sweep is
(Polson et al., sec. 3.1, eq. 5-6):

1. ``ω_n | w ~ PG(1, x_nᵀ w)`` for every datum;
2. ``w | ω ~ N(V Xᵀκ, V)`` with ``V⁻¹ = Xᵀ Ω X + I/s²``, ``Ω = diag(ω)``.

PG(1, c) draws use the infinite sum of exponentials (Polson et al., eq. 1 with ``b = 1``):
``ω = 1/(2π²) Σ_{k≥1} g_k / ((k-½)² + c²/(4π²))``, ``g_k ~ Exp(1)``, truncated after ``K`` terms
(``truncation``) with the tail replaced by its mean, so ``E ω = tanh(c/2)/(2c)`` is kept exactly.
The only error is the tail's fluctuation: its variance is
``1/(4π⁴) Σ_{k>K} ((k-½)² + c²/4π²)⁻² ≤ 1/(12 π⁴ (K-½)³)``, so the draw is within that (root: the
2-Wasserstein distance) of an exact PG(1, c) draw: ``5.8·10⁻⁵`` for the default ``K = 64``, against
``sd(ω) ≤ sd PG(1, 0) = 0.204``. The sum is accumulated one term at a time (``O(N)`` memory).

Each sweep reads all ``N`` points: the sampler takes the data set as ``data=``, checks and ignores
the runner's mini-batch, and reports ``info["visited"] = N`` (as :class:`baselines.MixtureGibbs`).
After ``burn_in`` sweeps every ``thin``-th sweep is retained; the posterior is the last
``num_particles`` retained samples, equally weighted.

Work (:func:`pmd.interface.work`, charged by :data:`pmd.work.UNITS`): step 1 evaluates every
datum's likelihood term at ``w`` (its linear predictor ``x_nᵀw``, the tilt of ``ω_n``) and draws
its ``ω_n``; step 2 sums the sufficient statistic ``XᵀΩX`` over the rows and evaluates no
likelihood: ``evals = pg_draws = gram_rows = N`` a sweep, ``grad_evals = 0``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp
from jax.scipy.linalg import solve_triangular

from pmd.interface import ConfigError, FullDataStep, require_positive_int, work
from pmd.model import ModelError
from pmd.models.logistic import BayesianLogisticRegression, features_and_labels
from pmd.posterior import ParticlePosterior

from .._common import RetainedChain, SampleBuffer, require_burn_in, require_common, require_full_data

Array = jax.Array


def polya_gamma_tail_sd_bound(truncation: int) -> float:
    """Upper bound on the standard deviation of the omitted tail (module docstring)."""
    return math.sqrt(1.0 / (12.0 * math.pi**4 * (truncation - 0.5) ** 3))


def polya_gamma_mean(c: Array) -> Array:
    """``E PG(1, c) = tanh(c/2) / (2c)``, with its limit ``1/4 - c²/48`` near 0."""
    c = jnp.abs(c)
    small = c < 1e-3
    safe = jnp.where(small, 1.0, c)
    return jnp.where(small, 0.25 - c**2 / 48.0, jnp.tanh(0.5 * safe) / (2.0 * safe))


def sample_polya_gamma(key: Array, c: Array, truncation: int = 64) -> Array:
    """Draws of ``PG(1, c)`` for every entry of ``c`` (truncated sum plus tail mean; module docstring)."""
    c2 = (c / (2.0 * math.pi)) ** 2
    scale = 1.0 / (2.0 * math.pi**2)

    def term(k, carry):
        total, head_mean = carry
        denom = (k + 0.5) ** 2 + c2  # k is 0-based: (k+1) - ½
        g = jax.random.exponential(jax.random.fold_in(key, k), c.shape, c.dtype)
        return total + scale * g / denom, head_mean + scale / denom

    zero = jnp.zeros_like(c)
    total, head_mean = jax.lax.fori_loop(0, truncation, term, (zero, zero))
    return total + jnp.maximum(polya_gamma_mean(c) - head_mean, 0.0)


@jax.tree_util.register_dataclass
@dataclass(frozen=True)
class PGGibbsState:
    """The chain's current ``w``, the retained samples and the sweep count."""

    w: Array  # (d,)
    buffer: SampleBuffer
    step: Array  # int32


class PolyaGammaGibbs(FullDataStep, RetainedChain):
    """Pólya-Gamma Gibbs sampler for Bayesian logistic regression (module docstring).

    Args:
        model: the logistic-regression :class:`pmd.Model` (checked against ``prior_std``).
        data_size: ``N``.
        num_particles: ``m``, retained samples kept.
        data: the data set ``{"x": (N, d), "y": (N,)}`` (every sweep reads all of it).
        prior_std: ``s`` of the prior ``N(0, s² I)`` (H.2: 1).
        burn_in: sweeps discarded first; a float in ``(0, 1)``: that fraction of the run's
            ``num_steps`` sweeps (rounded down), as the equal-cost cap gives (BDA3 sec. 11.4's half).
        thin: retain every ``thin``-th sweep after burn-in.
        num_steps: the run length in sweeps, when known, to reject a burn-in that retains nothing.
        truncation: ``K``, terms of the PG(1, c) series (module docstring for the error).
    """

    handles = ("logistic",)  # the target it runs on (workflow.methods.TARGETS)
    method_family = "Gibbs sampling"
    reference = "Polson, Scott & Windle, JASA 2013"

    state_type = PGGibbsState

    def __init__(self, model, data_size: int, num_particles: int, data: Any = None, prior_std: float = 1.0,
                 burn_in: int | float = 100, thin: int = 1, num_steps: int | None = None, truncation: int = 64):
        self.model, self.data_size, self.num_particles = require_common(model, data_size, num_particles)
        if isinstance(prior_std, bool) or not isinstance(prior_std, (int, float)) or not prior_std > 0:
            raise ConfigError(f"prior_std must be a positive number, got {prior_std!r}")
        self.prior_std = float(prior_std)
        if data is not None:
            try:
                features_and_labels(data, self.model.dim)
            except ModelError as err:
                raise ConfigError(f"data: {err}") from err
        self.data = require_full_data(self.model, data, self.data_size)
        try:
            BayesianLogisticRegression(self.model.dim, self.prior_std).check_model(self.model)
        except ModelError as err:
            raise ConfigError(str(err)) from err
        self.burn_in, self.thin, self.num_steps = require_burn_in(burn_in, thin, num_steps, fraction_ok=True)
        if isinstance(self.burn_in, float):
            if self.num_steps is None:
                raise ConfigError(f"burn_in={burn_in} is a fraction of the run: give num_steps, the run's length in sweeps")
            self.burn_in = int(self.burn_in * self.num_steps)
        self.truncation = require_positive_int("truncation", truncation)
        self._step = jax.jit(self._step_impl)

    def sample_weights(self, key: Array, omega: Array, data: Any = None) -> Array:
        """Step 2: ``w | ω ~ N(V Xᵀκ, V)``, ``V⁻¹ = XᵀΩX + I/s²`` (module docstring), on ``data``
        (default: the data set given at construction)."""
        data = self.data if data is None else data
        x, y = data["x"], data["y"]
        d = x.shape[1]
        precision = (x * omega[:, None]).T @ x + jnp.eye(d, dtype=x.dtype) / self.prior_std**2
        chol = jnp.linalg.cholesky(precision)  # V⁻¹ = C Cᵀ, so V = C⁻ᵀ C⁻¹
        mean = solve_triangular(chol, solve_triangular(chol, 0.5 * (y @ x), lower=True), lower=True, trans=1)
        return mean + solve_triangular(chol, jax.random.normal(key, (d,), x.dtype), lower=True, trans=1)

    def _step_impl(self, key: Array, state: PGGibbsState, batch: Any, data: Any) -> tuple[PGGibbsState, dict]:
        t = state.step + 1
        k_omega, k_w = jax.random.split(key)
        predictor = data["x"] @ state.w
        omega = sample_polya_gamma(k_omega, predictor, self.truncation)
        w = self.sample_weights(k_w, omega, data)
        keep = (t > self.burn_in) & ((t - self.burn_in) % self.thin == 0)
        new = PGGibbsState(w=w, buffer=state.buffer.retain(w, keep), step=t)
        return new, {"visited": jnp.asarray(self.data_size, jnp.int32), "retained": keep, **work(predictor.shape[0], pg_draws=predictor.shape[0], gram_rows=predictor.shape[0])}
