"""The Welling-Teh mixture (Dai et al. 2016, section 6; Welling & Teh 2011, section 5.1).

``x ~ ½ N(θ1, σx²) + ½ N(θ1 + θ2, σx²)`` with ``θ1 ~ N(0, σ1²)``, ``θ2 ~ N(0, σ2²)``,
``(σ1, σ2, σx) = (1, 1, 2.5)``; 1000 points from ``θ = (1, -2)``. The posterior has a second,
equivalent mode near ``(-1, 2)`` (swap the components); it is computed exactly on a grid.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np
from jax.scipy.special import logsumexp

from ..metrics import Grid, GridPosterior
from ..model import Model, gaussian_log_density


@dataclass(frozen=True)
class WellingTehMixture:
    """The two-component tied-means mixture of section 6."""

    prior_std: tuple[float, float] = (1.0, 1.0)
    noise_std: float = 2.5
    weight: float = 0.5

    def log_likelihood(self, theta, x):
        """``log p(x|θ)`` for one scalar datum."""
        if jnp.ndim(x) != 0:
            raise ValueError(f"a mixture datum is a scalar, got shape {jnp.shape(x)}")
        sx, p = self.noise_std, self.weight
        comp = jnp.stack([
            math.log(p) + gaussian_log_density(x[None], theta[0:1], sx),
            math.log(1 - p) + gaussian_log_density(x[None], theta[0:1] + theta[1:2], sx),
        ])
        return logsumexp(comp)

    def log_prior(self, theta):
        """``log N(θ; 0, diag(σ1², σ2²))``."""
        return gaussian_log_density(theta, 0.0, jnp.asarray(self.prior_std, dtype=theta.dtype))

    def model(self) -> Model:
        """The :class:`pmd.Model` (data are a ``(N,)`` array of scalars)."""
        std = jnp.asarray(self.prior_std)
        return Model(
            dim=2,
            log_prior=self.log_prior,
            log_likelihood=self.log_likelihood,
            sample_prior=lambda key, n: std * jax.random.normal(key, (n, 2)),
            name="welling-teh-mixture",
        )

    def simulate(self, seed: int, n: int = 1000, theta=(1.0, -2.0)) -> np.ndarray:
        """``n`` draws of ``x`` given ``θ`` (the paper: 1000 points from ``θ = (1, -2)``)."""
        rng = np.random.default_rng(seed)
        second = rng.random(n) >= self.weight
        loc = theta[0] + np.where(second, theta[1], 0.0)
        return (loc + self.noise_std * rng.standard_normal(n)).astype(np.float32)

    def grid_posterior(self, x: np.ndarray, grid: Grid, chunk: int = 8192) -> GridPosterior:
        """The exact posterior on ``grid``: ``log p(θ) + Σ_n log p(x_n|θ)``, normalised by quadrature."""
        x = jnp.asarray(x, jnp.float32)
        total = jax.jit(lambda th: self.log_prior(th) + jnp.sum(jax.vmap(self.log_likelihood, (None, 0))(th, x)))
        batched = jax.jit(jax.vmap(total))
        pts = np.asarray(grid.points)
        values = np.concatenate([np.asarray(batched(pts[i:i + chunk])) for i in range(0, len(pts), chunk)])
        return GridPosterior.from_unnormalized(grid, values)
