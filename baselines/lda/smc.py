"""Sequential Monte Carlo for LDA (Canini, Shi & Griffiths, AISTATS 2009, Algorithm 3): one pass.

Each particle holds topic assignments ``z`` of every document read so far and the counts ``n_kw``
they imply; ``Φ`` and ``θ_d`` are integrated out. A new document's tokens are assigned one after
the other from ``p(z_dn = k | z_{<}, x) ∝ (n_kw + β)/(n_k + Wβ) · (n_dk^{<n} + α)`` and the
particle's weight is multiplied by each token's predictive probability
``Σ_k (n_kw + β)/(n_k + Wβ) · (n_dk^{<n} + α)/(n - 1 + Kα)``. When the ESS falls below
``threshold · m`` the particles are resampled.

Mini-batches (``B`` documents per step, as for every method here): the batch's documents are
assigned side by side, each seeing the counts of the documents of earlier batches and its own
earlier tokens but not those of the other documents of its batch; their counts join ``n_kw``
after the batch. Canini et al. process documents one at a time; with ``B`` much smaller than
``D`` the difference is that of a batch's worth of counts.

Rejuvenation (their "rejuvenation sequence"): after every step, each particle resamples the
assignments of ``rejuvenate`` distinct documents drawn uniformly from those read so far by one sweep of
collapsed Gibbs (``p(z_dn = k | rest) ∝ (n_kw^{-dn} + β)/(n_k^{-dn} + Wβ) · (n_dk^{-n} + α)``), the
documents side by side: a document's topic counts follow its own changes during the sweep; the
topic-word counts are those from before the sweep less the token's own assignment (the
documents' moves join ``n_kw`` after the sweep, as in AD-LDA). With ``m = 1`` (the paper's
run: "one particle is used in SMC and PMD") this is Canini et al.'s incremental Gibbs sampler.

One pass: after ``D`` documents the method has its answer and further steps report
``visited = 0``; the batch that straddles the end of the pass is used for its first-pass rows.
The posterior is :class:`pmd.models.lda.TopicSamples` of the particles' ``(n_kw + β)/(n_k + Wβ)``.

Work (:func:`pmd.interface.work`; a datum is a document, one pass over its tokens one evaluation
of its likelihood term): per particle, the sequential assignment of the ``B`` batch documents (all
``B``, those of a straddling batch past the pass end masked) and the rejuvenation sweep over
``R = rejuvenate`` documents: ``evals = m·(B + R)``, no gradients. A step after the pass is skipped
(``lax.cond``) and evaluates nothing.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp

from pmd.interface import ConfigError, require_fraction, step_data, work
from pmd.models.lda import TopicSamples, categorical_rows, require_lda, topic_word_counts
from pmd.weights import categorical_draw, effective_sample_size, normalize

Array = jax.Array


@jax.tree_util.register_dataclass
@dataclass(frozen=True)
class LDASMCState:
    """Per particle: assignments of every document ``z`` (m, D, L) and counts ``n_kw`` (m, K, W);
    normalised log-weights (m,); which documents were read (D,); documents read; step."""

    z: Array
    counts: Array
    log_weights: Array
    read: Array
    seen: Array
    step: Array


def categorical_rows(u: Array, probs: Array) -> Array:
    """Inverse-CDF draws: one index per row of unnormalised ``probs`` (B, K) from uniforms ``u`` (B,)."""
    cdf = jnp.cumsum(probs, axis=-1)
    return jnp.minimum(jnp.sum(cdf < (u * cdf[:, -1])[:, None], axis=-1), probs.shape[-1] - 1)


class LDASMC:
    """Canini et al.'s particle filter for LDA with rejuvenation, behind the shared interface.

    Args:
        model: a :class:`pmd.models.lda.LDA`.
        data_size: ``D``, the training documents.
        num_particles: ``m`` (the paper: 1).
        data: the whole training set as :func:`pmd.models.lda.tokens` arrays (rejuvenation revisits
            documents read before; the workflow passes it).
        threshold: resample when the ESS falls below ``threshold · m``.
        rejuvenate: documents re-sampled per particle after every step (0: none).
    """

    handles = ("lda",)  # the target it runs on (workflow.methods.TARGETS)
    method_family = "sequential Monte Carlo"
    reference = "Canini, Shi & Griffiths, AISTATS 2009"

    def __init__(self, model, data_size: int, num_particles: int = 1, data: Any = None, threshold: float = 0.5,
                 rejuvenate: int = 100):
        self.model, self.data_size, self.num_particles = require_lda(model, data_size, num_particles)
        if data is None:
            raise ConfigError("SMC for LDA rejuvenates documents read before: pass the training set as data=")
        rows = self.model.check_batch(data)
        if rows != self.data_size:
            raise ConfigError(f"data has {rows} documents but data_size={data_size}")
        self.data = {"words": jnp.asarray(data["words"]), "mask": jnp.asarray(data["mask"])}
        self.threshold = require_fraction("threshold", threshold)
        if isinstance(rejuvenate, bool) or not isinstance(rejuvenate, int) or rejuvenate < 0:
            raise ConfigError(f"rejuvenate must be a non-negative integer, got {rejuvenate!r}")
        if rejuvenate > self.data_size:
            raise ConfigError(f"rejuvenate={rejuvenate} exceeds the {self.data_size} documents")
        self.rejuvenate = rejuvenate
        self._step = jax.jit(self._step_impl)

    def init(self, key: Array) -> LDASMCState:
        """No document read: empty counts, equal weights."""
        del key
        m, (d, length) = self.num_particles, self.data["words"].shape
        k, w = self.model.num_topics, self.model.vocabulary
        zero = jnp.asarray(0, jnp.int32)
        return LDASMCState(jnp.zeros((m, d, length), jnp.int32), jnp.zeros((m, k, w), jnp.float32),
                           jnp.full((m,), -jnp.log(m), jnp.float32), jnp.zeros(d, bool), zero, zero)

    wants_data = True  # rejuvenation revisits documents read before (pmd.interface)

    def step(self, key: Array, state: LDASMCState, batch: Any, data: Any = None) -> tuple[LDASMCState, dict]:
        """Assign the batch's new documents, reweight, resample if needed, rejuvenate among the
        documents of ``data`` read so far (default: the training set given at construction)."""
        self.model.check_batch(batch)
        if "doc" not in batch:
            raise ConfigError("SMC for LDA needs the documents' row indices: batch['doc'] (pmd.models.lda.tokens)")
        data = step_data(self, data)
        return self._step(key, state, batch, {"words": data["words"], "mask": data["mask"]})

    def posterior(self, state: LDASMCState) -> TopicSamples:
        """``Σ_i w_i δ(Φ̂^i)``, ``Φ̂^i_kw = (n^i_kw + β)/(n^i_k + Wβ)``."""
        beta = self.model.beta
        topics = (state.counts + beta) / (state.counts.sum(axis=-1, keepdims=True) + self.model.vocabulary * beta)
        return TopicSamples(topics, state.log_weights)

    # -- one particle ------------------------------------------------------------------------------
    def _assign(self, key, counts, words, mask):
        """Sequential assignment of new documents ``(B, L)``: their ``z`` and the log predictive."""
        k_topics, alpha, beta, w = self.model.num_topics, self.model.alpha, self.model.beta, self.model.vocabulary
        phi_w = (jnp.take(counts, words, axis=1) + beta) / (counts.sum(axis=1)[:, None, None] + w * beta)  # (K,B,L)
        u = jax.random.uniform(key, words.T.shape)

        def token(doc_counts, inputs):
            pw, m, ul = inputs  # (K, B), (B,), (B,)
            probs = pw.T * (doc_counts + alpha)  # (B, K)
            total = probs.sum(axis=1)
            pred = total / (doc_counts.sum(axis=1) + k_topics * alpha)
            z = categorical_rows(ul, probs)
            doc_counts = doc_counts + jax.nn.one_hot(z, k_topics) * m[:, None]
            return doc_counts, (z, jnp.where(m, jnp.log(pred), 0.0))

        start = jnp.zeros((words.shape[0], k_topics), jnp.float32)
        _, (z, logp) = jax.lax.scan(token, start, (jnp.moveaxis(phi_w, 2, 0), mask.T, u))
        return z.T, logp.sum()

    def _rejuvenate(self, key, counts, z_all, read, data):
        """One collapsed-Gibbs sweep over ``rejuvenate`` documents drawn among those read."""
        k_topics, alpha, beta, w = self.model.num_topics, self.model.alpha, self.model.beta, self.model.vocabulary
        k_docs, k_u = jax.random.split(key)
        # distinct documents, uniformly among those read (Gumbel top-k); fewer if fewer were read
        scores, docs = jax.lax.top_k(jnp.where(read, jax.random.gumbel(k_docs, read.shape), -jnp.inf),
                                     self.rejuvenate)
        words, z_old = data["words"][docs], z_all[docs]
        mask = data["mask"][docs] & (scores > -jnp.inf)[:, None]
        doc_counts = jax.vmap(lambda zz, mm: (jax.nn.one_hot(zz, k_topics) * mm[:, None]).sum(0))(z_old, mask)
        u = jax.random.uniform(k_u, words.T.shape)

        def token(dc, inputs):
            wl, m, zl, ul = inputs
            old = jax.nn.one_hot(zl, k_topics) * m[:, None]
            n_w = counts[:, wl].T - old  # (R, K): n_kw^{-dn} for the token's word
            n_k = counts.sum(axis=1)[None, :] - old
            probs = (n_w + beta) / (n_k + w * beta) * (dc - old + alpha)
            z = jnp.where(m, categorical_rows(ul, probs), zl)
            new = jax.nn.one_hot(z, k_topics) * m[:, None]
            return dc - old + new, z

        _, z_new = jax.lax.scan(token, doc_counts, (words.T, mask.T, z_old.T, u))
        z_new = z_new.T
        delta = (topic_word_counts(words, jax.nn.one_hot(z_new, k_topics) * mask[..., None], w)
                 - topic_word_counts(words, jax.nn.one_hot(z_old, k_topics) * mask[..., None], w))
        return counts + delta, z_all.at[docs].set(z_new)

    def _step_impl(self, key, state, batch, data):
        """Assign, reweight, resample and rejuvenate; once the pass is over, skip the step (``lax.cond``)."""
        fresh = jnp.clip(self.data_size - state.seen, 0, batch["words"].shape[0])
        return jax.lax.cond(fresh > 0, lambda: self._read(key, state, batch, data, fresh),
                            lambda: self._after_pass(state, fresh))

    def _after_pass(self, state, fresh):
        new = LDASMCState(state.z, state.counts, state.log_weights, state.read, state.seen, state.step + 1)
        info = {"ess": effective_sample_size(state.log_weights), "resampled": jnp.asarray(False), "visited": fresh}
        return new, {**info, **work(0)}

    def _read(self, key, state, batch, data, fresh):
        words, mask, docs = batch["words"], batch["mask"], batch["doc"]
        m, size, k_topics = self.num_particles, words.shape[0], self.model.num_topics
        new_rows = jnp.arange(size) < fresh
        mask = mask & new_rows[:, None]
        k_assign, k_resample, k_rejuv = jax.random.split(key, 3)
        z, logp = jax.vmap(self._assign, in_axes=(0, 0, None, None))(jax.random.split(k_assign, m), state.counts,
                                                                      words, mask)
        added = jax.vmap(lambda zz: topic_word_counts(words, jax.nn.one_hot(zz, k_topics) * mask[..., None],
                                                      self.model.vocabulary))(z)
        counts = state.counts + added
        # rows of the straddling batch that belong to the next pass keep their first-pass assignments
        z_all = jax.vmap(lambda za, zz: za.at[docs].set(jnp.where(new_rows[:, None], zz, za[docs])))(state.z, z)
        read = state.read.at[docs].set(state.read[docs] | new_rows)
        log_w = normalize(state.log_weights + logp)
        ess = effective_sample_size(log_w)
        resample = ess < self.threshold * m
        idx = jnp.where(resample, categorical_draw(k_resample, log_w, m), jnp.arange(m))
        log_w = jnp.where(resample, jnp.full((m,), -jnp.log(m), log_w.dtype), log_w)
        counts, z_all = counts[idx], z_all[idx]
        if self.rejuvenate:
            counts, z_all = jax.vmap(self._rejuvenate, in_axes=(0, 0, 0, None, None))(
                jax.random.split(k_rejuv, m), counts, z_all, read, data)
        new = LDASMCState(z_all, counts, log_w, read, state.seen + fresh, state.step + 1)
        return new, {"ess": ess, "resampled": resample, "visited": fresh, **work(m * (size + self.rejuvenate))}
