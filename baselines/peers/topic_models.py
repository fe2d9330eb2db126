"""The topic-model libraries users already run, as peers of the LDA experiment.

Each peer wraps one library's own fitting code; pmd-bench only feeds it the same documents in the
same mini-batches as its own methods and reads its topics back into a posterior of
:mod:`pmd.models.lda`, so that every method's held-out perplexity comes from one estimator (eq. 19):

* :class:`SklearnOnlineLDA`: scikit-learn's ``LatentDirichletAllocation(learning_method="online")``,
  ``partial_fit`` on each batch (Hoffman et al. 2010, as :class:`baselines.lda.OnlineVB`);
* :class:`GensimLDA`: gensim's ``LdaModel``, ``update`` on each batch (the same algorithm);
* :class:`TomotopyGibbs`: tomotopy's collapsed Gibbs sampler on the whole corpus, one ``update``
  being ``iterations`` sweeps (run long: the best-achievable perplexity).

A peer is not a JAX method: ``update(counts)`` takes a CSR batch of the training counts (the whole
set for tomotopy) and mutates the library's model; ``posterior()`` returns the topics. Both
online-VB peers take Hoffman's rate ``ρ_t = (τ₀ + t)^(-κ)`` (``step_size: {tau0, kappa}``).
"""

from __future__ import annotations

from typing import Any

import jax.numpy as jnp
import numpy as np
import scipy.sparse as sp

from pmd.interface import ConfigError, require_positive_int
from pmd.models.lda import LDA, VariationalTopics, equally_weighted, learning_rate


def _hoffman_rate(step_size: Any) -> tuple[float, float]:
    rate = learning_rate(step_size)
    if not hasattr(rate, "tau0"):
        raise ConfigError("the online-VB peers take Hoffman's rate (tau0 + t)^-kappa: step_size: {tau0, kappa}")
    return rate.tau0, rate.kappa


class SklearnOnlineLDA:
    """scikit-learn's online LDA at the model's ``K``, ``α``, ``β`` with ``total_samples = D``.

    Visits: each ``update`` reads one batch (``visits_per_update = None``: the batch's rows)."""

    method_family = "variational inference"
    reference = 'scikit-learn `LatentDirichletAllocation(learning_method="online")` (Hoffman, Blei & Bach, NIPS 2010)'

    visits_per_update = None

    def __init__(self, model: LDA, data_size: int, seed: int, step_size: Any = None, max_iter: int = 100,
                 tol: float = 1e-3):
        from sklearn.decomposition import LatentDirichletAllocation

        tau0, kappa = _hoffman_rate({"tau0": 10.0, "kappa": 0.7} if step_size is None else step_size)
        self.lda = LatentDirichletAllocation(
            n_components=model.num_topics, doc_topic_prior=model.alpha, topic_word_prior=model.beta,
            learning_method="online", learning_offset=tau0, learning_decay=kappa,
            total_samples=require_positive_int("data_size", data_size),
            max_doc_update_iter=require_positive_int("max_iter", max_iter), mean_change_tol=tol, random_state=seed)
        self.vocabulary = model.vocabulary

    def update(self, counts: sp.csr_matrix) -> None:
        """One ``partial_fit`` on the batch (one update of ``λ``: scikit-learn's batch_size is the batch's)."""
        self.lda.batch_size = counts.shape[0]
        self.lda.partial_fit(counts)

    def posterior(self) -> VariationalTopics:
        """``q(Φ) = Π_k Dir(λ_k)`` with scikit-learn's ``components_`` as ``λ``; before the first
        ``update`` (scikit-learn draws ``λ`` only then) the prior, ``λ = β``."""
        if not hasattr(self.lda, "components_"):
            return VariationalTopics(jnp.full((self.lda.n_components, self.vocabulary), self.lda.topic_word_prior,
                                              jnp.float32))
        return VariationalTopics(jnp.asarray(self.lda.components_, jnp.float32))


class GensimLDA:
    """gensim's ``LdaModel`` at the model's ``K``, ``α``, ``β``, one ``update`` per batch.

    gensim's rate is ``(offset + pass + updates_so_far)^(-decay)`` with updates counted from 0 and
    ``pass = 0`` within one ``update`` call, so ``offset = τ₀ + 1`` gives Hoffman's ``(τ₀ + t)^(-κ)``.
    ``D/B`` scaling: see :meth:`update`. Its E-step runs at most ``max_iter`` rounds to a mean change of ``tol`` (``iterations``,
    ``gamma_threshold``)."""

    method_family = "variational inference"
    reference = "gensim `gensim.models.LdaModel` (Hoffman, Blei & Bach, NIPS 2010)"

    visits_per_update = None

    def __init__(self, model: LDA, data_size: int, seed: int, step_size: Any = None, max_iter: int = 100,
                 tol: float = 1e-3):
        from gensim.models import LdaModel

        tau0, kappa = _hoffman_rate({"tau0": 10.0, "kappa": 0.7} if step_size is None else step_size)
        self.lda = LdaModel(num_topics=model.num_topics, id2word={i: str(i) for i in range(model.vocabulary)},
                            alpha=np.full(model.num_topics, model.alpha), eta=model.beta, decay=kappa,
                            offset=tau0 + 1.0, iterations=require_positive_int("max_iter", max_iter),
                            gamma_threshold=tol, random_state=seed, update_every=1, passes=1, dtype=np.float64)
        self.data_size = require_positive_int("data_size", data_size)

    def update(self, counts: sp.csr_matrix) -> None:
        """One online update on the batch's documents (gensim's bag-of-words lists)."""
        docs = [list(zip(row.indices.tolist(), row.data.tolist())) for row in counts]
        # gensim scales a chunk's statistics by state.numdocs / chunk size, state.numdocs being every
        # document ``update`` was ever given (it adds the chunk's first): pin it to D.
        self.lda.state.numdocs = self.data_size - len(docs)
        self.lda.update(docs, chunksize=len(docs), update_every=1, passes=1, decay=self.lda.decay,
                        offset=self.lda.offset)

    def posterior(self) -> VariationalTopics:
        """``q(Φ) = Π_k Dir(λ_k)`` with gensim's ``λ``."""
        return VariationalTopics(jnp.asarray(self.lda.state.get_lambda(), jnp.float32))


class TomotopyGibbs:
    """tomotopy's collapsed Gibbs sampler (``LDAModel``) on the whole training set.

    One ``update`` runs ``iterations`` sweeps (each visits every document); its posterior is the
    current sample's topic-word distributions, held-out ``θ_d`` estimated by Gibbs like PMD's."""

    method_family = "Gibbs sampling"
    reference = "tomotopy `tomotopy.LDAModel` (collapsed Gibbs; Griffiths & Steyvers, PNAS 2004)"

    def __init__(self, model: LDA, data_size: int, seed: int, iterations: int = 50, workers: int = 1):
        import tomotopy

        self.lda = tomotopy.LDAModel(k=model.num_topics, alpha=model.alpha, eta=model.beta, seed=seed)
        self.iterations = require_positive_int("iterations", iterations)
        self.workers = require_positive_int("workers", workers)
        self.visits_per_update = self.iterations * require_positive_int("data_size", data_size)
        self.vocabulary = model.vocabulary
        self._loaded = False

    def update(self, counts: sp.csr_matrix) -> None:
        """Add the corpus on the first call, then ``iterations`` Gibbs sweeps."""
        if not self._loaded:
            for row in counts:
                words = np.repeat(row.indices, row.data).astype(str).tolist()
                if words:
                    self.lda.add_doc(words)
            self._loaded = True
        self.lda.train(self.iterations, workers=self.workers)

    def posterior(self):
        """The sampler's ``(n_kw + β)/(n_k + Wβ)`` in pmd-bench's word order (unseen words: ``β`` only);
        before the first ``update``, the prior's mean (uniform topics: tomotopy crashes when asked
        for the topics of a model that has not been trained)."""
        if not self._loaded:
            return equally_weighted(jnp.full((1, self.lda.k, self.vocabulary), 1.0 / self.vocabulary, jnp.float32))
        column = np.array([int(w) for w in self.lda.used_vocabs])
        topics = np.stack([self.lda.get_topic_word_dist(k) for k in range(self.lda.k)])  # over used words
        counts = np.asarray(self.lda.get_count_by_topics(), np.float64)  # n_k
        beta, k = self.lda.eta, self.lda.k
        full = np.full((k, self.vocabulary), beta)
        full[:, column] = topics * (counts[:, None] + len(column) * beta)  # back to n_kw + β
        full /= full.sum(axis=1, keepdims=True)
        return equally_weighted(jnp.asarray(full[None], jnp.float32))


PEERS = {"sklearn_lda": SklearnOnlineLDA, "gensim_lda": GensimLDA, "tomotopy_gibbs": TomotopyGibbs}
