"""Subset of data (SoD): the exact GP posterior given a random subset of the training set.

The cheapest baseline of section 6 ([35]; Rasmussen & Williams 2006, sec. 8.3.1): draw ``s`` rows
(default ``s = M``, the cost of one ``M × M`` factorisation like the sparse methods), and take the
exact GP posterior given them. As a sparse GP it is the one with ``Z = X_s``: with ``u = f(X_s)``
the posterior of ``u`` given ``y_s`` is exact, and the predictive ``k*ᵀK⁻¹m, k** - Q** + k*ᵀK⁻¹SK⁻¹k*``
is the exact GP's given ``y_s`` (``f*`` and ``y_s`` are independent given ``f(X_s)``). In the
whitened natural parameters that posterior is one prox step with ``γ = 1`` on the subset at scale 1
(:func:`subset_solution`); ``tests/test_sparse_gp_baselines.py`` checks it against Titsias'
posterior with ``Z = X_s`` (float64) and the exact GP on the subset (equal up to the jitter).

Run by :func:`pmd.run`, ``init`` draws the subset, the first step computes the solution and
reports ``visited = s`` and its work (:func:`pmd.interface.work`), the ``s`` rows' likelihood
terms integrated in closed form (``evals = s``, no gradients); later steps change nothing, visit
nothing and evaluate nothing (``lax.cond``).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import jax
import jax.numpy as jnp

from pmd.interface import ConfigError, require_positive_int, work
from pmd.models.sparse_gp import SparseGPPosterior, posterior_from_natural
from pmd.structured.sparse_gp import SparseGPState, natural_step, prior_state, require_sparse_gp

Array = jax.Array


def require_data(model, data: Any, data_size: int) -> dict:
    """The training set ``{"x": (N, d), "y": (N,)}`` a method draws rows from, checked."""
    if data is None:
        raise ConfigError("this method draws rows of the training set: pass it as data=")
    data = {k: jnp.asarray(v) for k, v in dict(data).items()}
    rows = model.check_batch(data)
    if rows != data_size:
        raise ConfigError(f"data has {rows} rows but data_size={data_size}")
    return data


def random_rows(key: Array, data: dict, size: int) -> dict:
    """``size`` rows of ``data`` drawn without replacement."""
    idx = jax.random.choice(key, data["y"].shape[0], (size,), replace=False)
    return {k: v[idx] for k, v in data.items()}


def subset_solution(model, subset: dict) -> SparseGPState:
    """The exact posterior of ``u = f(X_s)`` given ``y_s`` with ``Z = X_s`` (module docstring)."""
    state = prior_state(model, subset["x"][None])
    new, _ = natural_step(model, subset["y"].shape[0], state, subset, jnp.asarray(1.0, subset["y"].dtype))
    return new


class SubsetOfData:
    """The exact GP on ``subset_size`` random training rows (module docstring).

    Args:
        model: the :class:`pmd.models.sparse_gp.SparseGP` (its kernel and noise; ``M`` is unused
            but sets the default subset size).
        data_size: ``N``.
        num_particles: must be 1 (one Gaussian).
        data: the training set ``{"x", "y"}`` (the workflow passes it).
        subset_size: ``s``; default ``M``.
    """

    handles = ("sparse_gp",)  # the target it runs on (workflow.methods.TARGETS)
    method_family = "subset of data"
    reference = "Rasmussen & Williams, Gaussian Processes for Machine Learning, 2006, sec. 8.3.1"

    def __init__(self, model, data_size: int, num_particles: int = 1, data: Any = None,
                 subset_size: int | None = None):
        self.model = require_sparse_gp(model)
        self.data_size = require_positive_int("data_size", data_size)
        if num_particles != 1:
            raise ConfigError(f"SoD keeps one Gaussian: num_particles must be 1, got {num_particles!r}")
        self.num_particles = 1
        self.subset_size = require_positive_int("subset_size", model.num_inducing if subset_size is None
                                                else subset_size)
        if self.subset_size > self.data_size:
            raise ConfigError(f"subset_size={self.subset_size} exceeds the data's {self.data_size} rows")
        self.data = require_data(self.model, data, self.data_size)

    def init(self, key: Array) -> tuple[SparseGPState, dict]:
        """The prior on the subset's inputs and the ``s`` rows drawn with ``key`` (solved by the first step).

        The rows are drawn here, outside any jitted step, and carried in the state, so the training
        set never becomes a compile-time constant of the runner's scan."""
        subset = random_rows(key, self.data, self.subset_size)
        return prior_state(self.model, subset["x"][None]), subset

    def step(self, key: Array, state: tuple[SparseGPState, dict], batch: Any) -> tuple[tuple, dict]:
        """The first step solves on the subset (``visited = s``); later ones change nothing."""
        gp, subset = state
        first = gp.step == 0
        solved = jax.lax.cond(first, lambda rows: subset_solution(self.model, rows), lambda rows: gp, subset)
        solved = replace(solved, step=gp.step + 1)
        rows = jnp.where(first, self.subset_size, 0)
        return (solved, subset), {"visited": rows, **work(rows)}

    def posterior(self, state: tuple[SparseGPState, dict]) -> SparseGPPosterior:
        gp, _ = state
        return posterior_from_natural(self.model, gp.inducing, gp.chol_k, gp.log_weights, gp.prec, gp.shift)
