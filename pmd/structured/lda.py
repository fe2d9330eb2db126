"""Structured Particle Mirror Descent for LDA (Dai et al. 2016, Appendix F.2).

The iterate is ``q(Z, Φ) ≈ Σ_i w_i δ(Z^i) Dir(Φ | β^i)``: particles over the topic assignments
``Z``, each carrying the closed-form Dirichlet ``q(Φ | Z^i)``. A particle's assignments ``z_d^i``
are instantiated only when document ``d`` is visited ("conceptually" constructed particles), so a
particle is just its ``β^i`` (K × W) and its weight. One step on a mini-batch ``b`` of ``B``
documents, with ``ρ_t = γ̃_t`` (F.2's ``γ_t / D``; H.4's ``η/(n₀ + t^κ)``, capped at 1):

1. **assignments** ``z_d^i`` for ``d ∈ b``, drawn by Gibbs sweeps (:func:`pmd.models.lda.gibbs_assignments`)
   from ``p(z_d | x_d, Φ = E[Φ | β^i], α)`` with ``θ_d`` integrated out. F.2 leaves the draw of
   ``z_d`` unstated; a draw from the conditional the prox-mapping's ``q(Z)`` factor is built
   from, with ``Φ`` at the particle's mean, is what the authors' collapsed update suggests (and
   what SGRLD's local step does).
2. **topics**, F.2's mini-batch update:
   ``β^i ← (1 - ρ_t) β^i + ρ_t β₀ + ρ_t (D/B) Σ_{d∈b} Σ_n n̂_dn^i(k) δ(x_dn = w)``, where the
   counts ``n̂`` are, by default (``counts="average"``), the one-hot assignments averaged over the
   sweeps after burn-in, and with ``counts="sample"`` the last sweep's ``δ(z_dn^i = k)``. The paper
   runs PMD "in the same setting as [1, 27]"; [27] is Mimno, Hoffman & Blei (2012), whose hybrid
   stochastic inference averages the post-burn-in Gibbs samples into the sufficient statistics.
   The update is linear in the counts, so the average of draws from the same conditional has the
   last sweep's expectation (once the sweeps have mixed) and less variance
   (``tests/test_lda_methods.py`` measures both). On the Wikipedia corpus at the default config's
   settings (2 passes, one seed) it took the final held-out log-perplexity from 7.43 to 7.28 at 10
   sweeps, where more sampled sweeps changed nothing (7.43); 10 sweeps with 5 of burn-in is the
   default, the budget SGRLD's local step gets too.
3. **weights** (``m > 1``): ``log w_i ← (1 - ρ_t) log w_i + ρ_t (D/B) Σ_{d∈b} log p̂(x_d | β^i)``
   (normalised), the prox-mapping's ``q_t^{1-γ̃} · (likelihood)^{Dγ̃}`` on the Z-marginal. The
   document likelihood ``p̂(x_d | β^i) = Π_n Σ_k θ̂_dk E[Φ_k x_dn]``, with ``θ̂_d`` H.4's estimate
   from the sweeps after burn-in, stands in for F.2's closed form ``p̃(x_d | z_d, Z^i)`` (whose
   text is cut from the appendix) — the same predictive that weights Canini et al.'s particles.
   When the ESS falls below ``threshold · m`` the particles are resampled (multinomially) and
   their weights reset.

The posterior is :class:`pmd.models.lda.TopicSamples` of the particles' ``E[Φ | Z^i] = β^i / Σ_w β^i``
with weights ``w_i``; held-out ``θ_d`` come from Gibbs sweeps (H.4: "for PMD, SMC and SGRLD").
The paper runs ``m = 1`` ("one particle is used in SMC and PMD to save the cost").

Work (:func:`pmd.interface.work`; a datum is a document, one pass over its tokens at one topic
matrix one evaluation): per particle and batch document, the initial draw of ``z_d``, the ``S``
sweeps and the predictive ``p̂(x_d | β^i)``: ``evals = B·m·(S + 2)``, no gradients.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp

from pmd.interface import require_choice, require_fraction, work
from pmd.models.lda import (TopicSamples, doc_topic_estimate, gibbs_assignments, learning_rate, require_lda,
                            require_sweeps, topic_word_counts)
from pmd.weights import categorical_draw, effective_sample_size, normalize

Array = jax.Array


@jax.tree_util.register_dataclass
@dataclass(frozen=True)
class StructuredLDAState:
    """Every particle's Dirichlet parameter ``β^i`` (m, K, W), normalised log-weights (m,) and the step."""

    beta: Array
    log_weights: Array
    step: Array


def mean_topics(beta: Array) -> Array:
    """``E[Φ | Z] = β / Σ_w β`` for Dirichlet parameters ``(..., K, W)``."""
    return beta / beta.sum(axis=-1, keepdims=True)


class StructuredPMDLDA:
    """Structured PMD for LDA (F.2) with the interface shared by every method.

    Args:
        model: a :class:`pmd.models.lda.LDA`.
        data_size: ``D``, the training documents.
        num_particles: ``m`` (the paper: 1).
        step_size: ``{"eta", "n0", "kappa"}`` (H.4's ``η/(n₀ + t^κ)``) or ``{"tau0", "kappa"}``.
        sweeps, burn_in: Gibbs sweeps per visited document and how many of them precede the
            averaged counts and ``θ̂_d``.
        counts: ``"average"`` (the post-burn-in sweeps' mean, Mimno et al. 2012) or ``"sample"``
            (the last sweep's assignments) in the topics' update.
        threshold: resample when the ESS falls below ``threshold · m``.
    """

    method_family = "particle mirror descent"
    reference = "Dai, He, Dai & Song, AISTATS 2016, Appendix F.2"

    def __init__(self, model, data_size: int, num_particles: int = 1, step_size: Any = None, sweeps: int = 10,
                 burn_in: int = 5, threshold: float = 0.5, counts: str = "average"):
        self.model, self.data_size, self.num_particles = require_lda(model, data_size, num_particles)
        self.rate = learning_rate({"eta": 1.0, "n0": 10.0, "kappa": 0.7} if step_size is None else step_size)
        self.sweeps, self.burn_in = require_sweeps(sweeps, burn_in)
        self.threshold = require_fraction("threshold", threshold)
        self.counts = require_choice("counts", counts, ("average", "sample"))
        self._step = jax.jit(self._step_impl)

    def init(self, key: Array) -> StructuredLDAState:
        """``q_1(Φ | Z^i) = Dir(β₀)`` for every particle (the prior), equal weights.

        The particles start identical; the first visited documents' random assignments break the
        symmetry between topics (and between particles)."""
        del key
        m, k, w = self.num_particles, self.model.num_topics, self.model.vocabulary
        return StructuredLDAState(jnp.full((m, k, w), self.model.beta, jnp.float32),
                                  jnp.full((m,), -jnp.log(m), jnp.float32), jnp.asarray(0, jnp.int32))

    def step(self, key: Array, state: StructuredLDAState, batch: Any) -> tuple[StructuredLDAState, dict]:
        """Assignments for the batch's documents, then F.2's update of every ``β^i`` and weight."""
        self.model.check_batch(batch)
        return self._step(key, state, batch)

    def posterior(self, state: StructuredLDAState) -> TopicSamples:
        """``Σ_i w_i δ(E[Φ | Z^i])``."""
        return TopicSamples(mean_topics(state.beta), state.log_weights)

    def _particle(self, key, beta, words, mask):
        """One particle's batch counts ``n_kw`` (``counts``: averaged or last sweep) and its log ``p̂(x_b | β^i)``."""
        phi = mean_topics(beta)
        z, soft = gibbs_assignments(key, words, mask, phi, self.model.alpha, self.sweeps, self.burn_in)
        hard = jax.nn.one_hot(z, self.model.num_topics, dtype=beta.dtype) * mask[..., None]
        theta = doc_topic_estimate(soft, self.model.alpha)
        p = jnp.einsum("bk,kbl->bl", theta, jnp.take(phi, words, axis=1))
        loglik = jnp.sum(jnp.where(mask, jnp.log(p + 1e-30), 0.0))
        used = hard if self.counts == "sample" else soft
        return topic_word_counts(words, used, self.model.vocabulary), loglik

    def _step_impl(self, key, state, batch):
        words, mask = batch["words"], batch["mask"]
        m = self.num_particles
        k_gibbs, k_resample = jax.random.split(key)
        counts, loglik = jax.vmap(self._particle, in_axes=(0, 0, None, None))(
            jax.random.split(k_gibbs, m), state.beta, words, mask)
        t = state.step + 1
        rho = jnp.minimum(self.rate(t), 1.0)
        scale = self.data_size / words.shape[0]
        beta = (1.0 - rho) * state.beta + rho * (self.model.beta + scale * counts)
        log_w = normalize((1.0 - rho) * state.log_weights + rho * scale * loglik)
        ess = effective_sample_size(log_w)
        resample = ess < self.threshold * m
        idx = jnp.where(resample, categorical_draw(k_resample, log_w, m), jnp.arange(m))
        log_w = jnp.where(resample, jnp.full((m,), -jnp.log(m), log_w.dtype), log_w)
        return StructuredLDAState(beta[idx], log_w, t), {"rho": rho, "ess": ess, "resampled": resample,
                                                         **work(words.shape[0] * m * (self.sweeps + 2))}
