"""Shared set-up and statistics for the baselines tests (tests/test_baselines_*.py)."""

from __future__ import annotations

from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np

from pmd.kde import pairwise_sq_distances
from pmd.models.conjugate import ConjugateGaussian


@dataclass(frozen=True)
class Conjugate:
    """The conjugate Gaussian problem of the tests: model, data and closed-form posterior."""

    problem: ConjugateGaussian
    data: np.ndarray
    mean: np.ndarray
    cov: np.ndarray

    @classmethod
    def make(cls, num_data: int = 100, noise_std: float = 1.0, seed: int = 0) -> "Conjugate":
        problem = ConjugateGaussian(dim=2, noise_std=noise_std)
        _, x = problem.simulate(seed, num_data)
        mean, cov = problem.posterior(x)
        return cls(problem, x.astype(np.float32), mean, cov)

    @property
    def model(self):
        return self.problem.model()

    @property
    def precision(self) -> float:
        """``P = s0⁻² + N σ⁻²``, the posterior precision of every coordinate."""
        return float(1.0 / self.cov[0, 0])

    def minibatch_gradient_variance(self, batch_size: int) -> np.ndarray:
        """Per-coordinate variance of ``N · mean_b ∇ log p(x_b|θ) = N σ⁻² (mean_b x - θ)`` over
        batches drawn without replacement: ``(N/σ²)² · S²/B · (N-B)/(N-1)``, ``S²`` the data's
        population variance."""
        n, sigma = self.data.shape[0], self.problem.noise_std
        pop_var = np.var(self.data.astype(np.float64), axis=0)
        return (n / sigma**2) ** 2 * pop_var / batch_size * (n - batch_size) / (n - 1)


def energy_test(x: np.ndarray, y: np.ndarray, key, num_permutations: int = 999) -> float:
    """Permutation p-value of the energy distance between two samples (Székely & Rizzo 2004).

    ``E = 2 E|X-Y| - E|X-X'| - E|Y-Y'|`` on the pooled distance matrix, against its value under
    ``num_permutations`` random relabellings; p = (1 + #{E_perm ≥ E_obs}) / (1 + num_permutations).
    """
    z = jnp.concatenate([jnp.asarray(x), jnp.asarray(y)])
    n, total = x.shape[0], z.shape[0]
    dist = jnp.sqrt(pairwise_sq_distances(z, z))

    def statistic(labels):
        a = labels / n
        b = (1.0 - labels) / (total - n)
        return 2.0 * a @ dist @ b - a @ dist @ a - b @ dist @ b

    observed = statistic(jnp.arange(total) < n)
    perms = jax.vmap(lambda k: jax.random.permutation(k, total) < n)(jax.random.split(key, num_permutations))
    null = jax.lax.map(statistic, perms.astype(jnp.float32), batch_size=64)
    return float((1 + jnp.sum(null >= observed)) / (1 + num_permutations))


def robbins_monro_sd(a: float, tau: float, steps: int, curvature: float, noise_var: float) -> float:
    """Standard deviation, after ``steps`` steps, of SGD on a quadratic with the step size
    ``η_t = a / (τ + t)`` (``κ = 1``) and gradient noise of variance ``noise_var``.

    The error follows ``e_{t+1} = (1 - η_t λ) e_t + η_t ξ_t``; its variance ``V_t = c / (τ + t)``
    solves the recursion to first order with ``c (2aλ - 1) = a² σ²`` (needs ``2aλ > 1``).
    """
    assert 2 * a * curvature > 1, "the asymptotic formula needs 2aλ > 1"
    return float(np.sqrt(a**2 * noise_var / ((2 * a * curvature - 1) * (tau + steps))))


@dataclass(frozen=True)
class LinearRegression:
    """The 3-d test regression of the baselines' defaults: ``y_n ~ N(x_nᵀ β, σ²)`` with known
    ``σ`` and ``β ~ N(0, s0² I)``, whose posterior is ``N(Λ⁻¹ Xᵀy/σ², Λ⁻¹)``,
    ``Λ = I/s0² + XᵀX/σ²`` (Bishop 2006, eq. 3.53-3.54).

    A datum is ``{"x": (d,), "y": ()}``; the columns of ``X`` are correlated (``x_n ~ N(0, C)``,
    ``C_jk = 0.7^|j-k|``), so the posterior is too."""

    data: dict
    noise_std: float
    prior_std: float

    @classmethod
    def make(cls, num_data: int = 2000, dim: int = 3, noise_std: float = 0.5, prior_std: float = 2.0,
             seed: int = 0) -> "LinearRegression":
        rng = np.random.default_rng(seed)
        corr = 0.7 ** np.abs(np.subtract.outer(np.arange(dim), np.arange(dim)))
        x = rng.standard_normal((num_data, dim)) @ np.linalg.cholesky(corr).T
        beta = rng.normal(0.0, 1.0, dim)
        y = x @ beta + noise_std * rng.standard_normal(num_data)
        return cls({"x": x.astype(np.float32), "y": y.astype(np.float32)}, noise_std, prior_std)

    @classmethod
    def readme(cls) -> "LinearRegression":
        """README.md's example: 2,000 rows ``x_n ~ N(0, I_3)``, ``β = (1, -0.5, 0.25)``, ``σ = 0.5``,
        ``β ~ N(0, I)`` (its data to the last bit: the same generator calls)."""
        rng = np.random.default_rng(0)
        x = rng.normal(size=(2000, 3)).astype(np.float32)
        y = (x @ np.array([1.0, -0.5, 0.25]) + 0.5 * rng.normal(size=2000)).astype(np.float32)
        return cls({"x": x, "y": y}, 0.5, 1.0)

    @property
    def model(self):
        from pmd.model import Model, gaussian_log_density

        d, s0, sigma = self.data["x"].shape[1], self.prior_std, self.noise_std
        return Model(
            dim=d,
            log_prior=lambda b: gaussian_log_density(b, 0.0, s0),
            log_likelihood=lambda b, datum: gaussian_log_density(datum["y"][None], datum["x"] @ b, sigma),
            sample_prior=lambda key, n: s0 * jax.random.normal(key, (n, d)),
            name=f"linear-regression-{d}d",
        )

    @property
    def precision(self) -> np.ndarray:
        x = self.data["x"].astype(np.float64)
        return np.eye(x.shape[1]) / self.prior_std**2 + x.T @ x / self.noise_std**2

    @property
    def cov(self) -> np.ndarray:
        return np.linalg.inv(self.precision)

    @property
    def mean(self) -> np.ndarray:
        x, y = self.data["x"].astype(np.float64), self.data["y"].astype(np.float64)
        return self.cov @ x.T @ y / self.noise_std**2
