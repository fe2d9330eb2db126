"""Bag-of-words corpora for LDA (H.4), written and read in one layout.

A corpus is a directory holding

* ``train.npz``: the training documents, a ``scipy.sparse`` CSR matrix of word counts
  (documents x vocabulary, int32), saved with ``scipy.sparse.save_npz``;
* ``heldout_estimation.npz`` and ``heldout_evaluation.npz``: the held-out documents (same rows in
  both), each document's words split at random into two halves (H.4: theta_d is estimated on
  ``x_d^estimation`` and the perplexity evaluated on ``x_d^evaluation``);
* ``vocab.txt``: the vocabulary, one word per line, in column order;
* ``documents.json``: the titles of the training and held-out documents and facts about the corpus;
* any extra arrays (e.g. the true ``topics.npy`` of a synthetic corpus), as ``.npy`` files.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from pmd_bench.datasets.atomic import atomic_directory


def split_halves(counts: sp.csr_matrix, rng: np.random.Generator) -> tuple[sp.csr_matrix, sp.csr_matrix]:
    """Split each document's word tokens at random into two halves: ``(estimation, evaluation)``.

    A document of ``N`` tokens gives ``N // 2`` to estimation and the rest to evaluation; the two
    matrices add up to ``counts``.
    """
    counts = sp.csr_matrix(counts)
    estimation = np.zeros(counts.nnz, dtype=counts.dtype)
    for row in range(counts.shape[0]):
        start, stop = counts.indptr[row], counts.indptr[row + 1]
        tokens = np.repeat(np.arange(start, stop), counts.data[start:stop])  # one entry per token
        chosen = rng.permutation(tokens)[: len(tokens) // 2]
        estimation[start:stop] = np.bincount(chosen - start, minlength=stop - start)
    halves = [
        sp.csr_matrix((data, counts.indices, counts.indptr), shape=counts.shape, copy=True)
        for data in (estimation, counts.data - estimation)
    ]
    for half in halves:
        half.eliminate_zeros()
    return halves[0], halves[1]


def write_corpus(
    out: str | Path,
    counts: sp.csr_matrix,
    vocab: list[str],
    titles: list[str],
    heldout: int,
    rng: np.random.Generator,
    facts: dict | None = None,
    arrays: dict[str, np.ndarray] | None = None,
) -> dict:
    """Hold out ``heldout`` random documents, split them in halves and write the corpus directory.

    The documents held out and the halves are drawn from ``rng``. Documents with fewer than two
    tokens are dropped first (a held-out half would be empty). ``facts`` are recorded in
    ``documents.json``; ``arrays`` are saved as ``<key>.npy``. The directory is replaced
    atomically. Returns the facts written.
    """
    counts = sp.csr_matrix(counts, dtype=np.int32)
    if counts.shape != (len(titles), len(vocab)):
        raise ValueError(f"counts have shape {counts.shape}, expected ({len(titles)} titles, {len(vocab)} words)")
    lengths = np.asarray(counts.sum(axis=1)).ravel()
    kept = np.flatnonzero(lengths >= 2)
    if not 0 < heldout < len(kept):
        raise ValueError(f"held-out size must be in 1..{len(kept) - 1} (documents with 2+ tokens), got {heldout}")
    is_heldout = np.zeros(len(kept), dtype=bool)
    is_heldout[rng.permutation(len(kept))[:heldout]] = True
    train, test = kept[~is_heldout], kept[is_heldout]
    estimation, evaluation = split_halves(counts[test], rng)
    facts = {
        **(facts or {}),
        "documents": len(kept),
        "dropped_documents": len(titles) - len(kept),
        "train_documents": len(train),
        "heldout_documents": len(test),
        "vocabulary": len(vocab),
        "train_tokens": int(lengths[train].sum()),
        "heldout_tokens": int(lengths[test].sum()),
    }
    with atomic_directory(out) as tmp:
        sp.save_npz(tmp / "train.npz", counts[train])
        sp.save_npz(tmp / "heldout_estimation.npz", estimation)
        sp.save_npz(tmp / "heldout_evaluation.npz", evaluation)
        (tmp / "vocab.txt").write_text("".join(f"{word}\n" for word in vocab))
        document = {**facts, "train_titles": [titles[i] for i in train], "heldout_titles": [titles[i] for i in test]}
        (tmp / "documents.json").write_text(json.dumps(document, indent=1) + "\n")
        for key, array in (arrays or {}).items():
            np.save(tmp / f"{key}.npy", array)
    return facts


def load_corpus(path: str | Path) -> dict:
    """Read a corpus directory: ``train``, ``heldout_estimation``, ``heldout_evaluation`` (CSR),
    ``vocab`` (list), ``documents`` (the parsed ``documents.json``) and any extra ``.npy`` arrays."""
    path = Path(path)
    corpus = {name: sp.load_npz(path / f"{name}.npz") for name in ("train", "heldout_estimation", "heldout_evaluation")}
    corpus["vocab"] = (path / "vocab.txt").read_text().splitlines()
    corpus["documents"] = json.loads((path / "documents.json").read_text())
    corpus.update({extra.stem: np.load(extra) for extra in sorted(path.glob("*.npy"))})
    return corpus
