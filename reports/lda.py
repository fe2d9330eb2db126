"""The LDA experiment's curves and its table, from result files.

The curves (``curves_lda.png``; Figure 2(3) draws the same, :mod:`reports.figure2`): held-out
log-perplexity (H.4, eq. 19) against documents visited, mean ± one standard deviation over seeds
for every method and peer (log x-axis: tomotopy's sampler visits the whole corpus per sweep). A
JSON summary of the final values goes beside it.

The table (Markdown): per method, the final held-out log-perplexity and perplexity by ONE
estimator for every method (:func:`pmd.models.lda.common_log_perplexity`, converged over its
fold-in ladder, shown by a table of it at every rung) and by H.4's per-family estimator (the paper's protocol; mean ± standard error over seeds), the matched topics' mean Hellinger distance to the truth when the corpus has one, the
stepping cost (seconds per document visited and training tokens per second, evaluations
excluded, the first call's compilation included), the documents visited; then our online VB
against scikit-learn's and gensim's at equal settings (perplexity difference and speed ratio from
the same workflow run) and the extrapolated time of the paper's run (150,000 documents, 5 passes)
at each method's measured cost per document (``benchmarks/bench_lda_cost.py`` measures the steady
state); and the paper's claim beside.
"""

from __future__ import annotations

import json
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from .resultfiles import (atomic_path, curve_stats, difference_notes, load_npz, mean_pm, ranking,  # noqa: E402
                          runs_by_method)
from .styles import legend_outside, log_ticks, mean_curves, panel_styles, save  # noqa: E402

PAPER_CLAIM = ("Paper (Dai et al. 2016, sec. 6 and Figure 2(3), Wikipedia, 150,000 documents, K = 100, 5 passes): "
               "PMD (one particle) reaches the best perplexity, \"significantly better than SGRLD and SVI\"; SMC "
               "(one particle) does well early but reads each document once.")
PAPER_DOCUMENTS, PAPER_PASSES = 150_000, 5
SVI_LABEL, PEER_LABELS = "svi_hoffman", ("sklearn", "gensim")
COMMON = "log_perplexity_common"  # the one held-out estimator (pmd.models.lda.common_log_perplexity)
PMD_LABEL, CLAIMED_BEHIND = "pmd", ("svi", "sgrld")  # the paper: PMD "significantly better than SGRLD and SVI"


def _final(runs, metric: str) -> np.ndarray:
    return np.asarray([meta["final"][metric] for _, meta in runs if metric in meta["final"]])


def draw_panel(runs_by: dict):
    """The curves: log-perplexity against documents visited, one legend right of the panel."""
    fig, ax = plt.subplots(figsize=(6.5, 4.5))
    mean_curves(ax, runs_by, "log_perplexity", panel_styles(runs_by))
    ax.set(xscale="log", xlabel="documents visited", ylabel="held-out log-perplexity (H.4's per-family estimator)",
           title="LDA: held-out log-perplexity (eq. 19)")
    log_ticks(ax.xaxis)
    fig.tight_layout()
    legend_outside(fig, [ax])
    return fig


def render_panel(run_files: list[str | Path], out: str | Path) -> dict:
    """The curves to ``out``; returns (and writes beside them) the summary of the final values."""
    runs_by = runs_by_method(run_files)
    save(draw_panel(runs_by), out)
    summary = {label: {metric: {"mean": float(v.mean()), "std": float(v.std()), "runs": len(v)}
                       for metric in ("log_perplexity", "perplexity", COMMON, "topic_hellinger")
                       if len(v := _final(runs, metric))}
               for label, runs in runs_by.items()}
    with atomic_path(Path(out).with_suffix(".json")) as tmp:
        tmp.write_text(json.dumps(summary, indent=2, sort_keys=True))
    return summary


def _corpus_facts(corpus_dir: str | Path) -> dict:
    return json.loads((Path(corpus_dir) / "documents.json").read_text())


def perplexity_gap(ours, theirs) -> tuple[float, float]:
    """``100 (mean(ours) / mean(theirs) - 1)``: the percentage by which our mean final perplexity
    exceeds a peer's over independent seeds, and its standard error by the delta method
    (``100 r sqrt(s₁²/(n₁ m₁²) + s₂²/(n₂ m₂²))``; a single seed on a side contributes no spread)."""
    ours, theirs = np.asarray(ours, float), np.asarray(theirs, float)
    ratio = ours.mean() / theirs.mean()
    rel_var = sum(x.var(ddof=1) / (len(x) * x.mean() ** 2) for x in (ours, theirs) if len(x) > 1)
    return 100 * (ratio - 1), 100 * ratio * float(np.sqrt(rel_var))


def ordering_notes(runs_by: dict) -> list[str]:
    """The paper's ordering beside ours: every method by mean final log-perplexity; the same at the
    first evaluation the methods share (the paper: SMC "performs well at the beginning"); and
    one-particle PMD against the methods the paper says it beats, with standard errors."""
    final = {label: _final(runs, COMMON) for label, runs in runs_by.items()}
    notes = [ranking(final, "final log-perplexity (one estimator)"),
             ranking({label: _final(runs, "log_perplexity") for label, runs in runs_by.items()},
                     "final log-perplexity (H.4's per-family estimator)")]
    first = {label: curve_stats(runs, "log_perplexity") for label, runs in runs_by.items()}
    starts = {label: int(visited[visited > 0][0]) for label, (visited, _, _) in first.items() if np.any(visited > 0)}
    if starts:
        shared = max(set(starts.values()), key=list(starts.values()).count)
        early = sorted((mean[visited > 0][0], label) for label, (visited, mean, _) in first.items()
                       if starts.get(label) == shared)
        notes.append(f"At the first evaluation ({shared:,} documents visited, H.4's estimator): "
                     + " < ".join(f"{label} ({value:.4f})" for value, label in early) + ".")
    return notes + difference_notes(final, PMD_LABEL, CLAIMED_BEHIND, "nats of final log-perplexity (one estimator)")


def fold_in_note(runs_by: dict) -> str:
    """How far the one estimator still moved over its last doubling of fold-in sweeps, worst run."""
    ladders = [(meta["fold_in"]["sweeps"], meta["fold_in"]["log_perplexity"])
               for runs in runs_by.values() for _, meta in runs]
    sweeps = ladders[0][0]
    steps = [abs(values[-1] - values[-2]) for _, values in ladders]
    return (f"One estimator (every method's mean topics, θ_d folded in by the same Gibbs sweeps; "
            f"pmd.models.lda.common_log_perplexity) at {sweeps[-1]} sweeps ({sweeps[-1] // 2} burn-in); over the "
            f"fold-in ladder {sweeps} it moved by at most {max(steps):.4f} nats between {sweeps[-2]} and "
            f"{sweeps[-1]} sweeps (worst of {len(steps)} runs). H.4's column: θ_d by each family's own strategy "
            "(Gibbs sweeps for sampling methods, the converged E-step for variational ones), the paper's protocol.")


def fold_in_table(runs_by: dict) -> str:
    """The one estimator against its fold-in budget: each method's mean over seeds at every rung of the
    ladder (sweeps, burn-in half), and the largest move over the last doubling among its runs. The
    estimate has converged where the last columns agree to the seeds' spread."""
    ladders = {tuple(meta["fold_in"]["sweeps"]) for runs in runs_by.values() for _, meta in runs}
    if len(ladders) != 1:
        raise ValueError(f"the runs were folded in over different ladders {sorted(ladders)}: one estimator needs one")
    sweeps, = ladders
    header = ["method", *(f"{n} sweeps" for n in sweeps), f"largest move {sweeps[-2]} → {sweeps[-1]}"]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for label, runs in runs_by.items():
        values = np.asarray([meta["fold_in"]["log_perplexity"] for _, meta in runs], float)
        lines.append("| " + " | ".join([label, *(f"{v:.4f}" for v in values.mean(axis=0)),
                                         f"{np.abs(values[:, -1] - values[:, -2]).max():.4f}"]) + " |")
    return ("The one estimator against its fold-in sweeps (log-perplexity, mean over seeds):\n\n"
            + "\n".join(lines))


def render(corpus_dir: str | Path, run_files: list[str | Path], out: str | Path, figure: str | Path) -> str:
    """The table (module docstring) to ``out`` and the curves to ``figure``."""
    render_panel(run_files, figure)
    runs_by = runs_by_method(run_files)
    facts = _corpus_facts(corpus_dir)
    truth = any(len(_final(runs, "topic_hellinger")) for runs in runs_by.values())
    header = ["method", "runs", "log-perplexity (one estimator)", "perplexity (one estimator)",
              "log-perplexity (H.4, per family)", *(["topic Hellinger"] if truth else []),
              "ms / document", "tokens / s", "documents visited", "paper run (h)"]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for label, runs in runs_by.items():
        cost = np.asarray([meta["seconds_per_document"] for _, meta in runs])
        lines.append("| " + " | ".join([
            label, str(len(runs)), mean_pm(_final(runs, COMMON), ".4f"), mean_pm(np.exp(_final(runs, COMMON)), ".1f"),
            mean_pm(_final(runs, "log_perplexity"), ".4f"),
            *([mean_pm(_final(runs, "topic_hellinger"), ".3f")] if truth else []),
            mean_pm(1e3 * cost, ".3f"), mean_pm([meta["tokens_per_second"] for _, meta in runs], ",.0f"),
            f"{int(np.mean([meta['visited'] for _, meta in runs])):,}",
            f"{cost.mean() * PAPER_DOCUMENTS * PAPER_PASSES / 3600:.2f}"]) + " |")
    params = next(iter(runs_by.values()))[0][1]["params"]
    notes = [f"LDA on {Path(corpus_dir).name} ({facts.get('source', '?')}): {params['num_docs']:,} training and "
             f"{facts['heldout_documents']:,} held-out documents, "
             f"K = {params['num_topics']}, W = {params['vocabulary']:,}, α = {params['alpha']}, β = {params['beta']}; "
             "final values, mean ± standard error over seeds (ddof = 1). \"paper run\": the hours of the paper's 150,000-document, "
             "5-pass run at the measured cost per document (tomotopy: per document-sweep)."]
    if SVI_LABEL in runs_by:
        ours = runs_by[SVI_LABEL]
        for peer in (p for p in PEER_LABELS if p in runs_by):
            theirs = runs_by[peer]
            gap, se = perplexity_gap(np.exp(_final(ours, COMMON)), np.exp(_final(theirs, COMMON)))
            speed = np.mean([m["tokens_per_second"] for _, m in ours]) / np.mean([m["tokens_per_second"] for _, m in theirs])
            notes.append(f"Our online VB ({SVI_LABEL}) against {peer} at equal K, priors, batch size and rate: "
                         f"perplexity {gap:+.2f}% ± {se:.2f}% (standard error over {len(ours)} and {len(theirs)} "
                         f"seeds; the goal: |gap| ≤ 1%), speed ratio "
                         f"{speed:.2f}x (tokens per second of the steps, this workflow run; ours include JAX's compilation, "
                         "which dominates short runs: benchmarks/bench_lda_cost.py times the steady state).")
    notes.append(fold_in_note(runs_by))
    notes.append(fold_in_table(runs_by))
    notes.extend(ordering_notes(runs_by))
    text = "\n".join(["\n".join(lines), "", *[f"{n}\n" for n in notes], PAPER_CLAIM, ""])
    with atomic_path(out) as tmp:
        tmp.write_text(text)
    return text


def render_figure5(corpus_dir: str | Path, run_files: list[str | Path], out: str | Path, topics: int,
                   words: int) -> None:
    """Figure 5: the top ``words`` words of ``topics`` topics found by one method's first seed (the
    topics with the highest top-word probability mass: the most distinct ones)."""
    runs_by = runs_by_method(run_files)
    if len(runs_by) != 1:
        raise ValueError(f"figure5 shows one method's topics, got runs of {sorted(runs_by)}")
    (label, runs), = runs_by.items()
    arrays, meta = runs[0]
    vocab = (Path(corpus_dir) / "vocab.txt").read_text().splitlines()
    mass = arrays["top_probs"][:, :words].sum(axis=1)
    chosen = np.argsort(-mass)[:topics]
    cols = min(3, topics)
    rows = int(np.ceil(topics / cols))
    fig, axes = plt.subplots(rows, cols, figsize=(3.2 * cols, 0.32 * words * rows + 0.8), squeeze=False)
    for ax, k in zip(axes.ravel(), chosen):
        ids, probs = arrays["top_words"][k, :words], arrays["top_probs"][k, :words]
        ax.barh(range(words)[::-1], probs, color="tab:blue")
        ax.set_yticks(range(words)[::-1], [vocab[i] for i in ids], fontsize=8)
        ax.set_title(f"topic {k}", fontsize=9)
        ax.tick_params(axis="x", labelsize=7)
    for ax in axes.ravel()[len(chosen):]:
        ax.axis("off")
    fig.suptitle(f"Figure 5: topics found by {label} (seed {meta['seed']}), top {words} words", fontsize=10)
    fig.tight_layout()
    with atomic_path(out) as tmp:
        fig.savefig(tmp, dpi=110)
    plt.close(fig)


def render_grid(run_files: list[str | Path], out: str | Path, shown: int = 3) -> str:
    """H.4's grid search: every method's final log-perplexity at each step size ``η/(n₀ + t^κ)``
    (mean over the grid's seeds). ``out`` gets each method's best ``shown`` points and the spread
    over its whole grid; the full ranking goes beside it (``<out stem>_all.md``)."""
    groups: dict[tuple[str, str], list[float]] = {}
    for path in map(Path, run_files):
        _, meta = load_npz(path)
        step = meta["params"]["method.step_size"]
        point = f"η={step['eta']:g}, n₀={step['n0']:g}, κ={step['kappa']:g}"
        groups.setdefault((meta["method"], point), []).append(meta["final"]["log_perplexity"])
    header = ["| method | rank | step size | seeds | log-perplexity |", "|---|---|---|---|---|"]
    short, full, spread = list(header), list(header), []
    for method in sorted({m for m, _ in groups}):
        points = sorted(((np.mean(v), p, len(v)) for (m, p), v in groups.items() if m == method))
        for rank, (value, point, n) in enumerate(points, start=1):
            row = f"| {method} | {rank} of {len(points)} | {point}{' (best)' if rank == 1 else ''} | {n} | {value:.4f} |"
            full.append(row)
            if rank <= shown:
                short.append(row)
        spread.append(f"{method} {points[0][0]:.4f} to {points[-1][0]:.4f}")
    out = Path(out)
    everything = out.with_name(f"{out.stem}_all.md")
    title = "H.4's grid search (final held-out log-perplexity; the best point is the one to put in a config)."
    text = "\n".join([title, "", *short, "",
                      f"Best {shown} points of each method; over the whole grid: {'; '.join(spread)}. "
                      f"Every point: `{everything.name}`.", ""])
    with atomic_path(everything) as tmp:
        tmp.write_text("\n".join([title, "", *full, ""]))
    with atomic_path(out) as tmp:
        tmp.write_text(text)
    return text
