"""Cost per document visited of every LDA method at H.4's settings, in one run; our online VB's
speed as a ratio to scikit-learn's and gensim's (the same algorithm) timed in the same run; and the
extrapolated cost of the paper's run (150,000 documents, 5 passes) on this machine.

Settings (Dai et al. 2016, H.4): ``K = 100``, ``α = 0.1``, ``β = 0.01``, batch 100, the standard
config's step sizes and sweeps. The corpus: a prepared corpus directory (``--corpus``, default
``results/data/wikipedia``, the 10,033 Wikipedia vital articles; ``results/data/lda-synth`` is the
offline stand-in). Each JAX method is built with the corpus's ``D``, run for ``--steps`` steps
once (compilation) and timed over the next ``--steps`` steps inside one jitted ``lax.scan`` (as
:func:`pmd.run` does), evaluation excluded. The peers (scikit-learn ``partial_fit``, gensim
``update``) are timed over the same number of batches of the same size after one warm-up batch;
tomotopy's collapsed Gibbs over ``--sweeps`` sweeps of the whole corpus (its cost per document
visited is per document-sweep). SMC is timed in its first pass.

Extrapolation: ``150,000 × 5 × seconds per document`` (SMC: one pass); the paper's documents are
Patterson & Teh's Wikipedia articles, longer than these lead sections, so the per-token rate
(``tokens_per_second``) is the fairer figure to carry over.

Run: ``python benchmarks/bench_lda_cost.py [--corpus results/data/wikipedia] [--steps 30]
[--out results/benchmarks/lda_cost.json]``; writes the JSON report and its table (``.md``) and
prints the report.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import jax
import jax.numpy as jnp

from pmd_bench.baselines.peers.topic_models import GensimLDA, SklearnOnlineLDA, TomotopyGibbs
from pmd_bench.datasets.corpus import load_corpus
from pmd.models import lda
from pmd.runner import batch_indices, stepper
from pmd_bench.reports import benchmarks as bench_report
from pmd_bench.workflow import methods

PAPER_DOCUMENTS, PASSES, BATCH = 150_000, 5, 100
SPECS = {
    "pmd": {"method": "pmd_lda", "num_particles": 1, "step_size": {"eta": 1.0, "n0": 1.0, "kappa": 0.7}},
    "pmd_m4": {"method": "pmd_lda", "num_particles": 4, "step_size": {"eta": 1.0, "n0": 1.0, "kappa": 0.7}},
    "svi_hoffman": {"method": "lda_svi", "step_size": {"tau0": 10.0, "kappa": 0.7}},
    "sgrld": {"method": "lda_sgrld", "num_particles": 2, "step_size": {"eta": 1.0, "n0": 10.0, "kappa": 0.55}},
    "smc": {"method": "lda_smc", "num_particles": 1, "rejuvenate": 100},
}


def timed_scan(method, train: dict, steps: int) -> float:
    """Seconds per step over ``steps`` steps, after one identical compiled warm-up call."""
    rows = train["words"].shape[0]
    data = {k: jnp.asarray(v) for k, v in train.items()}

    advance = stepper(method)
    keys = jax.random.split(jax.random.key(0), 2 * steps)
    idx = jnp.asarray(batch_indices(0, rows, BATCH, 2 * steps))
    state = jax.block_until_ready(advance(method.init(jax.random.key(1)), keys[:steps], idx[:steps], data)[0])
    t0 = time.perf_counter()
    jax.block_until_ready(advance(state, keys[steps:], idx[steps:], data))
    return (time.perf_counter() - t0) / steps


def timed_peer(peer, counts, steps: int) -> float:
    """Seconds per batch over ``steps`` batches of ``BATCH`` documents, after one warm-up batch."""
    idx = batch_indices(0, counts.shape[0], BATCH, steps + 1)
    peer.update(counts[idx[0]])
    t0 = time.perf_counter()
    for rows in idx[1:]:
        peer.update(counts[rows])
    return (time.perf_counter() - t0) / steps


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--corpus", type=Path, default=Path("results/data/wikipedia"))
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--sweeps", type=int, default=20)
    parser.add_argument("--out", default="results/benchmarks/lda_cost.json")
    args = parser.parse_args()
    corpus = load_corpus(args.corpus)
    counts = corpus["train"]
    num_docs = counts.shape[0]
    tokens_per_doc = float(counts.sum()) / num_docs
    model = lda.LDA(100, len(corpus["vocab"]))
    train = lda.tokens(counts)
    per_doc = {}
    for label, spec in SPECS.items():
        method = methods.build(label, spec, model, train, 2 * args.steps)
        per_doc[label] = timed_scan(method, train, args.steps) / BATCH
    per_doc["sklearn"] = timed_peer(SklearnOnlineLDA(model, num_docs, 0), counts, args.steps) / BATCH
    per_doc["gensim"] = timed_peer(GensimLDA(model, num_docs, 0), counts, args.steps) / BATCH
    tomotopy = TomotopyGibbs(model, num_docs, 0, iterations=args.sweeps)
    tomotopy.update(counts)  # loads the corpus and runs the warm-up sweeps
    t0 = time.perf_counter()
    tomotopy.update(counts)
    per_doc["tomotopy"] = (time.perf_counter() - t0) / tomotopy.visits_per_update
    report = {
        "corpus": str(args.corpus), "documents": num_docs, "tokens_per_document": tokens_per_doc,
        "K": model.num_topics, "W": model.vocabulary, "batch": BATCH, "platform": jax.devices()[0].platform,
        "ms_per_document": {k: 1e3 * v for k, v in per_doc.items()},
        "tokens_per_second": {k: tokens_per_doc / v for k, v in per_doc.items()},
        "svi_speed_ratio": {peer: per_doc[peer] / per_doc["svi_hoffman"] for peer in ("sklearn", "gensim")},
        "paper_run_hours": {k: v * PAPER_DOCUMENTS * (1 if k == "smc" else PASSES) / 3600 for k, v in per_doc.items()},
    }
    bench_report.write(args.out, report, bench_report.lda_cost)
    print(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
