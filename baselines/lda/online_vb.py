"""Online variational Bayes for LDA (Hoffman, Blei & Bach, NIPS 2010, Algorithm 2): the paper's SVI.

``q(Φ) = Π_k Dir(λ_k)``, ``λ`` started at ``Gamma(100, 1/100)`` draws. Each mini-batch ``b`` of
``B`` documents: the per-document E-step (:func:`pmd.models.lda.variational_estep`) gives the
sufficient statistics ``ŝ``; then ``λ ← (1 - ρ_t) λ + ρ_t (β + (D/B) ŝ)``. The step ``ρ_t`` is H.4's
``η/(n₀ + t^κ)`` or Hoffman's ``(τ₀ + t)^(-κ)`` (:func:`pmd.models.lda.learning_rate`); the latter,
with τ₀ = scikit-learn's ``learning_offset`` and κ its ``learning_decay``, is scikit-learn's
``LatentDirichletAllocation(learning_method="online")`` step for step (the test checks that).

Work (:func:`pmd.interface.work`; for LDA a datum is a document, and one pass over its tokens at
one topic matrix counts one evaluation of its likelihood term): the E-step's ``r`` rounds each
update all ``B`` documents, and the sufficient statistics take one more pass: ``evals = B·(r + 1)``.
The step is the closed-form natural gradient: ``grad_evals = 0``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp

from pmd.interface import ConfigError, require_positive_int, work
from pmd.models.lda import VariationalTopics, learning_rate, random_topics, require_lda, variational_estep

Array = jax.Array


@jax.tree_util.register_dataclass
@dataclass(frozen=True)
class OnlineVBState:
    """The topics' variational parameter ``λ`` (K, W) and the number of updates taken."""

    lam: Array
    step: Array


class OnlineVB:
    """Hoffman et al.'s online VB behind the shared interface (one "particle": ``num_particles = 1``).

    Args:
        model: a :class:`pmd.models.lda.LDA`.
        data_size: ``D``, the training documents.
        step_size: ``{"eta", "n0", "kappa"}`` (H.4) or ``{"tau0", "kappa"}`` (Hoffman; default
            τ₀ = 10, κ = 0.7, scikit-learn's defaults).
        max_iter, tol: the E-step's rounds and its stopping rule (scikit-learn's 100 and 1e-3).
    """

    handles = ("lda",)  # the target it runs on (workflow.methods.TARGETS)
    method_family = "variational inference"
    reference = "Hoffman, Blei & Bach, NIPS 2010"

    def __init__(self, model, data_size: int, num_particles: int = 1, step_size: Any = None,
                 max_iter: int = 100, tol: float = 1e-3):
        self.model, self.data_size, self.num_particles = require_lda(model, data_size, num_particles)
        if self.num_particles != 1:
            raise ConfigError(f"online VB keeps one variational posterior: num_particles must be 1, got {num_particles}")
        self.rate = learning_rate({"tau0": 10.0, "kappa": 0.7} if step_size is None else step_size)
        self.max_iter = require_positive_int("max_iter", max_iter)
        if isinstance(tol, bool) or not isinstance(tol, (int, float)) or not tol > 0:
            raise ConfigError(f"tol must be a positive number, got {tol!r}")
        self.tol = float(tol)
        self._step = jax.jit(self._step_impl)

    def init(self, key: Array) -> OnlineVBState:
        """``λ ~ Gamma(100, 1/100)`` entrywise (Hoffman's ``onlineldavb``, scikit-learn)."""
        lam = random_topics(key, self.model.num_topics, self.model.vocabulary)
        return OnlineVBState(lam, jnp.asarray(0, jnp.int32))

    def step(self, key: Array, state: OnlineVBState, batch: Any) -> tuple[OnlineVBState, dict]:
        """One E-step on the batch and one natural-gradient step on ``λ`` (Algorithm 2)."""
        self.model.check_batch(batch)
        return self._step(key, state, batch)

    def posterior(self, state: OnlineVBState) -> VariationalTopics:
        """``q(Φ) = Π_k Dir(λ_k)``."""
        return VariationalTopics(state.lam)

    def _step_impl(self, key, state, batch):
        _, sstats, rounds = variational_estep(key, batch["words"], batch["mask"], state.lam, self.model.alpha,
                                      self.max_iter, self.tol)
        t = state.step + 1
        rho = jnp.minimum(self.rate(t), 1.0)
        scale = self.data_size / batch["words"].shape[0]
        lam = (1.0 - rho) * state.lam + rho * (self.model.beta + scale * sstats)
        return OnlineVBState(lam, t), {"rho": rho, **work(batch["words"].shape[0] * (rounds + 1))}
