"""How the two particle-weight options of structured PMD for LDA behave over a run: the fraction of
steps that resample and the ESS the weight update leaves (before resampling), at ``m`` particles.

F.2's closed form (``weights="dirichlet_ratio"``, :func:`pmd.structured.lda.log_dirichlet_ratio`)
weighs each particle by the Dirichlet-normaliser ratio of its own ``β`` update, i.e. the batch's
complete-data likelihood at the drawn assignments raised to ``(D/B)ρ_t``; the ``θ̂`` predictive
(``"predictive"``) by the batch's document likelihoods with the assignments summed out, raised to
the same power. Settings: the LDA experiment's (``workflow/config/default.yaml``: ``α = 0.1``,
``β = 0.01``, batch 100, 5 passes, PMD's step size ``0.5/(100 + t^0.7)``, 10 sweeps, 5 burn-in);
``K`` the corpus's true topics where it has them, else ``--topics``.

Run: ``python benchmarks/lda_weight_resampling.py --corpus results/lda-weights-synth/data/lda-synth
[--particles 4 8] [--out results/benchmarks/lda_weight_resampling.json]``; prints the table
(markdown) and writes it with the JSON beside it.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import jax
import numpy as np

from pmd import run
from pmd.models import lda
from pmd.structured import StructuredPMDLDA
from pmd_bench.datasets.corpus import load_corpus

OPTIONS = ("predictive", "dirichlet_ratio")


def measure(corpus_dir: str, particles: list[int], topics: int, seed: int) -> list[dict]:
    """One run per (option, m) on the corpus's training documents, same key for every run."""
    corpus = load_corpus(corpus_dir)
    truth = corpus.get("topics")
    model = lda.LDA(int(truth.shape[0]) if truth is not None else topics, len(corpus["vocab"]), 0.1, 0.01)
    train = lda.tokens(corpus["train"])
    num_docs = corpus["train"].shape[0]
    rows = []
    for m in particles:
        for option in OPTIONS:
            method = StructuredPMDLDA(model, num_docs, m, step_size={"eta": 0.5, "n0": 100.0, "kappa": 0.7},
                                      weights=option)
            info = run(method, train, jax.random.key(seed), batch_size=100, num_passes=5).info
            ess = np.asarray(info["ess"]) / m
            rows.append({"m": m, "weights": option, "steps": int(ess.size),
                         "resampled": float(np.mean(info["resampled"])),
                         "ess_over_m_median": float(np.median(ess)), "ess_over_m_min": float(ess.min())})
    return rows


def table(rows: list[dict], corpus_dir: str) -> str:
    lines = ["| m | weights | steps | steps resampled | ESS/m before resampling: median | min |",
             "|---|---|---|---|---|---|"]
    lines += [f"| {r['m']} | {r['weights']} | {r['steps']} | {r['resampled']:.2f} | {r['ess_over_m_median']:.3f} "
              f"| {r['ess_over_m_min']:.3f} |" for r in rows]
    return "\n".join(lines) + f"\n\nCorpus: {corpus_dir}; one seed; benchmarks/lda_weight_resampling.py.\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", required=True)
    parser.add_argument("--particles", type=int, nargs="+", default=[4, 8])
    parser.add_argument("--topics", type=int, default=100)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", default="results/benchmarks/lda_weight_resampling.json")
    args = parser.parse_args()
    rows = measure(args.corpus, args.particles, args.topics, args.seed)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"corpus": args.corpus, "seed": args.seed, "rows": rows}, indent=1))
    text = table(rows, args.corpus)
    out.with_suffix(".md").write_text(text)
    print(text)


if __name__ == "__main__":
    main()
