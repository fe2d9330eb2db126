"""Stochastic gradient Riemannian Langevin dynamics for LDA (Patterson & Teh, NIPS 2013, sec. 5).

The expanded-mean parameterisation: unnormalised topics ``θ_kw > 0`` with ``π_k = θ_k / Σ_w θ_kw``
and prior ``θ_kw ~ Gamma(β, 1)`` (so ``π_k ~ Dir(β)``). One step on a mini-batch ``b`` of ``B``
documents (their eq. 11 with the mirroring of section 3):

``θ_kw ← | θ_kw + (ε_t/2) (β - θ_kw + (D/B) Σ_{d∈b} E[n_dkw - π_kw n_dk·]) + θ_kw^{1/2} ξ_kw |``,
``ξ_kw ~ N(0, ε_t)``,

the expectation over ``z_d | x_d, π, α`` (``θ_d`` integrated out) estimated by Gibbs sweeps, averaged
over those after burn-in (:func:`pmd.models.lda.gibbs_assignments`, their Algorithm's local step).
``ε_t`` is H.4's ``η/(n₀ + t^κ)``. ``θ`` starts at ``Gamma(1, 1)`` draws (Patterson & Teh's code;
the ``Gamma(β, 1)`` prior at ``β = 0.01`` puts nearly all of a topic on a handful of words).

The posterior is the last ``m`` states' ``π`` with equal weights (:class:`TopicSamples`); H.4
estimates held-out ``θ_d`` for SGRLD by Gibbs sweeps, as for PMD.

Work (:func:`pmd.interface.work`; a datum is a document, one pass over its tokens at one topic
matrix one evaluation): the initial draw of ``z_d`` and the ``S`` sweeps, ``evals = B·(S + 1)``; the
drift is the gradient of each batch document's log-likelihood (Fisher's identity, the expectation
estimated from those sweeps): ``grad_evals = B``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp

from pmd.interface import work
from pmd.models.lda import (TopicSamples, gibbs_assignments, learning_rate, require_lda, require_sweeps,
                            topic_word_counts)

Array = jax.Array


@jax.tree_util.register_dataclass
@dataclass(frozen=True)
class SGRLDState:
    """The chain's ``θ`` (K, W), the ring of the last ``m`` retained ``π`` (m, K, W), and the step."""

    theta: Array
    retained: Array
    step: Array


class SGRLD:
    """SGRLD for LDA with the interface shared by every method.

    Args:
        model: a :class:`pmd.models.lda.LDA`.
        data_size: ``D``, the training documents.
        num_particles: ``m``, how many of the last states make up the posterior.
        step_size: ``{"eta", "n0", "kappa"}`` (H.4) or ``{"tau0", "kappa"}``.
        sweeps, burn_in: Gibbs sweeps per visited document and how many precede the average.
    """

    handles = ("lda",)  # the target it runs on (workflow.methods.TARGETS)
    method_family = "stochastic-gradient MCMC"
    reference = "Patterson & Teh, NIPS 2013"

    def __init__(self, model, data_size: int, num_particles: int = 1, step_size: Any = None, sweeps: int = 10,
                 burn_in: int = 5):
        self.model, self.data_size, self.num_particles = require_lda(model, data_size, num_particles)
        self.rate = learning_rate({"eta": 0.01, "n0": 1.0, "kappa": 0.55} if step_size is None else step_size)
        self.sweeps, self.burn_in = require_sweeps(sweeps, burn_in)
        self._step = jax.jit(self._step_impl)

    def init(self, key: Array) -> SGRLDState:
        """``θ ~ Gamma(1, 1)``; the ring holds its ``π`` until it is overwritten."""
        theta = jax.random.gamma(key, 1.0, (self.model.num_topics, self.model.vocabulary), jnp.float32)
        pi = theta / theta.sum(axis=1, keepdims=True)
        return SGRLDState(theta, jnp.broadcast_to(pi, (self.num_particles, *pi.shape)), jnp.asarray(0, jnp.int32))

    def step(self, key: Array, state: SGRLDState, batch: Any) -> tuple[SGRLDState, dict]:
        """One Langevin step (Patterson & Teh's eq. 11) on the batch."""
        self.model.check_batch(batch)
        return self._step(key, state, batch)

    def posterior(self, state: SGRLDState) -> TopicSamples:
        """The last ``m`` states' ``π`` with equal weights."""
        m = self.num_particles
        return TopicSamples(state.retained, jnp.full((m,), -jnp.log(m), jnp.float32))

    def _step_impl(self, key, state, batch):
        words, mask = batch["words"], batch["mask"]
        k_gibbs, k_noise = jax.random.split(key)
        theta = state.theta
        pi = theta / theta.sum(axis=1, keepdims=True)
        _, soft = gibbs_assignments(k_gibbs, words, mask, pi, self.model.alpha, self.sweeps, self.burn_in)
        n_kw = topic_word_counts(words, soft, self.model.vocabulary)
        t = state.step + 1
        eps = self.rate(t)
        scale = self.data_size / words.shape[0]
        drift = self.model.beta - theta + scale * (n_kw - pi * n_kw.sum(axis=1, keepdims=True))
        noise = jnp.sqrt(eps * theta) * jax.random.normal(k_noise, theta.shape, theta.dtype)
        theta = jnp.abs(theta + 0.5 * eps * drift + noise)
        theta = jnp.maximum(theta, 1e-30)  # |·| can return an exact 0, where π would lose the word for good
        pi = theta / theta.sum(axis=1, keepdims=True)
        retained = state.retained.at[state.step % self.num_particles].set(pi)
        size = words.shape[0]
        return SGRLDState(theta, retained, t), {"epsilon": eps, **work(size * (self.sweeps + 1), size)}
