"""Stan parameter declarations with their priors, on Stan's unconstrained scale.

A block is one declaration of a Stan program's ``parameters`` section (or two coupled ones): it
maps its unconstrained coordinates ``u`` to the constrained value ``x(u)`` with Stan's transform
(Stan Reference Manual, "Constraint transforms") and its ``log_density(u)`` is the prior density
of ``u``: ``log p(x(u)) + log|det ∂x/∂u|``. ``sample(key, n)`` draws exactly from that density.
:class:`Parameters` stacks the blocks of a program in declaration order.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable, Protocol

import jax
import jax.numpy as jnp

Array = jax.Array


class Block(Protocol):
    """One parameter declaration: ``size`` unconstrained coordinates, constrained ``columns``."""

    size: int
    columns: tuple[str, ...]

    def value(self, u: Array) -> Array: ...

    def unconstrain(self, x: Array) -> Array: ...

    def log_density(self, u: Array) -> Array: ...

    def sample(self, key: Array, n: int) -> Array: ...


def _open_uniform(key: Array, shape: tuple[int, ...]) -> Array:
    """Uniform draws in ``(0, 1)``: never 0 (nor 1), so their logits are finite."""
    return jax.random.uniform(key, shape, minval=jnp.finfo(jnp.float32).tiny)


def _names(name: str, length: int | None) -> tuple[str, ...]:
    return (name,) if length is None else tuple(f"{name}[{i}]" for i in range(1, length + 1))


@dataclass(frozen=True)
class Real:
    """``real name`` (``length=None``) or ``vector[length] name`` with a proper prior; no transform."""

    name: str
    prior: Any
    length: int | None = None

    @property
    def size(self) -> int:
        """Unconstrained coordinates."""
        return self.length or 1

    @property
    def columns(self) -> tuple[str, ...]:
        """Stan names of the entries."""
        return _names(self.name, self.length)

    def value(self, u: Array) -> Array:
        """The parameter: a scalar, or the vector."""
        return u[0] if self.length is None else u

    def unconstrain(self, x: Array) -> Array:
        """The identity."""
        return x

    def log_density(self, u: Array) -> Array:
        """``log p(u)``."""
        return self.prior.log_prob(u)

    def sample(self, key: Array, n: int) -> Array:
        """``(n, size)`` prior draws."""
        return self.prior.sample(key, (n, self.size))


@dataclass(frozen=True)
class Positive(Real):
    """``real<lower=0> name`` (or a vector): ``x = exp(u)``, log-Jacobian ``Σ u``."""

    def value(self, u: Array) -> Array:
        """``exp(u)``: a scalar, or the vector."""
        return super().value(jnp.exp(u))

    def unconstrain(self, x: Array) -> Array:
        """``log x``."""
        return jnp.log(x)

    def log_density(self, u: Array) -> Array:
        """``log p(exp u) + Σ u``."""
        return self.prior.log_prob(jnp.exp(u)) + jnp.sum(u)

    def sample(self, key: Array, n: int) -> Array:
        """``log`` of prior draws (a float32 draw that rounds to 0 is moved to the smallest normal float)."""
        draws = self.prior.sample(key, (n, self.size))
        return jnp.log(jnp.maximum(draws, jnp.finfo(draws.dtype).tiny))


@dataclass(frozen=True)
class UniformSimplex:
    """``simplex[k] name`` with no sampling statement: uniform on the simplex (Dirichlet(1, ..., 1)).

    Stan's stick-breaking transform: ``z_i = logit⁻¹(u_i - log(k - i))`` for ``i = 1..k-1``,
    ``x_i = (1 - Σ_{j<i} x_j) z_i``, ``x_k = 1 - Σ_{j<k} x_j``; log-Jacobian
    ``Σ_i log(z_i (1 - z_i) (1 - Σ_{j<i} x_j))``. The uniform density is ``(k - 1)!``.
    """

    name: str
    k: int

    @property
    def size(self) -> int:
        """``k - 1`` unconstrained coordinates."""
        return self.k - 1

    @property
    def columns(self) -> tuple[str, ...]:
        """``name[1]``, ..., ``name[k]``."""
        return _names(self.name, self.k)

    def _offsets(self) -> list[float]:
        return [math.log(self.k - 1 - i) for i in range(self.k - 1)]

    def value(self, u: Array) -> Array:
        """The ``(k,)`` simplex."""
        stick, parts = 1.0, []
        for i, offset in enumerate(self._offsets()):
            parts.append(stick * jax.nn.sigmoid(u[i] - offset))
            stick = stick - parts[-1]
        return jnp.stack([*parts, stick])

    def unconstrain(self, x: Array) -> Array:
        """The inverse of :meth:`value`."""
        stick, coordinates = 1.0, []
        for i, offset in enumerate(self._offsets()):
            z = x[i] / stick
            coordinates.append(jnp.log(z) - jnp.log1p(-z) + offset)
            stick = stick - x[i]
        return jnp.stack(coordinates)

    def log_density(self, u: Array) -> Array:
        """``log (k-1)! + log|det ∂x/∂u|``."""
        x = self.value(u)
        stick = 1.0 - jnp.concatenate([jnp.zeros(1), jnp.cumsum(x[:-2])])
        a = u - jnp.asarray(self._offsets())
        return math.lgamma(self.k) + jnp.sum(jax.nn.log_sigmoid(a) + jax.nn.log_sigmoid(-a) + jnp.log(stick))

    def sample(self, key: Array, n: int) -> Array:
        """``(n, k-1)`` unconstrained Dirichlet(1) draws: the stick fractions ``z_i`` are independent
        ``Beta(1, m_i)``, ``m_i = k - i``, drawn as ``1 - V^(1/m_i)`` (``V`` uniform), in log space."""
        m = jnp.arange(self.k - 1, 0, -1, dtype=jnp.float32)
        log_v = jnp.log(_open_uniform(key, (n, self.k - 1))) / m  # log(1 - z)
        return jnp.log(-jnp.expm1(log_v)) - log_v + jnp.log(m)


def _rejection_sample(
    key: Array, n: int, propose: Callable[[Array, int], Array], accept: Callable[[Array], Array]
) -> Array:
    """``(n, ...)`` exact draws from ``propose`` conditioned on ``accept``: each row redrawn until accepted."""

    def redraw(state):
        key, draws, done = state
        key, sub = jax.random.split(key)
        fresh = propose(sub, n)
        take = ~done & accept(fresh)
        return key, jnp.where(take[:, None], fresh, draws), done | take

    key, first = jax.random.split(key)
    draws = propose(first, n)
    return jax.lax.while_loop(lambda state: ~jnp.all(state[2]), redraw, (key, draws, accept(draws)))[1]


@dataclass(frozen=True)
class PositiveOrdered:
    """``positive_ordered[k] name`` with independent priors ``prior`` on the entries, restricted to
    ``0 < x_1 < ... < x_k`` by the constraint.

    Stan's transform: ``x_1 = exp(u_1)``, ``x_i = x_{i-1} + exp(u_i)``; log-Jacobian ``Σ u``.
    Sampling redraws from ``prior`` until the draw is positive and ordered (exact).
    """

    name: str
    k: int
    prior: Any

    @property
    def size(self) -> int:
        """``k`` unconstrained coordinates."""
        return self.k

    @property
    def columns(self) -> tuple[str, ...]:
        """``name[1]``, ..., ``name[k]``."""
        return _names(self.name, self.k)

    def value(self, u: Array) -> Array:
        """The ``(k,)`` ordered vector."""
        return jnp.cumsum(jnp.exp(u))

    def unconstrain(self, x: Array) -> Array:
        """``log`` of the increments ``x_1, x_2 - x_1, ...``."""
        return jnp.log(jnp.diff(x, prepend=0.0))

    def log_density(self, u: Array) -> Array:
        """``log p(x(u)) + Σ u`` (unnormalised: the constraint's probability under ``prior`` is left out)."""
        return self.prior.log_prob(self.value(u)) + jnp.sum(u)

    def sample(self, key: Array, n: int) -> Array:
        """``(n, k)`` unconstrained draws."""
        draws = _rejection_sample(
            key,
            n,
            lambda key, n: self.prior.sample(key, (n, self.k)),
            lambda x: jnp.all(jnp.diff(x, prepend=0.0, axis=1) > 0, axis=1),
        )
        return jax.vmap(self.unconstrain)(draws)


@dataclass(frozen=True)
class UniformTriangle:
    """``real<lower=0, upper=1> a; real<lower=0, upper=(1 - a)> b;`` with no sampling statements:
    uniform on the triangle ``a, b > 0, a + b < 1`` (density 2).

    Stan's bounded transform for each, the second's bound depending on the first:
    ``a = logit⁻¹(u_1)``, ``b = (1 - a) logit⁻¹(u_2)``; log-Jacobian
    ``log a(1-a) + log(1-a) + log z(1-z)`` with ``z = logit⁻¹(u_2)``.
    """

    first: str
    second: str

    @property
    def size(self) -> int:
        """Two unconstrained coordinates."""
        return 2

    @property
    def columns(self) -> tuple[str, ...]:
        """``(first, second)``."""
        return (self.first, self.second)

    def value(self, u: Array) -> Array:
        """``(a, b)``."""
        a = jax.nn.sigmoid(u[0])
        return jnp.stack([a, (1.0 - a) * jax.nn.sigmoid(u[1])])

    def unconstrain(self, x: Array) -> Array:
        """``(logit a, logit(b / (1 - a)))``."""
        z = x[1] / (1.0 - x[0])
        return jnp.stack([jnp.log(x[0]) - jnp.log1p(-x[0]), jnp.log(z) - jnp.log1p(-z)])

    def log_density(self, u: Array) -> Array:
        """``log 2 + log|det ∂(a, b)/∂u|``."""
        log_a, log_1ma = jax.nn.log_sigmoid(u[0]), jax.nn.log_sigmoid(-u[0])
        return math.log(2.0) + log_a + 2.0 * log_1ma + jax.nn.log_sigmoid(u[1]) + jax.nn.log_sigmoid(-u[1])

    def sample(self, key: Array, n: int) -> Array:
        """``(n, 2)`` unconstrained draws: on the uniform triangle ``a ~ Beta(1, 2)`` and
        ``z = b / (1 - a) ~ U(0, 1)`` independently; ``a = 1 - √V`` (``V`` uniform), in log space."""
        v = _open_uniform(key, (n, 2))
        log_a, log_1ma = jnp.log1p(-v[:, 0]) - jnp.log1p(jnp.sqrt(v[:, 0])), 0.5 * jnp.log(v[:, 0])
        return jnp.stack([log_a - log_1ma, jnp.log(v[:, 1]) - jnp.log1p(-v[:, 1])], axis=1)


@dataclass(frozen=True)
class Parameters:
    """A Stan program's parameters: its blocks in declaration order, ``θ`` their stacked coordinates."""

    blocks: tuple[Block, ...]

    @property
    def dim(self) -> int:
        """``d``: the number of unconstrained coordinates."""
        return sum(block.size for block in self.blocks)

    @property
    def columns(self) -> tuple[str, ...]:
        """Stan names of the constrained entries, in declaration order."""
        return tuple(name for block in self.blocks for name in block.columns)

    def _split(self, vector: Array, widths: list[int]) -> list[Array]:
        edges = [sum(widths[:i]) for i in range(len(widths) + 1)]
        return [vector[start:stop] for start, stop in zip(edges[:-1], edges[1:])]

    def values(self, theta: Array) -> tuple[Array, ...]:
        """Each block's constrained value at ``θ (d,)`` (scalars as scalars)."""
        pieces = self._split(theta, [block.size for block in self.blocks])
        return tuple(block.value(u) for block, u in zip(self.blocks, pieces))

    def constrain(self, theta: Array) -> Array:
        """``θ (d,) -> (k,)``: the constrained entries in :attr:`columns` order."""
        return jnp.concatenate([jnp.atleast_1d(value) for value in self.values(theta)])

    def unconstrain(self, x: Array) -> Array:
        """``(k,) -> θ (d,)``: the inverse of :meth:`constrain`."""
        pieces = self._split(x, [len(block.columns) for block in self.blocks])
        return jnp.concatenate([block.unconstrain(piece) for block, piece in zip(self.blocks, pieces)])

    def log_prior(self, theta: Array) -> Array:
        """``log p(θ)``: the sum of the blocks' densities (each with its log-Jacobian)."""
        pieces = self._split(theta, [block.size for block in self.blocks])
        return sum(block.log_density(u) for block, u in zip(self.blocks, pieces))

    def sample_prior(self, key: Array, n: int) -> Array:
        """``(n, d)`` exact draws from :meth:`log_prior`'s density."""
        keys = jax.random.split(key, len(self.blocks))
        return jnp.concatenate([block.sample(k, n) for block, k in zip(self.blocks, keys)], axis=1)
