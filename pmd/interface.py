"""The one shape every inference method in pmd-bench has (modelled on BlackJAX's kernels).

``Method(model, data_size=N, num_particles=m, **hyperparameters)`` builds a method; ``init(key)``
returns its state; ``step(key, state, batch)`` is a pure function returning ``(state, info)``;
``posterior(state)`` returns a :class:`pmd.posterior.Posterior`. The runner, the metrics and the
reports rely on nothing else. A method that must know which rows of the data set a batch holds
(PMD's first-pass moves revisit the rows seen so far) says so with a true ``wants_rows``; the runner
then calls ``step(key, state, batch, rows=indices)``.
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

import jax

from .posterior import Posterior

Array = jax.Array
PyTree = Any


class ConfigError(ValueError):
    """A method was built with a hyperparameter it cannot use; the message names it."""


@runtime_checkable
class InferenceMethod(Protocol):
    """An online (mini-batch) approximate inference method."""

    data_size: int
    num_particles: int

    def init(self, key: Array) -> PyTree: ...

    def step(self, key: Array, state: PyTree, batch: PyTree) -> tuple[PyTree, dict]: ...

    def posterior(self, state: PyTree) -> Posterior: ...


def take_step(method: InferenceMethod, key: Array, state: PyTree, batch: PyTree, rows: Array) -> tuple[PyTree, dict]:
    """``method.step`` on ``batch``, the data set's rows ``rows``, passed on when the method
    ``wants_rows`` (the module docstring): the one call every driver of the interface makes."""
    if getattr(method, "wants_rows", False):
        return method.step(key, state, batch, rows=rows)
    return method.step(key, state, batch)


def require_positive_int(name: str, value: Any) -> int:
    """Return ``value`` if it is an int ≥ 1, else raise :class:`ConfigError` naming ``name``."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ConfigError(f"{name} must be a positive integer, got {value!r}")
    return value


def require_fraction(name: str, value: Any, *, low: float = 0.0, high: float = 1.0) -> float:
    """Return ``value`` if ``low ≤ value ≤ high``, else raise :class:`ConfigError` naming ``name``."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not low <= value <= high:
        raise ConfigError(f"{name} must be a number in [{low}, {high}], got {value!r}")
    return float(value)


def require_choice(name: str, value: Any, choices: tuple[str, ...]) -> str:
    """Return ``value`` if it is one of ``choices``, else raise :class:`ConfigError` naming ``name``."""
    if value not in choices:
        raise ConfigError(f"{name} must be one of {', '.join(choices)}, got {value!r}")
    return value
