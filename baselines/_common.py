"""Pieces shared by the baselines: the retained-sample buffer of the MCMC methods, the
polynomially decaying step size, and hyperparameter checks.

Only :mod:`pmd`'s public modules are used, so every baseline has PMD's interface and types.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp
import optax

from pmd.interface import ConfigError, require_positive_int
from pmd.model import Model
from pmd.posterior import ParticlePosterior
from pmd.weights import normalize

Array = jax.Array


# -- the retained-sample buffer (SGLD, Gibbs) ----------------------------------------------------
@jax.tree_util.register_dataclass
@dataclass(frozen=True)
class SampleBuffer:
    """The last ``m`` retained MCMC samples, a ring: sample ``k`` (0-based) lives in slot ``k mod m``.

    ``count`` is how many samples have been retained in all. Until the first one, the slots hold
    the ``m`` prior draws the method started from (every method starts at ``q̃_1 = p``, Algorithm 1
    line 3 of Dai et al. 2016), so the posterior of a chain still in burn-in is its initial one.
    """

    samples: Array  # (m, d)
    count: Array  # int32

    @classmethod
    def from_prior(cls, prior_draws: Array) -> "SampleBuffer":
        return cls(samples=prior_draws, count=jnp.asarray(0, jnp.int32))

    def retain(self, sample: Array, keep: Array) -> "SampleBuffer":
        """Write ``sample`` over the oldest slot when ``keep`` (a traced bool), else do nothing."""
        slot = self.count % self.samples.shape[0]
        written = self.samples.at[slot].set(sample)
        return SampleBuffer(
            samples=jnp.where(keep, written, self.samples),
            count=self.count + keep.astype(jnp.int32),
        )

    def posterior(self) -> ParticlePosterior:
        """The retained samples with equal weights (the prior draws before the first one)."""
        m = self.samples.shape[0]
        filled = (jnp.arange(m) < self.count) | (self.count == 0)
        log_w = jnp.where(filled, 0.0, -jnp.inf).astype(self.samples.dtype)
        return ParticlePosterior(self.samples, normalize(log_w))


class RetainedChain:
    """One MCMC chain whose posterior is its last ``m`` retained samples (SGLD, both Gibbs samplers).

    Subclasses set ``model``, ``num_particles``, ``_step`` (the jitted transition) and
    ``state_type``: a state pytree built as ``state_type(start, buffer, step)``.
    """

    def init(self, key: Array):
        """The chain starts at a prior draw; the buffer holds ``m`` prior draws until burn-in ends."""
        k_start, k_buffer = jax.random.split(key)
        return self.state_type(
            self.model.sample_prior(k_start, 1)[0],
            SampleBuffer.from_prior(self.model.sample_prior(k_buffer, self.num_particles)),
            jnp.asarray(0, jnp.int32),
        )

    def step(self, key: Array, state, batch: Any) -> tuple[Any, dict]:
        """One transition of the chain (the subclass's ``_step_impl``), after checking the batch."""
        self.model.check_batch(batch)
        return self._step(key, state, batch)

    def posterior(self, state) -> ParticlePosterior:
        """The last ``m`` retained samples, equally weighted."""
        return state.buffer.posterior()


def require_burn_in(burn_in: Any, thin: Any, num_steps: Any) -> tuple[int, int, int | None]:
    """Check an MCMC run's burn-in, thinning and (optional) length.

    ``burn_in`` steps are discarded, then every ``thin``-th state is retained. When the run length
    ``num_steps`` is known, a burn-in as long as the run (nothing retained) is an error.
    """
    if isinstance(burn_in, bool) or not isinstance(burn_in, int) or burn_in < 0:
        raise ConfigError(f"burn_in must be a non-negative integer, got {burn_in!r}")
    thin = require_positive_int("thin", thin)
    if num_steps is not None:
        num_steps = require_positive_int("num_steps", num_steps)
        if burn_in >= num_steps:
            raise ConfigError(f"burn_in={burn_in} must be shorter than the run (num_steps={num_steps}): "
                              "no sample would be retained")
    return burn_in, thin, num_steps


# -- step sizes ----------------------------------------------------------------------------------
@dataclass(frozen=True)
class PolynomialDecay:
    """``ε_t = a (b + t)^(-γ)`` for ``t = 1, 2, ...``.

    SGLD's schedule (Welling & Teh 2011, sec. 3; ``γ ∈ (0.5, 1]`` meets their conditions
    ``Σ ε_t = ∞, Σ ε_t² < ∞``) and the Robbins-Monro learning rate ``ρ_t = (t + τ)^(-κ)`` of SVI
    (Hoffman et al. 2013) scaled by a base rate. ``γ = 0`` is a constant step.
    """

    a: float
    b: float
    gamma: float

    def __call__(self, t):
        return self.a * (self.b + jnp.asarray(t, jnp.float32)) ** (-self.gamma)


def polynomial_decay(names: tuple[str, str, str], a: Any, b: Any, gamma: Any) -> PolynomialDecay:
    """Validate ``a > 0``, ``b ≥ 0``, ``0 ≤ γ ≤ 1`` (reported under the caller's ``names``)."""
    for name, value in zip(names, (a, b, gamma)):
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ConfigError(f"{name} must be a number, got {value!r}")
    if not a > 0:
        raise ConfigError(f"the step size {names[0]} must be positive, got {a!r}")
    if not b >= 0:
        raise ConfigError(f"the step-size offset {names[1]} must be non-negative, got {b!r}")
    if not 0 <= gamma <= 1:
        raise ConfigError(f"the step-size decay {names[2]} must lie in [0, 1], got {gamma!r}")
    return PolynomialDecay(float(a), float(b), float(gamma))


OPTIMIZERS = {"adam": optax.adam, "sgd": optax.sgd}


def stochastic_optimizer(optimizer: Any, learning_rate: Any, tau: Any, kappa: Any):
    """An optax optimizer with learning rate ``learning_rate · (τ + t)^(-κ)`` (Hoffman et al. 2013).

    Returns ``(optax transformation, schedule)``; optax counts updates from 0, the schedule from 1.
    """
    if optimizer not in OPTIMIZERS:
        raise ConfigError(f"unknown optimizer {optimizer!r}; expected one of {', '.join(OPTIMIZERS)}")
    schedule = polynomial_decay(("learning_rate", "tau", "kappa"), learning_rate, tau, kappa)
    return OPTIMIZERS[optimizer](lambda count: schedule(count + 1)), schedule


def minibatch_log_joint(model, data_size: int):
    """``θ, batch -> log p(θ) + N · mean_b log p(x_b|θ)``: the unbiased mini-batch estimate of the
    log joint that every stochastic-gradient baseline uses (Welling & Teh 2011, eq. 4)."""

    def log_joint(theta: Array, batch: Any) -> Array:
        per_datum = jax.vmap(model.log_likelihood, in_axes=(None, 0))(theta, batch)
        return model.log_prior(theta) + data_size * jnp.mean(per_datum)

    return log_joint


def require_common(model: Any, data_size: Any, num_particles: Any) -> tuple[Model, int, int]:
    """The arguments every method shares, checked as :class:`pmd.PMD` checks them."""
    if not isinstance(model, Model):
        raise ConfigError(f"model must be a pmd.Model, got {type(model).__name__}")
    return model, require_positive_int("data_size", data_size), require_positive_int("num_particles", num_particles)


def require_full_data(model: Model, data: Any, data_size: int) -> Any:
    """Check the whole data set handed to a full-data method (Gibbs, NPV) against the model."""
    if data is None:
        raise ConfigError("this method scans the whole data set every step: pass it as data=")
    data = jax.tree_util.tree_map(jnp.asarray, data)
    rows = model.check_batch(data)
    if rows != data_size:
        raise ConfigError(f"data has {rows} rows but data_size={data_size}")
    return data
