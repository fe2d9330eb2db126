"""The one shape every inference method in pmd-bench has (modelled on BlackJAX's kernels).

``Method(model, data_size=N, num_particles=m, **hyperparameters)`` builds a method; ``init(key)``
returns its state; ``step(key, state, batch)`` is a pure function returning ``(state, info)``;
``posterior(state)`` returns a :class:`pmd.posterior.Posterior`. The runner, the metrics and the
reports rely on nothing else. A method that must know which rows of the data set a batch holds
(PMD's first-pass moves revisit the rows seen so far) says so with a true ``wants_rows``; the runner
then calls ``step(key, state, batch, rows=indices)``. A method whose step reads the whole data set
(PMD's moves, Gibbs sweeps, full-data NPV, tempered SMC) is built with it (``data=``) and says so
with a true ``wants_data``; the runner then calls ``step(..., data=data)`` with the data an argument
of its compiled scan, because an array that a jitted function closes over is a compile-time
constant, serialised into the program and constant-folded by XLA (at H.2's 1.6 million rows:
hundreds of megabytes of program and gigabytes of memory). Called without ``data=``, such a step
uses the data it was built with. A method that can take a batch padded past its rows (the first
``num_valid`` rows are data, the rest are ignored) says so with a true ``pads_batches``; the runner
then gives a run's short last batch the shape of the others (``step(..., num_valid=r)``), so that
one compiled program serves the whole run (a second batch shape is a second compilation of the
whole step: seconds on a CPU, 15-25 s on a GPU for PMD's default).

Every method class also says what it is, as two class attributes: ``method_family`` (a short
name of its family, e.g. ``"sequential Monte Carlo"``; not ``family``, which :class:`baselines.SVI`
takes as a hyperparameter) and ``reference`` (the paper it implements, or the library function it
wraps). ``docs/methods.md`` is generated from them and the constructors' signatures
(:mod:`reports.methods_page`), so the page cannot drift from the code.
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

import jax
import jax.numpy as jnp

from .posterior import Posterior
from .work import WORK

Array = jax.Array
PyTree = Any


class ConfigError(ValueError):
    """A method was built with a hyperparameter it cannot use; the message names it."""


@runtime_checkable
class InferenceMethod(Protocol):
    """An online (mini-batch) approximate inference method."""

    data_size: int
    num_particles: int
    method_family: str  # the family docs/methods.md groups it in (module docstring)
    reference: str  # the paper it implements or the library function it wraps

    def init(self, key: Array) -> PyTree: ...

    def step(self, key: Array, state: PyTree, batch: PyTree) -> tuple[PyTree, dict]: ...

    def posterior(self, state: PyTree) -> Posterior: ...


def take_step(method: InferenceMethod, key: Array, state: PyTree, batch: PyTree, rows: Array,
              data: PyTree = None, num_valid: Array | None = None) -> tuple[PyTree, dict]:
    """``method.step`` on ``batch``, the data set's rows ``rows``, passed on when the method
    ``wants_rows``, the whole data set ``data`` when it ``wants_data``, and ``num_valid`` (the rows
    of a padded batch that are data) when given, which only a method that ``pads_batches`` may be
    (the module docstring): the one call every driver of the interface makes."""
    extra = {}
    if num_valid is not None:
        if not getattr(method, "pads_batches", False):
            raise ConfigError(f"{type(method).__name__} does not take padded batches (its pads_batches is not true)")
        extra["num_valid"] = num_valid
    if getattr(method, "wants_rows", False):
        extra["rows"] = rows
    if data is not None and getattr(method, "wants_data", False):
        extra["data"] = data
    return method.step(key, state, batch, **extra)


def step_data(method: Any, data: PyTree) -> PyTree:
    """The data set a full-data step reads: ``data`` when a driver passed it (checked to have the
    method's ``data_size`` rows), else the set the method was built with (``method.data``)."""
    if data is None:
        return method.data
    rows = {jax.numpy.shape(leaf)[0] for leaf in jax.tree_util.tree_leaves(data)}
    if rows != {method.data_size}:
        raise ConfigError(f"{type(method).__name__}.step: data= has {sorted(rows)} rows, the method was built for "
                          f"data_size={method.data_size}")
    return data


class FullDataStep:
    """Mixin for a method whose step reads the whole data set (built with it as ``data=``): it
    ``wants_data``, and its ``step`` checks the batch and calls the jitted ``_step(key, state, batch,
    data)`` with the data a driver passed, else the data it was built with (:func:`step_data`)."""

    wants_data = True

    def step(self, key: Array, state: PyTree, batch: PyTree, data: PyTree = None) -> tuple[PyTree, dict]:
        """One step on ``data`` (default: the data set given at construction); the batch is checked."""
        self.model.check_batch(batch)
        return self._step(key, state, batch, step_data(self, data))


def work(evals: Any, grad_evals: Any = 0, **others: Any) -> dict:
    """A step's work as its ``info`` entries (:data:`pmd.work.WORK`): ``evals`` likelihood terms
    evaluated (one datum's log-likelihood at one parameter value), ``grad_evals`` gradients of such
    terms, and any other count the step makes by its name (``hvp_evals``, ``pg_draws``,
    ``gram_rows``, ``kernel_pairs``, ``kde_pairs``), each a float32 scalar; the runner charges them
    by :data:`pmd.work.UNITS`. An unknown name raises ``KeyError`` naming it. Float32, not int32:
    one full-data step can pass 2³¹ terms (an HMC stage on 1.6 million rows, 1000 particles and 10
    moves of 100 leapfrog steps is 1.6·10¹² gradients); float32 holds every count up to 2²⁴ exactly
    and larger ones to a relative 6·10⁻⁸."""
    counts = {"evals": evals, "grad_evals": grad_evals, **others}
    unknown = sorted(set(counts) - set(WORK))
    if unknown:
        raise KeyError(f"work counts {unknown} are not among pmd.work.WORK: {', '.join(WORK)}")
    return {name: jnp.asarray(value, jnp.float32) for name, value in counts.items()}


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
