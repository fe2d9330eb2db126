"""A posteriordb posterior as a :class:`pmd.Model` on the unconstrained scale, with its data and
the maps between its parameter ``θ`` and the reference draws' columns."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

import jax
import jax.numpy as jnp
import numpy as np

from pmd_bench.datasets.errors import FormatError

from ...model import Model
from .parameters import Parameters

Array = jax.Array
PyTree = Any

# Every parameter a Stan program leaves flat (an improper prior) gets instead N(0, FLAT_SCALE²) on
# its standardised value: regression coefficients as coefficients of the regression of the
# standardised response on the standardised predictors, a location as (μ - ȳ)/sd(y), a scale as
# σ/sd(y) and a variance as α/var(y) (half-normal). Chosen once for all posteriors from the data's
# scale, not tuned on any reference posterior: a standardised coefficient of 10 would mean one
# predictor sd moving the response by 10 of its sds. Measured at the reference draws, the
# substitutes move the Stein statistics of tests/test_posteriordb_models.py by at most 0.1
# standard error (kilpisjarvi's sigma).
FLAT_SCALE = 10.0


@dataclass(frozen=True, eq=False)
class PosteriordbProblem:
    """One posteriordb posterior: ``model`` (prior, per-datum likelihood, prior sampler on the
    unconstrained scale), the ``data`` it is conditioned on (leading axis: data points; a data set
    that is not i.i.d. is ONE datum whose leaves have a leading axis of 1) and the maps between
    ``θ`` and the reference draws' ``columns`` (Stan's names, e.g. ``beta[1]``).

    ``log_prior(θ) + Σ_n log_likelihood(θ, x_n)`` is the log density of Stan's unconstrained
    parameter, up to a constant, as the posteriordb Stan program defines it (with the proper
    substitutes for flat priors that :data:`FLAT_SCALE` describes).
    """

    name: str
    model: Model
    data: PyTree
    columns: tuple[str, ...]
    iid: bool
    to_constrained: Callable[[Array], Array]
    to_unconstrained: Callable[[Array], Array]

    def constrain(self, thetas: Array) -> Array:
        """``θ (n, d) -> (n, k)``: the reference draws' columns, in :attr:`columns` order."""
        return jax.vmap(self.to_constrained)(jnp.asarray(thetas, jnp.float32))

    def unconstrain(self, draws: Array) -> Array:
        """``(n, k) -> θ (n, d)``: the inverse of :meth:`constrain`."""
        return jax.vmap(self.to_unconstrained)(jnp.asarray(draws, jnp.float32))

    def log_density(self, theta: Array) -> Array:
        """``log p(θ) + Σ_n log p(x_n|θ)`` over all of :attr:`data`, for one ``θ (d,)``."""
        per_datum = jax.vmap(self.model.log_likelihood, in_axes=(None, 0))(theta, self.data)
        return self.model.log_prior(theta) + jnp.sum(per_datum)


def _stored(value: np.ndarray) -> np.ndarray:
    value = np.asarray(value)
    return value.astype(np.int32 if value.dtype.kind in "iu" else np.float32)


def build(
    name: str,
    parameters: Parameters,
    log_likelihood: Callable[[tuple[Array, ...], PyTree], Array],
    data: dict[str, np.ndarray],
    *,
    iid: bool,
    columns: tuple[str, ...] | None = None,
    to_constrained: Callable[[Array], Array] | None = None,
    to_unconstrained: Callable[[Array], Array] | None = None,
) -> PosteriordbProblem:
    """Assemble a :class:`PosteriordbProblem` from a program's ``parameters`` and its likelihood.

    ``log_likelihood(values, datum)`` takes the blocks' constrained values (:meth:`Parameters.values`).
    The columns and maps default to the parameters' own; a program whose reference draws hold
    transformed parameters instead passes its own. ``data`` is stored as float32 (int32 for
    integer fields); without ``iid`` every leaf gains a leading axis of 1 (one datum).
    """
    data = {key: _stored(value)[None] if not iid else _stored(value) for key, value in data.items()}
    model = Model(
        dim=parameters.dim,
        log_prior=parameters.log_prior,
        log_likelihood=lambda theta, datum: log_likelihood(parameters.values(theta), datum),
        sample_prior=parameters.sample_prior,
        name=f"posteriordb-{name}",
    )
    model.check_batch(data)
    return PosteriordbProblem(
        name=name,
        model=model,
        data=data,
        columns=columns or parameters.columns,
        iid=iid,
        to_constrained=to_constrained or parameters.constrain,
        to_unconstrained=to_unconstrained or parameters.unconstrain,
    )


def fields(posterior: str, data: dict[str, np.ndarray], **shapes: tuple[int | None, ...]) -> list[np.ndarray]:
    """The Stan data fields named by ``shapes`` as float64 arrays, in that order.

    Each shape gives the field's dimensions (``None``: any length; ``()``: a scalar). Raises
    :class:`~datasets.errors.FormatError` naming the posterior and field when one is missing or
    has another shape.
    """
    out = []
    for key, shape in shapes.items():
        if key not in data:
            raise FormatError(f"{posterior}: the Stan data has no field {key!r} (fields: {', '.join(data)})")
        value = np.asarray(data[key], np.float64)
        if value.ndim != len(shape) or any(want not in (None, got) for want, got in zip(shape, value.shape)):
            raise FormatError(f"{posterior}: Stan data field {key!r} has shape {value.shape}, expected {shape}")
        out.append(value)
    return out
