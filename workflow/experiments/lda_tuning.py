"""LDA's tuning criterion (:mod:`workflow.tuning`).

Whole training documents are held out (:func:`workflow.tuning.split_rows` over the documents),
and each validation document's tokens are split into estimation and evaluation halves as the
corpus preparation splits its held-out documents (:func:`datasets.corpus.split_halves`). A
finished run scores the validation documents by the ONE estimator every method's final posterior
is scored by (:func:`pmd.models.lda.common_log_perplexity`: ``θ_d`` folded in on the estimation
half with the method's mean topics fixed, at the largest of ``lda.fold_in_sweeps``, burn-in half):
lower perplexity is better, so the criterion is its negative, the evaluation tokens' mean held-out
log predictive density. The one estimator rather than H.4's (whose ``θ_d`` strategy differs by
family) so that the choice compares one method's settings, not two estimators; the corpus's
held-out documents (the table's test set) are never read.

Only the JAX methods run through :func:`pmd.run` are tuned: the peer libraries (sklearn, gensim,
tomotopy) run at their documented defaults, as their users run them.
"""

from __future__ import annotations

from pathlib import Path

import jax
import numpy as np

from pmd.models import lda as lda_model
from pmd_bench.baselines.peers.topic_models import PEERS
from pmd_bench.datasets.corpus import split_halves

from .. import methods
from ..tuning import Criterion, split_rows
from . import lda


def split_documents(counts, fraction: float, seed: int) -> tuple[dict, dict]:
    """``(training documents' tokens, {"estimation", "evaluation"} tokens of the validation
    documents)`` of a documents × vocabulary count matrix (the module docstring's split)."""
    train, valid = split_rows(counts.shape[0], fraction, seed)
    estimation, evaluation = split_halves(counts[valid], np.random.default_rng(seed))
    return lda_model.tokens(counts[train]), {"estimation": lda_model.tokens(estimation),
                                              "evaluation": lda_model.tokens(evaluation)}


def criterion(cfg: dict, model: lda_model.LDA) -> Criterion:
    """The module docstring's criterion for the ``lda`` section ``cfg`` and its model."""
    sweeps = int(cfg["fold_in_sweeps"][-1])

    def score(result, method, model, valid, key: jax.Array) -> float:
        return -lda_model.common_log_perplexity(result.posterior, key, valid["estimation"], valid["evaluation"],
                                                model.alpha, sweeps, sweeps // 2)

    return Criterion(split=split_documents, model=lambda train: model, score=score,
                     name="minus the one held-out log-perplexity estimator on validation documents")


def tuning_problem(section: dict, label: str, corpus_dir: str | Path) -> tuple[dict, object, dict, Criterion]:
    """``(method spec, training counts, run settings, criterion)`` of method ``label`` on the corpus."""
    spec, settings = methods.split_spec(label, section["methods"][label], section)
    if spec.get("method", label) in PEERS:
        raise ValueError(f"lda method {label!r} is a peer library: it runs at its documented defaults, untuned")
    data = lda.load(section, corpus_dir)
    return spec, data["counts"], settings, criterion(section, data["model"])
