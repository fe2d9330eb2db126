"""The table of the structured-LDA comparison (``workflow/config/lda_weights.yaml``): every
run's final held-out log-perplexity under the one estimator (``log_perplexity_common``,
:func:`pmd.models.lda.common_log_perplexity`) per method and corpus, mean ± sd over seeds, and each
method's gap to the best baseline (the lowest mean of scikit-learn, gensim and our online VB at
both its step sizes), in percent of that baseline's log-perplexity (the target: PMD within
1 %); the same for each method's best seed against the best seed of any baseline (the local optima
of LDA spread single runs by up to 0.2 nats on the synthetic corpus); and at each ``m`` and step size the paired difference predictive − dirichlet_ratio over the
seeds both ran (same seed, same batches and keys). PMD's rows also give ``m``, the weight option and the final ESS; a corpus with known topics
the matched topics' mean Hellinger distance.

Run: ``python benchmarks/lda_weights_table.py results/lda-weights results/lda-weights-synth
[--out results/benchmarks/lda_weights.md]``.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

BASELINES = ("sklearn", "gensim", "svi", "svi_hoffman")


def load_runs(results: Path) -> dict[str, list[dict]]:
    """``method -> [meta of each seed's run]`` from ``results/lda/runs/<method>/seed<k>.npz``."""
    runs: dict[str, list[dict]] = {}
    for path in sorted(results.glob("lda/runs/*/seed*.npz")):
        with np.load(path, allow_pickle=True) as z:
            runs.setdefault(path.parent.name, []).append(json.loads(str(z["meta"])))
    return runs


def _cell(values: list[float], digits: int = 4) -> str:
    mean = np.mean(values)
    return f"{mean:.{digits}f} ± {np.std(values, ddof=1):.{digits}f}" if len(values) > 1 else f"{mean:.{digits}f}"


def corpus_table(results: Path) -> str:
    runs = load_runs(results)
    score = {m: [r["final"]["log_perplexity_common"] for r in rs] for m, rs in runs.items()}
    best = min((m for m in BASELINES if m in score), key=lambda m: np.mean(score[m]))
    ref = float(np.mean(score[best]))
    ref_best = min(min(score[m]) for m in BASELINES if m in score)
    truth = any("topic_hellinger" in r["final"] for rs in runs.values() for r in rs)
    head = ("| method | m | weights | step size | seeds | log-perplexity (one estimator) | gap to best baseline "
            "| best seed | its gap to the best baseline seed | final ESS |")
    lines = [head + (" topic Hellinger |" if truth else ""), "|---" * (10 + truth) + "|"]
    for method in sorted(score, key=lambda m: np.mean(score[m])):
        params = runs[method][0]["params"]
        pmd = params.get("method.method") == "pmd_lda"
        step = params.get("method.step_size", "")
        row = [method, str(params.get("method.num_particles", "")) if pmd else "",
               params.get("method.weights", "predictive") if pmd else "",
               ", ".join(f"{k} {v:g}" for k, v in step.items()) if isinstance(step, dict) else str(step),
               str(len(score[method])), _cell(score[method]),
               f"{100 * (np.mean(score[method]) - ref) / ref:+.2f} %", f"{min(score[method]):.4f}",
               f"{100 * (min(score[method]) - ref_best) / ref_best:+.2f} %",
               _cell([r["final"]["ess"] for r in runs[method]], 2) if pmd else ""]
        if truth:
            row.append(_cell([r["final"]["topic_hellinger"] for r in runs[method]], 3))
        lines.append("| " + " | ".join(row) + " |")
    corpus = Path(runs[best][0]["params"]["corpus"]).name
    return (f"**{corpus}** ({results}): best baseline {best}, {ref:.4f} (mean); best baseline seed {ref_best:.4f}.\n\n" + "\n".join(lines) + "\n\n"
            + "".join(f"- {line}\n" for line in paired_differences(runs)))


def paired_differences(runs: dict[str, list[dict]]) -> list[str]:
    """``predictive − dirichlet_ratio`` of the one estimator for every pair of PMD labels equal but
    for the weight option, over the seeds both ran: mean ± standard error (n seeds)."""
    def key(meta):
        p = meta["params"]
        return p["method.num_particles"], json.dumps(p["method.step_size"], sort_keys=True)

    by_option: dict[tuple, dict[str, dict[int, float]]] = {}
    for method, metas in runs.items():
        if metas[0]["params"].get("method.method") != "pmd_lda":
            continue
        option = metas[0]["params"].get("method.weights", "predictive")
        slot = by_option.setdefault(key(metas[0]), {}).setdefault(option, {})
        slot.update({m["seed"]: m["final"]["log_perplexity_common"] for m in metas})
    out = []
    for (m, step), options in sorted(by_option.items()):
        seeds = sorted(set(options.get("predictive", {})) & set(options.get("dirichlet_ratio", {})))
        if not seeds:
            continue
        diff = np.array([options["predictive"][s] - options["dirichlet_ratio"][s] for s in seeds])
        se = diff.std(ddof=1) / np.sqrt(len(diff)) if len(diff) > 1 else float("nan")
        out.append(f"m = {m}, step size {step}: predictive − dirichlet_ratio = {diff.mean():+.4f} ± {se:.4f} nats "
                   f"(n = {len(diff)} seeds)")
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("results", nargs="+", type=Path, help="results folders of the lda_weights overlays")
    parser.add_argument("--out", type=Path, default=Path("results/benchmarks/lda_weights.md"))
    args = parser.parse_args()
    text = "\n".join(corpus_table(r) for r in args.results)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text)
    print(text)


if __name__ == "__main__":
    main()
