"""Posterior objects: what every inference method returns, whatever it is.

Three shapes cover the paper's methods: weighted particles (PMD eq. 5, SMC, SGLD and Gibbs with
equal weights), a weighted Gaussian KDE (PMD eq. 6/7, NPV's mixture), and a Gaussian (SVI). Each
gives weighted samples, the mean and covariance, expectations, draws and, where a density exists,
``log_density``. They are registered pytrees, so they pass through ``jit``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable, Protocol, runtime_checkable

import jax
import jax.numpy as jnp

from jax.scipy.special import logsumexp

from .kde import kde_log_density, kde_sample, pairwise_sq_distances
from .weights import categorical_draw, effective_sample_size, normalize, stratified_draw

Array = jax.Array


@runtime_checkable
class Posterior(Protocol):
    """What the runner, the metrics and the reports may ask of any method's posterior."""

    def weighted_samples(self, key: Array | None = None, n: int | None = None) -> tuple[Array, Array]:
        """``(samples (n, d), normalised log-weights (n,))``."""

    def mean(self) -> Array: ...

    def cov(self) -> Array: ...

    def expectation(self, f: Callable[[Array], Array]) -> Array: ...

    def sample(self, key: Array, n: int) -> Array: ...

    def effective_sample_size(self) -> Array: ...

    def has_density(self) -> bool: ...

    def log_density(self, theta: Array) -> Array: ...


def _weighted_moments(samples: Array, log_weights: Array) -> tuple[Array, Array]:
    w = jnp.exp(normalize(log_weights))
    mean = w @ samples
    centred = samples - mean
    return mean, (centred * w[:, None]).T @ centred


@jax.tree_util.register_dataclass
@dataclass(frozen=True)
class ParticlePosterior:
    """``q̃(θ) = Σ_i α_i δ(θ_i)`` (eq. 4). ``-inf`` log-weights mark unused slots."""

    samples: Array
    log_weights: Array

    @classmethod
    def equally_weighted(cls, samples: Array) -> "ParticlePosterior":
        """Samples of equal weight (MCMC draws, resampled particles)."""
        n = samples.shape[0]
        return cls(samples, jnp.full((n,), -jnp.log(n), dtype=samples.dtype))

    @property
    def weights(self) -> Array:
        return jnp.exp(normalize(self.log_weights))

    def weighted_samples(self, key: Array | None = None, n: int | None = None) -> tuple[Array, Array]:
        return self.samples, normalize(self.log_weights)

    def mean(self) -> Array:
        return _weighted_moments(self.samples, self.log_weights)[0]

    def cov(self) -> Array:
        return _weighted_moments(self.samples, self.log_weights)[1]

    def expectation(self, f: Callable[[Array], Array]) -> Array:
        """``Σ_i α_i f(θ_i)``: the integral approximation of Theorem 5."""
        values = jax.vmap(f)(self.samples)
        w = self.weights.reshape((-1,) + (1,) * (values.ndim - 1))
        return jnp.sum(w * values, axis=0)

    def sample(self, key: Array, n: int) -> Array:
        idx = categorical_draw(key, self.log_weights, n)
        return self.samples[idx]

    def effective_sample_size(self) -> Array:
        return effective_sample_size(self.log_weights)

    def has_density(self) -> bool:
        return False

    def log_density(self, theta: Array) -> Array:
        raise NotImplementedError("weighted particles (a sum of Dirac masses) have no density; "
                                  "estimate one with pmd.metrics.kde_fit or pmd.metrics.gaussian_fit")


@jax.tree_util.register_dataclass
@dataclass(frozen=True)
class KDEPosterior(ParticlePosterior):
    """``q̃(θ) = Σ_i α_i K_H(θ - θ_i)`` with ``H = chol cholᵀ`` (eq. 6)."""

    chol: Array

    def cov(self) -> Array:
        """Covariance of the mixture: the weighted covariance of the centres plus ``H``."""
        return _weighted_moments(self.samples, self.log_weights)[1] + self.chol @ self.chol.T

    def weighted_samples(self, key: Array | None = None, n: int | None = None) -> tuple[Array, Array]:
        """The kernel centres and their weights (``key``/``n`` ignored), as for weighted particles."""
        return self.samples, normalize(self.log_weights)

    def sample(self, key: Array, n: int) -> Array:
        return kde_sample(key, self.samples, self.log_weights, self.chol, n)

    def has_density(self) -> bool:
        return True

    def log_density(self, theta: Array) -> Array:
        """``log q̃(θ)`` for one ``θ (d,)`` or many ``(n, d)``."""
        points = jnp.atleast_2d(theta)
        out = kde_log_density(points, self.samples, self.log_weights, self.chol)
        return out[0] if theta.ndim == 1 else out


@jax.tree_util.register_dataclass
@dataclass(frozen=True)
class GaussianPosterior:
    """``N(mean, chol cholᵀ)``: the variational family of SVI and the Gaussian fit of H.1."""

    loc: Array
    chol: Array

    def weighted_samples(self, key: Array | None = None, n: int | None = None) -> tuple[Array, Array]:
        """``n`` draws of equal weight (a Gaussian has no samples of its own: both are required)."""
        if key is None or n is None:
            raise ValueError("a GaussianPosterior gives weighted samples only by drawing: pass key and n")
        return self.sample(key, n), jnp.full((n,), -jnp.log(n))

    def mean(self) -> Array:
        return self.loc

    def cov(self) -> Array:
        return self.chol @ self.chol.T

    def expectation(self, f: Callable[[Array], Array], key: Array | None = None, n: int = 4096) -> Array:
        """Monte Carlo ``E f(θ)`` with ``n`` draws (the key defaults to a fixed one)."""
        draws = self.sample(jax.random.key(0) if key is None else key, n)
        return jnp.mean(jax.vmap(f)(draws), axis=0)

    def sample(self, key: Array, n: int) -> Array:
        eps = jax.random.normal(key, (n, self.loc.shape[0]), dtype=self.loc.dtype)
        return self.loc + eps @ self.chol.T

    def effective_sample_size(self) -> Array:
        return jnp.asarray(jnp.inf)

    def has_density(self) -> bool:
        return True

    def log_density(self, theta: Array) -> Array:
        points = jnp.atleast_2d(theta)
        out = kde_log_density(points, self.loc[None, :], jnp.zeros((1,)), self.chol)
        return out[0] if theta.ndim == 1 else out


@jax.tree_util.register_dataclass
@dataclass(frozen=True)
class MixturePosterior(ParticlePosterior):
    """``q(θ) = Σ_i α_i N(θ; μ_i, σ_i² I)``: a weighted Gaussian mixture with its own isotropic
    width per component (NPV's family; GHB12 sec. 3). ``samples`` are the means ``μ_i``; as for
    :class:`pmd.posterior.KDEPosterior`, ``weighted_samples`` and ``expectation`` use the centres."""

    stds: Array  # (m,)

    def cov(self) -> Array:
        """The weighted covariance of the centres plus ``Σ_i α_i σ_i² I``."""
        d = self.samples.shape[1]
        return super().cov() + (self.weights @ self.stds**2) * jnp.eye(d, dtype=self.samples.dtype)

    def sample(self, key: Array, n: int) -> Array:
        k_idx, k_eps = jax.random.split(key)
        idx = categorical_draw(k_idx, self.log_weights, n)
        eps = jax.random.normal(k_eps, (n, self.samples.shape[1]), dtype=self.samples.dtype)
        return self.samples[idx] + self.stds[idx, None] * eps

    def has_density(self) -> bool:
        return True

    def log_density(self, theta: Array) -> Array:
        """``log q(θ)`` for one ``θ (d,)`` or many ``(n, d)``."""
        points = jnp.atleast_2d(theta)
        d = points.shape[1]
        var = self.stds**2
        sq = pairwise_sq_distances(points, self.samples)  # (n, m)
        log_k = -0.5 * sq / var - 0.5 * d * jnp.log(2.0 * math.pi * var)
        out = logsumexp(log_k + (self.log_weights - logsumexp(self.log_weights)), axis=1)
        return out[0] if theta.ndim == 1 else out


def own_draws(posterior: Posterior, key: Array, n: int) -> tuple[Array, Array]:
    """The one yardstick's sample: exactly ``n`` points of ``posterior``'s own distribution,
    ``(samples (n, d), normalised log-weights (n,))``. Every scorer of the harness calls this, and
    every floor is computed from ``n`` exact or reference draws, so a method and its floor always
    meet at the same ``n``:

    * a posterior with a density (a Gaussian, a KDE, a Gaussian mixture such as NPV's): ``n``
      i.i.d. draws of that density, kernels included, equally weighted. Its centres alone would
      drop each kernel's spread (NPV's ``σ_i² I``; GHB12 sec. 3) and be scored as too narrow;
    * weighted particles with exactly ``n`` slots: the particles with their weights, as they are
      (the weighted empirical measure IS the method's distribution; resampling would only add
      multinomial noise);
    * weighted particles with another number of slots: ``n`` points by stratified resampling
      (Kitagawa 1996; :func:`pmd.weights.stratified_draw`), equally weighted. A method that holds
      fewer than ``n`` points is scored as what it is: duplicates add no information.
    """
    n = int(n)
    if n < 1:
        raise ValueError(f"own_draws needs n >= 1 draws, got {n}")
    uniform = jnp.full((n,), -math.log(n))
    if posterior.has_density():
        draws = posterior.sample(key, n)
        return draws, uniform.astype(draws.dtype)
    samples, log_w = posterior.weighted_samples(key, n)
    if samples.shape[0] == n:
        return samples, normalize(log_w)
    picked = samples[stratified_draw(key, log_w, n)]
    return picked, uniform.astype(picked.dtype)
