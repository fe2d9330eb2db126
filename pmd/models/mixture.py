"""The Welling-Teh mixture (Dai et al. 2016, section 6; Welling & Teh 2011, section 5.1).

``x ~ ½ N(θ1, σx²) + ½ N(θ1 + θ2, σx²)`` with ``θ1 ~ N(0, σ1²)``, ``θ2 ~ N(0, σ2²)``,
``(σ1, σ2, σx) = (1, 1, 2.5)``; 1000 points from ``θ = (1, -2)``. The posterior has a second,
equivalent mode near ``(-1, 2)`` (swap the components); it is computed exactly on a grid. The prior
is not symmetric under the swap, so the modes' masses differ (0.54 and 0.46 on the paper's data).
:class:`SymmetricMixture` is the same mixture parametrised by its two component means, each with a
``N(0, 1)`` prior, so that swapping them leaves prior and likelihood unchanged: two modes of mass
exactly ½.
"""

from __future__ import annotations

import dataclasses
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
        first, second = self.component_means(theta)
        comp = jnp.stack([
            math.log(p) + gaussian_log_density(x[None], first[None], sx),
            math.log(1 - p) + gaussian_log_density(x[None], second[None], sx),
        ])
        return logsumexp(comp)

    truth = (1.0, -2.0)  # the paper's θ

    def component_means(self, theta):
        """The two components' means: ``(θ1, θ1 + θ2)``."""
        return theta[0], theta[0] + theta[1]

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

    def simulate(self, seed: int, n: int = 1000, theta=None) -> np.ndarray:
        """``n`` draws of ``x`` given ``θ`` (default ``truth``; the paper: 1000 points from ``θ = (1, -2)``)."""
        rng = np.random.default_rng(seed)
        second = rng.random(n) >= self.weight
        first_mean, second_mean = self.component_means(np.asarray(self.truth if theta is None else theta))
        loc = np.where(second, second_mean, first_mean)
        return (loc + self.noise_std * rng.standard_normal(n)).astype(np.float32)

    def grid_posterior(self, x: np.ndarray, grid: Grid, chunk: int = 8192) -> GridPosterior:
        """The exact posterior on ``grid``: ``log p(θ) + Σ_n log p(x_n|θ)``, normalised by quadrature."""
        x = jnp.asarray(x, jnp.float32)
        total = jax.jit(lambda th: self.log_prior(th) + jnp.sum(jax.vmap(self.log_likelihood, (None, 0))(th, x)))
        batched = jax.jit(jax.vmap(total))
        pts = np.asarray(grid.points)
        values = np.concatenate([np.asarray(batched(pts[i:i + chunk])) for i in range(0, len(pts), chunk)])
        return GridPosterior.from_unnormalized(grid, values)


@dataclass(frozen=True)
class SymmetricMixture(WellingTehMixture):
    """``x ~ ½ N(μ1, σx²) + ½ N(μ2, σx²)`` with ``μ1, μ2 ~ N(0, 1)`` independently, ``θ = (μ1, μ2)``:
    prior and likelihood are unchanged by the swap ``μ1 ↔ μ2``, so the posterior's two modes (either
    side of ``μ1 = μ2``) have mass exactly ½. The default truth ``μ = (1, -1)`` generates the same data
    as the Welling-Teh mixture's ``θ = (1, -2)``."""

    truth = (1.0, -1.0)

    def component_means(self, theta):
        """The two components' means: ``(μ1, μ2)``."""
        return theta[0], theta[1]

    def model(self) -> Model:
        return dataclasses.replace(super().model(), name="symmetric-mixture")
