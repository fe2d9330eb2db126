"""A small LDA corpus drawn in memory from the generative model, with its truth, for the LDA tests."""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import jax
import jax.numpy as jnp
import numpy as np

from pmd_bench.datasets.corpus import split_halves
from pmd_bench.datasets.synthetic import sample_lda_corpus
from pmd.models import lda

TOPICS, WORDS, TRAIN, HELDOUT, LENGTH = 4, 60, 400, 100, 60


@dataclass(frozen=True)
class SmallCorpus:
    model: lda.LDA
    counts: object  # training CSR
    train: dict
    estimation: dict
    evaluation: dict
    topics: np.ndarray

    def log_perplexity(self, posterior, seed: int = 0) -> float:
        """Eq. 19 with 8 Gibbs sweeps (4 burn-in) per held-out document: the evaluation's own
        Monte Carlo error is then far below the tests' margins (the tests check gaps of 0.05 nats)."""
        return lda.heldout_log_perplexity(posterior, jax.random.key(seed), self.estimation, self.evaluation,
                                          self.model.alpha, sweeps=8, burn_in=4)

    def unigram_log_perplexity(self) -> float:
        """The same estimator with every topic the training corpus's word frequencies (+β): the
        best one-topic model, which any topic model must beat."""
        freq = np.asarray(self.counts.sum(axis=0)).ravel() + self.model.beta
        topics = np.tile(freq / freq.sum(), (1, self.model.num_topics, 1))
        return self.log_perplexity(lda.equally_weighted(jnp.asarray(topics, jnp.float32)))

    def truth_log_perplexity(self) -> float:
        """The same estimator with the true topics: what an exact posterior can at best approach."""
        return self.log_perplexity(lda.equally_weighted(jnp.asarray(self.topics[None], jnp.float32)))


@lru_cache(maxsize=1)
def small_corpus(seed: int = 0) -> SmallCorpus:
    """``TRAIN + HELDOUT`` documents of mean length ``LENGTH`` over ``WORDS`` words from ``TOPICS``
    topics (``α = 0.1``, topics ``Dir(0.05)``: sparse but overlapping); the model uses H.4's priors."""
    rng = np.random.default_rng(seed)
    counts, phi, _ = sample_lda_corpus(TRAIN + HELDOUT, WORDS, TOPICS, LENGTH, 0.1, 0.05, rng)
    estimation, evaluation = split_halves(counts[TRAIN:], rng)
    return SmallCorpus(lda.LDA(TOPICS, WORDS), counts[:TRAIN], lda.tokens(counts[:TRAIN]), lda.tokens(estimation),
                       lda.tokens(evaluation), phi)


def fit_restarts(method, data: dict, seeds: int, batch_size: int, passes: float):
    """Run ``method`` from ``seeds`` random starts side by side (one ``vmap``, one compilation) over
    the same batches; returns the list of final states. LDA's posterior has many local modes
    (topics merged or split), so a check of topic recovery picks among restarts as a user would:
    by held-out perplexity, never by the truth."""
    from pmd.runner import batch_indices

    rows = data["words"].shape[0]
    steps = int(np.ceil(passes * rows / batch_size))
    idx = jnp.asarray(batch_indices(0, rows, batch_size, steps))
    keys = jax.random.split(jax.random.key(1), seeds)
    states = jax.vmap(method.init)(keys)
    device = {k: jnp.asarray(v) for k, v in data.items()}

    def body(states, inputs):
        step_key, rows_idx = inputs
        batch = {k: v[rows_idx] for k, v in device.items()}
        states, _ = jax.vmap(method.step, in_axes=(0, 0, None))(jax.random.split(step_key, seeds), states, batch)
        return states, None

    states, _ = jax.jit(lambda s: jax.lax.scan(body, s, (jax.random.split(jax.random.key(2), steps), idx)))(states)
    return [jax.tree_util.tree_map(lambda a, i=i: a[i], states) for i in range(seeds)]


def best_restart(corpus: SmallCorpus, method, states) -> tuple[float, dict]:
    """The restart with the lowest held-out log-perplexity: ``(log-perplexity, topic recovery)``."""
    scored = [(corpus.log_perplexity(method.posterior(s)), s) for s in states]
    best, state = min(scored, key=lambda pair: pair[0])
    return best, lda.topic_recovery(np.asarray(method.posterior(state).expected_topics()), corpus.topics)
