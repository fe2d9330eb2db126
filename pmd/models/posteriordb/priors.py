"""Prior distributions of the posteriordb models, on the constrained scale, in JAX.

Each has ``log_prob(x)``: the log density summed over the elements of ``x``, normalised (the
half-distributions on ``(0, ∞)`` included), and ``sample(key, shape)``: exact draws. Stan's
``normal``, ``cauchy``, ``student_t`` and ``gamma`` (shape, rate) are parameterised as here.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cached_property

import jax
import jax.numpy as jnp
import numpy as np
from jax.scipy import stats

Array = jax.Array
_LOG2 = math.log(2.0)


@dataclass(frozen=True)
class Normal:
    """``normal(loc, scale)``, elementwise (``loc`` and ``scale`` broadcast against ``x``)."""

    loc: float | tuple[float, ...]
    scale: float | tuple[float, ...]

    def log_prob(self, x: Array) -> Array:
        """``Σ log N(x_i; loc_i, scale_i²)``."""
        return jnp.sum(stats.norm.logpdf(x, jnp.asarray(self.loc), jnp.asarray(self.scale)))

    def sample(self, key: Array, shape: tuple[int, ...]) -> Array:
        """Draws of shape ``shape``."""
        return jnp.asarray(self.loc) + jnp.asarray(self.scale) * jax.random.normal(key, shape)


@dataclass(frozen=True)
class StudentT:
    """``student_t(df, loc, scale)``."""

    df: float
    loc: float
    scale: float

    def log_prob(self, x: Array) -> Array:
        """``Σ log t_df(x_i; loc, scale)``."""
        return jnp.sum(stats.t.logpdf(x, self.df, self.loc, self.scale))

    def sample(self, key: Array, shape: tuple[int, ...]) -> Array:
        """Draws of shape ``shape``."""
        return self.loc + self.scale * jax.random.t(key, self.df, shape)


@dataclass(frozen=True)
class Cauchy:
    """``cauchy(loc, scale)``."""

    loc: float
    scale: float

    def log_prob(self, x: Array) -> Array:
        """``Σ log Cauchy(x_i; loc, scale)``."""
        return jnp.sum(stats.cauchy.logpdf(x, self.loc, self.scale))

    def sample(self, key: Array, shape: tuple[int, ...]) -> Array:
        """Draws of shape ``shape``."""
        return self.loc + self.scale * jax.random.cauchy(key, shape)


@dataclass(frozen=True)
class Half:
    """A distribution symmetric about 0 (``base``) restricted to ``(0, ∞)``: density ``2 p(x)``,
    draws ``|x|``. Stan's ``real<lower=0> sigma; sigma ~ normal(0, s);`` is ``Half(Normal(0, s))``."""

    base: Normal | Cauchy | StudentT

    def log_prob(self, x: Array) -> Array:
        """``Σ log(2 p(x_i))``."""
        return self.base.log_prob(x) + jnp.size(x) * _LOG2

    def sample(self, key: Array, shape: tuple[int, ...]) -> Array:
        """Draws of shape ``shape``."""
        return jnp.abs(self.base.sample(key, shape))


def half_normal(scale: float) -> Half:
    """``normal(0, scale)`` on ``(0, ∞)``."""
    return Half(Normal(0.0, scale))


def half_cauchy(scale: float) -> Half:
    """``cauchy(0, scale)`` on ``(0, ∞)``."""
    return Half(Cauchy(0.0, scale))


def half_student_t(df: float, scale: float) -> Half:
    """``student_t(df, 0, scale)`` on ``(0, ∞)``."""
    return Half(StudentT(df, 0.0, scale))


@dataclass(frozen=True)
class Gamma:
    """``gamma(shape, rate)`` (Stan's parameterisation: mean ``shape / rate``)."""

    shape: float
    rate: float

    def log_prob(self, x: Array) -> Array:
        """``Σ log Gamma(x_i; shape, rate)``."""
        return jnp.sum(stats.gamma.logpdf(x, self.shape, scale=1.0 / self.rate))

    def sample(self, key: Array, shape: tuple[int, ...]) -> Array:
        """Draws of shape ``shape``."""
        return jax.random.gamma(key, self.shape, shape) / self.rate


@dataclass(frozen=True, eq=False)
class AffineNormal:
    """``x = matrix z + offset`` with ``z ~ N(0, scale² I)``: a correlated Gaussian on a vector.

    ``matrix`` (square, invertible) and ``offset`` are numpy arrays; ``log_prob`` evaluates
    ``z = matrix⁻¹ (x - offset)`` with the inverse computed once in float64.
    """

    matrix: np.ndarray
    offset: np.ndarray
    scale: float

    @cached_property
    def _inverse(self) -> np.ndarray:
        return np.linalg.inv(np.asarray(self.matrix, np.float64))

    def log_prob(self, x: Array) -> Array:
        """``log N(z; 0, scale² I) - log|det matrix|``."""
        z = jnp.asarray(self._inverse, jnp.float32) @ (x - jnp.asarray(self.offset, jnp.float32))
        return jnp.sum(stats.norm.logpdf(z, 0.0, self.scale)) + float(np.linalg.slogdet(self._inverse)[1])

    def sample(self, key: Array, shape: tuple[int, ...]) -> Array:
        """Draws of shape ``shape`` (last axis: the vector)."""
        z = self.scale * jax.random.normal(key, shape)
        return z @ jnp.asarray(self.matrix.T, jnp.float32) + jnp.asarray(self.offset, jnp.float32)
