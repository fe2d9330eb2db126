"""The conjugate Gaussian model: the closed-form posterior every sampler is checked against.

``θ ~ N(μ0, s0² I)``, ``x_n | θ ~ N(θ, σ² I)`` in ``d`` dimensions, so
``θ | x_{1:N} ~ N(μ_N, s_N² I)`` with ``s_N⁻² = s0⁻² + N σ⁻²`` and
``μ_N = s_N² (μ0 s0⁻² + Σ x_n σ⁻²)`` (Bishop 2006, eq. 2.141-2.142 per coordinate).
"""

from __future__ import annotations

from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np

from ..model import Model, gaussian_log_density


@dataclass(frozen=True)
class ConjugateGaussian:
    """A d-dimensional Gaussian mean model with a Gaussian prior."""

    dim: int
    prior_mean: float = 0.0
    prior_std: float = 1.0
    noise_std: float = 1.0

    def model(self) -> Model:
        """The :class:`pmd.Model` of this problem (data are ``(N, d)`` arrays)."""
        mu0, s0, sigma, d = self.prior_mean, self.prior_std, self.noise_std, self.dim
        return Model(
            dim=d,
            log_prior=lambda th: gaussian_log_density(th, mu0, s0),
            log_likelihood=lambda th, x: gaussian_log_density(x, th, sigma),
            sample_prior=lambda key, n: mu0 + s0 * jax.random.normal(key, (n, d)),
            name=f"conjugate-gaussian-{d}d",
        )

    def simulate(self, seed: int, n: int, theta: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """``(θ*, x (n, d))`` with ``θ*`` drawn from the prior unless given."""
        rng = np.random.default_rng(seed)
        theta = rng.normal(self.prior_mean, self.prior_std, self.dim) if theta is None else np.asarray(theta)
        return theta, theta + self.noise_std * rng.standard_normal((n, self.dim))

    def posterior(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Closed-form posterior mean ``(d,)`` and covariance ``(d, d)`` given data ``x (N, d)``."""
        x = np.asarray(x, dtype=np.float64)
        precision = self.prior_std**-2 + x.shape[0] * self.noise_std**-2
        var = 1.0 / precision
        mean = var * (self.prior_mean * self.prior_std**-2 + x.sum(axis=0) * self.noise_std**-2)
        return mean, var * np.eye(self.dim)

    def posterior_log_density(self, x: np.ndarray):
        """``θ (n, d) -> log q*(θ)`` of the exact posterior."""
        mean, cov = self.posterior(x)
        std = float(np.sqrt(cov[0, 0]))
        return lambda theta: gaussian_log_density(jnp.asarray(theta), jnp.asarray(mean, jnp.float32), std)
