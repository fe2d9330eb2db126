"""The logistic-regression table: each method's final test accuracy, distance to the NUTS
reference and cost per data point visited, from result files, as Markdown.

Columns (mean ± standard error over seeds, ddof = 1, final evaluation): test accuracy (1 - test error)
and test log-likelihood of the posterior predictive; posterior-mean error in reference standard
deviations, energy distance and sliced W2 in reference-standardised coordinates (the first row
scores held-out NUTS draws: the floor), ``log σ_q/σ_ref`` (negative: too narrow); the stepping
time per data point visited (evaluation excluded, the first call's compilation included: at these
small sizes it dominates; benchmarks/bench_logistic_cost.py measures the steady state) and the data
points visited. Under the table: the paper's claim and :func:`claims`.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from .resultfiles import atomic_path, load_npz, mean_difference, mean_pm, runs_by_method

PAPER_CLAIM = ("Paper (Dai et al. 2016, sec. 6, MNIST8M 6-vs-8, 1.6M rows, 5 passes): PMD reaches about "
               "98.8% test accuracy, comparable to SVI with the Jaakkola-Jordan bound.")


def rows(reference_path: str | Path, run_files: list[str | Path]) -> list[list[str]]:
    """The table's rows (header first)."""
    _, ref = load_npz(reference_path)
    header = ["method", "runs", "test accuracy (%)", "test log-lik", "mean error (sd)", "energy", "sliced W2",
              "log σ_q/σ_ref", "µs / point visited (incl. compile)", "points visited"]
    floor, pred = ref["floor"], ref["predictive"]
    n = ref.get("floor_samples", ref["params"]["draws"])  # references before the floor had its own n: the whole chain
    out = [header, [f"NUTS reference (n = {n} held-out draws)", str(ref["diagnostics"]["chains"]),
                    f"{100 * (1 - pred['test_error']):.2f}", f"{pred['test_loglik']:.4f}",
                    f"{floor['mean_error']:.3f}", f"{floor['energy']:.4f}", f"{floor['sliced_w2']:.3f}",
                    f"{floor['log_std_ratio']:+.3f}", "—", "—"]]
    for label, runs in runs_by_method(run_files).items():
        def final(metric: str, runs=runs) -> list[float]:
            return [a[f"curve/{metric}"][-1] for a, _ in runs]

        out.append([label, str(len(runs)), mean_pm(100 * (1 - np.asarray(final("test_error"))), ".2f"),
                    mean_pm(final("test_loglik"), ".4f"), mean_pm(final("mean_error"), ".3f"), mean_pm(final("energy"), ".4f"),
                    mean_pm(final("sliced_w2"), ".3f"), mean_pm(final("log_std_ratio"), "+.3f"),
                    mean_pm([1e6 * meta["seconds_per_visited"] for _, meta in runs], ".2f"),
                    f"{int(np.mean([meta['visited'] for _, meta in runs])):,}"])
    return out


def claims(reference_path: str | Path, run_files: list[str | Path]) -> list[str]:
    """Sentences putting claims beside the runs that test them, for the labels present: the one
    criterion of moment targets (:data:`reports.cost.MOMENTS`: the worst coordinate's mean error
    and log sd ratio) for every PMD label, in how many seeds it holds at the end; paper 001's (Fong
    et al. 2019, Table 1) that NPL's held-out log predictive density equals NUTS's; paper 002's
    (Yang et al.) that a growing batch (``opvi``) beats a constant one (``svgd``) at equal data,
    judged ahead only where the difference of the means exceeds twice its standard error
    (:func:`reports.resultfiles.mean_difference`). Each states the measured numbers; it judges
    nothing it has no runs for."""
    from .cost import MOMENTS

    _, ref = load_npz(reference_path)
    runs = runs_by_method(run_files)

    def final(label: str, metric: str) -> np.ndarray:
        return np.asarray([a[f"curve/{metric}"][-1] for a, _ in runs[label]], float)

    out = []
    for label in (k for k in runs if k.startswith("pmd")):
        met = sum(float(MOMENTS.score(a)[-1]) <= 1.0 for a, _ in runs[label])
        out.append(f"The criterion ({MOMENTS.wording}) for `{label}` at the end: met in **{met} of {len(runs[label])}** "
                   f"seeds; worst |mean error| {mean_pm(final(label, 'mean_error_max'), '.2f')} sd, worst |log sd ratio| "
                   f"{mean_pm(final(label, 'log_std_ratio_max'), '.2f')}.")
    if "npl" in runs:
        ll = final("npl", "test_loglik")
        nuts = ref["predictive"]["test_loglik"]
        gap = (ll.mean() - nuts) / max(ll.std(ddof=1) if len(ll) > 1 else 0.0, 1e-12)
        out.append(f"Paper 001 (NPL's held-out log predictive density equals NUTS's): `npl` {mean_pm(ll, '.4f')} against "
                   f"the NUTS posterior's {nuts:.4f}, {abs(gap):.1f} seed sd {'below' if gap < 0 else 'above'} it; "
                   f"its posterior: worst |mean error| {mean_pm(final('npl', 'mean_error_max'), '.2f')} reference sd, "
                   f"worst |log sd ratio| {mean_pm(final('npl', 'log_std_ratio_max'), '.2f')}.")
    if "opvi" in runs and "svgd" in runs:
        a, b = final("opvi", "test_loglik"), final("svgd", "test_loglik")
        diff, se = mean_difference(a, b)
        verdict = ("agrees" if diff > 2 * se else "reversed" if -diff > 2 * se else "within the seeds' spread"
                   ) if se > 0 else "not judged (no spread over the seeds)"
        out.append(f"Paper 002 (a growing batch beats a constant one at equal data): test log-lik `opvi` "
                   f"{mean_pm(a, '.4f')} against `svgd` {mean_pm(b, '.4f')}, worst |mean error| "
                   f"{mean_pm(final('opvi', 'mean_error_max'), '.2f')} against {mean_pm(final('svgd', 'mean_error_max'), '.2f')} "
                   f"sd: **{verdict}**.")
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
        *(line for claim in claims(reference_path, run_files) for line in (claim, "")),
    ])
    with atomic_path(out) as tmp:
        tmp.write_text(text)
    return text
