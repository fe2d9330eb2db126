"""Gibbs sampling with data augmentation for the Welling-Teh mixture (Dai et al. 2016, sec. 6, H.1).

The model (:class:`pmd.models.mixture.WellingTehMixture`) is
``x_n ~ p N(θ1, σx²) + (1-p) N(θ1 + θ2, σx²)``, ``θ ~ N(0, diag(σ1², σ2²))``. With the component
indicators ``z_n ∈ {0, 1}`` (1: the second component) it is linear-Gaussian given ``z``,
``x_n = θ1 + z_n θ2 + noise``, so one sweep (Tanner & Wong 1987; Diebolt & Robert 1994) is

1. ``z_n | θ, x_n ~ Bernoulli(σ(log((1-p)/p) + [(x_n - θ1)² - (x_n - θ1 - θ2)²] / (2σx²)))``;
2. ``θ | z, x ~ N(Λ⁻¹ Aᵀx / σx², Λ⁻¹)`` with rows ``A_n = (1, z_n)`` and
   ``Λ = diag(σ1⁻², σ2⁻²) + AᵀA / σx²``, ``AᵀA = [[N, n1], [n1, n1]]``, ``n1 = Σ z_n``
   (the conjugate linear-Gaussian posterior, Bishop 2006 eq. 3.53-3.54).

Each sweep reads all ``N`` data points, so the method takes the data set as ``data=``, checks and
ignores the runner's mini-batch, and reports ``info["visited"] = N``. After ``burn_in`` sweeps
(H.1: 50) every ``thin``-th sweep is retained; the posterior is the last ``num_particles`` retained
samples with equal weights. The sampler cannot swap the two modes (that needs every ``z_n`` to
flip together), so each run stays in one (H.1: "stuck in one local mode in each run").

Work (:func:`pmd.interface.work`): step 1 evaluates every datum's likelihood term at ``θ`` (its two
component densities), step 2 uses the sufficient statistics ``n1, Σ x_n, Σ z_n x_n`` and evaluates
none: ``evals = N`` a sweep, ``grad_evals = 0``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax.scipy.linalg import solve_triangular

from pmd.interface import ConfigError, FullDataStep, work
from pmd.models.mixture import WellingTehMixture
from pmd.posterior import ParticlePosterior

from .._common import RetainedChain, SampleBuffer, require_burn_in, require_common, require_full_data

Array = jax.Array


@jax.tree_util.register_dataclass
@dataclass(frozen=True)
class GibbsState:
    """The chain's current ``θ``, the retained samples and the sweep count."""

    theta: Array  # (2,)
    buffer: SampleBuffer
    step: Array  # int32


def _check_same_model(model, mixture: WellingTehMixture, data: Array) -> None:
    """The sampler's conditionals come from ``mixture``: make sure ``model`` is that mixture."""
    if model.dim != 2:
        raise ConfigError(f"MixtureGibbs samples the 2-d Welling-Teh mixture; the model has dim={model.dim}")
    thetas = jnp.asarray([[0.3, -0.7], [1.2, 0.4], [-1.0, 2.0]], jnp.float32)
    ours = jax.vmap(lambda th: model.log_prior(th) + model.log_likelihood(th, data[0]))(thetas)
    theirs = jax.vmap(lambda th: mixture.log_prior(th) + mixture.log_likelihood(th, data[0]))(thetas)
    if not np.allclose(np.diff(np.asarray(ours)), np.diff(np.asarray(theirs)), rtol=1e-4, atol=1e-4):
        raise ConfigError(f"the model's prior and likelihood are not those of mixture={mixture}")


class MixtureGibbs(FullDataStep, RetainedChain):
    """Data-augmentation Gibbs sampler for the Welling-Teh mixture (module docstring).

    Args:
        model: the :class:`pmd.Model` of ``mixture`` (checked against it).
        data_size: ``N``.
        num_particles: ``m``, retained samples kept.
        data: the ``(N,)`` data set (every sweep reads all of it).
        mixture: the :class:`WellingTehMixture` whose conditionals are sampled.
        burn_in: sweeps discarded first (H.1: 50).
        thin: retain every ``thin``-th sweep after burn-in.
        num_steps: the run length in sweeps, when known, to reject a burn-in that retains nothing.
    """

    handles = ("mixture",)  # the target it runs on (workflow.methods.TARGETS)
    method_family = "Gibbs sampling"
    reference = "Tanner & Wong, JASA 1987; Diebolt & Robert, JRSS B 1994"

    state_type = GibbsState

    def __init__(
        self,
        model,
        data_size: int,
        num_particles: int,
        data: Any = None,
        mixture: WellingTehMixture = WellingTehMixture(),
        burn_in: int = 50,
        thin: int = 1,
        num_steps: int | None = None,
    ):
        self.model, self.data_size, self.num_particles = require_common(model, data_size, num_particles)
        self.data = require_full_data(self.model, data, self.data_size)
        if not 0 < mixture.weight < 1:
            raise ConfigError(f"the mixture weight p must lie in (0, 1), got {mixture.weight!r}")
        _check_same_model(self.model, mixture, self.data)
        self.mixture = mixture
        self.burn_in, self.thin, self.num_steps = require_burn_in(burn_in, thin, num_steps)
        self._step = jax.jit(self._step_impl)

    def sample_indicators(self, key: Array, theta: Array, data: Any = None) -> Array:
        """Step 1: ``z_n | θ, x_n`` for every datum of ``data`` (default: the data set given at
        construction; 1 = the second component), as floats."""
        sx, p = self.mixture.noise_std, self.mixture.weight
        x = self.data if data is None else data
        logit = math.log((1 - p) / p) + ((x - theta[0]) ** 2 - (x - theta[0] - theta[1]) ** 2) / (2 * sx**2)
        return jax.random.bernoulli(key, jax.nn.sigmoid(logit)).astype(theta.dtype)

    def sample_theta(self, key: Array, z: Array, data: Any = None) -> Array:
        """Step 2: ``θ | z, x ~ N(Λ⁻¹ Aᵀx / σx², Λ⁻¹)`` (module docstring), ``x`` = ``data``
        (default: the data set given at construction)."""
        x = self.data if data is None else data
        (s1, s2), sx = self.mixture.prior_std, self.mixture.noise_std
        n1, dtype = jnp.sum(z), z.dtype
        precision = jnp.stack([
            jnp.stack([1 / s1**2 + self.data_size / sx**2, n1 / sx**2]),
            jnp.stack([n1 / sx**2, 1 / s2**2 + n1 / sx**2]),
        ]).astype(dtype)
        rhs = jnp.stack([jnp.sum(x), jnp.sum(z * x)]) / sx**2
        chol = jnp.linalg.cholesky(precision)  # Λ = C Cᵀ, so Λ⁻¹ = C⁻ᵀ C⁻¹
        mean = solve_triangular(chol, solve_triangular(chol, rhs, lower=True), lower=True, trans=1)
        return mean + solve_triangular(chol, jax.random.normal(key, (2,), dtype), lower=True, trans=1)

    def _step_impl(self, key: Array, state: GibbsState, batch: Any, data: Any) -> tuple[GibbsState, dict]:
        t = state.step + 1
        k_z, k_theta = jax.random.split(key)
        z = self.sample_indicators(k_z, state.theta, data)
        theta = self.sample_theta(k_theta, z, data)
        keep = (t > self.burn_in) & ((t - self.burn_in) % self.thin == 0)
        new = GibbsState(theta=theta, buffer=state.buffer.retain(theta, keep), step=t)
        info = {"visited": jnp.asarray(self.data_size, jnp.int32), "second_component": jnp.mean(z),
                "retained": keep, **work(z.shape[0])}
        return new, info
