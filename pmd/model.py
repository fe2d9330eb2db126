"""The probabilistic model every inference method in pmd-bench consumes.

A model is the triple of the paper's objective (eq. 1 of Dai et al. 2016): a prior ``p(θ)``, a
likelihood ``p(x|θ)`` for one datum, and a way to draw from the prior (Algorithm 1, line 3 starts
from ``q̃_1 = p``). Everything is written for one ``θ`` and one datum; the algorithms vmap.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field
from typing import Any, Callable

import jax
import jax.numpy as jnp

Array = jax.Array
PyTree = Any


class ModelError(ValueError):
    """A model or a batch does not have the shapes the interface promises."""


def _shape_of(fn: Callable, *args) -> Any:
    return jax.eval_shape(fn, *args)


@dataclass(frozen=True)
class Model:
    """A Bayesian model: prior, per-datum likelihood and a prior sampler, all in JAX.

    Args:
        dim: dimension ``d`` of the parameter ``θ``.
        log_prior: ``θ (d,) -> scalar``, ``log p(θ)`` up to a constant.
        log_likelihood: ``(θ (d,), x) -> scalar``, ``log p(x|θ)`` for ONE datum ``x`` (a pytree
            whose leaves are one row of the batch's leaves).
        sample_prior: ``(key, n) -> (n, d)`` draws from ``p(θ)``.
        name: a label for logs.
    """

    dim: int
    log_prior: Callable[[Array], Array]
    log_likelihood: Callable[[Array, PyTree], Array]
    sample_prior: Callable[[Array, int], Array]
    name: str = "model"
    _checked_batches: set = field(default_factory=set, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if not isinstance(self.dim, int) or isinstance(self.dim, bool) or self.dim < 1:
            raise ModelError(f"Model.dim must be a positive int, got {self.dim!r}")
        for name in ("log_prior", "log_likelihood", "sample_prior"):
            if not callable(getattr(self, name)):
                raise ModelError(f"Model.{name} must be callable, got {getattr(self, name)!r}")
        theta = jax.ShapeDtypeStruct((self.dim,), jnp.float32)
        out = _shape_of(self.log_prior, theta)
        if getattr(out, "shape", None) != ():
            raise ModelError(
                f"Model.log_prior must map θ of shape ({self.dim},) to a scalar, got shape "
                f"{getattr(out, 'shape', type(out))}"
            )
        draws = _shape_of(lambda k: self.sample_prior(k, 3), jax.random.key(0))
        if getattr(draws, "shape", None) != (3, self.dim):
            raise ModelError(
                f"Model.sample_prior(key, n) must return shape (n, {self.dim}); for n=3 it returned "
                f"{getattr(draws, 'shape', type(draws))}"
            )

    def check_batch(self, batch: PyTree) -> int:
        """Check a mini-batch against the likelihood and return its size ``B``.

        Every leaf must share the leading (batch) axis and ``log_likelihood`` must return a scalar
        for one row. Checked once per batch structure and shape; raises :class:`ModelError` naming
        what is wrong.
        """
        leaves, treedef = jax.tree_util.tree_flatten(batch)
        if not leaves:
            raise ModelError("the batch is empty: it has no array leaves")
        signature = (treedef, tuple((jnp.shape(x), jnp.result_type(x)) for x in leaves))
        sizes = {jnp.shape(x)[0] if jnp.ndim(x) else None for x in leaves}
        if None in sizes:
            raise ModelError("every leaf of the batch needs a leading batch axis; one is a scalar")
        if len(sizes) != 1:
            raise ModelError(f"the batch's leaves disagree on the batch size: {sorted(sizes)}")
        size = sizes.pop()
        if signature in self._checked_batches:
            return size
        if size < 1:
            raise ModelError("the batch has no rows")
        theta = jax.ShapeDtypeStruct((self.dim,), jnp.float32)
        datum = jax.tree_util.tree_map(lambda x: jax.ShapeDtypeStruct(jnp.shape(x)[1:], jnp.result_type(x)), batch)
        try:
            out = _shape_of(self.log_likelihood, theta, datum)
        except (TypeError, ValueError) as err:
            raise ModelError(
                f"Model.log_likelihood failed on one datum of shape "
                f"{jax.tree_util.tree_map(lambda s: s.shape, datum)} with θ of shape ({self.dim},): "
                f"is the batch of the wrong dimension? ({err})"
            ) from err
        if getattr(out, "shape", None) != ():
            raise ModelError(
                f"Model.log_likelihood must return a scalar for one datum; for a datum of shape "
                f"{jax.tree_util.tree_map(lambda s: s.shape, datum)} it returned shape {out.shape} "
                f"(is the batch of the wrong dimension?)"
            )
        self._checked_batches.add(signature)
        return size

    def batch_log_likelihood(self, thetas: Array, batch: PyTree) -> Array:
        """``log p(x_b|θ_i)`` for every particle and datum: ``(m, d), batch -> (m, B)``."""
        per_datum = jax.vmap(self.log_likelihood, in_axes=(None, 0))
        return jax.vmap(per_datum, in_axes=(0, None))(thetas, batch)

    def log_prior_many(self, thetas: Array) -> Array:
        """``log p(θ_i)`` for every row of ``thetas``: ``(m, d) -> (m,)``."""
        return jax.vmap(self.log_prior)(thetas)


def gaussian_log_density(x: Array, mean: Array, std: float | Array) -> Array:
    """``log N(x; mean, std²)`` summed over the last axis (a helper for model definitions)."""
    z = (x - mean) / std
    return jnp.sum(-0.5 * z**2 - jnp.log(std) - 0.5 * math.log(2 * math.pi), axis=-1)


@dataclass(frozen=True, eq=False)
class ConvertedModel(Model):
    """A :class:`Model` converted from a probabilistic programming language (:func:`pmd.from_pymc`,
    :func:`pmd.from_numpyro`), with the maps back to the language's constrained scale. Compared and
    hashed by identity (its ``layout`` holds slices, which do not hash), as a static argument of
    ``jit`` must be.

    Args (beyond :class:`Model`'s):
        constrain: ``θ (d,) -> {name: array}``: the model's variables at ``θ`` on their constrained scale.
        layout: ``((unconstrained variable name, slice of θ, shape), ...)`` in ``θ``'s order.
        columns: the free variables' flattened constrained values' names (:func:`column_names`).
        to_columns: ``θ (d,) -> (k,)``, the free variables at ``θ`` in :attr:`columns` order.
        from_columns: ``(k,) -> θ (d,)``, the inverse of :attr:`to_columns`.
    """

    constrain: Callable[[Array], dict[str, Array]] | None = None
    layout: tuple[tuple[str, slice, tuple[int, ...]], ...] = ()
    columns: tuple[str, ...] = ()
    to_columns: Callable[[Array], Array] | None = None
    from_columns: Callable[[Array], Array] | None = None


def column_names(name: str, shape: tuple[int, ...]) -> list[str]:
    """``name`` for a scalar, else ``name[i,j,...]`` for every index in C order, 0-based (the
    coordinates of PyMC's and ArviZ's ``InferenceData``, flattened)."""
    if not shape:
        return [name]
    return [f"{name}[{','.join(map(str, index))}]" for index in itertools.product(*map(range, shape))]


def split_flat(values: Array, shapes: list[tuple[int, ...]]) -> list[Array]:
    """A flat vector cut into consecutive blocks of the given ``shapes`` (C order): the inverse of
    concatenating the blocks' ravels, as :attr:`ConvertedModel.columns` lay them out."""
    parts, start = [], 0
    for shape in shapes:
        size = math.prod(shape)
        parts.append(jnp.reshape(values[start:start + size], shape))
        start += size
    return parts
