"""Synthetic datasets with a known truth: the 1-D sparse-GP problem of H.3.1 and an LDA corpus.

(The mixture-model and conjugate problems live with their models in ``pmd.models``.)
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import scipy.sparse as sp

from pmd_bench.datasets.atomic import atomic_path
from pmd_bench.datasets.corpus import write_corpus

GP1D_POINTS = 2048
GP1D_NOISE = 0.1


def gp1d_function(x: np.ndarray) -> np.ndarray:
    """H.3.1's noise-free function: ``3 x^2 + (sin(3.53 pi x) + cos(7.7 pi x)) exp(-1.6 pi |x|)``."""
    x = np.asarray(x, dtype=np.float64)
    return 3 * x**2 + (np.sin(3.53 * np.pi * x) + np.cos(7.7 * np.pi * x)) * np.exp(-1.6 * np.pi * np.abs(x))


def prepare_gp1d(out: Path, num_points: int = GP1D_POINTS, noise: float = GP1D_NOISE, seed: int = 0) -> dict:
    """H.3.1: ``num_points`` (2048) inputs x ~ Uniform[-0.5, 0.5], ``y = f(x) + noise * e``, e ~ N(0, 1).

    Writes ``x`` (shape (n, 1)), ``y`` and the truth ``f`` at ``x`` (float64), plus ``noise``.
    """
    if num_points < 1 or not noise >= 0:
        raise ValueError(f"need num_points >= 1 and noise >= 0, got num_points={num_points}, noise={noise}")
    rng = np.random.default_rng(seed)
    x = rng.uniform(-0.5, 0.5, size=num_points)
    f = gp1d_function(x)
    y = f + noise * rng.standard_normal(num_points)
    with atomic_path(out) as tmp:
        np.savez(tmp, x=x[:, None], y=y, f=f, noise=noise)
    return {"points": num_points, "noise": noise}


def sample_lda_corpus(
    num_documents: int,
    vocabulary: int,
    topics: int,
    mean_length: float,
    alpha: float,
    beta: float,
    rng: np.random.Generator,
) -> tuple[sp.csr_matrix, np.ndarray, np.ndarray]:
    """Draw word counts from LDA's generative model: ``(counts, topics (K x V), doc_topics (D x K))``.

    Topics ``phi_k ~ Dirichlet(beta)``, proportions ``theta_d ~ Dirichlet(alpha)``, lengths
    ``N_d ~ 1 + Poisson(mean_length - 1)``; each token draws a topic from ``theta_d`` and a word from
    that topic, so a document's counts are ``Multinomial(N_d, theta_d^T Phi)``.
    """
    if min(num_documents, vocabulary, topics) < 1 or mean_length < 1 or not (alpha > 0 and beta > 0):
        raise ValueError(
            "need num_documents, vocabulary, topics >= 1, mean_length >= 1 and alpha, beta > 0; got "
            f"{num_documents}, {vocabulary}, {topics}, {mean_length}, {alpha}, {beta}"
        )
    phi = rng.dirichlet(np.full(vocabulary, beta), size=topics)
    theta = rng.dirichlet(np.full(topics, alpha), size=num_documents)
    lengths = 1 + rng.poisson(mean_length - 1, size=num_documents)
    word_probabilities = theta @ phi
    word_probabilities /= word_probabilities.sum(axis=1, keepdims=True)
    counts = np.stack([rng.multinomial(n, p) for n, p in zip(lengths, word_probabilities, strict=True)])
    return sp.csr_matrix(counts, dtype=np.int32), phi, theta


def prepare_lda_corpus(
    out: Path,
    num_documents: int = 2_000,
    vocabulary: int = 500,
    topics: int = 10,
    mean_length: float = 100.0,
    alpha: float = 0.1,
    beta: float = 0.01,
    heldout: int = 200,
    seed: int = 0,
) -> dict:
    """A corpus from :func:`sample_lda_corpus` in the layout of :mod:`datasets.corpus`, for tests.

    Defaults use H.4's hyper-parameters (alpha 0.1, beta 0.01) with fewer topics and words. The
    true ``topics`` (K x V) and ``doc_topics`` (D x K, rows in the order of ``documents.json``'s
    titles ``doc-<i>``) are saved alongside.
    """
    rng = np.random.default_rng(seed)
    counts, phi, theta = sample_lda_corpus(num_documents, vocabulary, topics, mean_length, alpha, beta, rng)
    facts = {"source": "LDA generative model", "topics": topics, "alpha": alpha, "beta": beta, "seed": seed}
    titles = [f"doc-{i}" for i in range(num_documents)]
    vocab = [f"w{i}" for i in range(vocabulary)]
    arrays = {"topics": phi, "doc_topics": theta}
    return write_corpus(out, counts, vocab, titles, heldout, rng, facts, arrays)
