"""The logistic-regression table: each method's final test accuracy, distance to the NUTS
reference and cost per data point visited, from result files, as Markdown.

Columns (mean ± standard deviation over seeds, final evaluation): test accuracy (1 - test error)
and test log-likelihood of the posterior predictive; posterior-mean error in reference standard
deviations, energy distance and sliced W2 in reference-standardised coordinates (the first row
scores held-out NUTS draws: the floor), ``log σ_q/σ_ref`` (negative: too narrow); the stepping
time per data point visited (evaluation excluded, the first call's compilation included: at these
small sizes it dominates; benchmarks/bench_logistic_cost.py measures the steady state) and the data
points visited.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from .resultfiles import atomic_path, load_npz, runs_by_method

PAPER_CLAIM = ("Paper (Dai et al. 2016, sec. 6, MNIST8M 6-vs-8, 1.6M rows, 5 passes): PMD reaches about "
               "98.8% test accuracy, comparable to SVI with the Jaakkola-Jordan bound.")


def _pm(values, fmt: str) -> str:
    values = np.asarray(values, float)
    return f"{values.mean():{fmt}} ± {values.std():{fmt}}" if len(values) > 1 else f"{values.mean():{fmt}}"


def rows(reference_path: str | Path, run_files: list[str | Path]) -> list[list[str]]:
    """The table's rows (header first)."""
    _, ref = load_npz(reference_path)
    header = ["method", "runs", "test accuracy (%)", "test log-lik", "mean error (sd)", "energy", "sliced W2",
              "log σ_q/σ_ref", "µs / point visited (incl. compile)", "points visited"]
    floor, pred = ref["floor"], ref["predictive"]
    out = [header, ["NUTS reference (held-out chain)", str(ref["diagnostics"]["chains"]),
                    f"{100 * (1 - pred['test_error']):.2f}", f"{pred['test_loglik']:.4f}",
                    f"{floor['mean_error']:.3f}", f"{floor['energy']:.4f}", f"{floor['sliced_w2']:.3f}",
                    f"{floor['log_std_ratio']:+.3f}", "—", "—"]]
    for label, runs in runs_by_method(run_files).items():
        def final(metric: str, runs=runs) -> list[float]:
            return [a[f"curve/{metric}"][-1] for a, _ in runs]

        out.append([label, str(len(runs)), _pm(100 * (1 - np.asarray(final("test_error"))), ".2f"),
                    _pm(final("test_loglik"), ".4f"), _pm(final("mean_error"), ".3f"), _pm(final("energy"), ".4f"),
                    _pm(final("sliced_w2"), ".3f"), _pm(final("log_std_ratio"), "+.3f"),
                    _pm([1e6 * meta["seconds_per_visited"] for _, meta in runs], ".2f"),
                    f"{int(np.mean([meta['visited'] for _, meta in runs])):,}"])
    return out


def render(reference_path: str | Path, run_files: list[str | Path], out: str | Path) -> str:
    """Write the Markdown table (with the reference's diagnostics and the paper's claim) to ``out``."""
    table = rows(reference_path, run_files)
    _, ref = load_npz(reference_path)
    diag = ref["diagnostics"]
    lines = ["| " + " | ".join(r) + " |" for r in table]
    lines.insert(1, "|" + "---|" * len(table[0]))
    nuts = (f"NUTS reference: {diag['chains']} chains x {diag['draws']} draws, max R-hat {diag['rhat_max']:.4f}, "
            f"min bulk/tail ESS {diag['ess_bulk_min']:.0f}/{diag['ess_tail_min']:.0f}, {diag['divergences']} divergences.")
    text = "\n".join([
        f"Bayesian logistic regression, {ref['num_data']:,} training rows, d = {ref['dim']}.",
        "",
        *lines,
        "",
        nuts,
        "",
        PAPER_CLAIM,
        "",
    ])
    with atomic_path(out) as tmp:
        tmp.write_text(text)
    return text
